"""Secrets never leave memory: masking for headers and URLs shown, logged or saved.

Masked: ``Authorization``, ``Proxy-Authorization``, ``x-api-key``, ``x-goog-api-key``,
``api-key``, ``Cookie`` headers, and ``key=`` (also ``api_key=``, ``token=``) query parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "cookie",
        "set-cookie",
    }
)
SECRET_QUERY_KEYS = frozenset({"key", "api_key", "apikey", "token", "access_token"})


def mask_value(name: str, value: str) -> str:
    """``value`` with the secret replaced; an auth scheme (``Bearer``) stays readable."""
    if name.lower() not in SECRET_HEADERS:
        return value
    scheme, sep, _ = value.partition(" ")
    if sep and scheme.lower() in ("bearer", "basic", "token"):
        return f"{scheme} {MASK}"
    return MASK


def redact_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """A copy of ``headers`` with secret values masked."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {name: mask_value(name, value) for name, value in items}


def redact_url(url: str) -> str:
    """``url`` with secret query parameters masked (and any userinfo password)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else netloc
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() in SECRET_QUERY_KEYS for k, _ in pairs):
            query = urlencode(
                [(k, MASK if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*"
            )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def secret_values(headers: Mapping[str, str], url: str = "") -> tuple[bytes, ...]:
    """The secrets a request carries (key headers without their scheme, ``key=`` values),
    so that anything a server echoes back can be masked before it is shown or written."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            scheme, sep, rest = value.partition(" ")
            found.append(rest if sep and scheme.lower() in ("bearer", "basic", "token") else value)
    for key, value in parse_qsl(urlsplit(url).query):
        if key.lower() in SECRET_QUERY_KEYS:
            found.append(value)
    return tuple(v.strip().encode() for v in found if len(v.strip()) >= 8)


def scrub(data: bytes, secrets: Iterable[bytes]) -> bytes:
    """``data`` with every secret replaced by the mask."""
    for secret in secrets:
        if secret in data:
            data = data.replace(secret, MASK.encode())
    return data
