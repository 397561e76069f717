"""Byte-exact Server-Sent Events decoder (WHATWG "event stream interpretation").

The decoder is pure: bytes in, items out, no I/O, no clocks, no logging.  It has two outputs
from the same parser, and a decoder instance is used for exactly one of them:

* ``feed(chunk)`` / ``close()`` return :class:`SSEEvent` values — the event path the app and
  outside tools rely on;
* ``feed_frames(chunk)`` / ``close_frames()`` return :class:`RawFrame` values — one per block
  (the bytes up to and including a blank line) with its exact bytes, stream offset, comments and
  the event it dispatched, for the inspector.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["RawFrame", "SSEDecoder", "SSEEvent", "SSEProtocolError"]

_BOM: Final = b"\xef\xbb\xbf"
# A blank line inside a buffer that holds CRs: a line end directly followed by another.  The
# atomic groups stop "\r\n" from being read as "\r" then "\n" (two line ends).
_BLANK_LINE: Final = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")
_STR_LINE_END: Final = re.compile(r"\r\n|\r|\n")

_FRESH: Final = 0
_EVENTS: Final = 1
_FRAMES: Final = 2
_CLOSED: Final = 3
_FAILED: Final = 4


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

    A block is every line up to and including the blank line that ends it.  A stray blank line
    (two blank lines in a row) is a block of its own: ``raw`` is just the line end and ``event``
    is ``None``.  ``b"".join(f.raw for f in frames) == stream`` always holds.
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


class SSEProtocolError(Exception):
    """The stream broke the decoder's limits; the decoder is finished.

    ``events`` (and, in frames mode, ``frames``) hold what was completed earlier in the same
    ``feed``/``feed_frames`` call, so the caller loses nothing that arrived intact.
    """

    def __init__(
        self,
        message: str,
        events: list[SSEEvent] | None = None,
        frames: list[RawFrame] | None = None,
    ) -> None:
        super().__init__(message)
        self.events: list[SSEEvent] = events if events is not None else []
        self.frames: list[RawFrame] = frames if frames is not None else []


# Building a frozen dataclass goes through object.__setattr__ once per field, which costs more
# than all the framing of a typical event.  The hot loops set the slots directly instead.
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


class SSEDecoder:
    """Incremental SSE decoder over bytes; see the module docstring for the rules."""

    __slots__ = (
        "_cr",
        "_data",
        "_event",
        "_first",
        "_id",
        "_line_len",
        "_max",
        "_mode",
        "_offset",
        "_pending",
        "_pending_len",
        "_retry",
    )

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._mode = _FRESH
        # Unprocessed bytes: the unfinished line (events mode) or block (frames mode).
        self._pending: list[bytes] = []
        self._pending_len = 0
        self._line_len = 0  # frames mode: length of the unfinished last line in _pending
        self._cr = False  # events mode: the last chunk ended in CR, so skip one leading LF
        self._first = True  # the stream start (and its BOM) has not been handled yet
        self._offset = 0  # frames mode: stream offset of the first pending byte
        self._data: list[str] = []
        self._event = ""
        self._retry: int | None = None
        self._id: str | None = None

    # -- events mode ---------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode the next piece of the stream; returns the events it completed."""
        if self._mode != _EVENTS:
            self._enter(_EVENTS)
        if self._cr:
            if not chunk:
                return []
            self._cr = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        if b"\r" in chunk:
            # Line ends only matter as boundaries here, so normalise them to LF.
            self._cr = chunk[-1] == 13
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        nl = chunk.rfind(b"\n")
        if nl < 0:
            if chunk:
                self._pending.append(chunk)
                self._pending_len += len(chunk)
                if self._pending_len > self._max or self._first:
                    return self._hold_events()
            return []
        if self._pending:
            head = self._pending_len
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            nl += head
            self._pending = []
            self._pending_len = 0
        if self._first:
            self._first = False
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
                nl -= 3
        rest = len(chunk) - nl - 1
        if len(chunk) > self._max:
            return self._feed_long(chunk, nl)
        if rest:
            self._pending.append(chunk[nl + 1 :])
            self._pending_len = rest
        events: list[SSEEvent] = []
        self._apply(chunk[:nl].decode("utf-8", "replace").split("\n"), events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream.  An unterminated event is dropped (WHATWG), so this returns ``[]``."""
        if self._mode == _FRAMES:
            raise RuntimeError("this SSEDecoder is in frames mode; use close_frames()")
        if self._mode != _FAILED:
            self._mode = _CLOSED
        self._pending = []
        self._pending_len = 0
        self._data = []
        return []

    def _hold_events(self) -> list[SSEEvent]:
        """Handle an unfinished line that has no line end yet (cap and BOM)."""
        if self._pending_len > self._max:
            self._fail()
            raise SSEProtocolError(f"line longer than {self._max} bytes")
        if self._pending_len >= 3 or not _BOM.startswith(b"".join(self._pending)):
            joined = b"".join(self._pending)
            self._first = False
            if joined[:3] == _BOM:
                joined = joined[3:]
            self._pending = [joined] if joined else []
            self._pending_len = len(joined)
        return []

    def _feed_long(self, buf: bytes, nl: int) -> list[SSEEvent]:
        """Slow path for a buffer longer than the line cap: stop at the first over-long line."""
        lines = buf[:nl].split(b"\n")
        tail = buf[nl + 1 :]
        good = lines
        for index, line in enumerate(lines):
            if len(line) > self._max:
                good = lines[:index]
                break
        events: list[SSEEvent] = []
        if good:
            self._apply(b"\n".join(good).decode("utf-8", "replace").split("\n"), events)
        if good is not lines or len(tail) > self._max:
            self._fail()
            raise SSEProtocolError(f"line longer than {self._max} bytes", events=events)
        if tail:
            self._pending = [tail]
            self._pending_len = len(tail)
        return events

    def _apply(self, lines: list[str], events: list[SSEEvent]) -> None:
        """Interpret complete lines (line ends removed), appending dispatched events."""
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

    # -- frames mode ---------------------------------------------------------------------------

    def feed_frames(self, chunk: bytes) -> list[RawFrame]:
        """Decode the next piece of the stream; returns the blocks it completed.

        A block that ends in a lone CR is held until the next byte (or ``close_frames()``)
        shows whether an LF follows, so that the LF lands in the same frame.
        """
        if self._mode != _FRAMES:
            self._enter(_FRAMES)
        if not chunk:
            return []
        pending = self._pending
        if pending:
            last = pending[-1][-1]
            if (
                self._line_len + len(chunk) <= self._max
                and (not self._first or len(pending[0]) > 3)  # past a possible BOM
                and last != 13
                and not (last == 10 and chunk[0] in b"\r\n")
                and b"\n\n" not in chunk
                and b"\r\r" not in chunk
                and b"\n\r" not in chunk
            ):
                # No blank line can end in this chunk and no line can pass the cap: just keep it.
                pending.append(chunk)
                end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
                self._line_len = self._line_len + len(chunk) if end < 0 else len(chunk) - end - 1
                return []
            pending.append(chunk)
            chunk = b"".join(pending)
            self._pending = []
        return self._frames(chunk, final=False)

    def close_frames(self) -> list[RawFrame]:
        """End of stream: any held block, then the unterminated tail as one incomplete frame."""
        if self._mode == _EVENTS:
            raise RuntimeError("this SSEDecoder is in events mode; use close()")
        if self._mode != _FRAMES:
            if self._mode != _FAILED:
                self._mode = _CLOSED
            return []
        buf = b"".join(self._pending)
        frames = self._frames(buf, final=True) if buf else []
        rest = b"".join(self._pending)
        if rest:
            text, invalid = _decode(rest)
            lines = _STR_LINE_END.split(text)
            comments = tuple(line[1:] for line in lines if line[:1] == ":")
            frames.append(RawFrame(self._offset, rest, None, comments, invalid, complete=False))
        self._mode = _CLOSED
        self._pending = []
        self._data = []
        return frames

    def _frames(self, buf: bytes, final: bool) -> list[RawFrame]:
        """Cut complete blocks off ``buf``; keep the rest pending."""
        n = len(buf)
        # A trailing CR may be the first half of a CRLF: wait for the next byte.
        limit = n - 1 if not final and buf[-1] == 13 else n
        too_long = _first_long_line(buf, self._max) if n > self._max else None
        if too_long is not None:
            limit = min(limit, too_long)
        frames: list[RawFrame] = []
        if self._first or b"\r" in buf:
            pos = self._cut_blocks(buf, limit, final, frames)
        else:
            pos = self._cut_lf_blocks(buf, limit, frames)
        offset = self._offset
        rest = buf[pos:] if pos else buf
        self._offset = offset + pos
        self._pending = [rest] if rest else []
        self._line_len = len(rest) - 1 - max(rest.rfind(b"\n"), rest.rfind(b"\r"))
        if too_long is not None or self._line_len > self._max:
            self._fail()
            raise SSEProtocolError(
                f"line longer than {self._max} bytes",
                events=[f.event for f in frames if f.event is not None],
                frames=frames,
            )
        return frames

    def _cut_blocks(self, buf: bytes, limit: int, final: bool, frames: list[RawFrame]) -> int:
        """Append the complete blocks of ``buf[:limit]``; return where the rest starts."""
        has_cr = b"\r" in buf
        offset = self._offset
        pos = 0
        while pos < limit:
            scan = pos
            if self._first:
                if buf[:3] == _BOM:
                    scan = 3
                elif not final and limit < 3 and _BOM.startswith(buf[:limit]):
                    break
                if scan >= limit:
                    break
            c = buf[scan]
            if c == 10:
                end = scan + 1
            elif c == 13:
                end = scan + 2 if buf[scan + 1 : scan + 2] == b"\n" else scan + 1
            elif has_cr:
                m = _BLANK_LINE.search(buf, scan, limit)
                if m is None:
                    break
                end = m.end()
            else:
                j = buf.find(b"\n\n", scan, limit)
                if j < 0:
                    break
                end = j + 2
            frames.append(self._frame(buf[pos:end], offset + pos, scan - pos))
            self._first = False
            pos = end
        return pos

    def _cut_lf_blocks(self, buf: bytes, limit: int, frames: list[RawFrame]) -> int:
        """:meth:`_cut_blocks` for a buffer without CR, with a fast path for one-line
        ``data: ...`` blocks (nearly every block of an LLM stream)."""
        offset = self._offset
        last_id = self._id
        find = buf.find
        startswith = buf.startswith
        append = frames.append
        new, set_event, set_data, set_id, set_retry = (
            _new,
            _set_event,
            _set_data,
            _set_id,
            _set_retry,
        )
        set_offset, set_raw, set_frame_event = _set_offset, _set_raw, _set_frame_event
        set_comments, set_invalid, set_complete = _set_comments, _set_invalid, _set_complete
        pos = 0
        while pos < limit:
            if buf[pos] == 10:  # a stray blank line
                end = pos + 1
            else:
                k = find(b"\n", pos, limit)
                if k < 0 or k + 1 >= limit:
                    break
                if buf[k + 1] != 10:  # more than one line: find the blank one
                    j = find(b"\n\n", k + 1, limit)
                    if j < 0:
                        break
                    end = j + 2
                elif startswith(b"data: ", pos):
                    # A single "data: " line: the event needs no line interpretation.  The
                    # block-scoped state (data, event name, retry) is empty at a block start.
                    end = k + 2
                    raw = buf[pos:end]
                    value = buf[pos + 6 : k]
                    try:
                        data = value.decode("utf-8")
                        invalid = False
                    except UnicodeDecodeError:
                        data = value.decode("utf-8", "replace")
                        invalid = True
                    ev = new(SSEEvent)
                    set_event(ev, "message")
                    set_data(ev, data)
                    set_id(ev, last_id)
                    set_retry(ev, None)
                    frame = new(RawFrame)
                    set_offset(frame, offset + pos)
                    set_raw(frame, raw)
                    set_frame_event(frame, ev)
                    set_comments(frame, ())
                    set_invalid(frame, invalid)
                    set_complete(frame, True)
                    append(frame)
                    pos = end
                    continue
                else:
                    end = k + 2
            append(self._frame(buf[pos:end], offset + pos, 0))
            last_id = self._id
            pos = end
        return pos

    def _frame(self, block: bytes, offset: int, skip: int) -> RawFrame:
        """Interpret one complete block (``skip`` leading BOM bytes are not part of a line)."""
        text, invalid = _decode(block[skip:] if skip else block)
        lines = _STR_LINE_END.split(text) if "\r" in text else text.split("\n")
        del lines[-1]  # the empty string after the block's final line end
        if text[0] == ":" or "\n:" in text or "\r:" in text:
            comments = tuple(line[1:] for line in lines if line[:1] == ":")
        else:
            comments = ()
        events: list[SSEEvent] = []
        self._apply(lines, events)
        return RawFrame(offset, block, events[0] if events else None, comments, invalid)

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

    def _fail(self) -> None:
        self._mode = _FAILED
        self._pending = []
        self._pending_len = 0
        self._data = []


def _decode(raw: bytes) -> tuple[str, bool]:
    """UTF-8 with U+FFFD replacement, and whether anything needed replacing."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


def _first_long_line(buf: bytes, cap: int) -> int | None:
    """Start offset of the first line of ``buf`` longer than ``cap`` bytes, if any."""
    lines = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if max(map(len, lines)) <= cap:
        return None
    index = next(i for i, line in enumerate(lines) if len(line) > cap)
    start = 0
    for count, match in enumerate(_LINE_END.finditer(buf)):
        if count == index:
            break
        start = match.end()
    return start
