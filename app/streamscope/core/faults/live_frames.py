"""A live body cut into frames read by read, numbered as the Frames tab numbers them
(:class:`LiveFrames`, for :class:`~streamscope.core.faults.live.LiveFaults`): core's decoders
in frames mode, fed each read, so frame ``N`` is the same frame live and in the recording
(:func:`~streamscope.core.faults.body_frames`)."""

from __future__ import annotations

import bisect

from streamscope.core.faults.frames import MAX_LINE_BYTES, BodyFrames
from streamscope.core.wire.dialects import (
    AUTO,
    Framing,
    fallback_for_framing,
    get_dialect,
    is_ndjson_content_type,
)
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import RawFrame, SSEDecoder, SSEEvent, SSEProtocolError

__all__ = ["LiveFrames"]


class LiveFrames:
    """The frames of a body seen so far: ``frames`` (whole ones), their ``starts``, ``fed``
    bytes in all. :meth:`feed` takes a read and returns it cut where frames start."""

    def __init__(self, dialect: str = AUTO) -> None:
        self.dialect = dialect
        self.content_type: str | None = None
        self.framing: Framing | None = None
        self.frames: list[RawFrame] = []
        self.starts: list[int] = []
        self.fed = 0
        self._decoder: SSEDecoder | NDJSONDecoder | None = None
        self._broken_at: int | None = None  # (a line over the cap: the rest is one frame)

    def feed(self, data: bytes) -> list[tuple[int, int, bytes]]:
        """One read, cut where frames start: ``(frame, body offset, bytes)`` — the frame
        index of a frame not yet whole is ``len(frames)``."""
        start = self.fed
        self.fed += len(data)
        self._frame(data)
        return self._pieces(start, data)

    def close(self) -> None:
        """The body has ended: its last frame (an unterminated tail) is whole too."""
        self._close_frames()

    def frame_start(self, k: int) -> int:
        """Where frame ``k`` starts (the frame not yet whole: where the last whole one ends)."""
        return self.starts[k] if k < len(self.starts) else self.frame_end(len(self.frames) - 1)

    def _frame(self, data: bytes) -> None:
        if self._decoder is None:
            self.framing = self._pick_framing(data)
            self._decoder = (
                NDJSONDecoder(MAX_LINE_BYTES)
                if self.framing == "ndjson"
                else SSEDecoder(MAX_LINE_BYTES)
            )
        if self._broken_at is not None:
            return
        try:
            new = self._decoder.feed_frames(data)
        except SSEProtocolError as exc:
            new = list(exc.frames)
            last = new[-1] if new else (self.frames[-1] if self.frames else None)
            self._broken_at = last.offset + len(last.raw) if last is not None else 0
        for f in new:
            self.frames.append(f)
            self.starts.append(f.offset)

    def _close_frames(self) -> bool:
        """The decoder's last frames at the end of the body; whether the tail is a frame."""
        if self._decoder is None or self._broken_at is not None:
            return self._broken_at is not None
        try:
            tail = self._decoder.close_frames()
        except SSEProtocolError as exc:
            tail = list(exc.frames)
        for f in tail:
            self.frames.append(f)
            self.starts.append(f.offset)
        return bool(tail)

    def _pick_framing(self, data: bytes) -> Framing:
        if self.dialect != AUTO:
            return get_dialect(self.dialect).framing
        if is_ndjson_content_type(self.content_type):
            return "ndjson"
        if "event-stream" in (self.content_type or "").lower():
            return "sse"
        head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
        return "ndjson" if head[:1] in (b"{", b"[") else "sse"

    def _pieces(self, start: int, data: bytes) -> list[tuple[int, int, bytes]]:
        """``data`` (at body offset ``start``) cut where frames start: ``(frame, offset,
        bytes)``."""
        end = start + len(data)
        cuts = [s for s in self.starts[bisect.bisect_right(self.starts, start) :] if s < end]
        tail_start = self.frame_end(len(self.frames) - 1)
        if self._broken_at is None and start < tail_start < end and tail_start not in cuts:
            cuts.append(tail_start)
        pieces: list[tuple[int, int, bytes]] = []
        pos = start
        for cut in [*cuts, end]:
            if cut > pos:
                pieces.append((self._frame_of(pos), pos, data[pos - start : cut - start]))
                pos = cut
        return pieces

    def frame_end(self, index: int) -> int:
        if index < 0:
            return 0
        f = self.frames[index]
        return f.offset + len(f.raw)

    def _frame_of(self, offset: int) -> int:
        if self._broken_at is not None and offset >= self._broken_at:
            return len(self.frames)
        if offset >= self.frame_end(len(self.frames) - 1):
            return len(self.frames)
        return max(0, bisect.bisect_right(self.starts, offset) - 1)

    def body_frames(self, dialect: str | None) -> BodyFrames:
        """The frames so far, as the dialect's error frame needs them."""
        first = next((f.raw for f in self.frames if f.event is not None), b"")
        events: tuple[SSEEvent | None, ...] = tuple(f.event for f in self.frames)
        return BodyFrames(
            dialect=dialect or fallback_for_framing(self.framing or "sse").name,
            framing=self.framing or "sse",
            starts=tuple(self.starts),
            raws=tuple(f.raw for f in self.frames),
            events=events,
            line_end=b"\r\n" if b"\r\n" in first else b"\n",
            size=self.fed,
        )
