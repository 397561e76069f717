"""A recorded exchange as what the server does: when it writes the head, each write with its
offset from the request's arrival, and how the answer ends — a
:class:`~streamscope.core.faults.playback.Playback`, the one type the faults transform too.

:func:`playback_of` is the one place that turns a capture into a playback; the serving loop
(:mod:`.exchange`) only carries a playback out. A layer that changes what is served (a fault
on cue) is a function ``Playback -> Playback`` applied in between, see
:class:`~streamscope.core.serve.server.ServeServer`'s ``transform``.

How a capture's end becomes the playback's end:

=======================================  ==========================================================
capture ``end.kind``                     playback
=======================================  ==========================================================
``eof``, ``http_error``, ``not_a_stream`` ``close``: the body ends cleanly at the recorded time
``broken``, no end line                   ``cut``: the connection is dropped after the last read
``idle_timeout``, ``first_byte_timeout``, ``stall``: silence, the connection open, until the
``cancelled``, ``protocol_error``          client hangs up (the recording ends where the client
                                          stopped reading: the server never ended it)
``connect_error`` (no response)           ``cut`` before any head
=======================================  ==========================================================

Headers are the recorded ones minus those that belong to one connection (hop-by-hop, and those
a ``Connection`` header names), ``Content-Encoding`` (a capture holds the body decoded: the
client and the tap decompress before recording) and ``Content-Length`` unless it is exactly the
size of a body that ends cleanly (otherwise the body is sent chunked to an HTTP/1.1 client). A
header that is not valid HTTP/1.1 (a name that is not a token, a value with CR, LF or NUL, or
with a character that is not one byte of Latin-1, as header values are sent) is dropped too.
"""

from __future__ import annotations

import re

from streamscope.core.capture.format import Capture
from streamscope.core.faults.playback import End, Playback, Write

__all__ = ["DROPPED_HEADERS", "Playback", "playback_of"]

DROPPED_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-encoding",
        "content-length",
    }
)
"""Recorded response headers never served as recorded (``content-length`` is put back when it
fits, see the module docstring)."""

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_BAD_VALUE = re.compile(r"[\r\n\x00]")

_CLOSE_KINDS = frozenset({"eof", "http_error", "not_a_stream"})
_CUT_KINDS = frozenset({"broken", "connect_error"})


def playback_of(capture: Capture) -> Playback:
    """The playback of a recorded exchange (see the module docstring)."""
    end = capture.end
    kind = end.kind if end is not None else "broken"
    response = capture.response
    writes = [(max(t, 0.0), data) for t, data in capture.reads if data]
    if response is None:
        last = end.elapsed if end is not None and end.elapsed is not None else 0.0
        action: End = "cut" if kind in _CUT_KINDS or kind == "eof" else "stall"
        return Playback(None, (), (), action, 0.0, max(last, 0.0), dialect=capture.dialect)
    head_at = max(response.t, 0.0)
    if not writes and end is not None and end.body and kind in ("http_error", "not_a_stream"):
        writes = [(head_at, end.body)]  # (an error body is kept in the end record, not as reads)
    writes = [(max(t, head_at), data) for t, data in writes]
    for i in range(1, len(writes)):  # times never go back (a hand-made capture may)
        if writes[i][0] < writes[i - 1][0]:
            writes[i] = (writes[i - 1][0], writes[i][1])
    last = writes[-1][0] if writes else head_at
    end_at = end.elapsed if end is not None and end.elapsed is not None else last
    end_at = max(end_at, last)
    if kind in _CLOSE_KINDS:
        action = "close"
    elif kind in _CUT_KINDS:
        action, end_at = "cut", last
    else:
        action = "stall"
    size = sum(len(data) for _, data in writes)
    return Playback(
        response.status,
        served_headers(response.headers, size if action == "close" else None),
        tuple(Write(t, data) for t, data in writes),
        action,
        head_at,
        end_at,
        dialect=capture.dialect,
    )


def served_headers(
    headers: tuple[tuple[str, str], ...], body_size: int | None
) -> tuple[tuple[str, str], ...]:
    """The recorded headers as served (see the module docstring); ``body_size``: the size of
    a body that ends cleanly (``None``: it does not)."""
    named = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == "connection"
        for token in value.split(",")
    }
    encoded = any(
        name.lower() == "content-encoding" and value.strip().lower() not in ("", "identity")
        for name, value in headers
    )
    kept: list[tuple[str, str]] = []
    length: tuple[int, str, str] | None = None  # (where it was, its name, its value)
    for name, value in headers:
        low = name.lower()
        if not _TOKEN.match(name) or _BAD_VALUE.search(value) or not _latin1(value):
            continue
        if low == "content-length" and length is None:
            length = (len(kept), name, value.strip())
        if low in DROPPED_HEADERS or low in named:
            continue
        kept.append((name, value))
    if body_size is not None and not encoded and length is not None:
        at, name, value = length
        if value == str(body_size):
            kept.insert(at, (name, value))
    return tuple(kept)


def _latin1(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True
