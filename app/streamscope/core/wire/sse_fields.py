"""The SSE decoder's second layer: what the lines and blocks cut from the bytes mean.

Owns the field rules of :mod:`streamscope.core.wire.sse` (comments, ``name:value``, ``data``
joining, dispatch, ``id`` and ``retry``), UTF-8 decoding, and the values that come out:
:class:`SSEEvent` and :class:`RawFrame`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["FieldInterpreter", "RawFrame", "SSEEvent"]

_LINE_END: Final = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event."""

    event: str
    """The event type; ``"message"`` when no (or an empty) ``event:`` field was given."""
    data: str
    """The ``data`` lines of the event, joined with ``"\\n"``."""
    id: str | None = None
    """The last event id in effect (it persists across events); ``None`` before any ``id``."""
    retry: int | None = None
    """This event's ``retry`` value, if its block gave a valid one."""


@dataclass(frozen=True, slots=True)
class RawFrame:
    """One block of the stream, exactly as it arrived, for the inspector.

    A block is every line up to and including the blank line that ends it.  A run of stray
    blank lines (blank lines where a block would start: after a block's own blank line, or at the
    stream start) is one block, however long and whatever its mixture of CR, LF and CRLF:
    ``raw`` is all of its line ends (and the BOM, at the stream start), ``event`` is ``None``; it
    ends where the next non-blank line starts, or at the end of the stream.
    ``b"".join(f.raw for f in frames) == stream`` always holds.
    """

    offset: int
    """Offset of the block's first byte in the raw stream (a leading BOM counts)."""
    raw: bytes
    """The exact bytes of the block, including its terminating blank line."""
    event: SSEEvent | None
    """The event the block dispatched; ``None`` for comment-only, data-less or unfinished blocks."""
    comments: tuple[str, ...]
    """The comment texts of the block without the leading ``:``, e.g. ``(" ping",)``."""
    invalid_utf8: bool
    """Whether some line of the block was not valid UTF-8 (it was decoded with U+FFFD)."""
    complete: bool = True
    """``False`` only for the unterminated tail returned by ``close_frames()``."""


# Trick, used by the two hot loops (events, frames): building a frozen dataclass goes
# through object.__setattr__ once per field, which costs more than all the framing of a typical
# event, so they set the slots directly.  Buys about 1.3x on feed and 1.5x on feed_frames in
# bench_sse.py (A/B against calling the constructors).
_new: Final = object.__new__
_slots: Final[Any] = SSEEvent.__dict__
_set_event: Final = _slots["event"].__set__
_set_data: Final = _slots["data"].__set__
_set_id: Final = _slots["id"].__set__
_set_retry: Final = _slots["retry"].__set__
_frame_slots: Final[Any] = RawFrame.__dict__
_set_offset: Final = _frame_slots["offset"].__set__
_set_raw: Final = _frame_slots["raw"].__set__
_set_frame_event: Final = _frame_slots["event"].__set__
_set_comments: Final = _frame_slots["comments"].__set__
_set_invalid: Final = _frame_slots["invalid_utf8"].__set__
_set_complete: Final = _frame_slots["complete"].__set__


class FieldInterpreter:
    """The field state of one stream: the block being read (its data lines, event name and
    retry) and the last event id, which persists across events."""

    __slots__ = ("_data", "_event", "_id", "_retry")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._id: str | None = None

    def events(self, lines: list[str]) -> list[SSEEvent]:
        """Interpret complete lines (line ends removed); return the events they dispatched."""
        events: list[SSEEvent] = []
        data = self._data
        event = self._event
        retry = self._retry
        last_id = self._id
        append = events.append
        for line in lines:
            if not line:
                if data:
                    ev = _new(SSEEvent)
                    _set_event(ev, event or "message")
                    _set_data(ev, data[0] if len(data) == 1 else "\n".join(data))
                    _set_id(ev, last_id)
                    _set_retry(ev, retry)
                    append(ev)
                    data = []
                event = ""
                retry = None
            elif line[:6] == "data: ":
                data.append(line[6:])
            elif line[0] != ":":
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    data.append(value)
                elif name == "event":
                    event = value
                elif name == "id":
                    if "\0" not in value:
                        last_id = value
                elif name == "retry" and value.isascii() and value.isdigit():
                    retry = int(value)
        self._data = data
        self._event = event
        self._retry = retry
        self._id = last_id
        return events

    def frames(self, blocks: list[bytes], offset: int, bom: int, plain: bool) -> list[RawFrame]:
        """Frames mode: one frame per complete block, the first at stream ``offset`` and led by
        ``bom`` bytes of BOM.

        Fast path for ``plain`` blocks (no CR, no BOM: each LFs only or ending with LF LF): a
        block of one ``data: ...`` line (nearly every block of an LLM stream) needs no line
        interpretation, as the block-scoped state (data, event name, retry) is empty at a block
        start.  Buys about 2x on ``feed_frames`` in bench_sse.py.
        """
        frames: list[RawFrame] = []
        append = frames.append
        last_id = self._id
        for raw in blocks:
            # (the prefix is tested before the value is sliced: a block may be megabytes of
            # blank lines)
            if plain and raw[:6] == b"data: ":
                value = raw[6:-2]  # the value, if this is a block of one "data: " line
                # "10 in" is one memchr; "b'\n' in" would first try the needle as an int.
                if 10 not in value:
                    try:
                        data = value.decode("utf-8")
                        invalid = False
                    except UnicodeDecodeError:
                        data = value.decode("utf-8", "replace")
                        invalid = True
                    ev = _new(SSEEvent)
                    _set_event(ev, "message")
                    _set_data(ev, data)
                    _set_id(ev, last_id)
                    _set_retry(ev, None)
                    frame = _new(RawFrame)
                    _set_offset(frame, offset)
                    _set_raw(frame, raw)
                    _set_frame_event(frame, ev)
                    _set_comments(frame, ())
                    _set_invalid(frame, invalid)
                    _set_complete(frame, True)
                    append(frame)
                    offset += len(raw)
                    continue
            append(self._frame(raw, offset, bom))
            last_id = self._id
            offset += len(raw)
            bom = 0
        return frames

    def tail_frame(self, raw: bytes, offset: int) -> RawFrame:
        """The unterminated tail of the stream: its comments, no event."""
        text, invalid = _decode(raw)
        comments = tuple(line[1:] for line in _LINE_END.split(text) if line[:1] == ":")
        return RawFrame(offset, raw, None, comments, invalid, complete=False)

    def _frame(self, block: bytes, offset: int, skip: int) -> RawFrame:
        """Interpret one complete block (``skip`` leading BOM bytes are not part of a line)."""
        if block[skip] in b"\r\n":
            # A run of blank lines: nothing to interpret (where a block starts, the block-scoped
            # state is already reset), and nothing to split (it may be megabytes of line ends).
            return RawFrame(offset, block, None, (), False)
        text, invalid = _decode(block[skip:] if skip else block)
        lines = _LINE_END.split(text) if "\r" in text else text.split("\n")
        del lines[-1]  # the empty string after the block's final line end
        if text[0] == ":" or "\n:" in text or "\r:" in text:
            comments = tuple(line[1:] for line in lines if line[:1] == ":")
        else:
            comments = ()
        events = self.events(lines)
        return RawFrame(offset, block, events[0] if events else None, comments, invalid)


def _decode(raw: bytes) -> tuple[str, bool]:
    """UTF-8 with U+FFFD replacement, and whether anything needed replacing."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True
