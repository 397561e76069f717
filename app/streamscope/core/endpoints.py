"""Endpoint configuration: what to talk to and how, saved as JSON without any secret.

    store = EndpointStore()                 # config_dir()/endpoints.json, resolved per call
    settings = store.load()                 # first run: [Built-in demo], selected
    ep = settings.selected
    store.save(settings.with_endpoint(replace(ep, model="demo-tools")))

An :class:`Endpoint` never holds an API key: keys live in the secret store
(:mod:`streamscope.core.secrets`) or an environment variable. Extra headers whose names are
secret (``Authorization``, ``x-api-key`` ...) are saved with an empty value; their values go
to the secret store too (see :func:`streamscope.core.secrets.resolve_headers`).

"Fetch models" and "Test connection" are :func:`fetch_models` and :func:`test_connection`:
one GET of :func:`models_url`, parsed by :func:`parse_models`.
"""

from __future__ import annotations

import errno
import json
import os
import ssl
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from streamscope.core import paths
from streamscope.core.client import StreamTimeouts, TLSOptions
from streamscope.core.dialects.anthropic import ANTHROPIC_VERSION
from streamscope.core.redact import SECRET_HEADERS, SECRET_QUERY_KEYS, redact_url

__all__ = [
    "DEMO_ID",
    "DIALECT_CHOICES",
    "KEY_SOURCES",
    "PRESETS",
    "Endpoint",
    "EndpointConfigError",
    "EndpointSettings",
    "EndpointStore",
    "KeySource",
    "ModelListError",
    "Preset",
    "auth_headers",
    "endpoint_from_dict",
    "endpoint_to_dict",
    "fetch_models",
    "is_secret_header",
    "make_http_client",
    "models_url",
    "new_endpoint",
    "parse_models",
    "test_connection",
]

KeySource = Literal["keyring", "env", "none"]
KEY_SOURCES: tuple[KeySource, ...] = ("keyring", "env", "none")
DIALECT_CHOICES: tuple[str, ...] = ("openai", "anthropic", "gemini", "responses", "ollama", "auto")
"""Dialects an endpoint can be set to, in the order the UI lists them."""

DEMO_ID = "builtin-demo"
"""The id of the Built-in demo endpoint created on first run."""

FILE_NAME = "endpoints.json"
FORMAT_VERSION = 1
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
    """Wire dialect: one of :data:`DIALECT_CHOICES`."""
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
    tls_verify: bool = True
    """Verify the server's TLS certificate (the UI marks it visibly when off)."""
    ca_bundle: str | None = None
    """Extra CA file (PEM) for self-signed local servers."""
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
        )

    def tls(self) -> TLSOptions:
        """The client's TLS options for this endpoint."""
        return TLSOptions(verify=self.tls_verify, ca_bundle=self.ca_bundle or None)


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


# --- JSON converters ---------------------------------------------------------------------------


class EndpointConfigError(ValueError):
    """``endpoints.json`` (or one endpoint in it) is not what we wrote."""


def strip_url_secrets(url: str) -> str:
    """``url`` without secret query parameters (``key=``, ``api_key=`` ...): a key belongs
    in the keyring, never in endpoints.json."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k.lower() not in SECRET_QUERY_KEYS]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


def endpoint_to_dict(ep: Endpoint) -> dict[str, Any]:
    """A JSON-ready dict; secret header values are blanked and secret query parameters
    dropped from the base URL (defence in depth)."""
    return {
        "id": ep.id,
        "name": ep.name,
        "preset": ep.preset,
        "base_url": strip_url_secrets(ep.base_url),
        "dialect": ep.dialect,
        "model": ep.model,
        "key_source": ep.key_source,
        "api_key_env": ep.api_key_env,
        "extra_headers": {
            k: ("" if is_secret_header(k) else v) for k, v in ep.extra_headers.items()
        },
        "connect_timeout": ep.connect_timeout,
        "first_byte_timeout": ep.first_byte_timeout,
        "idle_timeout": ep.idle_timeout,
        "tls_verify": ep.tls_verify,
        "ca_bundle": ep.ca_bundle,
        "system_prompt": ep.system_prompt,
        "temperature": ep.temperature,
        "max_tokens": ep.max_tokens,
        "include_usage": ep.include_usage,
        "extra_body": dict(ep.extra_body),
    }


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = d.get(key, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) and kind is not bool and bool not in _as_tuple(kind):
        raise EndpointConfigError(f"{key}: expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise EndpointConfigError(f"{key}: expected {_kind_name(kind)}, got {value!r}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def endpoint_from_dict(d: Mapping[str, Any]) -> Endpoint:
    """The inverse of :func:`endpoint_to_dict`; unknown keys are ignored, missing ones default.

    Raises :class:`EndpointConfigError` naming the bad field.
    """
    defaults = Endpoint(id="", name="")
    ep_id = _get(d, "id", str, "")
    if not ep_id:
        raise EndpointConfigError("id: missing")
    key_source = _get(d, "key_source", str, defaults.key_source)
    if key_source not in KEY_SOURCES:
        raise EndpointConfigError(f"key_source: expected one of {KEY_SOURCES}, got {key_source!r}")
    dialect = _get(d, "dialect", str, defaults.dialect)
    if dialect not in DIALECT_CHOICES:
        raise EndpointConfigError(f"dialect: unknown {dialect!r}")
    headers = _get(d, "extra_headers", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise EndpointConfigError("extra_headers: names and values must be strings")
    max_tokens = _get(d, "max_tokens", int, None)
    temperature = _get(d, "temperature", (int, float), None)
    return Endpoint(
        id=ep_id,
        name=_get(d, "name", str, ep_id),
        preset=_get(d, "preset", str, defaults.preset),
        base_url=_get(d, "base_url", str, ""),
        dialect=dialect,
        model=_get(d, "model", str, ""),
        key_source=key_source,
        api_key_env=_get(d, "api_key_env", str, ""),
        extra_headers=dict(headers),
        connect_timeout=float(_get(d, "connect_timeout", (int, float), defaults.connect_timeout)),
        first_byte_timeout=float(
            _get(d, "first_byte_timeout", (int, float), defaults.first_byte_timeout)
        ),
        idle_timeout=float(_get(d, "idle_timeout", (int, float), defaults.idle_timeout)),
        tls_verify=_get(d, "tls_verify", bool, True),
        ca_bundle=_get(d, "ca_bundle", str, None) or None,
        system_prompt=_get(d, "system_prompt", str, ""),
        temperature=None if temperature is None else float(temperature),
        max_tokens=max_tokens,
        include_usage=_get(d, "include_usage", bool, True),
        extra_body=dict(_get(d, "extra_body", dict, {})),
    )


# --- the store ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointSettings:
    """The endpoint list and which one is active (``selected_id`` is always one of them)."""

    endpoints: tuple[Endpoint, ...]
    selected_id: str

    def __post_init__(self) -> None:
        if not self.endpoints:
            raise ValueError("at least one endpoint is required")
        ids = [e.id for e in self.endpoints]
        if len(set(ids)) != len(ids):
            raise ValueError("endpoint ids must be unique")
        if self.selected_id not in ids:
            object.__setattr__(self, "selected_id", ids[0])

    @classmethod
    def default(cls) -> EndpointSettings:
        """First run: the Built-in demo, selected."""
        demo = PRESETS["demo"].endpoint(id=DEMO_ID)
        return cls((demo,), demo.id)

    @property
    def selected(self) -> Endpoint:
        return self.get(self.selected_id)

    def get(self, endpoint_id: str) -> Endpoint:
        for ep in self.endpoints:
            if ep.id == endpoint_id:
                return ep
        raise KeyError(endpoint_id)

    def with_endpoint(self, ep: Endpoint) -> EndpointSettings:
        """``ep`` replacing the endpoint with its id, or appended when new."""
        if any(e.id == ep.id for e in self.endpoints):
            eps = tuple(ep if e.id == ep.id else e for e in self.endpoints)
        else:
            eps = (*self.endpoints, ep)
        return replace(self, endpoints=eps)

    def without(self, endpoint_id: str) -> EndpointSettings:
        """Without that endpoint (the last one cannot be removed)."""
        eps = tuple(e for e in self.endpoints if e.id != endpoint_id)
        return EndpointSettings(eps or self.endpoints, self.selected_id)

    def select(self, endpoint_id: str) -> EndpointSettings:
        self.get(endpoint_id)
        return replace(self, selected_id=endpoint_id)


class EndpointStore:
    """``endpoints.json`` in :func:`~streamscope.core.paths.config_dir` (or ``path``).

    Writes are atomic (a temporary file, then ``os.replace``). A file that cannot be read is
    moved aside to ``endpoints.json.bad`` (so the next save does not destroy it) and
    :attr:`load_error` says why; the defaults are returned.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self.load_error: str | None = None

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else paths.config_dir() / FILE_NAME

    def load(self) -> EndpointSettings:
        path = self.path
        self.load_error = None
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return EndpointSettings.default()
        try:
            return _settings_from_json(raw)
        except (ValueError, EndpointConfigError) as exc:
            self.load_error = f"{path.name} could not be read ({exc}); it was moved aside"
            os.replace(path, path.with_name(path.name + ".bad"))
            return EndpointSettings.default()

    def save(self, settings: EndpointSettings) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "version": FORMAT_VERSION,
            "selected": settings.selected_id,
            "endpoints": [endpoint_to_dict(e) for e in settings.endpoints],
        }
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _settings_from_json(raw: bytes) -> EndpointSettings:
    doc = json.loads(raw)
    if not isinstance(doc, dict) or not isinstance(doc.get("endpoints"), list):
        raise EndpointConfigError("expected an object with an 'endpoints' list")
    endpoints = []
    for i, item in enumerate(doc["endpoints"], 1):
        if not isinstance(item, dict):
            raise EndpointConfigError(f"endpoint {i}: expected an object")
        try:
            endpoints.append(endpoint_from_dict(item))
        except EndpointConfigError as exc:
            raise EndpointConfigError(f"endpoint {i}: {exc}") from None
    if not endpoints:
        return EndpointSettings.default()
    selected = doc.get("selected")
    try:
        return EndpointSettings(tuple(endpoints), selected if isinstance(selected, str) else "")
    except ValueError as exc:
        raise EndpointConfigError(str(exc)) from None


# --- listing models and testing a connection ------------------------------------------------


class ModelListError(Exception):
    """Listing models failed; the message is for people (status, server message, hint)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def models_url(endpoint: Endpoint, base_url: str | None = None) -> str:
    """Where the endpoint lists its models (``base_url`` overrides the endpoint's, for the
    demo). Ollama: ``{base}/api/tags``; every other dialect ``{base}/models``."""
    base = (base_url if base_url is not None else endpoint.base_url).rstrip("/")
    if endpoint.dialect == "ollama":
        return base + "/api/tags"
    if endpoint.dialect == "anthropic":
        return base + "/models?limit=1000"
    if endpoint.dialect == "gemini":
        return base + "/models?pageSize=1000"
    return base + "/models"


def auth_headers(endpoint: Endpoint, api_key: str | None) -> dict[str, str]:
    """Authentication (and version) headers for a plain GET, plus the extra headers."""
    headers: dict[str, str] = {"Accept": "application/json"}
    if endpoint.dialect == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            headers["x-api-key"] = api_key
    elif endpoint.dialect == "gemini":
        if api_key:
            headers["x-goog-api-key"] = api_key
    elif api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    headers.update({k: v for k, v in endpoint.extra_headers.items() if v})
    return headers


def parse_models(dialect: str, doc: Any) -> list[str]:
    """Model names from a models listing, in the server's order, without duplicates.

    OpenAI-style (and Anthropic): ``{"data": [{"id": ...}]}``; Gemini:
    ``{"models": [{"name": "models/x"}]}`` (prefix dropped; models that cannot generate
    content are skipped); Ollama: ``{"models": [{"name": ...}]}``. Other shapes give ``[]``.
    """
    if not isinstance(doc, dict):
        return []
    names: list[str] = []
    data = doc.get("data")
    if isinstance(data, list):
        names += [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    models = doc.get("models")
    if isinstance(models, list):
        for m in models:
            if not isinstance(m, dict):
                continue
            name = m.get("name") if isinstance(m.get("name"), str) else m.get("model")
            if not isinstance(name, str):
                continue
            methods = m.get("supportedGenerationMethods")
            if isinstance(methods, list) and not (
                {"generateContent", "streamGenerateContent"} & set(methods)
            ):
                continue
            if dialect == "gemini" or name.startswith("models/"):
                name = name.removeprefix("models/")
            names.append(name)
    return list(dict.fromkeys(names))


def make_http_client(
    endpoint: Endpoint, *, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with the endpoint's TLS options (for models / test)."""
    verify: ssl.SSLContext | bool
    if not endpoint.tls_verify:
        verify = False
    elif endpoint.ca_bundle:
        verify = ssl.create_default_context(cafile=endpoint.ca_bundle)
    else:
        try:
            import truststore

            verify = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        except ImportError:  # pragma: no cover - truststore is a dependency
            verify = True
    return httpx.AsyncClient(verify=verify, transport=transport, trust_env=True)


async def _get_models(
    endpoint: Endpoint, api_key: str | None, client: httpx.AsyncClient, base_url: str | None
) -> tuple[list[str], float]:
    base = base_url if base_url is not None else endpoint.base_url
    if not base.strip():
        raise ModelListError("No base URL set")
    url = models_url(endpoint, base)
    shown = redact_url(url)
    timeout = httpx.Timeout(MODELS_TIMEOUT, connect=endpoint.connect_timeout)
    t0 = time.monotonic()
    try:
        response = await client.get(url, headers=auth_headers(endpoint, api_key), timeout=timeout)
    except httpx.ConnectTimeout:
        raise ModelListError(
            f"Timed out after {endpoint.connect_timeout:g} s connecting to {_host(url)}"
        ) from None
    except httpx.TimeoutException:
        raise ModelListError(
            f"{_host(url)} accepted the connection but sent no answer within {MODELS_TIMEOUT:g} s"
        ) from None
    except httpx.ConnectError as exc:
        raise ModelListError(_describe_connect_error(exc, url)) from None
    except httpx.HTTPError as exc:
        raise ModelListError(f"Request to {shown} failed: {type(exc).__name__}: {exc}") from None
    elapsed = time.monotonic() - t0
    if response.status_code >= 400:
        raise ModelListError(_describe_status(response, shown), response.status_code)
    try:
        doc = response.json()
    except ValueError:
        ctype = response.headers.get("content-type", "no Content-Type")
        raise ModelListError(
            f"HTTP {response.status_code} from {shown}, but the body is not JSON ({ctype})",
            response.status_code,
        ) from None
    return parse_models(endpoint.dialect, doc), elapsed


async def fetch_models(
    endpoint: Endpoint,
    api_key: str | None,
    client: httpx.AsyncClient,
    *,
    base_url: str | None = None,
) -> list[str]:
    """The endpoint's model names; :class:`ModelListError` with a readable message on failure.

    ``base_url`` overrides the endpoint's (the Built-in demo's URL is known at run time).
    """
    models, _ = await _get_models(endpoint, api_key, client, base_url)
    return models


async def test_connection(
    endpoint: Endpoint,
    api_key: str | None,
    client: httpx.AsyncClient,
    *,
    base_url: str | None = None,
) -> tuple[bool, str]:
    """GET the models listing: ``(True, "Connected · 12 models · 0.21 s")`` or
    ``(False, <what went wrong and what to check>)``. Never raises for network trouble."""
    try:
        models, elapsed = await _get_models(endpoint, api_key, client, base_url)
    except ModelListError as exc:
        return False, str(exc)
    count = f"{len(models)} model{'s' if len(models) != 1 else ''}"
    note = ""
    if endpoint.model and models and endpoint.model not in models:
        note = f" · “{endpoint.model}” is not in the list"
    return True, f"Connected · {count} · {elapsed:.2f} s{note}"


def _host(url: str) -> str:
    return httpx.URL(url).netloc.decode("ascii", "replace")


def _exception_chain_text(exc: BaseException) -> str:
    """The messages of ``exc`` and its causes (anyio hides "refused" behind a summary)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        if isinstance(current, OSError) and current.errno == errno.ECONNREFUSED:
            parts.append("connection refused")
        current = current.__cause__ or current.__context__
    return " | ".join(parts)


def _describe_connect_error(exc: httpx.ConnectError, url: str) -> str:
    text = str(exc)
    low = _exception_chain_text(exc).lower()
    host = _host(url)
    if "certificate" in low or "ssl" in low or "tls" in low:
        return (
            f"TLS error talking to {host}: {text} — set a CA bundle for a self-signed "
            "server, or turn verification off"
        )
    if "refused" in low or "errno 111" in low or "10061" in low:
        return f"Connection refused by {host} — is the server running on that port?"
    if "name or service not known" in low or "nodename" in low or "getaddrinfo" in low:
        return f"Could not resolve host {host!r} — check the base URL"
    return f"Could not connect to {host}: {text or type(exc).__name__}"


def _describe_status(response: httpx.Response, shown_url: str) -> str:
    status = response.status_code
    message = _server_message(response)
    suffix = f": {message}" if message else ""
    if status in (401, 403):
        what = "401 Unauthorized" if status == 401 else "403 Forbidden"
        return f"{what} — the API key was missing or rejected{suffix}"
    if status == 404:
        return (
            f"404 Not Found at {shown_url} — check the base URL (it must include the "
            f"version prefix, e.g. /v1) and the dialect{suffix}"
        )
    if status == 429:
        retry = response.headers.get("retry-after")
        hint = f" · retry after {retry} s" if retry else ""
        return f"429 Too Many Requests{hint}{suffix}"
    reason = response.reason_phrase or "error"
    return f"HTTP {status} {reason}{suffix}"


def _server_message(response: httpx.Response) -> str:
    try:
        doc = response.json()
    except ValueError:
        return ""
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            msg = err.get("message")
            if isinstance(msg, str):
                return msg[:300]
        elif isinstance(err, str):
            return err[:300]
        msg = doc.get("message") or doc.get("detail")
        if isinstance(msg, str):
            return msg[:300]
    return ""
