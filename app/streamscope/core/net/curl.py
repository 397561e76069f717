"""Requests as shell commands, both ways: :func:`to_curl` (and :func:`to_httpx_python`)
write a runnable request with the key left to the environment (``$API_KEY``), and
:func:`parse_curl` (:mod:`streamscope.core.net.curl_parse`) reads a pasted ``curl`` command
line back into a request.

    to_curl("POST", url, {"Authorization": "Bearer sk-…"}, body)
    # curl -sN -X POST 'https://api.example.com/v1/chat/completions' \\
    #   -H "Authorization: Bearer $API_KEY" \\
    #   -H 'content-type: application/json' \\
    #   --data-raw '{"model": …}'

Key headers (``Authorization``, ``x-api-key``, ``x-goog-api-key``, ``api-key``) and key
query parameters (``key=``) become ``$API_KEY`` whatever they held (a real key or the
``***`` of a redacted capture); cookies are left out. Everything else is single-quoted.

A body over :data:`HEREDOC_OVER` bytes (a long conversation) would be one argument over
Linux's 128 KB limit for a single argument ("Argument list too long"), so it goes through
stdin instead, as a quoted here-document (no expansion inside) whose delimiter does not occur
in the body; ``head -c`` drops the newline the here-document adds, so the bytes sent are the
body's exactly::

    head -c 314159 <<'JSON' | curl -sN -X POST 'https://api.example.com/v1/chat/completions' \
      -H "Authorization: Bearer $API_KEY" \
      --data-binary @-
    {"model": …}
    JSON
"""

from __future__ import annotations

import base64
import itertools
import re
import shlex
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from streamscope.core.net.curl_parse import CurlParseError, ParsedRequest, parse_curl
from streamscope.core.redact import SECRET_HEADERS, SECRET_QUERY_KEYS

__all__ = [
    "HEREDOC_OVER",
    "CurlParseError",
    "ParsedRequest",
    "parse_curl",
    "to_curl",
    "to_httpx_python",
]

KEY_VAR = "API_KEY"
HEREDOC_OVER = 100_000
"""Bodies longer than this (in bytes) are sent from a here-document, not an argument."""
_PLACEHOLDER = "STREAMSCOPE-API-KEY-PLACEHOLDER"
_DROP_HEADERS = frozenset({"content-length", "host", "transfer-encoding", "connection"})
_COOKIE_HEADERS = frozenset({"cookie", "set-cookie"})
_AUTH_SCHEMES = ("bearer", "basic", "token")

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


# -- writing ----------------------------------------------------------------------------


def _items(headers: Headers) -> list[tuple[str, str]]:
    return list(headers.items() if isinstance(headers, Mapping) else headers)


def _key_header_value(name: str, value: str, key: str) -> str:
    scheme, sep, _ = value.partition(" ")
    if sep and scheme.lower() in _AUTH_SCHEMES:
        return f"{scheme} {key}"
    return key


def _url_with_placeholder(url: str) -> tuple[str, bool]:
    parts = urlsplit(url)
    if not parts.query:
        return url, False
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k.lower() in SECRET_QUERY_KEYS for k, _ in pairs):
        return url, False
    query = urlencode(
        [(k, _PLACEHOLDER if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*"
    )
    return urlunsplit((*parts[:3], query, parts.fragment)), True


def _double_quoted(text: str) -> str:
    """``text`` inside double quotes, where only ``$API_KEY`` is expanded."""
    escaped = re.sub(r'([\\"$`])', r"\\\1", text)
    return '"' + escaped.replace(_PLACEHOLDER, f"${KEY_VAR}") + '"'


def to_curl(method: str, url: str, headers: Headers, body: bytes | None) -> str:
    """A runnable, multi-line ``curl`` command (see the module docstring)."""
    url, has_key = _url_with_placeholder(url)
    lines = [
        f"curl -sN -X {shlex.quote(method)} "
        + (_double_quoted(url) if has_key else shlex.quote(url))
    ]
    for name, value in _items(headers):
        lower = name.lower()
        if lower in _DROP_HEADERS or lower in _COOKIE_HEADERS:
            continue
        if lower in SECRET_HEADERS:
            value = _key_header_value(lower, value, _PLACEHOLDER)
            lines.append(f"-H {_double_quoted(f'{name}: {value}')}")
        else:
            lines.append(f"-H {shlex.quote(f'{name}: {value}')}")
    prefix = suffix = ""
    if body:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or "\0" in text:  # (a shell cannot carry a NUL byte)
            encoded = base64.b64encode(body).decode("ascii")
            prefix = f"printf %s {encoded} | base64 -d | "
            lines.append("--data-binary @-")
        elif len(body) > HEREDOC_OVER:
            delimiter = _delimiter(text)
            prefix = f"head -c {len(body)} <<'{delimiter}' | "
            lines.append("--data-binary @-")
            suffix = f"{text}\n{delimiter}\n"
        else:
            lines.append(f"--data-raw {shlex.quote(text)}")
    return prefix + " \\\n  ".join(lines) + "\n" + suffix


def _delimiter(text: str) -> str:
    """A here-document delimiter that does not occur anywhere in ``text``."""
    return next(d for n in itertools.count() if (d := f"JSON{n or ''}") not in text)


def to_httpx_python(method: str, url: str, headers: Headers, body: bytes | None) -> str:
    """A Python script that sends the request with httpx and prints the raw stream; the
    key comes from ``os.environ["API_KEY"]``."""
    url, has_key = _url_with_placeholder(url)

    def expr(text: str) -> str:
        pieces = text.split(_PLACEHOLDER)
        return " + API_KEY + ".join(repr(p) for p in pieces) if len(pieces) > 1 else repr(text)

    header_lines = []
    for name, value in _items(headers):
        lower = name.lower()
        if lower in _DROP_HEADERS or lower in _COOKIE_HEADERS:
            continue
        if lower in SECRET_HEADERS:
            value = _key_header_value(lower, value, _PLACEHOLDER)
        header_lines.append(f"    {name!r}: {expr(value)},")
    if body is None:
        body_expr = "None"
    else:
        try:
            body_expr = f"{body.decode('utf-8')!r}.encode('utf-8')"
        except UnicodeDecodeError:
            body_expr = repr(body)
    headers_block = "\n".join(header_lines)
    return (
        '"""Replays a StreamScope request. Run: API_KEY=... python this_file.py"""\n\n'
        "import os\nimport sys\n\nimport httpx\n\n"
        'API_KEY = os.environ["API_KEY"]\n'
        f"URL = {expr(url) if has_key else repr(url)}\n"
        f"HEADERS = {{\n{headers_block}\n}}\n"
        f"BODY = {body_expr}\n\n"
        f"with httpx.stream({method!r}, URL, headers=HEADERS, content=BODY, timeout=None)"
        " as response:\n"
        "    print(response.status_code, response.reason_phrase, file=sys.stderr)\n"
        "    for chunk in response.iter_raw():\n"
        "        sys.stdout.buffer.write(chunk)\n"
        "        sys.stdout.buffer.flush()\n"
    )
