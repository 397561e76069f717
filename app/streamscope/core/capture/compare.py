"""Two turns side by side: timing, outcome, frame counts, text, tool calls and frames.

    a = await load_side(capture_a, "gateway A")
    b = await load_side(capture_b, "gateway B")
    result = compare_turns(a, b)  # or compare_captures(capture_a, capture_b), in a thread
    result.differences()          # ["finish reason: stop → length", "text: 12 words differ"]
    result.metrics                # rows for a table (timings flagged, never a "difference")
    result.text                   # word-level diff (text_diff.py: bounded, coarsened if huge)
    result.tool_calls             # per index: name, and the arguments compared as JSON
    align_frames(a.frames, b.frames, by="time")

Timings (TTFT, tokens/s, duration, inter-frame gaps) always differ a little between two runs,
so they are shown but never counted as differences. Tool-call arguments are compared as
parsed JSON (key order and spacing do not matter), path by path; when either side does not
parse, as raw strings.

The frames' payloads are compared too, frame by frame (by index): with ``ignore_volatile``
(the default) as JSON without the fields every run changes — ids and timestamps, see
:func:`volatile_key` — so two runs of the same answer compare equal; without it, byte for
byte, so a changed ``id`` or ``created`` is a difference.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamscope.core.capture.format import Capture
from streamscope.core.capture.frame_align import FrameRow, align_frames, frame_key, volatile_key
from streamscope.core.capture.frames_export import FrameRecord, capture_frames
from streamscope.core.capture.json_diff import ValueChange, json_diff
from streamscope.core.capture.text_diff import TextDiff, WordOp, text_diff, word_diff
from streamscope.core.turn.model import ToolCallState, Turn

__all__ = [
    "Comparison",
    "FrameRow",
    "GapStats",
    "Metric",
    "TextDiff",
    "ToolCallComparison",
    "TurnSide",
    "ValueChange",
    "WordOp",
    "align_frames",
    "compare_captures",
    "compare_turns",
    "frame_key",
    "gap_stats",
    "json_diff",
    "load_side",
    "volatile_key",
    "word_diff",
]


@dataclass(frozen=True, slots=True)
class TurnSide:
    """One side of a comparison: a label, the Turn and its frames."""

    label: str
    turn: Turn
    frames: tuple[FrameRecord, ...] = ()


async def load_side(capture: Capture, label: str, *, dialect: str | None = None) -> TurnSide:
    """Replay ``capture`` (instantly) into a side."""
    frames, turn = await capture_frames(capture, dialect=dialect)
    return TurnSide(label, turn, tuple(frames))


# -- metrics ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GapStats:
    """Inter-frame gaps, in seconds (``count`` gaps; zeros when there are none)."""

    count: int = 0
    mean: float = 0.0
    median: float = 0.0
    p95: float = 0.0
    max: float = 0.0


def gap_stats(frames: Sequence[FrameRecord]) -> GapStats:
    times = [f.t for f in frames]
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    if not gaps:
        return GapStats()
    p95 = gaps[min(len(gaps) - 1, math.ceil(0.95 * len(gaps)) - 1)]
    return GapStats(len(gaps), statistics.fmean(gaps), statistics.median(gaps), p95, gaps[-1])


@dataclass(frozen=True, slots=True)
class Metric:
    """One row of the metrics table. ``timing`` rows (times, and the byte count, which
    ids and timestamps in the frames change) are shown but never count as differences."""

    name: str
    a: str
    b: str
    timing: bool = False

    @property
    def differs(self) -> bool:
        return self.a != self.b


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f} s"


def _ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def _value(value: object) -> str:
    return "—" if value is None else str(value)


def _outcome(turn: Turn) -> str:
    return turn.outcome.value if turn.outcome is not None else "—"


def _events(frames: Sequence[FrameRecord]) -> int:
    return sum(1 for f in frames if f.event is not None)


def _comments(frames: Sequence[FrameRecord]) -> int:
    return sum(1 for f in frames if f.event is None and f.comments)


def _duration(turn: Turn) -> float | None:
    t = turn.timings
    if t.end is None or t.request_sent is None:
        return None
    return t.end - t.request_sent


def _metrics(a: TurnSide, b: TurnSide) -> list[Metric]:
    rows: list[Metric] = []

    def row(name: str, fa: object, fb: object, *, timing: bool = False) -> None:
        rows.append(Metric(name, str(fa), str(fb), timing))

    ta, tb = a.turn, b.turn
    row("outcome", _outcome(ta), _outcome(tb))
    row("finish reason", _value(ta.finish_reason), _value(tb.finish_reason))
    row("terminal signal", _value(ta.terminal_signal), _value(tb.terminal_signal))
    row("HTTP status", _value(ta.status), _value(tb.status))
    row("model", _value(ta.model), _value(tb.model))
    row("output tokens", _value(ta.output_tokens), _value(tb.output_tokens))
    row("input tokens", _value(ta.input_tokens), _value(tb.input_tokens))
    row("text (chars)", len(ta.text), len(tb.text))
    row("reasoning (chars)", len(ta.reasoning), len(tb.reasoning))
    row("tool calls", len(ta.tool_calls), len(tb.tool_calls))
    row("frames", len(a.frames), len(b.frames))
    row("event frames", _events(a.frames), _events(b.frames))
    row("comment frames", _comments(a.frames), _comments(b.frames))
    row("malformed frames", ta.malformed_frames, tb.malformed_frames)
    row("events", ta.events, tb.events)
    row("warnings", len(ta.warnings), len(tb.warnings))
    row("TTFT", _seconds(ta.timings.ttft), _seconds(tb.timings.ttft), timing=True)
    ra, rb = ta.tokens_per_second(), tb.tokens_per_second()
    row(
        "tokens/s",
        "—" if ra is None else f"{ra:.1f}",
        "—" if rb is None else f"{rb:.1f}",
        timing=True,
    )
    row("duration", _seconds(_duration(ta)), _seconds(_duration(tb)), timing=True)
    row("bytes", ta.bytes_received, tb.bytes_received, timing=True)  # ids and timestamps
    ga, gb = gap_stats(a.frames), gap_stats(b.frames)
    for name in ("mean", "median", "p95", "max"):
        row(f"gap {name}", _ms(getattr(ga, name)), _ms(getattr(gb, name)), timing=True)
    return rows


# -- text -------------------------------------------------------------------------------


def _changed_words(ops: Sequence[WordOp]) -> int:
    return sum(max(len(op.a.split()), len(op.b.split())) for op in ops if op.tag != "equal")


def _changed_text(what: str, diff: TextDiff) -> list[str]:
    """``["text: 12 words differ"]`` (and how it was compared when not by words), or ``[]``."""
    changed = _changed_words(diff.ops)
    if not changed:
        return []
    how = f" (compared {diff.how}: too long to compare word by word)" if diff.coarsened else ""
    return [f"{what}: {changed} word{'s' if changed != 1 else ''} differ{how}"]


# -- tool calls -------------------------------------------------------------------------

_MISSING: Any = object()


def _parse(arguments: str) -> Any:
    try:
        return orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return _MISSING


@dataclass(frozen=True, slots=True)
class ToolCallComparison:
    """Tool call ``index`` (by position) on both sides. ``structural``: both argument
    texts parsed and ``changes`` are JSON paths; otherwise the raw strings were compared."""

    index: int
    a: ToolCallState | None
    b: ToolCallState | None
    structural: bool
    changes: tuple[ValueChange, ...] = ()

    @property
    def name_a(self) -> str | None:
        return self.a.name if self.a is not None else None

    @property
    def name_b(self) -> str | None:
        return self.b.name if self.b is not None else None

    @property
    def identical(self) -> bool:
        return (
            self.a is not None
            and self.b is not None
            and self.name_a == self.name_b
            and not self.changes
        )

    def describe(self) -> list[str]:
        """What differs, one line each (empty when identical)."""
        head = f"tool call {self.index}"
        if self.a is None:
            return [f"{head}: only in B ({self.name_b})"]
        if self.b is None:
            return [f"{head}: only in A ({self.name_a})"]
        out = []
        if self.name_a != self.name_b:
            out.append(f"{head}: name {self.name_a} → {self.name_b}")
        out += [f"{head} arguments {c.describe()}" for c in self.changes]
        return out


def _compare_call(
    index: int, a: ToolCallState | None, b: ToolCallState | None
) -> ToolCallComparison:
    if a is None or b is None:
        return ToolCallComparison(index, a, b, False)
    pa, pb = _parse(a.arguments), _parse(b.arguments)
    if pa is _MISSING or pb is _MISSING:
        changes = (
            ()
            if a.arguments == b.arguments
            else (ValueChange("(raw)", "changed", a.arguments, b.arguments),)
        )
        return ToolCallComparison(index, a, b, False, changes)
    return ToolCallComparison(index, a, b, True, tuple(json_diff(pa, pb)))


def _changed_frames(a: TurnSide, b: TurnSide, ignore_volatile: bool) -> int:
    """Frames (paired by index) whose payloads differ."""
    return sum(
        1
        for fa, fb in zip(a.frames, b.frames, strict=False)
        if frame_key(fa, ignore_volatile=ignore_volatile)
        != frame_key(fb, ignore_volatile=ignore_volatile)
    )


# -- the comparison -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Comparison:
    """Everything compared; see the module docstring."""

    a: TurnSide
    b: TurnSide
    metrics: tuple[Metric, ...]
    text: TextDiff
    reasoning: TextDiff
    tool_calls: tuple[ToolCallComparison, ...] = field(default=())
    changed_frames: int = 0
    """Frames (paired by index) whose payloads differ."""
    ignore_volatile: bool = True
    """Whether ids and timestamps in the frames were left out of the comparison."""

    @property
    def text_ops(self) -> tuple[WordOp, ...]:
        return self.text.ops

    @property
    def reasoning_ops(self) -> tuple[WordOp, ...]:
        return self.reasoning.ops

    @property
    def text_identical(self) -> bool:
        return all(op.tag == "equal" for op in self.text_ops)

    def differences(self) -> list[str]:
        """What differs, timings excluded (empty: the two turns are the same)."""
        out = [f"{m.name}: {m.a} → {m.b}" for m in self.metrics if m.differs and not m.timing]
        out += _changed_text("text", self.text) + _changed_text("reasoning", self.reasoning)
        for call in self.tool_calls:
            out += call.describe()
        if self.changed_frames:
            paired = min(len(self.a.frames), len(self.b.frames))
            aside = " (ids and timestamps aside)" if self.ignore_volatile else ""
            out.append(f"frames: {self.changed_frames} of {paired} differ in content{aside}")
        return out

    def frame_rows(self, by: Literal["index", "time"] = "index") -> list[FrameRow]:
        """The frames aligned, compared as this comparison compares them."""
        return align_frames(
            self.a.frames, self.b.frames, by=by, ignore_volatile=self.ignore_volatile
        )


def compare_turns(a: TurnSide, b: TurnSide, *, ignore_volatile: bool = True) -> Comparison:
    calls_a, calls_b = a.turn.tool_calls, b.turn.tool_calls
    calls = tuple(
        _compare_call(
            i,
            calls_a[i] if i < len(calls_a) else None,
            calls_b[i] if i < len(calls_b) else None,
        )
        for i in range(max(len(calls_a), len(calls_b)))
    )
    return Comparison(
        a,
        b,
        tuple(_metrics(a, b)),
        text_diff(a.turn.text, b.turn.text),
        text_diff(a.turn.reasoning, b.turn.reasoning),
        calls,
        _changed_frames(a, b, ignore_volatile),
        ignore_volatile,
    )


def compare_captures(
    a: Capture,
    b: Capture,
    labels: tuple[str, str] = ("A", "B"),
    *,
    ignore_volatile: bool = True,
) -> Comparison:
    """Replay both captures (instantly) and compare them. Synchronous, with an event loop of
    its own, so that a window runs it in a worker thread (replay and diff are CPU work)."""

    async def sides() -> tuple[TurnSide, TurnSide]:
        return await load_side(a, labels[0]), await load_side(b, labels[1])

    return compare_turns(*asyncio.run(sides()), ignore_volatile=ignore_volatile)
