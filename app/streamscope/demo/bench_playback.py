"""Play a ``demo-bench`` plan: frames sent on an absolute schedule, each stamped with the
server's send time.

Pacing: chunk *k* is due at ``arrival + due_ms(k)`` (:func:`streamscope.demo.bench.plan`); the
loop sleeps until that instant (never "one interval more", so an overshoot delays one frame
and is not carried into the next) and builds the frames before it sleeps, so waking up costs
only handing them on. It never starts the schedule over when late: lateness is what a bench
measures.

Stamps (``time.monotonic()``, seconds; one clock for every process of a machine, so a client
on the same machine compares them with its own reads):

- SSE dialects: a comment line opening each frame's block, ``:    demo_sent=S demo_due=D``.
  A comment is what every conforming SSE parser must ignore (WHATWG), so the frame's own
  bytes are exactly a normal frame's and no SDK can trip on a field it does not know
  (strict response models exist).
- NDJSON (Ollama), which has no comments: two more keys at the end of each object,
  ``"demo_sent"`` and ``"demo_due"`` (Ollama's client ignores keys it does not know).

``demo_sent`` is right-aligned in a field of :data:`SENT_WIDTH` bytes (spaces before it: an
SSE comment's text, JSON whitespace), so it can be written into frames already framed for
the wire: the demo server stamps it as the chunk is handed to the socket
(:mod:`streamscope.demo.stamping` fills the :data:`SENT_SLOT` placeholders in
``transport.write``), after the ASGI layers and the HTTP framing — their time is the
server's, not the client's delivery lag. Without that transport (``stamp_at_write=False``),
the frames are stamped here, just before they are handed to the ASGI server.

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

SENT_WIDTH = 30
"""Bytes of the ``demo_sent`` field, its name included (``"demo_sent":`` and a monotonic time
of up to 17 characters fit), right-aligned with spaces."""
SLOT_MARK = b"\x1ademo_sent"
"""What opens a placeholder (no frame has ``\x1a``: JSON escapes control characters)."""
SENT_SLOT = {
    sse: (SLOT_MARK + (b"/sse" if sse else b"/json")).ljust(SENT_WIDTH, b"#")
    for sse in (True, False)
}
"""The placeholders of the SSE and NDJSON fields (``True``: SSE), each :data:`SENT_WIDTH`
bytes, filled by :func:`fill_slots`."""
_NAMES = {True: b"demo_sent=", False: b'"demo_sent":'}


def sent_field(t: float, sse: bool) -> bytes:
    """The ``demo_sent`` field for time ``t``, right-aligned in :data:`SENT_WIDTH` bytes (a
    time too long for it loses decimals: its length never changes)."""
    name = _NAMES[sse]
    return (name + (b"%.6f" % t)[: SENT_WIDTH - len(name)]).rjust(SENT_WIDTH)


def fill_slots(data: bytes, t: float) -> bytes:
    """``data`` with every placeholder replaced by the ``demo_sent`` field of time ``t``."""
    for sse, slot in SENT_SLOT.items():
        if slot in data:
            data = data.replace(slot, sent_field(t, sse))
    return data


def stamp_sse(frames: Iterable[bytes], sent: bytes, due: float) -> bytes:
    """``frames`` each opened by the stamp comment; ``sent``: the field or its slot."""
    line = b":" + sent + b" demo_due=%.6f\n" % due
    return b"".join(line + frame for frame in frames)


def stamp_ndjson(frames: Iterable[bytes], sent: bytes, due: float) -> bytes:
    """``frames`` each with the two stamp keys at the end; ``sent``: the field or its slot."""
    tail = b"," + sent + b',"demo_due":%.6f}\n' % due
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
    stamp_at_write: bool = False,
) -> AsyncIterator[bytes]:
    """The plan's chunks, each when it is due. ``stamp_at_write``: leave ``demo_sent`` as
    its slot, for the transport to fill as it writes the chunk (module docstring)."""
    stamp = stamp_sse if sse else stamp_ndjson
    slot = SENT_SLOT[sse]

    def sent() -> bytes:
        return slot if stamp_at_write else sent_field(time.monotonic(), sse)

    opening = writer.open()
    if opening:
        yield stamp(opening, sent(), arrived)
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
        data = stamp(frames, sent(), due)
        if cut:  # (stamped here: half a slot would reach the socket unfilled)
            yield fill_slots(data, time.monotonic())[: len(data) // 2]
            raise DeliberateCutError("demo-bench")
        yield data
        if k == plan.break_at:  # (the in-stream error ends the body)
            return
