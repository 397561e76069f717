"""The one streaming loop: pacing, keep-alives, batching and transport faults, for every dialect.

`play()` is an async iterator of network writes. Each yielded bytes object becomes one HTTP
chunk (Starlette's `StreamingResponse` sends one `http.response.body` per item), so a write that
splits a character is visible to the client as a read that splits it.

Pacing keeps an absolute schedule: step *n* is due at the start plus the delays of steps 1..n,
so a sleep that overshoots (every sleep does, by the loop's timer slack) delays one write, not
all that follow (relative sleeps made a 20 ms step measure 20.33 ms). A loop that falls more
than `MAX_LATE` behind (a paused process, a client that does not read) starts the schedule
again from now rather than bursting to catch up.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from streamscope.demo.scenarios import (
    BadJson,
    BadUtf8,
    CutMidFrame,
    DropTerminal,
    MidstreamError,
    Scenario,
    Stall,
)
from streamscope.demo.script import (
    BAD_UTF8_MARK_BYTES,
    BAD_UTF8_WIRE,
    Ask,
    Timed,
    finish_of,
    usage_for,
)
from streamscope.demo.wire.base import Writer

BATCH_BYTES = 64 * 1024
MAX_LATE = 0.1
"""Seconds behind schedule beyond which pacing starts over from now (no catch-up burst)."""
_TICK = 0.05  # how often a waiting stream checks for server shutdown


class DeliberateCutError(Exception):
    """Raised inside the body iterator to drop the connection mid-frame (`demo-cut`)."""


@dataclass(frozen=True, slots=True)
class Playback:
    scenario: Scenario
    ask: Ask
    steps: list[Timed]
    writer: Writer
    speed: float
    stopping: threading.Event


def split_points(data: bytes) -> list[int]:
    """Offsets that cut inside multi-byte UTF-8 characters or between CR and LF."""
    points = []
    for i in range(1, len(data)):
        byte, prev = data[i], data[i - 1]
        inside_char = (byte & 0xC0) == 0x80 and (prev & 0xC0) == 0xC0
        if inside_char or (prev == 0x0D and byte == 0x0A):
            points.append(i)
    return points


def _writes(p: Playback, data: bytes) -> list[bytes]:
    if isinstance(p.scenario.fault, BadUtf8):
        data = data.replace(BAD_UTF8_MARK_BYTES, BAD_UTF8_WIRE)
    if not p.scenario.split_writes:
        return [data]
    bounds = [0, *split_points(data), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


async def _wait(
    p: Playback, seconds: float, keepalive: float | None, start: float | None = None
) -> AsyncIterator[bytes]:
    """Sleep until `start` (now by default) + `seconds`, with a keep-alive frame every
    `keepalive` seconds inside it (their number depends only on the ratio, so it is the same
    at any speed; one whose time passed before the wait began is skipped); stop early if the
    server is shutting down."""
    frame = p.writer.keepalive() if keepalive else None
    now = time.monotonic()
    start = now if start is None else start
    marks = []
    if frame is not None and keepalive:
        marks = [start + k * keepalive for k in range(1, int(seconds / keepalive + 1e-9) + 1)]
        marks = [mark for mark in marks if mark > now]
    marks.append(start + seconds)
    for n, mark in enumerate(marks):
        while (now := time.monotonic()) < mark:
            if p.stopping.is_set():
                return
            await asyncio.sleep(min(_TICK, mark - now))
        if p.stopping.is_set():
            return
        if frame is not None and n < len(marks) - 1:
            yield frame


async def play(p: Playback) -> AsyncIterator[bytes]:
    scenario, writer, fault = p.scenario, p.writer, p.scenario.fault
    keepalive = scenario.keepalive / p.speed if scenario.keepalive else None
    buf = bytearray()
    for frame in writer.open():
        buf += frame
    deltas = 0
    due = time.monotonic()  # when the previous step was due: the schedule
    for timed in p.steps:
        delay = timed.delay / p.speed
        if delay > 0:
            for write in _writes(p, bytes(buf)):
                yield write
            buf.clear()
            if time.monotonic() - due > MAX_LATE:
                due = time.monotonic()
            async for ping in _wait(p, delay, keepalive, start=due):
                yield ping
            due += delay
            if p.stopping.is_set():
                return
        if isinstance(fault, MidstreamError) and fault.after_deltas == deltas:
            # (before the step is written: a Responses stream numbers every event it makes)
            for frame in writer.error(fault.kind, fault.message):
                buf += frame
            yield bytes(buf)
            return
        frames = writer.step(timed.step)
        if not frames:
            continue
        if getattr(fault, "after_deltas", None) == deltas:
            match fault:
                case CutMidFrame():
                    half = frames[0][: len(frames[0]) // 2]
                    yield bytes(buf) + half
                    raise DeliberateCutError(scenario.name)
                case Stall(seconds=seconds):
                    if buf:
                        yield bytes(buf)
                    async for _ in _wait(p, seconds, None):
                        pass
                    return
                case BadJson():
                    buf += writer.bad_json()
        for frame in frames:
            buf += frame
        deltas += 1
        if len(buf) >= BATCH_BYTES:
            for write in _writes(p, bytes(buf)):
                yield write
            buf.clear()
    usage = usage_for(p.ask, len(p.steps))
    for frame in writer.finish(finish_of(scenario, p.ask), usage):
        buf += frame
    if not isinstance(fault, DropTerminal):
        for frame in writer.terminal():
            buf += frame
    for write in _writes(p, bytes(buf)):
        yield write
