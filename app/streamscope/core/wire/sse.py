"""Byte-exact Server-Sent Events decoder (WHATWG "event stream interpretation").

The decoder is pure: bytes in, items out, no I/O, no clocks, no logging.  It has two outputs
from the same parser, and a decoder instance is used for exactly one of them:

* ``feed(chunk)`` / ``close()`` return :class:`SSEEvent` values — the event path the app and
  outside tools rely on;
* ``feed_frames(chunk)`` / ``close_frames()`` return :class:`RawFrame` values — one per block
  (the bytes up to and including a blank line; a run of stray blank lines, however long, is one
  block) with its exact bytes, stream offset, comments and the event it dispatched, for the
  inspector.

Calling a method of the other mode raises :class:`RuntimeError`, as does feeding after
``close()``.  Any chunking of the byte stream gives the same events (and the same frames).

Rules, all applied to bytes: lines end with CRLF, LF or a lone CR (a CR ending one chunk and an
LF starting the next are one line end); one UTF-8 BOM at the very start is dropped; lines
starting with ``:`` are comments; ``name:value`` with one leading space of the value removed; a
line without a colon is a field with an empty value; unknown fields are ignored; ``data`` lines
join with ``"\\n"``; a blank line dispatches, but not when the data buffer is empty; the event
name and retry reset after every dispatch attempt; ``id`` persists across events and is ignored
when it contains U+0000; ``retry`` is taken only when all ASCII digits; an unterminated event at
the end of the stream is dropped.  Complete lines are decoded as UTF-8 with U+FFFD replacement:
buffering is of bytes, so a character split across reads decodes correctly, and invalid input
never raises (``RawFrame.invalid_utf8`` flags it).

Exceptions:

* :class:`SSEProtocolError` — the stream broke the decoder's limits (a line longer than
  ``max_line_bytes``).  Catch it around ``feed``/``feed_frames``; it carries what was completed
  earlier in the same call.  The decoder is then finished: every later ``feed``/``feed_frames``
  raises it again (with nothing attached) and ``close``/``close_frames`` return ``[]``.

The decoder reads as three layers, one module each: :mod:`~streamscope.core.wire.sse_lines`
cuts lines and blocks out of the bytes (line ends, the BOM, the line cap),
:mod:`~streamscope.core.wire.sse_fields` interprets them (the field rules, :class:`SSEEvent`,
:class:`RawFrame`), and this module holds the two front doors, :class:`SSEDecoder`'s modes.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from streamscope.core.wire.sse_fields import FieldInterpreter, RawFrame, SSEEvent
from streamscope.core.wire.sse_lines import BlockCutter, LineCutter

__all__ = ["RawFrame", "SSEDecoder", "SSEEvent", "SSEProtocolError", "UsualBlocks"]

_FRESH: Final = 0
_EVENTS: Final = 1
_FRAMES: Final = 2
_CLOSED: Final = 3
_FAILED: Final = 4


class UsualBlocks(NamedTuple):
    """Usual blocks, as :meth:`SSEDecoder.feed_usual` gives them: where the first starts
    (its stream offset), their bytes in all, and the event of each, in order."""

    offset: int
    size: int
    events: list[SSEEvent]


class SSEProtocolError(Exception):
    """The stream broke the decoder's limits; the decoder is finished.

    ``events`` (and, in frames mode, ``frames``) hold what was completed earlier in the same
    ``feed``/``feed_frames`` call, so the caller loses nothing that arrived intact. In frames
    mode, ``oversized`` is the start of the block (or NDJSON line) that broke the cap: its
    first :data:`~streamscope.core.wire.sse_lines.DROPPED_KEPT` bytes at its stream offset,
    ``complete=False`` (the rest was not kept).
    """

    def __init__(
        self,
        message: str,
        events: list[SSEEvent] | None = None,
        frames: list[RawFrame] | None = None,
        oversized: RawFrame | None = None,
    ) -> None:
        super().__init__(message)
        self.events: list[SSEEvent] = events if events is not None else []
        self.frames: list[RawFrame] = frames if frames is not None else []
        self.oversized = oversized


class SSEDecoder:
    """Incremental SSE decoder over bytes; see the module docstring for the rules.

    Owns the modes: each chunk goes to the mode's cutter, what it cut to the field interpreter.
    """

    __slots__ = ("_blocks", "_fields", "_lines", "_max", "_mode")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._mode = _FRESH
        self._lines = LineCutter(max_line_bytes)
        self._blocks = BlockCutter(max_line_bytes)
        self._fields = FieldInterpreter()

    # -- events mode ---------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode the next piece of the stream; returns the events it completed."""
        if self._mode != _EVENTS:
            self._enter(_EVENTS)
        lines = self._lines.cut(chunk)
        events = self._fields.events_of(lines) if lines else []
        if self._lines.too_long:
            raise self._failure(events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream.  An unterminated event is dropped (WHATWG), so this returns ``[]``."""
        if self._mode == _FRAMES:
            raise RuntimeError("this SSEDecoder is in frames mode; use close_frames()")
        if self._mode != _FAILED:
            self._mode = _CLOSED
        self._lines.close()
        return []

    # -- frames mode ---------------------------------------------------------------------------

    def feed_frames(self, chunk: bytes) -> list[RawFrame]:
        """Decode the next piece of the stream; returns the blocks it completed.

        A block that ends in a lone CR is held until the next byte (or ``close_frames()``)
        shows whether an LF follows, so that the LF lands in the same frame; a run of stray
        blank lines until a byte other than CR or LF (or ``close_frames()``) ends it.
        """
        if self._mode != _FRAMES:
            self._enter(_FRAMES)
        cutter = self._blocks
        offset = cutter.offset
        return self._frames(cutter.cut(chunk), offset)

    def feed_usual(self, chunk: bytes) -> list[RawFrame] | UsualBlocks:
        """:meth:`feed_frames`, except that when every block the chunk completed is a usual
        one (``data: <value>`` then LF LF, no CR, the value valid UTF-8 not starting with a
        space; never the stream's first block) it returns their events without making frames:
        :class:`UsualBlocks`, one event a block. A decoder in frames mode may mix the two."""
        if self._mode != _FRAMES:
            self._enter(_FRAMES)
        cutter = self._blocks
        offset = cutter.offset
        blocks = cutter.cut(chunk, joined=True)
        if cutter.joined:
            joined = blocks[0]
            events = self._fields.usual(joined)
            if events is not None and not cutter.too_long:
                return UsualBlocks(offset, len(joined), events)
            blocks = [part + b"\n\n" for part in joined.split(b"\n\n")[:-1]]
        return self._frames(blocks, offset)

    def _frames(self, blocks: list[bytes], offset: int) -> list[RawFrame]:
        cutter = self._blocks
        frames = self._fields.frames(blocks, offset, cutter.bom, cutter.plain) if blocks else []
        if cutter.too_long:
            head = RawFrame(cutter.offset, cutter.dropped, None, (), False, False)
            raise self._failure([f.event for f in frames if f.event is not None], frames, head)
        return frames

    def close_frames(self) -> list[RawFrame]:
        """End of stream: any held block (or run of blank lines), then the unterminated tail
        as one incomplete frame."""
        if self._mode == _EVENTS:
            raise RuntimeError("this SSEDecoder is in events mode; use close()")
        if self._mode != _FRAMES:
            if self._mode != _FAILED:
                self._mode = _CLOSED
            return []
        self._mode = _CLOSED
        cutter = self._blocks
        offset = cutter.offset
        blocks, tail = cutter.close()
        frames = self._fields.frames(blocks, offset, cutter.bom, cutter.plain)
        if tail:
            frames.append(self._fields.tail_frame(tail, cutter.offset))
        return frames

    # -- both modes ----------------------------------------------------------------------------

    def _enter(self, mode: int) -> None:
        if self._mode == _FRESH:
            self._mode = mode
        elif self._mode == _FAILED:
            raise SSEProtocolError("decoder already failed")
        elif self._mode == _CLOSED:
            raise RuntimeError("this SSEDecoder is closed")
        elif self._mode != mode:
            used = "frames" if self._mode == _FRAMES else "events"
            raise RuntimeError(f"this SSEDecoder is in {used} mode")

    def _failure(
        self,
        events: list[SSEEvent],
        frames: list[RawFrame] | None = None,
        oversized: RawFrame | None = None,
    ) -> SSEProtocolError:
        """A line passed the cap: the decoder is finished."""
        self._mode = _FAILED
        return SSEProtocolError(f"line longer than {self._max} bytes", events, frames, oversized)
