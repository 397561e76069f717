"""A turn's frames as the inspector shows them, kept compactly and Qt-free.

:class:`FrameLog` takes the :class:`~streamscope.core.turn.progress.Progress` batches of a
turn and keeps, with no Python object per frame: every network read appended to one
``bytearray`` (the reads joined *are* the decoded stream, so a frame's offset indexes it) —
or, for a replay, the capture's own buffer, checked and never copied — the reads' offsets
and times, each frame's offset, length, time, kind and flags in typed arrays, the turn's
text and reasoning (a text frame's event is the span it added), and the other frames'
events. Per frame it answers: the exact bytes, the read boundaries inside it, the events it
produced, a label (the SSE event name) and a one-line summary (from the events, by the
dialect). The Frames table is a thin Qt model over it; export and compare use it directly.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterator

from streamscope.core.turn.error_body import body_summary
from streamscope.core.turn.progress import (
    FLAG_BODY,
    FLAG_DETACHED,
    FLAG_INCOMPLETE,
    FLAG_OVERSIZED,
    FrameKind,
    Progress,
    extend_ends,
)
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.events import (
    MalformedFrame,
    ReasoningChannel,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
)
from streamscope.core.wire.summary import quote, summarize_events

__all__ = ["FrameLog", "block_label"]

_LINE_END = re.compile(r"\r\n|\r|\n")
# A frame of nothing but blank lines (a run of them is one frame; the BOM may lead the first).
_BLANK = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\x0b\x0c\r\n]*")
_LABEL_BYTES = 4096


def block_label(raw: bytes, framing: str | None = None) -> tuple[str, list[str]]:
    """A frame's label for the event column — the SSE ``event:`` name (``message`` when
    the block has data but no name), ``ndjson`` for an NDJSON line, ``comment`` for a block
    of comments, ``""`` for blank lines — and its comments (from its first 4 KiB)."""
    text = raw[:_LABEL_BYTES].decode("utf-8", "replace").lstrip("\ufeff")
    if framing == "ndjson" or text.lstrip()[:1] in ("{", "["):
        return ("ndjson" if text.strip() else ""), []
    event: str | None = None
    has_data = False
    comments: list[str] = []
    for line in _LINE_END.split(text):
        if not line:
            continue
        if line[0] == ":":
            comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        if name == "data":
            has_data = True
        elif name == "event":
            event = value[1:] if value[:1] == " " else value
    if has_data:
        return event or "message", comments
    if comments:
        return "comment", comments
    return event or "", comments


class _Text:
    """Appended text in chunks, sliced by character offsets without joining it all."""

    __slots__ = ("chunks", "size", "starts")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.starts = array("Q")
        self.size = 0

    def append(self, text: str) -> None:
        if text:
            self.chunks.append(text)
            self.starts.append(self.size)
            self.size += len(text)

    def span(self, start: int, end: int) -> str:
        if end <= start:
            return ""
        i = bisect.bisect_right(self.starts, start) - 1
        first = self.starts[i]
        if end <= first + len(self.chunks[i]):
            return self.chunks[i][start - first : end - first]
        j = bisect.bisect_left(self.starts, end)
        return "".join(self.chunks[i:j])[start - first : end - first]


class FrameLog:
    """See the module docstring. ``t0``: the request's time (times are shown relative to
    it); ``recorded``: for a replay, the reads about to arrive, joined (kept by reference,
    never modified: a read that differs makes the log copy from there on)."""

    def __init__(self, t0: float = 0.0, recorded: bytearray | None = None) -> None:
        self.t0 = t0
        self.stream = bytearray() if recorded is None else recorded
        self._shared = recorded is not None
        self.received = 0  # bytes of ``stream`` that have arrived
        self.side = bytearray()  # bytes of frames that arrived without their reads
        self.read_offsets = array("q")
        self.read_times = array("d")
        self.offsets = array("q")
        self.lengths = array("q")
        self.times = array("d")
        self.kinds = array("B")
        self.flags = array("B")
        self.text_ends = array("I")
        self.reasoning_ends = array("I")
        self.extra: dict[int, list[StreamEvent]] = {}
        self.text = _Text()
        self.reasoning = _Text()
        self.channel: ReasoningChannel | None = None
        self.dialect: str | None = None
        self.framing: str | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    # -- feeding ----------------------------------------------------------------------------

    def add(self, batch: Progress) -> None:
        """Append a batch: its reads, frames and the text its delta brought."""
        self.add_reads(batch.reads)
        delta = batch.delta
        if delta is not None:
            self.text.append(delta.text)
            self.reasoning.append(delta.reasoning)
            if self.channel is None and delta.reasoning_channel:
                self.channel = delta.reasoning_channel.split("+")[0]  # type: ignore[assignment]
            if delta.dialect is not None and delta.dialect != self.dialect:
                self.dialect = delta.dialect
                self.framing = get_dialect(delta.dialect).framing
        rows = batch.rows
        if not len(rows):
            return
        self.extra.update(rows.events_after(len(self.offsets)))
        self.offsets.extend(rows.offsets_after(len(self.side)))
        self.side += rows.detached
        self.lengths.extend(rows.lengths)
        self.times.extend(rows.times)
        self.kinds.extend(rows.kinds)
        self.flags.extend(rows.flags)
        extend_ends(self.reasoning_ends, rows.reasoning_ends, len(self.text_ends))
        self.text_ends.extend(rows.text_ends)

    def add_reads(self, reads: list[tuple[bytes, float]]) -> None:
        """Keep network reads (no frames change)."""
        for data, t in reads:
            start = self.received
            if self._shared and not self.stream.startswith(data, start):
                # not the recording after all: from here on, keep a copy of our own
                self.stream = bytearray(self.stream[:start])
                self._shared = False
            if not self._shared:
                self.stream += data
            self.read_offsets.append(start)
            self.read_times.append(t)
            self.received = start + len(data)

    # -- one frame --------------------------------------------------------------------------

    def frame_bytes(self, row: int, limit: int | None = None) -> bytes:
        """The exact bytes of frame ``row`` (its first ``limit`` bytes, if given)."""
        buf = self.side if self.flags[row] & FLAG_DETACHED else self.stream
        start = self.offsets[row]
        length = self.lengths[row] if limit is None else min(limit, self.lengths[row])
        return bytes(buf[start : start + length])

    def blank_lines(self, row: int) -> int:
        """How many blank lines frame ``row`` is when it is nothing but blank lines (a run of
        them is one frame), else ``0``.  Counted in place: a run may be megabytes."""
        buf = self.side if self.flags[row] & FLAG_DETACHED else self.stream
        start = self.offsets[row]
        end = start + self.lengths[row]
        if end == start or _BLANK.fullmatch(buf, start, end) is None:
            return 0
        count = buf.count
        lines = count(b"\n", start, end) + count(b"\r", start, end) - count(b"\r\n", start, end)
        return lines if buf[end - 1] in b"\r\n" else lines + 1  # (+ a last one, unterminated)

    def stream_offset(self, row: int) -> int | None:
        """Frame ``row``'s offset in the received stream (``None`` if not from the reads)."""
        return None if self.flags[row] & FLAG_DETACHED else self.offsets[row]

    def read_boundaries(self, row: int) -> list[tuple[int, float]]:
        """Network reads that started strictly inside frame ``row``: (offset within the
        frame, read time)."""
        start = self.stream_offset(row)
        if start is None:
            return []
        end = start + self.lengths[row]
        lo = bisect.bisect_right(self.read_offsets, start)
        hi = bisect.bisect_left(self.read_offsets, end)
        return [(self.read_offsets[i] - start, self.read_times[i]) for i in range(lo, hi)]

    def reads_spanned(self, row: int) -> int:
        """How many network reads carried bytes of frame ``row``."""
        start = self.stream_offset(row)
        if start is None or not self.read_offsets:
            return 0
        return len(self.read_boundaries(row)) + 1

    def events(self, row: int) -> list[StreamEvent]:
        """The events the dialect made of frame ``row``, in order."""
        found = self.extra.get(row)
        if found is not None:
            return found
        kind = self.kinds[row]
        if kind == FrameKind.TEXT:
            start = self.text_ends[row - 1] if row else 0
            return [TextDelta(self.text.span(start, self.text_ends[row]))]
        if kind == FrameKind.REASONING:
            start = self.reasoning_ends[row - 1] if row else 0
            text = self.reasoning.span(start, self.reasoning_ends[row])
            return [ReasoningDelta(text, self.channel or "reasoning")]
        return []

    def label(self, row: int) -> str:
        """The event column: the SSE event name, ``comment``, ``ndjson`` … — ``body`` for
        a response body that was no stream, ``oversized`` for an over-long line's start."""
        role = self.role(row)
        return role or block_label(self.frame_bytes(row, _LABEL_BYTES), self.framing)[0]

    def role(self, row: int) -> str | None:
        """``"body"`` or ``"oversized"`` for the rows the pipeline adds (see
        :class:`~streamscope.core.turn.pipeline.MarkedFrame`), else ``None``."""
        flags = self.flags[row]
        if flags & FLAG_BODY:
            return "body"
        return "oversized" if flags & FLAG_OVERSIZED else None

    def body_row(self) -> int | None:
        """The row holding the response body when it was no stream (an HTTP error's): the
        last row, if any."""
        row = len(self.flags) - 1
        return row if row >= 0 and self.flags[row] & FLAG_BODY else None

    def find_malformed(self, reason: str | None = None, start: int = 0) -> int | None:
        """The first malformed row from ``start`` on — whose
        :class:`~streamscope.core.wire.events.MalformedFrame` says ``reason``, if given (a
        turn warning ``malformed frame: <reason>`` names it) — or ``None``."""
        kinds = self.kinds.tobytes()  # (a C-speed search through 100k rows)
        mark = bytes([FrameKind.MALFORMED])
        row = kinds.find(mark, start)
        while row >= 0:
            if reason is None or any(
                isinstance(e, MalformedFrame) and e.reason == reason for e in self.events(row)
            ):
                return row
            row = kinds.find(mark, row + 1)
        return None

    def summary(self, row: int) -> str:
        """One line: what the frame's events say (by the dialect), or what the frame is."""
        role = self.role(row)
        if role == "body":
            return body_summary(self.frame_bytes(row))
        if role == "oversized":
            raw = self.frame_bytes(row)
            start = quote(raw.decode("utf-8", "replace").strip())
            return f"line over the line cap; its first {len(raw):,} bytes: {start}"
        events = self.events(row)
        if events and self.dialect is not None:
            text = get_dialect(self.dialect).summarize(events)
        elif events:
            text = summarize_events(events)
        elif blank := self.blank_lines(row):
            text = "(blank line)" if blank == 1 else f"(blank lines ×{blank})"
        else:
            raw = self.frame_bytes(row)
            _label, comments = block_label(raw, self.framing)
            if comments:
                text = "; ".join(f": {c}" if c else ":" for c in comments)
            elif self.flags[row] & FLAG_INCOMPLETE:  # (the bytes say what it was becoming)
                text = quote(raw.decode("utf-8", "replace").strip())
            else:
                text = f"(no event) {quote(raw.decode('utf-8', 'replace').strip())}"
        if self.flags[row] & FLAG_INCOMPLETE:
            text = f"(incomplete) {text}"
        return text

    def time(self, row: int) -> float:
        """Seconds from the request to frame ``row``."""
        return self.times[row] - self.t0

    def gap(self, row: int) -> float:
        """Seconds since the previous frame (the request, for the first)."""
        return self.times[row] - (self.times[row - 1] if row else self.t0)

    def frames(self) -> Iterator[tuple[bytes, float]]:
        """Every frame's bytes and time since the request (for export and compare)."""
        for row in range(len(self.offsets)):
            yield self.frame_bytes(row), self.time(row)
