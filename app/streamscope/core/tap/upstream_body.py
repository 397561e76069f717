"""The upstream's response body read straight from its connection, one network read at a time.

httpx hands a body over one HTTP chunk at a time: h11 splits each network read (up to 256 KB
on loopback) back into the upstream's chunks (~1.6 KB for a busy SSE stream) and each one
climbs several async generator layers — most of the forwarder's CPU in a firehose. Once
``client.send(request, stream=True)`` has parsed the head, :func:`raw_body` takes the body
from the connection itself: the bytes h11 had already buffered past the head first, then the
connection's network stream (``response.extensions["network_stream"]``: plain TCP, TLS, or
either through an HTTP or SOCKS proxy), decoding the framing h11 chose for it — chunked
(extensions and trailers dropped, as httpx drops them), ``Content-Length``, or up to the
close — with ``bytes.find`` over whole reads. Each :meth:`RawBody.read` is the body's bytes of
one network read: a read's boundary is the network's, not the upstream's chunking.

Faults stay faults: a body that ends short (the upstream closed mid-chunk, or before its
length) gives every byte that came and then raises httpcore's ``RemoteProtocolError`` with
h11's words for it (``... (incomplete chunked read)``); a network error raises httpcore's
``ReadError``; a stall is a read that does not return.

h11 never sees the body; when a chunked body ends cleanly, with no byte past its end, h11 is
told the last chunk (``0\r\n\r\n``) so that it ends the message as if it had read it, and the
connection goes back to httpx's pool when the response is closed (``response.aclose()``, as
always): keep-alive to the upstream is kept — a new TLS handshake per request would cost each
request through the tap tens of milliseconds before its first byte. Any other body (a length,
up to the close, one that broke) closes its connection. Wherever it cannot be sure — another
transport, an HTTP/2 or upgraded connection, a reader it does not know, a body already
being read — :func:`raw_body` says ``None`` and the caller reads through httpx.
"""

from __future__ import annotations

from typing import Any

import h11
import httpcore
import httpx
from h11._readers import ChunkedReader, ContentLengthReader, Http10Reader
from httpcore._async.connection_pool import PoolByteStream
from httpcore._async.http11 import AsyncHTTP11Connection, HTTP11ConnectionByteStream
from httpx._client import BoundAsyncStream
from httpx._transports.default import AsyncResponseStream

__all__ = ["READ_SIZE", "UPSTREAM_ERRORS", "RawBody", "raw_body"]

READ_SIZE = 1024 * 1024
"""The most asked of one network read (asyncio hands over up to 256 KB at a time)."""

MAX_LINE = 64 * 1024
"""The longest chunk-size or trailer line accepted before the body is called malformed."""

_INCOMPLETE_CHUNKED = (
    "peer closed connection without sending complete message body (incomplete chunked read)"
)

_DATA, _CRLF, _SIZE, _TRAILER, _DONE = range(5)
_CRLF_BYTES = b"\r\n"

UPSTREAM_ERRORS = (httpcore.NetworkError, httpcore.ProtocolError, httpcore.TimeoutException)
"""What :meth:`RawBody.read` raises when the body breaks (httpx raises the same names)."""


def raw_body(response: httpx.Response) -> RawBody | None:
    """The body of ``response`` (just sent with ``stream=True``, not read yet) as a
    :class:`RawBody`, or ``None`` when only httpx should read it."""
    connection = _connection(response)
    if connection is None:
        return None
    state: Any = connection._h11_state
    network = connection._network_stream
    if (
        not isinstance(state, h11.Connection)
        or state.their_state is not h11.SEND_BODY
        or response.extensions.get("network_stream") is not network
        or not isinstance(network, httpcore.AsyncNetworkStream)
    ):
        return None
    reader = getattr(state, "_reader", None)
    buffered, closed = state.trailing_data
    if type(reader) is ChunkedReader:
        if getattr(reader, "_bytes_in_chunk", None) != 0 or getattr(reader, "_reading_trailer", 1):
            return None
        return RawBody(network, buffered, closed, chunked=True, h11_state=state)
    if type(reader) is ContentLengthReader:
        length = getattr(reader, "_remaining", None)
        if not isinstance(length, int) or length != getattr(reader, "_length", None):
            return None
        return RawBody(network, buffered, closed, length=length)
    if type(reader) is Http10Reader:
        return RawBody(network, buffered, closed)
    return None


def _connection(response: httpx.Response) -> AsyncHTTP11Connection | None:
    """The HTTP/1.1 connection ``response`` came on, found through httpx's and httpcore's
    stream wrappers — or ``None`` for anything else (another transport, HTTP/2, a mock)."""
    if response.http_version not in ("HTTP/1.1", "HTTP/1.0") or response.is_stream_consumed:
        return None
    bound = response.stream
    if type(bound) is not BoundAsyncStream:
        return None
    outer = getattr(bound, "_stream", None)
    if type(outer) is not AsyncResponseStream:
        return None
    pooled = getattr(outer, "_httpcore_stream", None)
    if type(pooled) is not PoolByteStream or getattr(pooled, "_closed", True):
        return None
    inner = getattr(pooled, "_stream", None)
    if type(inner) is not HTTP11ConnectionByteStream or getattr(inner, "_closed", True):
        return None
    connection = getattr(inner, "_connection", None)
    return connection if isinstance(connection, AsyncHTTP11Connection) else None


class RawBody:
    """A response body read from its network stream (see the module docstring): ``read()``
    until it gives ``None`` (the body's end). ``received``: the body's bytes so far."""

    def __init__(
        self,
        network: httpcore.AsyncNetworkStream,
        buffered: bytes,
        closed: bool,
        *,
        chunked: bool = False,
        length: int | None = None,
        h11_state: h11.Connection | None = None,
    ) -> None:
        self._network = network
        self._h11 = h11_state
        self._past_end = False  # (bytes came after the body's end: the connection is not reused)
        self._first: bytes | None = buffered
        self._eof = closed  # (h11 already saw the connection close: nothing more to read)
        self._chunked = chunked
        self._length = length
        self._left = 0 if chunked else (length if length is not None else -1)
        self._state = _SIZE if chunked else (_DONE if length == 0 else _DATA)
        self._pending = b""  # (a chunk-size line, CRLF or trailer line split across reads)
        self.received = 0

    async def read(self) -> bytes | None:
        """The body's bytes in the next network read (never empty), or ``None`` at its end.
        Raises ``httpcore.RemoteProtocolError`` if it ends short or is malformed, and
        httpcore's ``ReadError`` / ``ReadTimeout`` as the network stream does."""
        while self._state != _DONE:
            first, self._first = self._first, None
            if first is not None:
                data = first
            elif self._eof:
                data = b""
            else:
                data = await self._network.read(READ_SIZE)
            if not data:
                if first is not None:
                    continue  # (nothing was buffered past the head)
                self._ended()
                return None
            body = self._decode(data) if self._chunked else self._take(data)
            if body:
                self.received += len(body)
                return body
        self._hand_back()
        return None

    def _hand_back(self) -> None:
        """A chunked body has ended cleanly: let h11 end the message too, so that httpcore
        pools the connection when it is closed. h11 first reads what it still holds (the
        body's bytes that came with the head); then, between two chunks, it is told the last
        chunk (``0\r\n\r\n``) as it would have read it. Anything else: no reuse."""
        state, self._h11 = self._h11, None
        if (
            state is None
            or self._past_end
            or self._pending
            or state.their_state is not h11.SEND_BODY
        ):
            return
        try:
            event = state.next_event()
            while isinstance(event, h11.Data):
                event = state.next_event()
            if event is h11.NEED_DATA:
                reader = getattr(state, "_reader", None)
                if (
                    type(reader) is not ChunkedReader
                    or getattr(reader, "_bytes_in_chunk", 1) != 0
                    or getattr(reader, "_reading_trailer", True)
                ):
                    return  # (mid-chunk: h11 would need the body's bytes themselves)
                if state.trailing_data[0]:
                    return  # (half a chunk-size line)
                footer = getattr(reader, "_bytes_to_discard", b"")
                state.receive_data(footer + b"0\r\n\r\n")
                event = state.next_event()
        except h11.ProtocolError:
            return
        if not isinstance(event, h11.EndOfMessage):
            return

    def _ended(self) -> None:
        """The connection closed: the body's end only if it was close-delimited."""
        self._eof = True
        if self._chunked:
            raise httpcore.RemoteProtocolError(_INCOMPLETE_CHUNKED)
        if self._length is not None:
            raise httpcore.RemoteProtocolError(
                "peer closed connection without sending complete message body "
                f"(received {self._length - self._left} bytes, expected {self._length})"
            )
        self._state = _DONE

    def _take(self, data: bytes) -> bytes:
        if self._left < 0:
            return data  # (up to the close)
        if len(data) >= self._left:
            data = data[: self._left]  # (bytes past the length are not this body's)
            self._state = _DONE
        self._left -= len(data)
        return data

    def _decode(self, data: bytes) -> bytes:
        """The chunk data in ``data``, framing removed (a partial chunk's data is given as
        it comes; a line split across reads waits for the rest)."""
        if self._pending:
            data, self._pending = self._pending + data, b""
        parts: list[bytes] = []
        pos, size = 0, len(data)
        state, left = self._state, self._left
        while pos < size:
            if state == _DATA:
                end = pos + left
                if end > size:
                    parts.append(data[pos:] if pos else data)
                    left -= size - pos
                    pos = size
                    break
                parts.append(data[pos:end])
                pos, left, state = end, 0, _CRLF
            elif state == _CRLF:
                if size - pos < 2:
                    if data[pos:] != b"\r":
                        raise _malformed_footer(data[pos:])
                    self._pending = data[pos:]
                    break
                if data[pos : pos + 2] != b"\r\n":
                    raise _malformed_footer(data[pos : pos + 2])
                pos += 2
                state = _SIZE
            else:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    self._pending = data[pos:]
                    if len(self._pending) > MAX_LINE:
                        raise httpcore.RemoteProtocolError("chunk header or trailer too long")
                    break
                line = data[pos:eol]
                pos = eol + 2
                if state == _SIZE:
                    left = _chunk_size(line)
                    state = _DATA if left else _TRAILER
                elif not line:  # (the blank line after the trailers: the body's end)
                    state = _DONE
                    self._past_end = pos < size
                    break
        self._state, self._left = state, left
        if not parts:
            return b""
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _chunk_size(line: bytes) -> int:
    """A chunk-size line's size (``1a;name=value`` -> 26), as strictly as h11 reads it."""
    digits = line.split(b";", 1)[0].rstrip(b" \t")
    if not digits or digits.strip(b"0123456789abcdefABCDEF") or len(digits) > 20:
        raise httpcore.RemoteProtocolError(f"illegal chunk header: {line!r}")
    return int(digits, 16)


def _malformed_footer(data: bytes) -> httpcore.RemoteProtocolError:
    return httpcore.RemoteProtocolError(
        f"malformed chunk footer: {data!r} (expected {_CRLF_BYTES!r})"
    )
