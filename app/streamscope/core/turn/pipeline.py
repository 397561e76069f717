"""The byte pipeline: response bytes -> frames -> StreamEvents -> Turn. Pure.

``StreamPipeline`` owns the framing decoder (SSE or NDJSON, by the dialect), the dialect's
parser and the :class:`~streamscope.core.turn.assembler.TurnAssembler`. The client (or a replay, or
a test) feeds it every network read with its time and closes it with a
:class:`~streamscope.core.turn.outcome.StreamEnd`::

    pipe = StreamPipeline("openai", keep_frames=True, content_type=ctype, request_sent=t0)
    for data, t in reads:
        update = pipe.feed(data, t)       # update.frames, update.events, update.progress ...
    turn = pipe.close(StreamEnd("eof"), t_end)

A framing protocol error (line too long) does not raise: ``update.protocol_error`` says
so, later feeds are ignored, and ``close`` gives an ``error`` outcome with the partial turn.
"""

from __future__ import annotations

import re
from dataclasses import replace

from streamscope.core.turn.assembler import TurnAssembler
from streamscope.core.turn.model import Turn
from streamscope.core.turn.not_json import JSON_START, NotJSON
from streamscope.core.turn.outcome import StreamEnd, is_error_document
from streamscope.core.turn.updates import FrameRole, MarkedFrame, ParsedFrame, PipelineUpdate
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects import (
    detect_dialect,
    fallback_for_framing,
    get_dialect,
    is_ndjson_content_type,
)
from streamscope.core.wire.dialects.base import Dialect, Framing, StreamParser
from streamscope.core.wire.events import DialectWarning, StreamEvent
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import (
    RawFrame,
    SSEDecoder,
    SSEEvent,
    SSEProtocolError,
    UsualBlocks,
)

__all__ = [
    "FrameRole",
    "MarkedFrame",
    "ParsedFrame",
    "PipelineUpdate",
    "StreamPipeline",
]

_CLEAN_ENDS = frozenset({"eof"})
_BODY_ENDS = frozenset({"eof", "broken", "idle_timeout"})  # the body decides the outcome
_BODY_FRAMES = frozenset({"http_error", "not_a_stream"})  # the body is a frame of its own
# A blank line at the very end of the body: the last SSE block was terminated.
_BLOCK_END = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)\Z")


_new_tuple = tuple.__new__


BODY_KEPT = 64 * 1024
"""The body's first bytes kept to tell, at the end, a page or a JSON error from a stream
(:meth:`StreamPipeline.close`); a JSON error body is shorter than this."""

SNIFF_BYTES = 64 * 1024
"""``auto`` waits this many blank bytes at most for the byte that tells SSE from NDJSON,
then decodes SSE (a body of blank lines is not buffered whole)."""

SNIFF_EVENTS = 8
"""With a fixed dialect, the first this many events are checked against auto-detection: a
mismatch (an Anthropic stream read as OpenAI, say) is reported as ``dialect_mismatch``."""

_Decoder = SSEDecoder | NDJSONDecoder


class StreamPipeline:
    """Bytes in, Turn out; see the module docstring."""

    def __init__(
        self,
        dialect: str = "auto",
        *,
        keep_frames: bool = True,
        content_type: str | None = None,
        max_line_bytes: int = 1 << 20,
        request_sent: float | None = None,
        headers: float | None = None,
        head_bytes: int = BODY_KEPT,
        lean: bool = False,
    ) -> None:
        self.keep_frames = keep_frames
        self._lean = lean and keep_frames  # (see PipelineUpdate.usual)
        self._head_max = head_bytes  # (a second pipeline beside a live one may keep less)
        self.content_type = content_type
        self._max_line = max_line_bytes
        self._dialect: Dialect | None = None if dialect == "auto" else get_dialect(dialect)
        self._parser: StreamParser | None = None
        self._decoder: _Decoder | None = None
        self._sniff = bytearray()  # auto: the body while only blank (framing undecided)
        self._protocol_error: str | None = None
        self._flushed = False
        self._pending_warnings: list[StreamEvent] = []
        self._sniffed_frames = False  # the decoder was driven in frames mode by flush()
        self._tail = b""  # last bytes of the body (events mode: was the last block ended?)
        self._head = bytearray()  # the first BODY_KEPT bytes of the body
        self._frame_no = 0  # frames so far (the Frames tab's numbering)
        self._sniffed: list[SSEEvent] | None = None if self._dialect is None else []
        self._not_json = NotJSON()  # payloads that cannot start JSON: not parsed per frame
        self.assembler = TurnAssembler(request_sent=request_sent, headers=headers)
        self.end_kind: str | None = None  # how the input ended, as close() decided it
        if self._dialect is not None:
            self._use(self._dialect)
            self._decoder = self._new_decoder(self._dialect.framing)

    # -- public ---------------------------------------------------------------------------

    @property
    def dialect_name(self) -> str | None:
        """The dialect in use; ``None`` while ``auto`` has not decided yet."""
        return self._dialect.name if self._dialect is not None else None

    @property
    def framing(self) -> Framing | None:
        """``"sse"`` or ``"ndjson"``; ``None`` until known."""
        match self._decoder:
            case SSEDecoder():
                return "sse"
            case NDJSONDecoder():
                return "ndjson"
        return None

    def feed(self, data: bytes, t: float) -> PipelineUpdate:
        """Feed one network read received at time ``t``."""
        update = PipelineUpdate(assembler=self.assembler)
        if not data or self._protocol_error is not None or self._flushed:
            update.terminal = self.assembler.terminal_signal is not None
            update.protocol_error = self._protocol_error
            return update
        asm = self.assembler
        if asm.first_byte is None:
            asm.first_byte = t
        asm.bytes_received += len(data)
        if len(self._head) < self._head_max:
            self._head += data[: self._head_max - len(self._head)]
        if not self.keep_frames:
            self._tail = (self._tail + data[-4:])[-4:]  # (not a copy of a big read)
        decoder = self._decoder
        if decoder is None:
            self._sniff += data
            framing = self._choose_framing(data, final=len(self._sniff) >= SNIFF_BYTES)
            if framing is None:
                return update
            data, self._sniff = bytes(self._sniff), bytearray()
            decoder = self._decoder = self._new_decoder(framing)
        try:
            if self._lean and type(decoder) is SSEDecoder:
                got = decoder.feed_usual(data)
                if type(got) is UsualBlocks:
                    self._usual(got.events, t, update)
                else:
                    self._frames(got, t, update)  # type: ignore[arg-type]
            elif self.keep_frames:
                self._frames(decoder.feed_frames(data), t, update)
            else:
                self._events(decoder.feed(data), t, update)
        except SSEProtocolError as exc:
            self._protocol_error = str(exc)
            if self.keep_frames:
                self._frames(exc.frames, t, update)
                self._oversized(exc, update)
            else:
                self._events(exc.events, t, update)
        update.terminal = asm.terminal_signal is not None
        update.protocol_error = self._protocol_error
        return update

    def flush(self, t: float, *, clean: bool = True) -> PipelineUpdate:
        """End of input: decode what the framing layer still holds and, when the body ended
        cleanly, let the dialect react (Gemini: a finishReason then EOF is the terminal).
        Called by :meth:`close` if not called before; later calls return an empty update."""
        update = PipelineUpdate(assembler=self.assembler)
        if self._flushed:
            return update
        self._flushed = True
        if self._decoder is None and self._sniff:
            data, self._sniff = bytes(self._sniff), bytearray()
            self._decoder = self._new_decoder(self._choose_framing(data, final=True) or "sse")
            self._sniffed_frames = True
            try:
                self._frames(self._decoder.feed_frames(data), t, update)
            except SSEProtocolError as exc:
                self._protocol_error = str(exc)
                self._frames(exc.frames, t, update)
                self._oversized(exc, update)
        decoder = self._decoder
        if decoder is not None and self._protocol_error is None:
            if self.keep_frames or self._sniffed_frames:
                self._frames(decoder.close_frames(), t, update)
            else:
                self._events(decoder.close(), t, update)
                if (
                    isinstance(decoder, SSEDecoder)
                    and self._tail.strip(b"\r\n")
                    and _BLOCK_END.search(self._tail) is None
                ):
                    self.assembler.partial_frame = True
        if clean and self._parser is not None and self._protocol_error is None:
            self._apply(self._parser.end_of_body(), t, update)
        update.terminal = self.assembler.terminal_signal is not None
        update.protocol_error = self._protocol_error
        return update

    def end_input(self, end: StreamEnd, t: float) -> PipelineUpdate:
        """The input ended as ``end`` says: :meth:`flush` accordingly and return what that
        produced (the unterminated tail frame, end-of-body events) for the observers —
        and, when the response was no stream (an HTTP error, a page), its body as one frame
        (:class:`MarkedFrame`, ``role="body"``, received
        at ``t``); :meth:`close` then decides the outcome."""
        flushed = self._flushed
        update = self.flush(t, clean=end.kind in _CLEAN_ENDS)
        if not flushed and self.keep_frames and end.kind in _BODY_FRAMES and end.body:
            frame = MarkedFrame(self.assembler.bytes_received, end.body, None, (), False)
            update.frames.append(ParsedFrame(frame, []))
            self._frame_no += 1
        return update

    def close(self, end: StreamEnd, t: float) -> Turn:
        """Finish the turn: flush the input, then decide the outcome from ``end`` — and from
        the body, when it was no stream at all (:meth:`_not_a_stream`)."""
        self.flush(t, clean=end.kind in _CLEAN_ENDS)
        if self._protocol_error is not None and end.kind not in ("cancelled", "protocol_error"):
            end = replace(end, kind="protocol_error", detail=self._protocol_error)
        elif end.kind == "protocol_error" and not end.detail and self._protocol_error:
            end = replace(end, detail=self._protocol_error)
        elif end.kind in _BODY_ENDS and self._not_a_stream(end):
            end = replace(end, kind="not_a_stream", body=bytes(self._head))
        self.end_kind = end.kind
        return self.assembler.finish(end, t)

    def snapshot(self) -> Turn:
        """The Turn so far."""
        return self.assembler.snapshot()

    # -- internals --------------------------------------------------------------------------

    def _not_a_stream(self, end: StreamEnd) -> bool:
        """Whether the body, which brought no terminal signal, was an HTML page or one JSON
        error object instead of a stream (a saved body has no status to tell)."""
        head = bytes(self._head)
        if self.assembler.terminal_signal is not None or not head.strip():
            return False
        whole = self.assembler.bytes_received <= len(head)
        if whole and self._one_ndjson_frame(head):
            return False
        return is_error_document(
            replace(end, content_type=self.content_type, body=head), whole=whole
        )

    def _one_ndjson_frame(self, body: bytes) -> bool:
        """Whether the whole ``body`` is one complete NDJSON frame of a stream: an error in
        it is the dialect's in-stream error, not an error body."""
        return (
            self.framing == "ndjson"
            and body.endswith(b"\n")
            and b"\n" not in body.rstrip(b"\r\n")
            and classify_content_type(self.content_type, body)[0]
        )

    def _oversized(self, exc: SSEProtocolError, update: PipelineUpdate) -> None:
        """The start of the block that broke the line cap, as a frame of its own."""
        head = exc.oversized
        if head is not None and head.raw:
            frame = MarkedFrame(head.offset, head.raw, None, (), False, role="oversized")
            update.frames.append(ParsedFrame(frame, []))
            self._frame_no += 1

    def _new_decoder(self, framing: Framing) -> _Decoder:
        if framing == "ndjson":
            return NDJSONDecoder(self._max_line)
        return SSEDecoder(self._max_line)

    def _use(self, dialect: Dialect) -> None:
        self._dialect = dialect
        self._parser = dialect.new_parser()
        self.assembler.expected_terminal = dialect.terminal
        self.assembler.dialect = dialect.name

    def _sniff_dialect(self, ev: SSEEvent) -> None:
        """Check a fixed dialect against what the first events look like."""
        sniffed = self._sniffed
        assert sniffed is not None and self._dialect is not None
        sniffed.append(ev)
        guess = detect_dialect(self.content_type, sniffed)
        if guess is None and len(sniffed) < SNIFF_EVENTS:
            return
        self._sniffed = None
        if guess is not None and guess != self._dialect.name:
            self.assembler.dialect_mismatch = guess

    def _choose_framing(self, data: bytes, *, final: bool = False) -> Framing | None:
        """SSE or NDJSON for ``auto``: by content type, else by the first non-blank byte
        (``data``: the body's bytes since the last call, all blank before); ``None``: not
        yet, unless ``final`` (SSE, then)."""
        ctype = (self.content_type or "").lower()
        if is_ndjson_content_type(ctype):
            return "ndjson"
        if "event-stream" in ctype:
            return "sse"
        stripped = data.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not stripped:
            return "sse" if final else None
        return "ndjson" if stripped[:1] in (b"{", b"[") else "sse"

    def _decide(self, ev: SSEEvent) -> StreamParser:
        name = detect_dialect(self.content_type, [ev])
        warn: list[StreamEvent] = []
        if name is None:
            name = fallback_for_framing(self.framing or "sse").name
            if '"error"' not in ev.data:
                warn.append(DialectWarning(f"auto: could not tell the dialect; assuming {name}"))
        self._use(get_dialect(name))
        assert self._parser is not None
        self._pending_warnings = warn
        return self._parser

    def _frames(self, frames: list[RawFrame], t: float, update: PipelineUpdate) -> None:
        asm = self.assembler
        keep = self.keep_frames
        parser = self._parser
        out = update.events
        apply = asm.apply
        progress = update.progress
        frames_out = update.frames
        number = self._frame_no
        self._frame_no = number + len(frames)
        asm.events += len(frames)  # (less the frames without an event, below)
        for frame in frames:
            ev = frame.event
            if ev is None:
                asm.events -= 1
                if not frame.complete:
                    asm.partial_frame = True
                if keep:
                    frames_out.append(ParsedFrame(frame, []))
                number += 1
                continue
            asm.frame = number
            number += 1
            if self._sniffed is not None:
                self._sniff_dialect(ev)
            if parser is None:
                parser = self._decide(ev)
                events = [*self._pending_warnings, *parser.parse(ev)]
            elif ev.data[:1] == "{" or ev.data[:1] in JSON_START:
                events = parser.parse(ev)
            else:
                events = self._not_json.events(parser, ev)
            if frame.invalid_utf8:
                events.append(DialectWarning("a frame was not valid UTF-8 (decoded with U+FFFD)"))
            if len(events) == 1:
                if apply(events[0], t):
                    progress = True
                out.append(events[0])
            else:
                for e in events:
                    if apply(e, t):
                        progress = True
                out.extend(events)
            if keep:
                frames_out.append(_new_tuple(ParsedFrame, (frame, events)))
        update.progress = progress

    def _usual(self, evs: list[SSEEvent], t: float, update: PipelineUpdate) -> None:
        """:meth:`_frames` for usual blocks (one event each, valid UTF-8), frames unmade."""
        asm = self.assembler
        parser = self._parser
        out = update.events
        apply = asm.apply
        progress = update.progress
        number = self._frame_no
        self._frame_no = number + len(evs)
        asm.events += len(evs)
        pairs: list[tuple[SSEEvent, list[StreamEvent]]] = []
        update.usual = pairs
        append = pairs.append
        for ev in evs:
            asm.frame = number
            number += 1
            if self._sniffed is not None:
                self._sniff_dialect(ev)
            if parser is None:
                parser = self._decide(ev)
                events = [*self._pending_warnings, *parser.parse(ev)]
            elif ev.data[:1] == "{" or ev.data[:1] in JSON_START:
                events = parser.parse(ev)
            else:
                events = self._not_json.events(parser, ev)
            if len(events) == 1:
                if apply(events[0], t):
                    progress = True
                out.append(events[0])
            else:
                for e in events:
                    if apply(e, t):
                        progress = True
                out.extend(events)
            append((ev, events))
        update.progress = progress

    def _events(self, evs: list[SSEEvent], t: float, update: PipelineUpdate) -> None:
        asm = self.assembler
        parser = self._parser
        out = update.events
        apply = asm.apply
        progress = update.progress
        asm.events += len(evs)
        for ev in evs:
            if self._sniffed is not None:
                self._sniff_dialect(ev)
            if parser is None:
                parser = self._decide(ev)
                events = [*self._pending_warnings, *parser.parse(ev)]
            elif ev.data[:1] == "{" or ev.data[:1] in JSON_START:
                events = parser.parse(ev)
            else:
                events = self._not_json.events(parser, ev)
            for e in events:
                if apply(e, t):
                    progress = True
            out.extend(events)
        update.progress = progress

    def _apply(self, events: list[StreamEvent], t: float, update: PipelineUpdate) -> None:
        for e in events:
            if self.assembler.apply(e, t):
                update.progress = True
        update.events.extend(events)
