"""Frames of two turns side by side: which fields every run changes (ids, times), what makes
two frames the same, and pairing the frames of two turns by position or by time."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from streamscope.core.capture.frames_export import FrameRecord

__all__ = ["FrameRow", "align_frames", "frame_key", "volatile_key"]


_VOLATILE_NAMES = frozenset(("id", "created", "timestamp"))
_VOLATILE_SUFFIXES = ("_id", "Id", "_at", "Time", "_time", "_duration")


def volatile_key(key: str) -> bool:
    """Whether a JSON field is one every run changes: an id (``id``, ``tool_call_id``,
    ``responseId``) or a time (``created``, ``created_at``, ``createTime``, ``timestamp``,
    Ollama's ``eval_duration``…)."""
    return key in _VOLATILE_NAMES or key.endswith(_VOLATILE_SUFFIXES)


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if not volatile_key(k)}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def frame_key(frame: FrameRecord, *, ignore_volatile: bool = False) -> object:
    """What two frames must share to be the same: event name, data and comments (with
    ``ignore_volatile``, JSON data without its ids and timestamps)."""
    data: object = frame.data
    if ignore_volatile and frame.data and frame.data[:1] in ("{", "["):
        with contextlib.suppress(orjson.JSONDecodeError):
            data = _without_volatile(orjson.loads(frame.data))
    return frame.event, data, frame.comments


@dataclass(frozen=True, slots=True)
class FrameRow:
    """One aligned row: frame ``ia`` of A and/or ``ib`` of B (``None`` on a missing side).
    ``same``: both present with the same event name and data (ids and timestamps aside
    when ``ignore_volatile``)."""

    ia: int | None
    ib: int | None
    a: FrameRecord | None
    b: FrameRecord | None
    ignore_volatile: bool = False

    @property
    def same(self) -> bool:
        if self.a is None or self.b is None:
            return False
        ignore = self.ignore_volatile
        return frame_key(self.a, ignore_volatile=ignore) == frame_key(
            self.b, ignore_volatile=ignore
        )


def align_frames(
    a: Sequence[FrameRecord],
    b: Sequence[FrameRecord],
    *,
    by: Literal["index", "time"] = "index",
    tolerance: float = 0.005,
    ignore_volatile: bool = False,
) -> list[FrameRow]:
    """Pair frames by position, or by time: frames whose times are within ``tolerance``
    seconds pair up; otherwise the earlier frame gets a row of its own."""
    iv = ignore_volatile
    if by == "index":
        n = max(len(a), len(b))
        return [
            FrameRow(
                i if i < len(a) else None,
                i if i < len(b) else None,
                a[i] if i < len(a) else None,
                b[i] if i < len(b) else None,
                iv,
            )
            for i in range(n)
        ]
    rows: list[FrameRow] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if i < len(a) and j < len(b) and abs(a[i].t - b[j].t) <= tolerance:
            rows.append(FrameRow(i, j, a[i], b[j], iv))
            i += 1
            j += 1
        elif j >= len(b) or (i < len(a) and a[i].t < b[j].t):
            rows.append(FrameRow(i, None, a[i], None, iv))
            i += 1
        else:
            rows.append(FrameRow(None, j, None, b[j], iv))
            j += 1
    return rows
