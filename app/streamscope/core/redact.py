"""Secrets never leave memory: the one scrubber everything written passes, and masking for
headers and URLs shown, logged or saved.

:class:`Scrubber` knows a request's secrets (the key and every header or query value marked
secret) and masks them — plain, URL-encoded, hex, base64 at any alignment — in whatever is
persisted or exported: a capture's reads (joined: :class:`StreamScrubber` catches a key split
across reads), response headers of any name, error bodies, the saved answer, the reason, the
warnings, log lines. Bytes are masked with ``*`` of the same length, so a capture keeps its
frames' lengths and read boundaries. What the user sees live is not scrubbed; what is written
is.

Masked by name: ``Authorization``, ``Proxy-Authorization``, ``x-api-key``, ``x-goog-api-key``,
``api-key``, ``Cookie`` and ``Set-Cookie`` headers, and ``key=`` (also ``api_key=``, ``api-key=``,
``token=`` …) query parameters.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

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
SECRET_QUERY_KEYS = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token"})

MIN_SECRET = 8
"""Shorter values are not treated as secrets (masking them would mangle ordinary text)."""


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
    """The secrets a request carries (key headers without their scheme, ``key=`` values,
    a URL's password), so that anything a server echoes back can be masked."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            scheme, sep, rest = value.partition(" ")
            found.append(rest if sep and scheme.lower() in ("bearer", "basic", "token") else value)
    parts = urlsplit(url)
    for key, value in parse_qsl(parts.query):
        if key.lower() in SECRET_QUERY_KEYS:
            found.append(value)
    if parts.password:
        found.append(parts.password)
    return tuple(v.strip().encode() for v in found if len(v.strip()) >= MIN_SECRET)


def encodings(secret: bytes) -> set[bytes]:
    """Every form a server might echo ``secret`` in: as is, URL-encoded, hex, JSON with
    escaped slashes, and base64 (standard and URL-safe) at each of the three alignments —
    only the characters that depend on the secret alone, so it is found inside any base64."""
    forms = {
        secret,
        quote(secret, safe="").encode(),
        quote_plus(secret, safe="").encode(),
        secret.hex().encode(),
        secret.hex().upper().encode(),
        secret.replace(b"/", b"\\/"),
    }
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + secret + bytes(3))
        first = -(-8 * shift // 6)  # the first character made of the secret's bits only
        last = 8 * (shift + len(secret)) // 6  # ... and one past the last
        core = encoded[first:last]
        forms.add(core)
        forms.add(core.replace(b"+", b"-").replace(b"/", b"_"))
    return {f for f in forms if len(f) >= MIN_SECRET}


class Scrubber:
    """Masks the given secrets, in every form :func:`encodings` lists, in bytes, text and
    JSON-like values. Built from a request with :meth:`for_request`; an empty scrubber
    changes nothing."""

    def __init__(self, secrets: Iterable[bytes | str] = ()) -> None:
        self.secrets = tuple(
            dict.fromkeys(s.encode() if isinstance(s, str) else s for s in secrets)
        )
        patterns: set[bytes] = set()
        for secret in self.secrets:
            if len(secret) >= MIN_SECRET:
                patterns |= encodings(secret)
        self.patterns = tuple(patterns)  # (any order: every occurrence of each is masked)
        self._text = tuple(p.decode() for p in self.patterns)
        self.longest = max(map(len, self.patterns), default=0)

    @classmethod
    def for_request(
        cls, headers: Mapping[str, str], url: str = "", *, extra: Iterable[bytes | str] = ()
    ) -> Scrubber:
        """The scrubber for a request: its secret headers and query values, and ``extra``."""
        return cls([*secret_values(headers, url), *extra])

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def bytes(self, data: bytes) -> bytes:
        """``data`` with every secret masked (same length: ``*`` for each byte)."""
        if not self.patterns or not data:
            return data
        spans = _spans(data, self.patterns)
        if not spans:
            return data
        out = bytearray(data)
        for start, end in spans:
            out[start:end] = b"*" * (end - start)
        return bytes(out)

    def text(self, text: str) -> str:
        """``text`` with every secret masked (same length)."""
        if not self.patterns or not text:
            return text
        spans = _spans(text, self._text)
        if not spans:
            return text
        chars = list(text)
        for start, end in spans:
            chars[start:end] = "*" * (end - start)
        return "".join(chars)

    def value(self, obj: Any) -> Any:
        """A JSON-like value (dicts, lists, tuples, strings, bytes …) with secrets masked
        in every string, keys included."""
        if not self.patterns:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, bytes):
            return self.bytes(obj)
        if isinstance(obj, dict):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return type(obj)(self.value(v) for v in obj)
        return obj

    def headers(self, pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """Header pairs masked by name, and any secret in any value (an echoing server)."""
        return tuple((k, self.text(mask_value(k, v))) for k, v in pairs)

    def stream(self) -> StreamScrubber:
        """A scrubber for reads as they arrive (a secret may be split across them)."""
        return StreamScrubber(self)


def _spans(data: Any, patterns: tuple[Any, ...]) -> list[tuple[int, int]]:
    """Where ``patterns`` occur in ``data`` (``bytes`` or ``str``), overlaps merged. One
    ``find`` loop per pattern: fast where they are absent, as they nearly always are."""
    found: list[tuple[int, int]] = []
    for pattern in patterns:
        start = data.find(pattern)
        while start >= 0:
            found.append((start, start + len(pattern)))
            start = data.find(pattern, start + 1)
    found.sort()
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


class StreamScrubber:
    """Masks secrets in network reads ``(t, bytes)`` as they arrive, on their joined
    content: a read that ends with what may be the start of a secret is held until the next
    read says whether it is. :meth:`feed` returns the reads that are safe to write (masked,
    boundaries and times kept); :meth:`release` gives the held ones up when the stream has
    gone quiet (the part that could begin a secret stays held, as its own read, until the
    end); :meth:`close` gives everything at the end."""

    def __init__(self, scrubber: Scrubber) -> None:
        self._scrubber = scrubber
        self._held: list[tuple[float, bytes]] = []
        self._prefixes = {
            p[:n] for p in scrubber.patterns for n in range(1, len(p))
        }  # what the end of a read may be the beginning of

    @property
    def held(self) -> bool:
        """Whether some read is held."""
        return bool(self._held)

    def feed(self, t: float, data: bytes) -> list[tuple[float, bytes]]:
        """One read in; the reads now safe to write out."""
        if not self._scrubber:
            return [(t, data)]
        self._held.append((t, data))
        return self._emit(self._hold_from())

    def release(self) -> list[tuple[float, bytes]]:
        """The stream is quiet: write out all but what may begin a secret."""
        if not self._held:
            return []
        return self._emit(self._hold_from(), split=True)

    def close(self) -> list[tuple[float, bytes]]:
        """The end of the stream: everything held, masked."""
        return self._emit(None)

    def _hold_from(self) -> int:
        """Where (in the held reads joined) a secret may begin that the next read would end."""
        joined = b"".join(d for _t, d in self._held)
        prefixes = self._prefixes
        for n in range(min(len(joined), self._scrubber.longest - 1), 0, -1):
            if joined[-n:] in prefixes:
                return len(joined) - n
        return len(joined)

    def _emit(self, hold_from: int | None, *, split: bool = False) -> list[tuple[float, bytes]]:
        held = self._held
        joined = self._scrubber.bytes(b"".join(d for _t, d in held))
        out: list[tuple[float, bytes]] = []
        keep: list[tuple[float, bytes]] = []
        pos = 0
        for t, data in held:
            end = pos + len(data)
            piece = joined[pos:end]
            if hold_from is None or end <= hold_from:
                out.append((t, piece))
            elif split and pos < hold_from:
                out.append((t, piece[: hold_from - pos]))
                keep.append((t, piece[hold_from - pos :]))
            else:
                keep.append((t, piece))
            pos = end
        self._held = keep
        return out


def scrub(data: bytes, secrets: Iterable[bytes]) -> bytes:
    """``data`` with every secret masked (see :class:`Scrubber`)."""
    return Scrubber(secrets).bytes(data)


# -- log lines ---------------------------------------------------------------------------------


class ScrubLogFilter(logging.Filter):
    """Masks every secret this process has met (:meth:`learn`) in the log records it sees:
    install it on each log handler that writes a file."""

    def __init__(self) -> None:
        super().__init__()
        self._scrubber = Scrubber()

    def learn(self, secrets: Iterable[bytes | str]) -> None:
        """Remember more secrets to mask."""
        self._scrubber = Scrubber([*self._scrubber.secrets, *secrets])

    def filter(self, record: logging.LogRecord) -> bool:
        if self._scrubber:
            message = record.getMessage()
            masked = self._scrubber.text(message)
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = self._scrubber.text(record.exc_text)
            if masked != message:
                record.msg, record.args = masked, ()
        return True


LOG_FILTER = ScrubLogFilter()
"""The process's log filter: every request's secrets are taught to it when the turn starts."""
