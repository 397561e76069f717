"""Newline-delimited JSON framing (Ollama), with the same shape as the SSE decoder.

Every non-blank line is one frame whose event is ``SSEEvent("message", <line text>)`` so
one frame type flows through the pipeline. Lines end with LF, CRLF or a lone CR (a CR that
ends one chunk and an LF that starts the next are one line end). Unlike SSE, a final line
without a line end *is* a frame at close. Pure: bytes in, frames out.

Exceptions: :class:`~streamscope.core.wire.sse.SSEProtocolError` for a line longer than
``max_line_bytes`` (carrying what was completed earlier in that call); the decoder is then
finished.
"""

from __future__ import annotations

from streamscope.core.wire.sse import RawFrame, SSEEvent, SSEProtocolError
from streamscope.core.wire.sse_lines import DROPPED_KEPT

__all__ = ["NDJSONDecoder"]

_BOM = b"\xef\xbb\xbf"


class NDJSONDecoder:
    """Incremental NDJSON framer: ``feed_frames``/``close_frames`` or ``feed``/``close``."""

    __slots__ = ("_closed", "_failed", "_first", "_max", "_offset", "_pending")

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._max = max_line_bytes
        self._pending = b""  # unfinished line (raw bytes, starting at _offset)
        self._offset = 0
        self._first = True
        self._failed = False
        self._closed = False

    def feed_frames(self, chunk: bytes) -> list[RawFrame]:
        """Frame the next piece of the stream; returns the lines it completed."""
        if self._failed:
            raise SSEProtocolError("decoder already failed")
        if self._closed:
            raise RuntimeError("this NDJSONDecoder is closed")
        frames: list[RawFrame] = []
        if not chunk:
            return frames
        buf = self._pending + chunk if self._pending else chunk
        start = 0
        n = len(buf)
        has_cr = b"\r" in buf
        while True:
            nl = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, nl if nl >= 0 else n) if has_cr else -1
            if cr >= 0:
                if cr + 1 == n:
                    break  # CR or CRLF? decided by the next byte (or the close)
                end = cr
                nxt = cr + 2 if buf[cr + 1] == 10 else cr + 1
            elif nl >= 0:
                end, nxt = nl, nl + 1
            else:
                break
            if end - start > self._max:
                self._fail(frames, buf[start : start + DROPPED_KEPT])
            self._emit(buf, start, end, nxt, frames)
            start = nxt
        rest = buf[start:]
        if len(rest) > self._max:
            self._fail(frames, rest[:DROPPED_KEPT])
        self._pending = rest
        return frames

    def close_frames(self) -> list[RawFrame]:
        """End of stream: a final line without a line end is still a complete frame."""
        if self._failed or self._closed:
            return []
        frames: list[RawFrame] = []
        if self._pending:
            buf = self._pending
            end = len(buf) - 1 if buf.endswith(b"\r") else len(buf)
            self._emit(buf, 0, end, len(buf), frames)
            self._pending = b""
        self._closed = True
        return frames

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Like :meth:`feed_frames` but returns only the events."""
        try:
            frames = self.feed_frames(chunk)
        except SSEProtocolError as exc:
            exc.events = [f.event for f in exc.frames if f.event is not None]
            raise
        return [f.event for f in frames if f.event is not None]

    def close(self) -> list[SSEEvent]:
        """Like :meth:`close_frames` but returns only the events."""
        return [f.event for f in self.close_frames() if f.event is not None]

    def _emit(self, buf: bytes, start: int, end: int, nxt: int, frames: list[RawFrame]) -> None:
        line = buf[start:end]
        raw = buf[start:nxt]
        offset = self._offset
        self._offset = offset + len(raw)
        if self._first:
            self._first = False
            if line.startswith(_BOM):
                line = line[3:]
        if not line.strip():
            return
        try:
            text = line.decode("utf-8")
            invalid = False
        except UnicodeDecodeError:
            text = line.decode("utf-8", "replace")
            invalid = True
        event = SSEEvent("message", text.rstrip(), None, None)
        frames.append(RawFrame(offset, raw, event, (), invalid, True))

    def _fail(self, frames: list[RawFrame], head: bytes) -> None:
        """A line passed the cap (``head``: its first bytes): the decoder is finished."""
        self._failed = True
        self._pending = b""
        raise SSEProtocolError(
            f"line longer than {self._max} bytes",
            events=[f.event for f in frames if f.event is not None],
            frames=frames,
            oversized=RawFrame(self._offset, head, None, (), False, False),
        )
