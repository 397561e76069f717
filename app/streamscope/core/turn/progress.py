"""A turn's progress in compact form: what the views need, batched, as arrays.

The window must keep up with tens of thousands of frames a second. Per frame, the views
need five numbers — where its bytes are in the stream, how many, when, what kind, flags —
not a :class:`~streamscope.core.turn.pipeline.ParsedFrame` object; per text delta, only the
text. :class:`ProgressEncoder` (a :class:`~streamscope.core.turn.observer.TurnObserver`) turns
the pipeline's updates into :class:`Progress` batches of that shape. It runs where the
stream is parsed — in the stream worker process for live turns, on the UI thread for
replays — and a batch pickles cheaply (arrays and bytes), so the UI thread does little
per frame.

``Progress.events`` keeps every event except text and reasoning deltas (those are in
``text``/``reasoning``, counted, with their first and last times).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from streamscope.core.turn.assembler import Turn
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import ParsedFrame, PipelineUpdate
    from streamscope.core.wire.dialects.base import RequestSpec
    from streamscope.core.wire.sse import SSEEvent

__all__ = [
    "FLAG_DETACHED",
    "FLAG_INCOMPLETE",
    "FLAG_INVALID_UTF8",
    "SNIFF_EVENTS",
    "FrameKind",
    "FrameRows",
    "Progress",
    "ProgressEncoder",
    "kind_of",
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

SNIFF_EVENTS = 8
"""How many decoded SSE events of a turn are passed on for the dialect check."""

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

_TOOL_EVENTS = (ToolCallStarted, ToolCallDelta, ToolCallDone)


def kind_of(parsed: ParsedFrame) -> int:
    """The :class:`FrameKind` of a decoded frame."""
    frame = parsed.frame
    if frame.event is None:
        return FrameKind.COMMENT if frame.complete or frame.comments else FrameKind.DATA
    events = parsed.events
    if len(events) == 1:  # the common case: one event per frame
        return _EVENT_KINDS.get(type(events[0]), FrameKind.DATA)
    kind = FrameKind.DATA
    for event in events:
        kind = max(kind, _EVENT_KINDS.get(type(event), FrameKind.DATA))
    return kind


@dataclass(slots=True)
class FrameRows:
    """Frames as parallel arrays. ``offsets`` index the stream (the reads joined), or
    ``detached`` for rows flagged :data:`FLAG_DETACHED`."""

    offsets: array[int] = field(default_factory=lambda: array("q"))
    lengths: array[int] = field(default_factory=lambda: array("q"))
    times: array[float] = field(default_factory=lambda: array("d"))
    kinds: array[int] = field(default_factory=lambda: array("B"))
    flags: array[int] = field(default_factory=lambda: array("B"))
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

    def extend(self, other: FrameRows) -> None:
        self.offsets.extend(other.offsets_after(len(self.detached)))
        self.lengths.extend(other.lengths)
        self.times.extend(other.times)
        self.kinds.extend(other.kinds)
        self.flags.extend(other.flags)
        self.detached += other.detached


@dataclass(slots=True)
class Progress:
    """Everything that arrived since the previous batch, in arrival order.

    ``reads``: network reads ``(bytes, t)``; ``rows``: the decoded frames (with the time of
    the read that completed each); ``events``: stream events with their time, except text
    and reasoning deltas; ``text``/``reasoning``: the appended answer / reasoning text;
    ``text_deltas`` and ``first_text``/``last_text``/``first_reasoning``: how many text
    deltas came and when; ``sniffed``: the turn's first SSE events (for the dialect check);
    ``tool_events``: some event was about a tool call; totals are for the whole turn (set
    by whoever hands the batch to the views)."""

    reads: list[tuple[bytes, float]] = field(default_factory=list)
    rows: FrameRows = field(default_factory=FrameRows)
    events: list[tuple[StreamEvent, float]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_channel: str | None = None
    tool_events: bool = False
    text_deltas: int = 0
    first_text: float | None = None
    last_text: float | None = None
    first_reasoning: float | None = None
    sniffed: list[SSEEvent] = field(default_factory=list)
    total_bytes: int = 0
    total_frames: int = 0
    elapsed: float = 0.0

    def is_empty(self) -> bool:
        return not (self.reads or len(self.rows) or self.events or self.text or self.reasoning)

    @property
    def frame_count(self) -> int:
        return len(self.rows)

    def merge(self, other: Progress) -> None:
        """Append ``other`` (a later batch) to this one."""
        self.reads += other.reads
        self.rows.extend(other.rows)
        self.events += other.events
        self.text += other.text
        self.reasoning += other.reasoning
        self.reasoning_channel = self.reasoning_channel or other.reasoning_channel
        self.tool_events = self.tool_events or other.tool_events
        self.text_deltas += other.text_deltas
        if self.first_text is None:
            self.first_text = other.first_text
        if other.last_text is not None:
            self.last_text = other.last_text
        if self.first_reasoning is None:
            self.first_reasoning = other.first_reasoning
        self.sniffed += other.sniffed


class ProgressEncoder:
    """A turn observer that builds :class:`Progress` batches; :meth:`take` hands over the
    one being built. The pipeline must have been fed exactly the bytes passed to
    :meth:`read` (as the client and the replay do): frames tile that stream, so a row is an
    offset into the reads; a frame that is not the next bytes of the reads (fed without
    them) keeps its own bytes, flagged detached."""

    def __init__(self) -> None:
        self.pending = Progress()
        self.frames = 0  # in the turn so far
        self._size = 0  # bytes read so far
        self._next = 0  # where the next frame's bytes start in the reads
        self._sniffing = SNIFF_EVENTS

    def absorb(self, progress: Progress) -> None:
        """Append a batch encoded elsewhere (by the stream worker) to the pending one."""
        self.pending.merge(progress)
        self.frames += len(progress.rows)

    def take(self) -> Progress:
        """The batch built so far (and start a new one)."""
        batch, self.pending = self.pending, Progress()
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
        batch = self.pending
        if update.frames:
            self._add_frames(batch, update.frames, t)
        events = update.events
        if events:
            text = batch.text
            kept = batch.events
            for event in events:  # (this runs once per delta: no ``match``)
                kind = type(event)
                if kind is TextDelta:
                    text.append(event.text)  # type: ignore[union-attr]
                    batch.text_deltas += 1
                    if batch.first_text is None:
                        batch.first_text = t
                    batch.last_text = t
                elif isinstance(event, ReasoningDelta):
                    batch.reasoning.append(event.text)
                    batch.reasoning_channel = batch.reasoning_channel or event.channel
                    if batch.first_reasoning is None:
                        batch.first_reasoning = t
                else:
                    kept.append((event, t))
                    if isinstance(event, _TOOL_EVENTS):
                        batch.tool_events = True

    def ended(self, end: StreamEnd) -> None:
        pass

    def finished(self, turn: Turn) -> None:
        pass

    # -- frames ------------------------------------------------------------------------------

    def _add_frames(self, batch: Progress, frames: list[ParsedFrame], t: float) -> None:
        rows = batch.rows
        if self._sniffing:
            for parsed in frames:
                if parsed.frame.event is not None:
                    batch.sniffed.append(parsed.frame.event)
                    self._sniffing -= 1
                    if not self._sniffing:
                        break
        # One pass per column, in comprehensions: a firehose brings ~100k frames a second.
        offsets = [frame.offset for frame, _events in frames]
        lengths = [len(frame.raw) for frame, _events in frames]
        kinds = [
            _EVENT_KINDS.get(type(events[0]), FrameKind.DATA)
            if len(events) == 1  # (a frame that dispatched no event has none)
            else kind_of(parsed)
            for parsed in frames
            for events in (parsed[1],)
        ]
        flags = bytearray(len(frames))
        for i, (frame, _events) in enumerate(frames):
            if frame.invalid_utf8 or not frame.complete:
                flags[i] = (FLAG_INVALID_UTF8 if frame.invalid_utf8 else 0) | (
                    0 if frame.complete else FLAG_INCOMPLETE
                )
        start, end = offsets[0], offsets[-1] + lengths[-1]
        if start == self._next and end <= self._size and end - start == sum(lengths):
            self._next = end  # back to back, in the reads: the usual case
        else:
            self._place(rows, frames, offsets, flags)
        rows.offsets.extend(offsets)
        rows.lengths.extend(lengths)
        rows.times.extend(array("d", [t]) * len(frames))
        rows.kinds.extend(kinds)
        rows.flags.frombytes(flags)
        self.frames += len(frames)

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
