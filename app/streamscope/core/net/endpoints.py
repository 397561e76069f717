"""Endpoint configuration: what to talk to and how, and the presets new endpoints start
from (they are saved by :mod:`streamscope.core.net.endpoint_store`, without any secret).

An :class:`Endpoint` never holds an API key: keys live in the secret store
(:mod:`streamscope.core.net.secrets`) or an environment variable. Extra headers whose names are
secret (``Authorization``, ``x-api-key`` ...) are saved with an empty value; their values go
to the secret store too (see :func:`streamscope.core.net.secrets.resolve_headers`).

"Fetch models" and "Test connection" are :func:`fetch_models` and :func:`test_connection`:
one GET of :func:`models_url`, parsed by :func:`parse_models`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from streamscope.core.net.options import (
    DEFAULT_LINE_CAP,
    ProxyMode,
    ProxyOptions,
    StreamTimeouts,
    TLSOptions,
)
from streamscope.core.redact import SECRET_HEADERS
from streamscope.core.wire.context import ContextPolicy

__all__ = [
    "DEMO_ID",
    "KEY_SOURCES",
    "LINE_CAP_RANGE",
    "PRESETS",
    "Endpoint",
    "KeySource",
    "Preset",
    "is_secret_header",
    "new_endpoint",
]

KeySource = Literal["keyring", "env", "none"]
KEY_SOURCES: tuple[KeySource, ...] = ("keyring", "env", "none")

DEMO_ID = "builtin-demo"
"""The id of the Built-in demo endpoint created on first run."""

FILE_NAME = "endpoints.json"
FORMAT_VERSION = 1
LINE_CAP_RANGE = (4 * 1024, 256 * 1024 * 1024)
"""The line caps an endpoint may set, in bytes: 4 KiB to 256 MiB."""
MODELS_TIMEOUT = 20.0
"""Seconds a models listing may take to arrive (after connecting)."""


@dataclass(frozen=True)
class Endpoint:
    """One configured endpoint. Holds no secret: see the module docstring."""

    id: str
    """Stable identifier (a UUID hex; ``builtin-demo`` for the demo); keys the secret store."""
    name: str
    """What the user calls it ("OpenAI", "Work vLLM")."""
    preset: str = "custom"
    """The :data:`PRESETS` key it was made from (``demo`` means the embedded server)."""
    base_url: str = ""
    """Base URL including the API's version prefix (``https://api.openai.com/v1``); empty
    for the Built-in demo, whose URL is known only once its server runs."""
    dialect: str = "openai"
    """Wire dialect: a registered one's name, or ``auto``."""
    model: str = ""
    """Model name sent with each request (for the demo: the scenario)."""
    key_source: KeySource = "none"
    """Where the API key comes from: the secret store, an environment variable, or none."""
    api_key_env: str = ""
    """Environment variable holding the key when ``key_source`` is ``env``."""
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    """Headers added to every request (they win over the dialect's); secret ones are empty
    here and kept in the secret store."""
    connect_timeout: float = 10.0
    """Seconds to establish the TCP/TLS connection."""
    first_byte_timeout: float = 300.0
    """Seconds from sending the request to the first body byte."""
    idle_timeout: float = 300.0
    """Seconds without semantic progress (keep-alives don't count) before truncating."""
    max_line_bytes: int = DEFAULT_LINE_CAP
    """The longest line the stream may send (:data:`LINE_CAP_RANGE`); a longer one ends the
    turn as a protocol error, its first KB shown as an ``oversized`` frame."""
    tls_verify: bool = True
    """Verify the server's TLS certificate (the UI marks it visibly when off)."""
    ca_bundle: str | None = None
    """Extra CA file (PEM) for self-signed local servers."""
    client_cert: str | None = None
    """Client certificate (PEM) for servers that require one (mutual TLS); its key may be
    in the same file."""
    client_key: str | None = None
    """The client certificate's private key (PEM, unencrypted) when in a separate file."""
    proxy_mode: ProxyMode = "system"
    """``system`` (OS settings and ``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY``), ``none``,
    ``http``, ``https`` or ``socks5`` (see :data:`~streamscope.core.net.options.PROXY_MODES`).
    The Built-in demo always goes direct."""
    proxy_host: str = ""
    proxy_port: int = 0
    proxy_username: str = ""
    """The proxy's username; its password is in the secret store, never here."""
    no_proxy: tuple[str, ...] = ()
    """Hosts reached without the explicit proxy (``NO_PROXY`` rules)."""
    system_prompt: str = ""
    """System prompt sent with each conversation (empty: none)."""
    temperature: float | None = None
    """Sampling temperature (``None``: the server's default)."""
    max_tokens: int | None = None
    """Output token limit (``None``: none, except where the API requires one)."""
    include_usage: bool = True
    """OpenAI chat: send ``stream_options.include_usage`` (some compatible servers reject it)."""
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    """JSON object merged into each request body (``null`` removes a key)."""
    context_policy: ContextPolicy = ContextPolicy()
    """How much of the conversation each request sends: all of it (the default), the last N
    exchanges, or a size budget — cut only between exchanges
    (:mod:`~streamscope.core.wire.context`)."""

    @property
    def is_demo(self) -> bool:
        """Whether this is the embedded demo server (base URL resolved at run time)."""
        return self.preset == "demo"

    def timeouts(self) -> StreamTimeouts:
        """The client's timeouts for this endpoint."""
        return StreamTimeouts(
            connect=self.connect_timeout,
            first_byte=self.first_byte_timeout,
            idle=self.idle_timeout,
            max_line_bytes=self.max_line_bytes,
        )

    def tls(self) -> TLSOptions:
        """The client's TLS options for this endpoint."""
        return TLSOptions(
            verify=self.tls_verify,
            ca_bundle=self.ca_bundle or None,
            client_cert=self.client_cert or None,
            client_key=self.client_key or None,
            proxy=self.proxy(),
        )

    def proxy(self) -> ProxyOptions:
        """The proxy setting, without its password (the demo on loopback: always direct)."""
        if self.is_demo:
            return ProxyOptions(mode="none")
        return ProxyOptions(
            mode=self.proxy_mode,
            host=self.proxy_host.strip(),
            port=self.proxy_port,
            username=self.proxy_username,
            no_proxy=self.no_proxy,
        )


@dataclass(frozen=True, slots=True)
class Preset:
    """A starting point for an endpoint: fills base URL, dialect, model and key source."""

    key: str
    label: str
    base_url: str
    dialect: str
    model: str = ""
    key_source: KeySource = "none"
    api_key_env: str = ""
    note: str = ""

    def endpoint(self, *, id: str | None = None, name: str | None = None) -> Endpoint:
        """A new endpoint from this preset (a fresh id unless given)."""
        return Endpoint(
            id=id or uuid.uuid4().hex,
            name=name or self.label,
            preset=self.key,
            base_url=self.base_url,
            dialect=self.dialect,
            model=self.model,
            key_source=self.key_source,
            api_key_env=self.api_key_env,
        )


PRESETS: Mapping[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            "demo",
            "Built-in demo",
            "",
            "openai",
            "demo",
            note="The embedded demo server on 127.0.0.1: the model name picks a scenario.",
        ),
        Preset(
            "openai",
            "OpenAI",
            "https://api.openai.com/v1",
            "openai",
            "gpt-4.1-mini",
            "env",
            "OPENAI_API_KEY",
        ),
        Preset(
            "anthropic",
            "Anthropic",
            "https://api.anthropic.com/v1",
            "anthropic",
            "claude-sonnet-4-5",
            "env",
            "ANTHROPIC_API_KEY",
        ),
        Preset(
            "gemini",
            "Google Gemini",
            "https://generativelanguage.googleapis.com/v1beta",
            "gemini",
            "gemini-2.5-flash",
            "env",
            "GEMINI_API_KEY",
        ),
        Preset(
            "openrouter",
            "OpenRouter",
            "https://openrouter.ai/api/v1",
            "openai",
            "openai/gpt-4.1-mini",
            "env",
            "OPENROUTER_API_KEY",
        ),
        Preset(
            "ollama",
            "Ollama",
            "http://localhost:11434",
            "ollama",
            "llama3.2",
            note="Ollama's native API (NDJSON); no key needed.",
        ),
        Preset("lmstudio", "LM Studio", "http://localhost:1234/v1", "openai", "", "none"),
        Preset("vllm", "vLLM", "http://localhost:8000/v1", "openai", "", "none", "VLLM_API_KEY"),
        Preset(
            "litellm",
            "LiteLLM proxy",
            "http://localhost:4000/v1",
            "openai",
            "",
            "none",
            "LITELLM_API_KEY",
        ),
        Preset(
            "aggregator",
            "OpenAI-compatible aggregator",
            "https://api.luv13.ai/v1",
            "openai",
            "luv13/glm-5.3-flash",
            "keyring",
            note="Nothing is sent until you add a key and send a message.",
        ),
        Preset("custom", "Custom", "", "openai", "", "keyring"),
    )
}
"""Presets in the order the UI lists them; ``demo`` first (the default endpoint)."""


def new_endpoint(preset: str = "custom", *, name: str | None = None) -> Endpoint:
    """A new endpoint (fresh id) from the preset called ``preset``."""
    return PRESETS[preset].endpoint(name=name)


def is_secret_header(name: str) -> bool:
    """Whether a header's value is a secret (kept in the secret store, never in a file)."""
    return name.strip().lower() in SECRET_HEADERS
