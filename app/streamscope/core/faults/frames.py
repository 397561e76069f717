"""A recorded body's frames, numbered as the Frames tab numbers them, and the dialect facts a
fault needs: the framing, which frame carries the terminal signal, the line ends in use.

Frames come from core's own decoders in frames mode (:class:`~streamscope.core.sse.SSEDecoder`
or :class:`~streamscope.core.wire.ndjson.NDJSONDecoder`, as the pipeline picks them), so frame
``N`` of a fault is row ``N`` of the Frames tab: 0-based, every block counted — events,
comment-only blocks (keep-alives), a run of blank lines, and an unterminated tail. The frames
tile the body: frame ``i`` is ``body[starts[i]:starts[i] + len(raws[i])]``. A line over the
decoder's cap ends the framing there: the rest of the body is one last frame, as the pipeline
shows the start of that block as one row.

The terminal frame is found, on first use, by running the dialect's own parser over the frames:
the first frame whose events include ``Terminal`` (``[DONE]``, ``message_stop``,
``response.completed``, ``done: true``); for a dialect whose terminal is the end of the body
after a finish reason (Gemini: the parser's ``end_of_body``), the first frame that carried the
finish reason.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

from streamscope.core.wire.dialects import (
    AUTO,
    Framing,
    detect_dialect,
    fallback_for_framing,
    get_dialect,
    is_ndjson_content_type,
)
from streamscope.core.wire.events import FinishReason, Terminal
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import RawFrame, SSEDecoder, SSEEvent, SSEProtocolError

__all__ = ["MAX_LINE_BYTES", "BodyFrames", "body_frames"]

MAX_LINE_BYTES = 1 << 20
"""The line cap used to frame a body (the pipeline's default)."""

_DETECT_EVENTS = 8


@dataclass(frozen=True)
class BodyFrames:
    """A body cut into frames, with what faults need to know of its dialect."""

    dialect: str
    """The dialect's registered name (``auto`` resolved from the frames)."""
    framing: Framing
    starts: tuple[int, ...]
    """Each frame's offset in the body."""
    raws: tuple[bytes, ...]
    """Each frame's exact bytes."""
    events: tuple[SSEEvent | None, ...]
    """The event each frame dispatched (``None``: a comment, blank lines, an unfinished tail)."""
    line_end: bytes
    """``b"\\r\\n"`` when the body's first event ends its lines with CRLF, else ``b"\\n"``."""
    size: int
    """The body's length."""

    @cached_property
    def _terminal_found(self) -> tuple[int | None, str | None]:
        # (found on first use: the dialect's parser runs over every frame up to it)
        return _terminal(self.dialect, self.events)

    @property
    def terminal(self) -> int | None:
        """The frame carrying the terminal signal (``None``: the body has none)."""
        return self._terminal_found[0]

    @property
    def terminal_signal(self) -> str | None:
        """How the dialect names that signal (``[DONE]``, ``finishReason+end`` …)."""
        return self._terminal_found[1]

    def __len__(self) -> int:
        return len(self.starts)

    def end(self, index: int) -> int:
        """The offset just past frame ``index``."""
        return self.starts[index] + len(self.raws[index])

    def frame_at(self, offset: int) -> int:
        """The frame holding body byte ``offset`` (0 for an empty body)."""
        return max(0, bisect.bisect_right(self.starts, offset) - 1)


def body_frames(body: bytes, dialect: str, content_type: str | None = None) -> BodyFrames:
    """Cut ``body`` into frames for ``dialect`` (a registered name, or ``auto``: detected from
    the content type and the first events, as the pipeline does)."""
    known = get_dialect(dialect) if dialect != AUTO else None
    framing: Framing = known.framing if known is not None else _framing(body, content_type)
    frames = _frames(body, framing)
    events = tuple(f.event for f in frames)
    if known is None:
        seen = [e for e in events if e is not None][:_DETECT_EVENTS]
        name = detect_dialect(content_type, seen)
        known = get_dialect(name) if name is not None else fallback_for_framing(framing)
    first = next((f.raw for f in frames if f.event is not None), b"")
    return BodyFrames(
        dialect=known.name,
        framing=framing,
        starts=tuple(f.offset for f in frames),
        raws=tuple(f.raw for f in frames),
        events=events,
        line_end=b"\r\n" if b"\r\n" in first else b"\n",
        size=len(body),
    )


def _framing(body: bytes, content_type: str | None) -> Framing:
    """SSE or NDJSON as the pipeline's ``auto`` decides: content type, else first byte."""
    if is_ndjson_content_type(content_type):
        return "ndjson"
    if "event-stream" in (content_type or "").lower():
        return "sse"
    head = body[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "ndjson" if head[:1] in (b"{", b"[") else "sse"


def _frames(body: bytes, framing: Framing) -> list[RawFrame]:
    decoder = NDJSONDecoder(MAX_LINE_BYTES) if framing == "ndjson" else SSEDecoder(MAX_LINE_BYTES)
    try:
        return [*decoder.feed_frames(body), *decoder.close_frames()]
    except SSEProtocolError as exc:
        frames = list(exc.frames)
        start = frames[-1].offset + len(frames[-1].raw) if frames else 0
        rest = RawFrame(start, body[start:], None, (), False, False)
        return [*frames, rest] if rest.raw else frames


def _terminal(dialect: str, events: tuple[SSEEvent | None, ...]) -> tuple[int | None, str | None]:
    parser = get_dialect(dialect).new_parser()
    finish: int | None = None
    for index, ev in enumerate(events):
        if ev is None:
            continue
        for out in parser.parse(ev):
            if isinstance(out, Terminal):
                return index, out.signal
            if isinstance(out, FinishReason) and finish is None:
                finish = index
    ends = [e for e in parser.end_of_body() if isinstance(e, Terminal)]
    if ends and finish is not None:
        return finish, ends[0].signal
    return None, None
