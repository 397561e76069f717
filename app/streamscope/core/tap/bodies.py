"""The bodies as they pass through the tap's forwarder: the request's, streamed up to the
upstream (:func:`read_request`), and the response's, written down to the client
(:class:`ClientWriter`).

A request body is read up to :data:`RECORDED_BODY_LIMIT` bytes before the exchange starts;
that much is what the recording keeps. A longer body is not held whole: the rest goes up to
the upstream as it arrives, and only the first :data:`RECORDED_BODY_LIMIT` bytes are
recorded (the start message says the body was cut for the recording).

The response body: a read that finds the client idle is written at once, alone, by the
reader (a paced stream keeps its reads' boundaries and timing); reads that queue while a
write is under way — one the client's socket made wait, or a burst of upstream reads taken
from one network read — leave together as one write, from a task, and the reader reads on
unless :data:`CLIENT_WRITE_AHEAD` bytes wait. The recording still hears of every upstream
read, with its own time: only the client's writes are joined.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

__all__ = [
    "CLIENT_WRITE_AHEAD",
    "RECORDED_BODY_LIMIT",
    "ClientWriter",
    "RequestBody",
    "read_request",
]

RECORDED_BODY_LIMIT = 8 * 1024 * 1024
"""Bytes of a request body the recording keeps (chat requests with long contexts and a few
images fit well below it); a longer body is streamed to the upstream whole and recorded cut."""

CLIENT_WRITE_AHEAD = 256 * 1024
"""Bytes of a response read from the upstream but not yet written to the client, beyond
which reading the upstream waits for the client (a slow client slows its upstream, as it
would without the tap, instead of filling this process's memory)."""

Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class RequestBody:
    """A request's body as the forwarder has it: ``head``, what the recording keeps — all of
    it, unless the body is longer than :data:`RECORDED_BODY_LIMIT` (``truncated``: then
    :meth:`upstream` gives the whole body, the rest as it arrives). ``gone`` is done once
    the client has hung up — while the body is still arriving, or afterwards (it is watched
    from when the body is all in)."""

    def __init__(self, head: bytes, spill: bytes, more: bool, receive: Receive) -> None:
        self.head = head
        self._spill = spill
        self._more = more
        self._receive = receive
        self.gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watcher: asyncio.Future[None] | None = None
        if not more:
            self._watch()

    @property
    def truncated(self) -> bool:
        """Whether the recording gets only the body's first bytes."""
        return bool(self._spill)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()

    async def upstream(self) -> AsyncIterator[bytes]:
        """The whole body, for the upstream: the head, then the rest as it arrives."""
        yield self.head
        spill, self._spill = self._spill, b""
        if spill:
            yield spill
        while self._more:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._hung_up()
                await asyncio.Future()  # (the exchange is cancelled, as the client has gone)
            self._more = bool(message.get("more_body"))
            if not self._more:
                self._watch()
            chunk = message.get("body", b"")
            if chunk:
                yield chunk

    def _watch(self) -> None:
        """The body is all in: from here on, only a hang-up can come."""
        self._watcher = asyncio.ensure_future(_disconnected(self._receive))
        self._watcher.add_done_callback(lambda _f: self._hung_up())

    def _hung_up(self) -> None:
        if not self.gone.done():
            self.gone.set_result(None)


async def read_request(receive: Receive, limit: int | None = None) -> RequestBody | None:
    """The request's body, as far as ``limit`` (default :data:`RECORDED_BODY_LIMIT`) bytes
    and one piece more, or ``None`` if the client hung up before."""
    limit = RECORDED_BODY_LIMIT if limit is None else limit
    parts: list[bytes] = []
    size = 0
    more = True
    while more and size <= limit:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        if chunk:
            parts.append(chunk)
            size += len(chunk)
        more = bool(message.get("more_body"))
    whole = parts[0] if len(parts) == 1 else b"".join(parts)
    del parts
    if size <= limit:
        return RequestBody(whole, b"", more, receive)
    return RequestBody(whole[:limit], whole[limit:], more, receive)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class ClientWriter:
    """Writes a response body to the client (see the module docstring): :meth:`put` each
    upstream read, then :meth:`close` (writes what is still queued) or :meth:`cancel`.

    A read put while the client is idle is written at once, by the caller; one put while a
    write is under way, or after another read in the same turn of the event loop (a burst
    read from one network read), is queued, and a task writes all that queued as one write
    once the caller yields."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._loop = asyncio.get_running_loop()
        self._queued: list[bytes] = []
        self.queued_bytes = 0
        self._writing: asyncio.Future[None] | None = None  # (the task writing what queued)
        self._room: asyncio.Future[None] | None = None
        self._wrote_this_turn = False
        self.writes = 0  # (how many writes the client got: fewer than reads when joined)

    async def put(self, chunk: bytes) -> None:
        writing = self._writing
        if writing is None and not self._wrote_this_turn:
            self._wrote_this_turn = True
            self._loop.call_soon(self._turn_ended)
            self.writes += 1
            await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
            return
        if writing is not None and writing.done():
            writing.result()  # (the write failed: say why here)
        self._queued.append(chunk)
        self.queued_bytes += len(chunk)
        if writing is None:
            self._writing = asyncio.ensure_future(self._write_queued())

    async def room(self) -> None:
        """Wait until the client has taken what was queued, if more than
        :data:`CLIENT_WRITE_AHEAD` bytes are."""
        while self.queued_bytes > CLIENT_WRITE_AHEAD and (writing := self._writing) is not None:
            room = self._room = self._loop.create_future()
            await asyncio.wait({room, writing}, return_when=asyncio.FIRST_COMPLETED)
            if writing.done():
                writing.result()

    async def close(self) -> None:
        """Write what is still queued (the body's end is the caller's)."""
        while (writing := self._writing) is not None:
            await writing

    def cancel(self) -> None:
        if self._writing is not None:
            self._writing.cancel()

    def _turn_ended(self) -> None:
        self._wrote_this_turn = False

    async def _write_queued(self) -> None:
        while self._queued:
            batch, self._queued = self._queued, []
            self.queued_bytes = 0
            room, self._room = self._room, None
            if room is not None and not room.done():
                room.set_result(None)
            body = batch[0] if len(batch) == 1 else b"".join(batch)
            self.writes += 1
            await self._send({"type": "http.response.body", "body": body, "more_body": True})
        self._writing = None
