"""A turn's frames as JSON Lines, for scripts: one object per frame, in arrival order.

    {"i": 0, "t": 0.2123, "event": "message", "data": "{\\"id\\":\\"chatcmpl-…\\", …}"}
    {"i": 1, "t": 0.2151, "event": null, "data": null, "comments": ["keep-alive"]}

``t`` is seconds since the request was sent; ``event`` the SSE event name (``"message"`` by
default; NDJSON lines are ``"message"`` too) or ``null`` for a block that dispatched no
event (a comment, a run of stray blank lines — one frame however long); ``data`` the event's
data (``null`` likewise); ``comments`` only when the block had some; ``incomplete: true``
only for a block the stream ended inside of. ``role`` marks the rows that are no decoded
block: ``"body"``, a response body that was no stream (an HTTP error's JSON, an HTML page),
and ``"oversized"``, the first bytes of a block whose line broke the line cap — ``data`` is
their text::

    {"i": 0, "t": 0.0121, "event": null, "data": "{\"error\":{…}}", "role": "body"}

The frames are exactly the Frames table's rows.

Frames come from a capture (:func:`capture_frames`: the capture is replayed through the
pipeline), from the Frames table's log (:func:`records_from_log`) or from each frame's exact
bytes (:func:`records_from_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from streamscope.core.capture.format import Capture
from streamscope.core.capture.replay import replay_capture
from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.pipeline import MarkedFrame, PipelineUpdate
from streamscope.core.wire.dialects.base import Framing
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import RawFrame, SSEDecoder

__all__ = [
    "FrameCollector",
    "FrameRecord",
    "capture_frames",
    "record_of",
    "records_from_bytes",
    "records_from_log",
    "to_jsonl",
    "write_jsonl",
]


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One frame for export and comparison (see the module docstring)."""

    t: float
    event: str | None
    data: str | None
    comments: tuple[str, ...] = ()
    raw: bytes = b""
    complete: bool = True
    role: str | None = None

    def to_json(self, index: int) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "i": index,
            "t": round(self.t, 6),
            "event": self.event,
            "data": self.data,
        }
        if self.comments:
            obj["comments"] = [c.strip() for c in self.comments]
        if not self.complete:
            obj["incomplete"] = True
        if self.role is not None:
            obj["role"] = self.role
        return obj


def record_of(frame: RawFrame, t: float) -> FrameRecord:
    """A record from a decoded frame received at ``t`` (seconds since the request)."""
    if isinstance(frame, MarkedFrame):
        return _marked(frame.raw, t, frame.role)
    ev = frame.event
    return FrameRecord(
        t,
        ev.event if ev is not None else None,
        ev.data if ev is not None else None,
        frame.comments,
        frame.raw,
        frame.complete,
    )


def records_from_bytes(
    frames: Iterable[tuple[bytes, float]], framing: Framing
) -> list[FrameRecord]:
    """Records from each frame's exact bytes and time (one record per input frame)."""
    out: list[FrameRecord] = []
    for raw, t in frames:
        decoder = NDJSONDecoder() if framing == "ndjson" else SSEDecoder()
        decoded = decoder.feed_frames(raw) + decoder.close_frames()
        dispatched = next((f for f in decoded if f.event is not None), None)
        comments = tuple(c for f in decoded for c in f.comments)
        if dispatched is not None and dispatched.event is not None:
            ev = dispatched.event
            out.append(FrameRecord(t, ev.event, ev.data, comments, raw))
        else:
            complete = all(f.complete for f in decoded)
            out.append(FrameRecord(t, None, None, comments, raw, complete))
    return out


def _marked(raw: bytes, t: float, role: str) -> FrameRecord:
    return FrameRecord(t, None, raw.decode("utf-8", "replace"), (), raw, True, role)


def records_from_log(log: FrameLog) -> list[FrameRecord]:
    """The records of every row of a Frames table's log (a body or oversized row as such)."""
    if not len(log):
        return []
    framing = log.framing
    if framing is None:
        # The first frame that is not blank lines says (NDJSON blank lines are frames too).
        row = next((r for r in range(len(log)) if not log.blank_lines(r)), 0)
        first = log.frame_bytes(row, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        framing = "ndjson" if first in (b"{", b"[") else "sse"
    out: list[FrameRecord] = []
    for row in range(len(log)):
        raw, t = log.frame_bytes(row), log.time(row)
        role = log.role(row)
        if role is not None:
            out.append(_marked(raw, t, role))
        else:
            out += records_from_bytes([(raw, t)], framing)  # type: ignore[arg-type]
    return out


class FrameCollector(TurnObserver):
    """An observer keeping every frame the pipeline reports (as the Frames table does)."""

    def __init__(self) -> None:
        self.records: list[FrameRecord] = []
        self.turn: Turn | None = None

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        for parsed in update.frames:
            self.records.append(record_of(parsed.frame, t))

    def finished(self, turn: Turn) -> None:
        self.turn = turn


async def capture_frames(
    capture: Capture, *, dialect: str | None = None
) -> tuple[list[FrameRecord], Turn]:
    """Replay ``capture`` instantly; its frames and the Turn it gives."""
    collector = FrameCollector()
    turn = await replay_capture(capture, observer=collector, dialect=dialect)
    return collector.records, turn


def to_jsonl(records: Iterable[FrameRecord]) -> bytes:
    """One JSON object per line (UTF-8, non-ASCII kept), a newline after each."""
    return b"".join(orjson.dumps(r.to_json(i)) + b"\n" for i, r in enumerate(records))


def write_jsonl(path: Path, records: Iterable[FrameRecord]) -> int:
    """Write the records to ``path``; returns how many lines were written."""
    data = to_jsonl(records)
    path.write_bytes(data)
    return data.count(b"\n")
