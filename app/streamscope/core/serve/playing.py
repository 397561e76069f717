"""Carrying out one :class:`~streamscope.core.serve.playback.Playback` on a connection:
the head, each write at its offset from the request's arrival (divided by the speed), then
the end — the last chunk, a cut or a stall (:class:`PlaybackRun`).

Each write is one ``transport.write`` and waits until it has left for the kernel (the
connection's write buffer limit is 0), so the next one's time is the time it is sent, and a
cut (``transport.abort()``) comes after the bytes before it are out.
"""

from __future__ import annotations

import asyncio
import http
from collections.abc import Callable
from typing import Any

import h11

from streamscope.core.faults.playback import Playback
from streamscope.core.serve.report import Ending

__all__ = ["PlaybackRun", "status_phrase"]

_YIELD_EVERY = 64  # writes without a wait (--fast): let other connections run this often
SPIN_S = 0.0015
"""How long before a write's time the wait stops sleeping and yields turn after turn."""


class PlaybackRun:
    """One playback carried out; ``sent`` (each write with its time since the arrival) and
    ``head_t`` (when the head was written, ``None``: never) say what left. ``send`` frames an
    h11 event as bytes; ``speed`` ``None``: no waits; ``head_only``: the answer to a HEAD."""

    def __init__(
        self,
        playback: Playback,
        arrived: float,
        *,
        send: Callable[[Any], bytes],
        writer: asyncio.StreamWriter,
        speed: float | None,
        head_only: bool = False,
    ) -> None:
        self.playback = playback
        self.arrived = arrived
        self.send = send
        self.writer = writer
        self.head_only = head_only
        self.loop = asyncio.get_running_loop()
        self.sent: list[tuple[float, bytes]] = []
        self.head_t: float | None = None
        self.scale = 0.0 if speed is None else 1.0 / speed

    async def _until(self, offset: float) -> bool:
        """Wait until ``offset`` (recorded seconds) after the arrival; whether it waited.

        The last :data:`SPIN_S` are waited by yielding to the loop turn after turn (other
        connections keep being served): a plain sleep wakes up to a millisecond late, as
        the selector's timeout is rounded up to whole milliseconds. Measured by
        ``tests/benchmarks/bench_serve.py`` (speed 1, 400 reads, 1–20 ms gaps) on a busy
        2-core machine, three runs each: p99 offset error 5.6–7.8 ms with, 7.5–75 ms
        without; on a quiet one (load < 1), p99 1.55–1.68 ms with (target 2 ms; in
        ``run_all.py``'s table)."""
        target = self.arrived + offset * self.scale
        delay = target - self.loop.time()
        if delay <= 0:
            return False
        if delay > SPIN_S:
            await asyncio.sleep(delay - SPIN_S)
        while self.loop.time() < target:
            await asyncio.sleep(0)
        return True

    async def _out(self, data: bytes) -> None:
        self.writer.transport.write(data)
        await self.writer.drain()

    async def play(self) -> Ending:
        """Carry the playback out; how it ended (a stall ends by being cancelled)."""
        pb, send, loop = self.playback, self.send, self.loop
        if pb.status is None:  # no response was recorded
            if pb.end == "stall":
                await loop.create_future()
            await self._until(pb.ends_at)
            self.writer.transport.abort()
            return "cut"
        await self._until(pb.headers_at)
        headers = [(name.encode("ascii"), value.encode("latin-1")) for name, value in pb.headers]
        head = h11.Response(status_code=pb.status, headers=headers, reason=status_phrase(pb.status))
        await self._out(send(head))
        self.head_t = loop.time() - self.arrived
        bodiless = self.head_only or pb.status in (204, 304)
        unwaited = 0
        for offset, data in pb.writes:
            if await self._until(offset):
                unwaited = 0
            else:
                unwaited += 1
                if unwaited % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
            if not bodiless:
                await self._out(send(h11.Data(data=data)))
                self.sent.append((loop.time() - self.arrived, data))
        await self._until(pb.ends_at)
        if pb.end == "close":
            await self._out(send(h11.EndOfMessage()))
            return "close"
        if pb.end == "cut":
            self.writer.transport.abort()
            return "cut"
        await loop.create_future()  # stall: until the client hangs up (or serve stops)
        return "stopped"  # pragma: no cover - the future never resolves


def status_phrase(status: int) -> bytes:
    """The reason phrase of an HTTP status (``b""`` for one without)."""
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""
