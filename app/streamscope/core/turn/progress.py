"""A turn's progress in compact form, batched: what the views need, as arrays.

The window must keep up with tens of thousands of frames a second. Per frame, the views need
a few numbers — where its bytes are in the stream, how many, when, what kind, flags — and the
events it produced; per turn, what the reducer says changed (a
:class:`~streamscope.core.turn.model.TurnDelta`). :class:`ProgressEncoder` (a
:class:`~streamscope.core.turn.observer.TurnObserver`) turns the pipeline's updates into
:class:`Progress` batches of that shape. It runs where the stream is parsed — in the stream
worker process for live turns, in the window's process for replays — and a batch pickles
cheaply (arrays, bytes, one delta), so the UI thread does little per frame.

A frame's events travel compactly (see :class:`FrameRows`): a frame whose only event is a
text (or reasoning) delta is the span of the turn's text it added; only other frames carry
their event objects (pickling 100k small objects would cost more than the whole turn).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamscope.core.turn.model import TurnDelta
from streamscope.core.turn.pipeline import MarkedFrame, ParsedFrame, PipelineUpdate
from streamscope.core.wire.events import (
    FinishReason,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ServerError,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)
from streamscope.core.wire.sse_fields import RawFrame

if TYPE_CHECKING:
    from streamscope.core.turn.assembler import TurnAssembler
    from streamscope.core.turn.model import Turn
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.wire.dialects.base import RequestSpec

__all__ = [
    "FLAG_BODY",
    "FLAG_DETACHED",
    "FLAG_INCOMPLETE",
    "FLAG_INVALID_UTF8",
    "FLAG_OVERSIZED",
    "FrameKind",
    "FrameRows",
    "MarkedFrame",
    "Progress",
    "ProgressEncoder",
    "frame_kind",
]


class FrameKind:
    """Kind codes stored per frame (one byte), most severe wins."""

    DATA = 0
    META = 1  # message start, finish reason, usage
    COMMENT = 2  # keep-alive comments, Anthropic ping, blank lines
    TEXT = 3
    REASONING = 4
    TOOL = 5
    TERMINAL = 6
    MALFORMED = 7
    ERROR = 8

    NAMES = ("data", "meta", "keep-alive", "text", "reasoning", "tool", "terminal",
             "malformed", "error")  # fmt: skip


FLAG_INVALID_UTF8 = 1
FLAG_INCOMPLETE = 2
FLAG_DETACHED = 4  # the bytes are not in the reads: they are in the rows' ``detached``
FLAG_BODY = 8  # the response body instead of a stream (an HTTP error's, an HTML page …)
FLAG_OVERSIZED = 16  # the first bytes of a block whose line broke the line cap

_ROLE_FLAGS = {"body": FLAG_BODY, "oversized": FLAG_OVERSIZED}


_EVENT_KINDS: dict[type[StreamEvent], int] = {
    TextDelta: FrameKind.TEXT,
    ReasoningDelta: FrameKind.REASONING,
    ToolCallStarted: FrameKind.TOOL,
    ToolCallDelta: FrameKind.TOOL,
    ToolCallDone: FrameKind.TOOL,
    MessageStarted: FrameKind.META,
    FinishReason: FrameKind.META,
    Usage: FrameKind.META,
    KeepAlive: FrameKind.COMMENT,
    Terminal: FrameKind.TERMINAL,
    MalformedFrame: FrameKind.MALFORMED,
    ServerError: FrameKind.ERROR,
}


def frame_kind(frame: RawFrame, events: list[StreamEvent]) -> int:
    """A frame's :class:`FrameKind`, as :class:`ProgressEncoder` stores it in the rows (its
    loop inlines this rule for speed): the most severe of its events' kinds; without
    events, an error row (a :class:`MarkedFrame`), a keep-alive (a comment or a blank
    block), or data."""
    if events:
        return max(_EVENT_KINDS.get(type(event), FrameKind.DATA) for event in events)
    if type(frame) is MarkedFrame:
        return FrameKind.ERROR
    if frame.event is None and (frame.complete or frame.comments):
        return FrameKind.COMMENT
    return FrameKind.DATA


@dataclass(slots=True)
class FrameRows:
    """Frames as parallel arrays. ``offsets`` index the stream (the reads joined), or
    ``detached`` for rows flagged :data:`FLAG_DETACHED`.

    A frame's events: ``events[row]`` when the frame has an entry there (row numbers of
    these rows); otherwise a ``TEXT`` frame's only event is the text delta that ends at
    ``text_ends[row]`` in the turn's text (it starts where the previous row's ends), a
    ``REASONING`` frame's the reasoning delta (in the turn's first reasoning channel) ending
    at ``reasoning_ends[row]``, and any other frame has none. ``reasoning_ends`` stays empty
    until the turn has reasoning (it is ``0`` before that): 4 bytes a frame saved."""

    offsets: array[int] = field(default_factory=lambda: array("q"))
    lengths: array[int] = field(default_factory=lambda: array("q"))
    times: array[float] = field(default_factory=lambda: array("d"))
    kinds: array[int] = field(default_factory=lambda: array("B"))
    flags: array[int] = field(default_factory=lambda: array("B"))
    text_ends: array[int] = field(default_factory=lambda: array("I"))
    reasoning_ends: array[int] = field(default_factory=lambda: array("I"))
    events: dict[int, list[StreamEvent]] = field(default_factory=dict)
    detached: bytearray = field(default_factory=bytearray)

    def __len__(self) -> int:
        return len(self.offsets)

    def offsets_after(self, detached_base: int) -> array[int]:
        """The offsets, with those of detached rows moved by ``detached_base`` (where this
        batch's ``detached`` bytes start in a longer buffer)."""
        if not (detached_base and self.detached):
            return self.offsets
        return array(
            "q",
            (
                o + detached_base if f & FLAG_DETACHED else o
                for o, f in zip(self.offsets, self.flags, strict=True)
            ),
        )

    def events_after(self, row_base: int) -> dict[int, list[StreamEvent]]:
        """``events`` keyed by row numbers moved by ``row_base``."""
        if not row_base:
            return self.events
        return {row + row_base: events for row, events in self.events.items()}

    def extend(self, other: FrameRows) -> None:
        self.events.update(other.events_after(len(self)))
        self.offsets.extend(other.offsets_after(len(self.detached)))
        self.lengths.extend(other.lengths)
        self.times.extend(other.times)
        self.kinds.extend(other.kinds)
        self.flags.extend(other.flags)
        extend_ends(self.reasoning_ends, other.reasoning_ends, len(self.text_ends))
        self.text_ends.extend(other.text_ends)
        self.detached += other.detached


def extend_ends(ends: array[int], more: array[int], rows: int) -> None:
    """Append ``more`` to a sparse ``reasoning_ends`` that covers ``rows`` rows once filled
    (an empty one means "no reasoning yet": zeros)."""
    if not more:
        return
    if len(ends) < rows:
        ends.extend(array(ends.typecode, [ends[-1] if ends else 0]) * (rows - len(ends)))
    ends.extend(more)


@dataclass(slots=True)
class Progress:
    """Everything that arrived since the previous batch, in arrival order.

    ``reads``: network reads ``(bytes, t)``; ``rows``: the decoded frames (with the time of
    the read that completed each) and their events; ``delta``: what the reducer says
    changed in the turn (``None``: nothing it saw); totals are for the whole turn (set by
    whoever hands the batch to the views)."""

    reads: list[tuple[bytes, float]] = field(default_factory=list)
    rows: FrameRows = field(default_factory=FrameRows)
    delta: TurnDelta | None = None
    total_bytes: int = 0
    total_frames: int = 0
    elapsed: float = 0.0

    def is_empty(self) -> bool:
        return not (self.reads or len(self.rows) or self.delta is not None)

    @property
    def frame_count(self) -> int:
        return len(self.rows)

    def merge(self, other: Progress) -> None:
        """Append ``other`` (a later batch) to this one."""
        self.reads += other.reads
        self.rows.extend(other.rows)
        if other.delta is not None:
            self.delta = other.delta if self.delta is None else self.delta.merge(other.delta)

    @staticmethod
    def joined(batches: Sequence[Progress]) -> Progress:
        """``batches`` in order, as one new batch (theirs untouched), in time linear in their
        size; the totals and ``elapsed`` are the last one's."""
        whole = Progress()
        for b in batches:
            whole.reads += b.reads
            whole.rows.extend(b.rows)
        whole.delta = TurnDelta.joined([b.delta for b in batches if b.delta is not None])
        if batches:
            last = batches[-1]
            whole.total_bytes, whole.total_frames = last.total_bytes, last.total_frames
            whole.elapsed = last.elapsed
        return whole


class ProgressEncoder:
    """A turn observer that builds :class:`Progress` batches; :meth:`take` hands over the
    one being built, with the reducer's delta since the previous one. The pipeline must have
    been fed exactly the bytes passed to :meth:`read` (as the client and the replay do):
    frames tile that stream, so a row is an offset into the reads; a frame that is not the
    next bytes of the reads (fed without them) keeps its own bytes, flagged detached."""

    def __init__(self) -> None:
        self.pending = Progress()
        self.frames = 0  # in the turn so far
        self.assembler: TurnAssembler | None = None
        self._size = 0  # bytes read so far
        self._next = 0  # where the next frame's bytes start in the reads
        self._text = 0  # characters of text / reasoning so far
        self._reasoning = 0
        self._channel: str | None = None  # the first reasoning channel

    def absorb(self, progress: Progress) -> None:
        """Append a batch encoded elsewhere (by the stream worker) to the pending one."""
        self.pending.merge(progress)
        self.frames += len(progress.rows)

    def take(self) -> Progress:
        """The batch built so far, with what the reducer says changed (start a new one)."""
        batch, self.pending = self.pending, Progress()
        if self.assembler is not None:
            batch.delta = self.assembler.take_delta()
        return batch

    # -- TurnObserver ----------------------------------------------------------------------

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        pass

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        pass

    def read(self, data: bytes, t: float) -> None:
        self.pending.reads.append((data, t))
        self._size += len(data)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.assembler = update.assembler
        if update.frames:
            self._add_frames(self.pending, update.frames, t)

    def ended(self, end: StreamEnd) -> None:
        pass

    def finished(self, turn: Turn) -> None:
        pass

    # -- frames ------------------------------------------------------------------------------

    def _add_frames(self, batch: Progress, frames: list[ParsedFrame], t: float) -> None:
        rows = batch.rows
        base = len(rows)
        n = len(frames)
        offsets = [frame.offset for frame, _events in frames]
        lengths = [len(frame.raw) for frame, _events in frames]
        kinds = bytearray(n)
        flags = bytearray(n)
        text_ends = array("I", bytes(4 * n))
        reasoning_ends = array("I", bytes(4 * n))
        extra = rows.events
        text, reasoning = self._text, self._reasoning
        event_kinds = _EVENT_KINDS
        # One pass, no ``match``: a firehose brings ~100k frames a second, nearly all of
        # them one text delta (measured by the firehose benchmark: ~0.1 µs a frame here).
        for i, (frame, events) in enumerate(frames):
            if len(events) == 1:
                event = events[0]
                kind_type = type(event)
                if kind_type is TextDelta:
                    text += len(event.text)  # type: ignore[union-attr]
                    kinds[i] = FrameKind.TEXT
                elif kind_type is ReasoningDelta:
                    reasoning += len(event.text)  # type: ignore[union-attr]
                    kinds[i] = FrameKind.REASONING
                    channel = event.channel  # type: ignore[union-attr]
                    if self._channel is None:
                        self._channel = channel
                    elif channel != self._channel:
                        extra[base + i] = events
                else:
                    kinds[i] = event_kinds.get(kind_type, FrameKind.DATA)
                    extra[base + i] = events
            elif events:
                kind = FrameKind.DATA
                for event in events:
                    kind = max(kind, event_kinds.get(type(event), FrameKind.DATA))
                    if isinstance(event, TextDelta):
                        text += len(event.text)
                    elif isinstance(event, ReasoningDelta):
                        reasoning += len(event.text)
                        self._channel = self._channel or event.channel
                kinds[i] = kind
                extra[base + i] = events
            elif type(frame) is MarkedFrame:  # (rare: an error body, an over-long line)
                kinds[i] = FrameKind.ERROR
                flags[i] = _ROLE_FLAGS[frame.role]
            elif frame.event is None and (frame.complete or frame.comments):
                kinds[i] = FrameKind.COMMENT
            text_ends[i] = text
            reasoning_ends[i] = reasoning
            if frame.invalid_utf8 or not frame.complete:
                flags[i] |= (FLAG_INVALID_UTF8 if frame.invalid_utf8 else 0) | (
                    0 if frame.complete else FLAG_INCOMPLETE
                )
        self._text, self._reasoning = text, reasoning
        start, end = offsets[0], offsets[-1] + lengths[-1]
        if start == self._next and end <= self._size and end - start == sum(lengths):
            self._next = end  # back to back, in the reads: the usual case
        else:
            self._place(rows, frames, offsets, flags)
        rows.offsets.extend(offsets)
        rows.lengths.extend(lengths)
        rows.times.extend(array("d", [t]) * n)
        rows.kinds.frombytes(kinds)
        rows.flags.frombytes(flags)
        if reasoning:  # (else every row's reasoning end is 0: nothing to keep)
            extend_ends(rows.reasoning_ends, reasoning_ends, base)
        rows.text_ends.extend(text_ends)
        self.frames += n

    def _place(
        self, rows: FrameRows, frames: list[ParsedFrame], offsets: list[int], flags: bytearray
    ) -> None:
        """Frame by frame: a frame that is not the next bytes of the reads keeps its own."""
        detached = rows.detached
        for i, (frame, _events) in enumerate(frames):
            end = frame.offset + len(frame.raw)
            if frame.offset == self._next and end <= self._size:
                self._next = end
            else:
                flags[i] |= FLAG_DETACHED
                offsets[i] = len(detached)
                detached += frame.raw
