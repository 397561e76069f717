"""What one served exchange was, as ``streamscope serve --json`` prints it
(:class:`ServedExchange`): the tap's keys, plus ``served``, the recording it was answered from.

The outcome is decided by the bytes the client was actually sent and how its connection
ended — replayed through the same pipeline as any capture (:func:`judge`) — not copied from
the recording: a client that hangs up early, or a layer that changed the playback, shows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.capture.replay import replay_capture
from streamscope.core.faults.observing import Ending
from streamscope.core.tap.exchange import exchange_line
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import EndKind
from streamscope.core.turn.pipeline import MarkedFrame, PipelineUpdate

__all__ = ["Ending", "ServedExchange", "judge"]


@dataclass(frozen=True, slots=True)
class ServedExchange:
    """One request and its answer (see the module docstring). ``served``: the recording's
    source (``None``: no recording matched; the client got the JSON error)."""

    id: int
    method: str
    path: str
    status: int | None
    outcome: str
    reason: str
    dialect: str | None
    frames: int
    bytes: int
    ttft_ms: float | None
    duration_ms: float
    served: str | None
    faults: tuple[dict[str, Any], ...] = ()
    """The faults scheduled for this request (``--fault``), applied or not, as
    :meth:`~streamscope.core.faults.AppliedFault.describe` says them."""

    def to_json(self) -> dict[str, Any]:
        """The JSON line: the tap's (:func:`~streamscope.core.tap.exchange.exchange_line`,
        ``capture`` always ``null``: serve records nothing) plus ``served``."""
        return {
            **exchange_line(
                self.id,
                self.method,
                self.path,
                self.status,
                self.outcome,
                self.reason,
                self.dialect,
                self.frames,
                self.bytes,
                self.ttft_ms,
                self.duration_ms,
                None,
                self.faults,
            ),
            "served": self.served,
        }


class _FrameCounter(TurnObserver):
    """Frames of the stream (an error's body row is none, as in the tap's line)."""

    def __init__(self) -> None:
        self.frames = 0

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.frames += sum(
            1
            for f in update.frames
            if not (isinstance(f.frame, MarkedFrame) and f.frame.role == "body")
        )


def _end_kind(ending: Ending, recorded: EndKind | None, status: int | None) -> EndKind:
    if ending == "cut":
        return "broken"
    if ending == "stopped":
        return "cancelled"
    if status is not None and status >= 400:
        return "http_error"
    if recorded in ("eof", "http_error", "not_a_stream"):
        return recorded
    return "eof"


async def judge(
    recorded: Capture,
    *,
    status: int | None,
    headers: Sequence[tuple[str, str]],
    head_t: float | None,
    sent: Sequence[tuple[float, bytes]],
    ending: Ending,
    elapsed: float,
) -> tuple[str, str, str | None, int, float | None]:
    """``(outcome, reason, dialect, frames, ttft_ms)`` of what was sent: ``sent`` holds each
    write with its time (seconds since the request arrived), ``head_t`` when the head was
    written (``None``: never)."""
    kind = _end_kind(ending, recorded.end.kind if recorded.end else None, status)
    error_body = kind in ("http_error", "not_a_stream")
    body = b"".join(data for _, data in sent) if error_body else None
    capture = Capture(
        recorded.dialect,
        recorded.request,
        CaptureResponse(status, tuple(headers), head_t or 0.0)
        if status is not None and head_t is not None
        else None,
        ReadLog(() if error_body else sent),
        CaptureEnd(kind, elapsed, body=body),
    )
    if capture.response is None and kind == "eof":
        capture = replace(capture, end=CaptureEnd("broken", elapsed))
    counter = _FrameCounter()
    turn = await replay_capture(capture, observer=counter, keep_frames=True)
    reason = turn.reason
    outcome = turn.outcome.value if turn.outcome is not None else "error"
    if ending == "client_closed" and outcome == "truncated":
        # (judged as a clean end first: what the stream said decides — an SDK hangs up once
        # the terminal signal or an error is in; only an unfinished stream is the client's)
        outcome, reason = "cancelled", f"the client closed the connection after {elapsed:.1f} s"
    elif ending == "stopped":
        reason = f"serve stopped after {elapsed:.1f} s"
    elif ending == "cut" and capture.response is None:
        reason = "the connection was dropped before any response (as recorded)"
    ttft = turn.timings.ttft
    dialect = turn.dialect if capture.response is not None else None
    return (
        outcome,
        reason,
        dialect,
        counter.frames,
        round(ttft * 1000, 1) if ttft is not None else None,
    )


def judge_in_thread(**kwargs: Any) -> tuple[str, str, str | None, int, float | None]:
    """:func:`judge` on an event loop of its own (for a worker thread: the serving loop's
    timing is not disturbed by the parsing)."""
    return asyncio.run(judge(**kwargs))
