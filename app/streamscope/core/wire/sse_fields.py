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
_LF_RUN: Final = re.compile(rb"\n\n\n+")


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


class _EventBuilder:
    """An :class:`SSEEvent` being built: the same slots, but not frozen.

    Trick, used by the two hot loops (:meth:`FieldInterpreter.events_of` and ``frames``):
    building a frozen dataclass goes through object.__setattr__ once per field, which costs
    more than all the framing of a typical event; setting its slots through their descriptors
    costs about half that; plain attribute stores on this twin, then ``__class__`` assignment
    (allowed between classes of the same layout), half again.
    """

    __slots__ = SSEEvent.__slots__


_new: Final[Any] = object.__new__  # (what it makes is typed Any: an instance being built)


class _FrameBuilder:
    """A :class:`RawFrame` being built (see :class:`_EventBuilder`)."""

    __slots__ = RawFrame.__slots__


class FieldInterpreter:
    """The field state of one stream: the block being read (its data lines, event name and
    retry) and the last event id, which persists across events."""

    __slots__ = ("_data", "_event", "_id", "_retry")

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._id: str | None = None

    def events_of(self, buf: bytes) -> list[SSEEvent]:
        """Interpret complete lines, as bytes, each ended by one LF; return the events they
        dispatched.

        Fast path: ``buf`` is cut where a blank line is followed by a ``data: `` line, so
        every piece but the first starts with a ``data: `` value, at a block start (the field
        state is empty there). A piece without LF is then a block of that one line (nearly
        every block of an LLM stream): an event as it stands, its value decoded alone. The
        rest goes line by line through :meth:`events`. Decoding at line ends gives what
        decoding each line would, and UTF-8 bytes never hold LF.
        """
        pieces = buf.split(b"\n\ndata: ")
        if len(pieces) == 1:
            return self.events(_lines(buf)[:-1])  # (the "" after the last LF is no line)
        last = pieces.pop()
        first = pieces[0]
        if self._data or self._event or self._retry is not None or first[:6] != b"data: ":
            events = self.events([*_lines(first), ""])  # (lines of a block begun earlier)
            del pieces[0]
        else:
            pieces[0] = first[6:]
            events = []
        append = events.append
        last_id = self._id
        for value in pieces:
            if 10 not in value:  # (one memchr; "b'\n' in" would first try it as an int)
                ev = _new(_EventBuilder)
                ev.event = "message"
                ev.data = value.decode("utf-8", "replace")
                ev.id = last_id
                ev.retry = None
                ev.__class__ = SSEEvent
                append(ev)
            else:
                events += self.events([*_lines(b"data: " + value), ""])
                last_id = self._id
        if last.find(b"\n") == len(last) - 2 and last[-1:] == b"\n":
            ev = _new(_EventBuilder)  # (the last block of buf, complete)
            ev.event = "message"
            ev.data = last[:-2].decode("utf-8", "replace")
            ev.id = last_id
            ev.retry = None
            ev.__class__ = SSEEvent
            append(ev)
        else:
            events += self.events(_lines(b"data: " + last)[:-1])
        return events

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
                    ev = _new(_EventBuilder)
                    ev.event = event or "message"
                    ev.data = data[0] if len(data) == 1 else "\n".join(data)
                    ev.id = last_id
                    ev.retry = retry
                    ev.__class__ = SSEEvent
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
                    ev = _new(_EventBuilder)
                    ev.event = "message"
                    ev.data = data
                    ev.id = last_id
                    ev.retry = None
                    ev.__class__ = SSEEvent
                    frame = _new(_FrameBuilder)
                    frame.offset = offset
                    frame.raw = raw
                    frame.event = ev
                    frame.comments = ()
                    frame.invalid_utf8 = invalid
                    frame.complete = True
                    frame.__class__ = RawFrame
                    append(frame)
                    offset += len(raw)
                    continue
            append(self._frame(raw, offset, bom))
            last_id = self._id
            offset += len(raw)
            bom = 0
        return frames

    def usual(self, joined: bytes) -> list[SSEEvent] | None:
        """The events of ``joined``, plain blocks with no run of blank lines (a piece
        :meth:`BlockCutter.cut` joined), when every block is a usual one: ``data: <value>``
        then LF LF, the value not starting with a space, all valid UTF-8 (``None`` otherwise:
        the caller makes frames of them).  Such a block needs no interpretation, as the
        block-scoped state is empty at a block start; one decode and one split make them all.

        With every LF LF ending a block, ``k`` blocks have ``2k`` LFs exactly when each is one
        line, and ``k - 1`` block starts past the first."""
        k = joined.count(b"\n\n")
        if not (
            joined[:6] == b"data: "
            and joined[6:7] != b" "
            and joined.count(10) == 2 * k
            and joined.count(b"\n\ndata: ") == k - 1
            and b"\n\ndata:  " not in joined
        ):
            return None
        try:
            text = joined.decode("utf-8")
        except UnicodeDecodeError:
            return None
        last_id = self._id
        events: list[SSEEvent] = []
        append = events.append
        for value in text[6:-2].split("\n\ndata: "):
            ev = _new(_EventBuilder)
            ev.event = "message"
            ev.data = value
            ev.id = last_id
            ev.retry = None
            ev.__class__ = SSEEvent
            append(ev)
        return events

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


def _lines(buf: bytes) -> list[str]:
    """The lines of ``buf`` (LF only), decoded; runs of blank lines shortened to one (a blank
    line after a blank line does nothing: a run costs a few steps, not one a line)."""
    if b"\n\n\n" in buf:
        buf = _LF_RUN.sub(b"\n\n", buf)
    return buf.decode("utf-8", "replace").split("\n")


def _decode(raw: bytes) -> tuple[str, bool]:
    """UTF-8 with U+FFFD replacement, and whether anything needed replacing."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True
