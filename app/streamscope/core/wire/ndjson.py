"""Newline-delimited JSON framing (Ollama), with the same shape as the SSE decoder.

Every non-blank line is one frame whose event is ``SSEEvent("message", <line text>)`` so
one frame type flows through the pipeline. Lines end with LF, CRLF or a lone CR (a CR that
ends one chunk and an LF that starts the next are one line end). Unlike SSE, a final line
without a line end *is* a frame at close. Pure: bytes in, frames out.

A run of blank lines (empty, or only spaces, tabs, VT, FF; the BOM at the very start counts as
nothing) is one frame with no event: ``raw`` is the whole run, up to where the next non-blank
line starts (or the end of the stream), so the frames tile the stream
(``b"".join(f.raw for f in frames) == stream``) as the SSE decoder's do. A run costs a few
steps, not one per line, and is held (not joined) until it ends. ``feed``/``close`` give the
events only and keep nothing of a run; a decoder serves one of the two pairs (``feed_frames``
after ``feed`` raises :class:`RuntimeError`, and the other way round).

Exceptions: :class:`~streamscope.core.wire.sse.SSEProtocolError` for a line longer than
``max_line_bytes`` (carrying what was completed earlier in that call); the decoder is then
finished.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from streamscope.core.wire.sse import RawFrame, SSEEvent, SSEProtocolError

__all__ = ["NDJSONDecoder"]

_BOM: Final = b"\xef\xbb\xbf"
_FRESH: Final = 0
_EVENTS: Final = 1
_FRAMES: Final = 2


@lru_cache(maxsize=8)
def _blank_lines(max_line_bytes: int) -> re.Pattern[bytes]:
    """Complete blank lines in a row, from a line start: line ends, or spaces and tabs up to
    the cap and a line end (a longer one is left to fail as too long).  Possessive: a plain
    ``+`` keeps a backtracking entry per repetition (4 GB for 20 MB of CR); as it is, a run of
    line ends is one C loop, about 2 ns a byte."""
    return re.compile(rb"(?:[\r\n]++|[ \t\x0b\x0c]{1,%d}+[\r\n])++" % max_line_bytes)


class NDJSONDecoder:
    """Incremental NDJSON framer: ``feed_frames``/``close_frames`` or ``feed``/``close``."""

    __slots__ = (
        "_blank",
        "_closed",
        "_failed",
        "_first",
        "_max",
        "_mode",
        "_offset",
        "_pending",
        "_run",
        "_run_offset",
    )

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._blank = _blank_lines(max_line_bytes)
        self._pending = b""  # unfinished line (raw bytes, starting at _offset)
        self._offset = 0
        self._first = True
        self._failed = False
        self._closed = False
        self._mode = _FRESH
        self._run: list[bytes | memoryview] = []  # frames mode: the blank lines held
        self._run_offset = -1  # where the run of blank lines held started (-1: none)

    def feed_frames(self, chunk: bytes) -> list[RawFrame]:
        """Frame the next piece of the stream; returns the lines it completed (a run of blank
        lines as one frame, once the next non-blank line starts)."""
        self._enter(_FRAMES)
        return self._cut(chunk)

    def close_frames(self) -> list[RawFrame]:
        """End of stream: a final line without a line end is still a complete frame, and a
        run of blank lines held is one."""
        if self._mode == _EVENTS:
            raise RuntimeError("this NDJSONDecoder is in events mode; use close()")
        return self._close()

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Like :meth:`feed_frames` but returns only the events."""
        self._enter(_EVENTS)
        try:
            frames = self._cut(chunk)
        except SSEProtocolError as exc:
            exc.events = [f.event for f in exc.frames if f.event is not None]
            raise
        return [f.event for f in frames if f.event is not None]

    def close(self) -> list[SSEEvent]:
        """Like :meth:`close_frames` but returns only the events."""
        if self._mode == _FRAMES:
            raise RuntimeError("this NDJSONDecoder is in frames mode; use close_frames()")
        return [f.event for f in self._close() if f.event is not None]

    def _enter(self, mode: int) -> None:
        if self._failed:
            raise SSEProtocolError("decoder already failed")
        if self._closed:
            raise RuntimeError("this NDJSONDecoder is closed")
        if self._mode != mode:
            if self._mode != _FRESH:
                used = "frames" if self._mode == _FRAMES else "events"
                raise RuntimeError(f"this NDJSONDecoder is in {used} mode")
            self._mode = mode

    def _cut(self, chunk: bytes) -> list[RawFrame]:
        frames: list[RawFrame] = []
        if not chunk:
            return frames
        buf = self._pending + chunk if self._pending else chunk
        start = 0
        n = len(buf)
        has_cr = b"\r" in buf
        nl = -1  # the next LF at or after start (n: none); searched again only once passed
        while True:
            if nl < start:
                nl = buf.find(b"\n", start)
                if nl < 0:
                    nl = n
            cr = buf.find(b"\r", start, nl) if has_cr else -1
            if cr >= 0:
                if cr + 1 == n:
                    break  # CR or CRLF? decided by the next byte (or the close)
                end = cr
                nxt = cr + 2 if buf[cr + 1] == 10 else cr + 1
            elif nl < n:
                end, nxt = nl, nl + 1
            else:
                break
            if end - start > self._max:
                self._fail(frames)
            start = self._emit(buf, start, end, nxt, frames)
        rest = buf[start:]
        if len(rest) > self._max:
            self._fail(frames)
        self._pending = rest
        return frames

    def _close(self) -> list[RawFrame]:
        if self._failed or self._closed:
            return []
        frames: list[RawFrame] = []
        if self._pending:
            buf = self._pending
            end = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
            self._emit(buf, 0, end, len(buf), frames)
            self._pending = b""
        self._end_run(frames)
        self._closed = True
        return frames

    def _emit(self, buf: bytes, start: int, end: int, nxt: int, frames: list[RawFrame]) -> int:
        """The line ``buf[start:end]`` (its line end up to ``nxt``): a frame, or a blank line
        that starts or goes on with a run.  Returns where the next line starts: after a blank
        line, past the blank lines that follow it, in one step.  (Their line ends need no CR
        holding: whether a CR ending this chunk and an LF starting the next are one line end or
        two, the bytes of the run are the same.)"""
        line = buf[start:end]
        offset = self._offset
        if self._first:
            self._first = False
            if line.startswith(_BOM):
                line = line[3:]
        if not line.strip():
            m = self._blank.match(buf, nxt)
            if m is not None:
                nxt = m.end()
            self._blank_run(buf, start, nxt)
            return nxt
        if self._run_offset >= 0:
            self._end_run(frames)
        raw = buf[start:nxt]
        self._offset = offset + len(raw)
        try:
            text = line.decode("utf-8")
            invalid = False
        except UnicodeDecodeError:
            text = line.decode("utf-8", "replace")
            invalid = True
        event = SSEEvent("message", text.rstrip(), None, None)
        frames.append(RawFrame(offset, raw, event, (), invalid, True))
        return nxt

    def _blank_run(self, buf: bytes, start: int, end: int) -> None:
        """Blank lines ``buf[start:end]``: the run of them held goes on (frames mode keeps
        their bytes, by reference)."""
        if self._run_offset < 0:
            self._run_offset = self._offset
        self._offset += end - start
        if self._mode == _FRAMES:
            self._run.append(buf if end - start == len(buf) else memoryview(buf)[start:end])

    def _end_run(self, frames: list[RawFrame]) -> None:
        """A non-blank line (or the end) came: the run of blank lines held is one frame."""
        offset = self._run_offset
        if offset < 0:
            return
        self._run_offset = -1
        if self._mode == _FRAMES:
            run = self._run
            raw = run[0] if len(run) == 1 and isinstance(run[0], bytes) else b"".join(run)
            self._run = []
            frames.append(RawFrame(offset, raw, None, (), False, True))

    def _fail(self, frames: list[RawFrame]) -> None:
        self._failed = True
        self._pending = b""
        self._run = []
        raise SSEProtocolError(
            f"line longer than {self._max} bytes",
            events=[f.event for f in frames if f.event is not None],
            frames=frames,
        )
