"""Play a ``demo-bench`` plan: frames sent on an absolute schedule, each stamped with the
server's send time.

Pacing: chunk *k* is due at ``arrival + due_ms(k)`` (:func:`streamscope.demo.bench.plan`); the
loop sleeps until that instant (never "one interval more", so an overshoot delays one frame
and is not carried into the next) and builds the frames before it sleeps, so waking up costs
only the stamp. It never starts the schedule over when late: lateness is what a bench measures.

Stamps (``time.monotonic()``, seconds; one clock for every process of a machine, so a client
on the same machine compares them with its own reads):

- SSE dialects: a comment line opening each frame's block, ``: demo_sent=S demo_due=D``.
  A comment is what every conforming SSE parser must ignore (WHATWG), so the frame's own
  bytes are exactly a normal frame's and no SDK can trip on a field it does not know
  (strict response models exist).
- NDJSON (Ollama), which has no comments: two more keys at the end of each object,
  ``"demo_sent"`` and ``"demo_due"`` (Ollama's client ignores keys it does not know).

The response also carries ``x-demo-arrived: A``, the monotonic time the request arrived (the
schedule's origin): a client's send lag is ``A`` minus its own send time, and its delivery lag
per frame is its read time minus ``demo_sent``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterable

from streamscope.demo.bench import BenchPlan
from streamscope.demo.playback import DeliberateCutError
from streamscope.demo.script import ReasoningDelta, TextDelta, Usage
from streamscope.demo.wire.base import Writer

ARRIVED_HEADER = "x-demo-arrived"
_TICK = 0.05  # how often a long wait checks for server shutdown


def stamp_sse(frames: Iterable[bytes], sent: float, due: float) -> bytes:
    line = b": demo_sent=%.6f demo_due=%.6f\n" % (sent, due)
    return b"".join(line + frame for frame in frames)


def stamp_ndjson(frames: Iterable[bytes], sent: float, due: float) -> bytes:
    tail = b',"demo_sent":%.6f,"demo_due":%.6f}\n' % (sent, due)
    out = bytearray()
    for frame in frames:
        body = frame.rstrip(b"\n")
        out += body[:-1] + tail if body.endswith(b"}") else frame
    return bytes(out)


async def _sleep_until(when: float, stopping: threading.Event) -> bool:
    """Sleep until ``when`` (monotonic); ``False`` if the server began stopping."""
    while (left := when - time.monotonic()) > 0:
        if stopping.is_set():
            return False
        await asyncio.sleep(min(_TICK, left))
    return not stopping.is_set()


async def play_bench(
    plan: BenchPlan,
    writer: Writer,
    arrived: float,
    usage: Usage,
    stopping: threading.Event,
    *,
    sse: bool,
) -> AsyncIterator[bytes]:
    stamp = stamp_sse if sse else stamp_ndjson
    opening = writer.open()
    if opening:
        yield stamp(opening, time.monotonic(), arrived)
    last = len(plan.chunks) - 1
    for k, chunk in enumerate(plan.chunks):
        frames: list[bytes] = []
        if k == plan.break_at and plan.outcome == "err":
            frames += writer.error("overloaded", "demo-bench: a deliberate in-stream error")
        else:
            if chunk.reasoning:
                frames += writer.step(ReasoningDelta(chunk.reasoning))
            if chunk.text:
                frames += writer.step(TextDelta(chunk.text))
        cut = k == plan.break_at and plan.outcome == "cut"
        if k == last and not cut and plan.outcome != "err":
            frames += writer.finish("length" if plan.length_stop else "stop", usage)
            frames += writer.terminal()
        due = arrived + chunk.due_ms / 1000
        if not await _sleep_until(due, stopping):
            return
        data = stamp(frames, time.monotonic(), due)
        if cut:
            yield data[: len(data) // 2]
            raise DeliberateCutError("demo-bench")
        yield data
        if k == plan.break_at:  # (the in-stream error ends the body)
            return
