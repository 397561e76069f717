"""Raw-mode requests: any JSON body to any URL with any headers, the dialect left to ``auto``.

A :class:`RawRequest` never holds a key. Building one from a curl command line (or from a
request that was sent) *moves* each secret out — ``Authorization``, ``x-api-key``,
``x-goog-api-key``, ``api-key`` … header values and ``key=`` query parameters — and returns
them separately as :class:`MovedSecret` values for the keyring; the request keeps the masked
value (``Bearer ***``). :meth:`RawRequest.to_spec` puts the real values back at send time::

    raw, moved = raw_from_curl(parse_curl(command))
    for s in moved:
        store.set(secret_account(raw.url, s.slot), s.value)
    spec = raw.to_spec({s.slot: store.get(secret_account(raw.url, s.slot)) ...})

A *slot* names where a secret goes: the lower-case header name, or ``?name`` for a query
parameter. Raw mode sends a JSON object body (every LLM API takes one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from streamscope.core.net.curl import ParsedRequest, to_curl, to_httpx_python
from streamscope.core.redact import MASK, SECRET_HEADERS, SECRET_QUERY_KEYS, mask_value
from streamscope.core.wire.dialects import dialects
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = [
    "MissingSecretError",
    "MovedSecret",
    "RawRequest",
    "RawRequestError",
    "is_masked",
    "mask_secrets",
    "raw_from_curl",
    "raw_from_spec",
    "secret_account",
    "user_text",
]

MOVED_HEADERS = SECRET_HEADERS - {"set-cookie"}
"""Header names whose values are moved out of a raw request (lower case)."""

_AUTH_SCHEMES = ("bearer", "basic", "token")
_SHELL_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_DROPPED = frozenset({"content-length", "host", "transfer-encoding", "connection"})
_CANONICAL = {"content-type": "content-type", "accept-encoding": "accept-encoding"}


class RawRequestError(ValueError):
    """The request cannot be a raw-mode request (e.g. its body is not a JSON object)."""


class MissingSecretError(RawRequestError):
    """A masked header or query parameter has no stored value to put back."""


@dataclass(frozen=True, slots=True)
class MovedSecret:
    """A secret taken out of a request: ``slot`` (``authorization``, ``?key``) and the
    full value as it was sent (``Bearer sk-…``)."""

    slot: str
    value: str


def is_masked(name: str, value: str) -> bool:
    """Whether ``value`` is the masked form of a secret header value."""
    if name.lower() not in MOVED_HEADERS:
        return False
    if value == MASK:
        return True
    scheme, sep, rest = value.partition(" ")
    return bool(sep) and scheme.lower() in _AUTH_SCHEMES and rest == MASK


def secret_account(url: str, slot: str) -> str:
    """The keyring username for a raw request's secret: one per origin and slot."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    origin = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
    return f"raw/{origin}/{slot}"


@dataclass(frozen=True, slots=True)
class RawRequest:
    """A request in raw mode (no secrets in it; see the module docstring)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    body: dict[str, Any] = field(default_factory=dict)
    dialect: str = "auto"

    def secret_slots(self) -> list[str]:
        """Slots whose masked value must be filled in at send time."""
        slots = [name.lower() for name, value in self.headers if is_masked(name, value)]
        query = parse_qsl(urlsplit(self.url).query, keep_blank_values=True)
        slots += [f"?{k}" for k, v in query if k.lower() in SECRET_QUERY_KEYS and v == MASK]
        return slots

    def body_bytes(self) -> bytes:
        return orjson.dumps(self.body)

    def to_spec(self, secrets: Mapping[str, str]) -> RequestSpec:
        """The request to send, each masked value replaced by ``secrets[slot]``.

        ``MissingSecretError`` names the first slot with no value. A secret stored
        without its scheme (``sk-…`` for ``Bearer ***``) gets the scheme back."""
        headers: dict[str, str] = {}
        for name, value in self.headers:
            lower = name.lower()
            if lower in _DROPPED:
                continue
            if is_masked(name, value):
                value = _fill(lower, value, secrets)
            headers[_CANONICAL.get(lower, name)] = value
        return RequestSpec(self.method, _fill_url(self.url, secrets), headers, dict(self.body))

    def curl(self) -> str:
        """A runnable curl command (the key as ``$API_KEY``)."""
        return to_curl(self.method, self.url, self.headers, self.body_bytes())

    def python(self) -> str:
        """A runnable httpx script (the key from ``os.environ``)."""
        return to_httpx_python(self.method, self.url, self.headers, self.body_bytes())


def _fill(slot: str, masked: str, secrets: Mapping[str, str]) -> str:
    real = secrets.get(slot)
    if not real:
        raise MissingSecretError(f"no stored value for the {slot} header; enter the key")
    scheme, sep, _ = masked.partition(" ")
    if sep and not real.lower().startswith(scheme.lower() + " "):
        return f"{scheme} {real}"
    return real


def _fill_url(url: str, secrets: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k.lower() in SECRET_QUERY_KEYS and v == MASK for k, v in pairs):
        return url
    filled = []
    for k, v in pairs:
        if k.lower() in SECRET_QUERY_KEYS and v == MASK:
            real = secrets.get(f"?{k}")
            if not real:
                raise MissingSecretError(f"no stored value for the {k}= query parameter")
            v = real
        filled.append((k, v))
    return urlunsplit((*parts[:3], urlencode(filled), parts.fragment))


def _expand(value: str, environ: Mapping[str, str]) -> str | None:
    """``value`` with ``$VAR``/``${VAR}`` filled from ``environ``; ``None`` if one is unset."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        name = m.group(1) or m.group(2)
        if name not in environ:
            missing = True
            return m.group(0)
        return environ[name]

    out = _SHELL_VAR.sub(sub, value)
    return None if missing else out


def _move(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    body: dict[str, Any],
    dialect: str,
    environ: Mapping[str, str] | None,
) -> tuple[RawRequest, list[MovedSecret]]:
    """Mask every secret and return the real values (shell variables expanded from
    ``environ``; ``None``: values are taken literally)."""

    def real_value(value: str) -> str | None:
        return value if environ is None else _expand(value, environ)

    moved: list[MovedSecret] = []
    kept: list[tuple[str, str]] = []
    for name, value in headers:
        lower = name.lower()
        if lower in _DROPPED:
            continue
        if lower in MOVED_HEADERS and not is_masked(name, value):
            real = real_value(value)
            if real is not None and real.strip():
                moved.append(MovedSecret(lower, real))
            value = mask_value(name, value)
        kept.append((name, value))
    parts = urlsplit(url)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if any(k.lower() in SECRET_QUERY_KEYS for k, _ in pairs):
            out = []
            for k, v in pairs:
                if k.lower() in SECRET_QUERY_KEYS and v != MASK:
                    real = real_value(v)
                    if real:
                        moved.append(MovedSecret(f"?{k}", real))
                    v = MASK
                out.append((k, v))
            url = urlunsplit((*parts[:3], urlencode(out, safe="*"), parts.fragment))
    return RawRequest(method.upper(), url, tuple(kept), body, dialect), moved


def _json_object(body: bytes | None) -> dict[str, Any]:
    if not body or not body.strip():
        return {}
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise RawRequestError(f"the body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RawRequestError(f"raw mode sends a JSON object, not a {type(value).__name__}")
    return value


def raw_from_curl(
    parsed: ParsedRequest, *, dialect: str = "auto", environ: Mapping[str, str] | None = None
) -> tuple[RawRequest, list[MovedSecret]]:
    """A raw request from a parsed curl command, its secrets moved out. A key written as
    ``$API_KEY`` is taken from ``environ`` (``os.environ``) when set; otherwise the header
    stays masked with no value (the editor asks for it)."""
    env = os.environ if environ is None else environ
    return _move(parsed.method, parsed.url, parsed.headers, _json_object(parsed.body), dialect, env)


def raw_from_spec(
    spec: RequestSpec, *, dialect: str = "auto"
) -> tuple[RawRequest, list[MovedSecret]]:
    """A raw request from a request that was sent (its secrets moved out, for editing)."""
    return _move(spec.method, spec.url, spec.headers.items(), dict(spec.json), dialect, None)


# -- what the user asked -----------------------------------------------------------------


def user_text(body: Mapping[str, Any]) -> str | None:
    """The last user message in a request body of any registered dialect's shape (OpenAI
    chat, Anthropic and Ollama ``messages``; Gemini ``contents``; Responses ``input``), or
    ``None``."""
    return next((t for d in dialects() if (t := d.user_text(body)) is not None), None)


def mask_secrets(raw: RawRequest) -> tuple[RawRequest, list[MovedSecret]]:
    """``raw`` with any secret typed in literally (a key pasted into the header table)
    masked and moved out, like :func:`raw_from_curl` does."""
    return _move(raw.method, raw.url, raw.headers, dict(raw.body), raw.dialect, None)
