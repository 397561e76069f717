"""Replaying a capture through the same pipeline a live turn runs through."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace

import orjson

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse
from streamscope.core.net.options import DEFAULT_LINE_CAP
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import PipelineUpdate, StreamPipeline
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import DialectWarning

__all__ = ["line_cap", "replay_capture"]

_YIELD_EVERY = 64  # instant replay: let the event loop breathe every N reads …
YIELD_BYTES = 32 * 1024
"""… or every this many bytes fed (~5 ms of parsing: the window stays responsive while
a 100k-frame capture, read in 64 KB pieces, replays)."""
FEED_BYTES = 1 << 20
"""A read longer than this (only a hand-made capture has one: the client reads ≤ 64 KB) is
fed to the pipeline in slices, which keeps the decoder's working memory small."""


async def replay_capture(
    capture: Capture,
    *,
    speed: float | None = None,
    observer: TurnObserver | None = None,
    dialect: str | None = None,
    keep_frames: bool = True,
) -> Turn:
    """Feed a capture through the pipeline as the client did live and return the Turn.

    ``speed=None`` replays instantly (yielding to the event loop now and then); ``1.0`` at
    the recorded times, ``10.0`` ten times faster. ``dialect`` overrides the capture's.
    Times given to the pipeline and the observer are the recorded ones (seconds since the
    request), whatever the speed. The observer sees the same calls as live.
    """
    if speed is not None and speed <= 0:
        raise ValueError(f"speed must be > 0, not {speed}")
    obs = observer or TurnObserver()
    own_dialect = dialect is None
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def wait_until(t: float) -> None:
        if speed is not None:
            delay = start + t / speed - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)

    if capture.request is not None:
        r = capture.request
        try:
            body_json = orjson.loads(r.body) if r.body else {}
        except orjson.JSONDecodeError:
            body_json = {}
        obs.request_started(
            RequestSpec(
                r.method, r.url, dict(r.headers), body_json if isinstance(body_json, dict) else {}
            ),
            r.body,
            0.0,
        )
    response = capture.response
    ctype = response.header("content-type") if response is not None else None
    pipeline = StreamPipeline(
        dialect or capture.dialect,
        keep_frames=keep_frames,
        content_type=ctype,
        max_line_bytes=line_cap(capture),
        request_sent=0.0,
        headers=response.t if response is not None else None,
    )
    end = capture.end or CaptureEnd("broken", detail="capture ended without an end record")
    t_last = response.t if response is not None else 0.0
    try:
        if response is not None:
            await wait_until(response.t)
            obs.response_started(response.status, list(response.headers), response.t)
        first = True
        fed = 0  # bytes fed since the last yield (instant replay)
        for n, (t, data) in enumerate(capture.reads):
            await wait_until(t)
            if speed is None and (n % _YIELD_EVERY == _YIELD_EVERY - 1 or fed >= YIELD_BYTES):
                fed = 0
                await asyncio.sleep(0)
            fed += len(data)
            if first:
                first = False
                _initial_warnings(pipeline, response, data, t)
            obs.read(data, t)
            if len(data) > FEED_BYTES:
                update = _feed_slices(pipeline, obs, data, t)
            else:
                update = pipeline.feed(data, t)
            obs.progressed(update, t)
            t_last = t
            if update.protocol_error:
                break
    except asyncio.CancelledError:  # stopped: the turn so far, cancelled (as live)
        cancelled = StreamEnd("cancelled", elapsed=t_last)
        tail = pipeline.end_input(cancelled, t_last)
        if tail.frames or tail.events:
            obs.progressed(tail, t_last)
        obs.finished(pipeline.close(cancelled, t_last))
        raise
    t_end = end.elapsed if end.elapsed is not None else t_last
    await wait_until(t_end)
    stream_end = StreamEnd(
        end.kind,
        elapsed=end.elapsed,
        status=response.status if response is not None else None,
        headers=dict(response.headers) if response is not None else {},
        content_type=ctype,
        body=end.body or b"",
        detail=end.detail,
        timeout=end.timeout,
    )
    tail = pipeline.end_input(stream_end, t_end)
    if tail.frames or tail.events:  # (as the client does)
        obs.progressed(tail, t_end)
    turn = pipeline.close(stream_end, t_end)
    if (
        own_dialect
        and end.body is None
        and end.kind in ("http_error", "not_a_stream")
        and end.outcome is not None
    ):
        # The error body is not in the capture: keep the reason the live turn gave.
        turn = replace(turn, outcome=Outcome(end.outcome), reason=end.reason)
    obs.finished(turn)
    return turn


_CAP = re.compile(r"line longer than (\d+) bytes")


def line_cap(capture: Capture) -> int:
    """The line cap to replay ``capture`` with: the one that ended it live (its protocol
    error names it), else one no line of it can break — the live turn's cap, whatever it
    was set to, let every line through."""
    end = capture.end
    if end is not None and end.kind == "protocol_error":
        m = _CAP.search(end.detail or "")
        if m is not None:
            return int(m.group(1))
        return DEFAULT_LINE_CAP
    return max(DEFAULT_LINE_CAP, capture.reads.size + 1)


def _feed_slices(
    pipeline: StreamPipeline, obs: TurnObserver, data: bytes, t: float
) -> PipelineUpdate:
    """Feed a long read in :data:`FEED_BYTES` slices; the observer sees each slice's
    update but the last, which is returned."""
    update = pipeline.feed(data[:FEED_BYTES], t)
    for start in range(FEED_BYTES, len(data), FEED_BYTES):
        obs.progressed(update, t)
        update = pipeline.feed(data[start : start + FEED_BYTES], t)
    return update


def _initial_warnings(
    pipeline: StreamPipeline, response: CaptureResponse | None, head: bytes, t: float
) -> None:
    """The warnings the client adds before the first read (as it did live)."""
    if response is None:
        return
    ctype = response.header("content-type")
    _, guess = classify_content_type(ctype, head)
    if guess:
        pipeline.assembler.apply(DialectWarning(guess), t)
    encoding = (response.header("content-encoding") or "identity").strip().lower()
    if encoding not in ("", "identity"):
        pipeline.assembler.apply(
            DialectWarning(
                f"server compressed the body (Content-Encoding: {encoding}) despite "
                "Accept-Encoding: identity; frames show the decompressed bytes"
            ),
            t,
        )
