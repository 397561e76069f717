"""The verdict engine: a stream through the pipeline, every frame past the rules.

:class:`Linter` owns a :class:`~streamscope.core.turn.pipeline.StreamPipeline` (frames kept,
so frame numbers are the Frames tab's) and runs the framing, dialect and timing rules on what
it produces. Feed it the response's reads as they arrive (live) or all at once (a capture, a
raw body); ``feed`` returns the findings each read brought, ``finish`` the rest::

    lint = Linter("auto", content_type=ctype, headers=[...], status=200)
    for data, t in reads:
        new = lint.feed(data, t)
    verdict = lint.finish(StreamEnd("eof"), t_end)     # a Verdict: findings, turn, summary
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import (
    BODY_KEPT,
    MarkedFrame,
    ParsedFrame,
    PipelineUpdate,
    StreamPipeline,
)
from streamscope.core.verdict.catalog import RULES, dialect_lints
from streamscope.core.verdict.checks import DialectChecks, SSEFrameChecks
from streamscope.core.verdict.rules import Finding, Verdict, diagnosis
from streamscope.core.verdict.timing import Timing
from streamscope.core.wire.dialects import get_dialect, is_ndjson_content_type
from streamscope.core.wire.events import (
    KeepAlive,
    MalformedFrame,
    ReasoningDelta,
    ServerError,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
)
from streamscope.core.wire.sizes import plural
from streamscope.core.wire.sse import RawFrame, SSEEvent

__all__ = ["MAX_FRAMES", "MAX_PER_RULE", "Linter", "Verdict", "diagnosis"]

LEAN_HEAD = 1024
"""With ``keep_text=False``: the body's first bytes kept to recognise an error page or JSON
error document (the CLI keeps the pipeline's default)."""

MAX_PER_RULE = 100
"""Findings (different messages) kept per rule; past that a rule's further hits are counted
in one last finding. The same message again is no new finding: the first one counts it."""

MAX_FRAMES = 100
"""Frames a finding lists (its ``count`` goes on past them)."""

_NO_STREAM_ENDS = frozenset({"http_error", "not_a_stream", "connect_error", "first_byte_timeout"})


class Linter:
    """See the module docstring.

    ``headers``/``status``: the response's (unknown for a raw body: the transport rules that
    need them do not run). ``request``: the request's JSON body (the OpenAI usage rule asks
    whether usage was requested). ``timed``: the reads' times are real (a raw body's are not:
    no timing diagnosis). ``start``: when the request went out, on the reads' clock;
    ``headers_at``: when the response headers came. ``keep_text=False``: the verdict's turn
    has no text or reasoning (no rule reads them; a window that already holds the answer
    does not keep a second copy of it), and only the body's first :data:`LEAN_HEAD` bytes are
    kept to tell an error page from a stream.
    """

    def __init__(
        self,
        dialect: str = "auto",
        *,
        headers: Sequence[tuple[str, str]] | None = None,
        status: int | None = None,
        request: dict[str, Any] | None = None,
        timed: bool = True,
        start: float = 0.0,
        headers_at: float | None = None,
        keep_text: bool = True,
    ) -> None:
        self.headers = list(headers) if headers is not None else None
        self.status = status
        self.request = request
        self.timed = timed
        content_type = self._header("content-type")
        self.pipeline = StreamPipeline(
            dialect,
            keep_frames=True,
            content_type=content_type,
            request_sent=start,
            headers=headers_at,
            head_bytes=BODY_KEPT if keep_text else LEAN_HEAD,
            lean=True,
        )
        self.findings: list[Finding] = []
        self._new: list[Finding] = []
        self._counts: dict[str, int] = {}
        # (rule, detail) -> [the finding, times it fired, its frames]: one finding a message
        self._groups: dict[tuple[str, str], list[Any]] = {}
        self._done_sentinel = False  # the dialect tolerates a "[DONE]" after its terminal
        self._n = 0
        self._oversized: int | None = None  # the row of an over-long line's start
        self._sse = SSEFrameChecks(self._emit)
        self._checks: DialectChecks | None = None
        self._decided = False
        self._terminal_at: int | None = None
        self._keepalives = 0  # keep-alive frames: comments and ping events
        self._ping_events = 0
        self._timing = Timing(start)
        self._verdict: Verdict | None = None
        self._head_checked = False
        self._keep_text = keep_text
        self._gzip_checked = False

    # -- feeding ------------------------------------------------------------------------------

    def feed(self, data: bytes, t: float) -> list[Finding]:
        """One read at time ``t``; returns the findings it brought."""
        if not self._head_checked:
            self._check_head()
        first = self._n
        if not self._gzip_checked and data:
            self._gzip_checked = True
            if data[:2] == b"\x1f\x8b":
                self._emit("transport.content-encoding", None, "the body is gzip data (1f 8b)")
        update = self.pipeline.feed(data, t)
        frames_with_events = self._frames(update, t)
        if not self._keep_text:
            self._forget_text()
        if self.timed and data:
            self._timing.read(t, first, frames_with_events)
        return self.take_new()

    def finish(self, end: StreamEnd, t: float) -> Verdict:
        """The input ended as ``end`` says: whole-stream rules, the timing diagnosis."""
        if self._verdict is not None:
            return self._verdict
        if not self._head_checked:
            self._check_head()
        self._frames(self.pipeline.end_input(end, t), t)
        turn = self.pipeline.close(end, t)
        kind = self.pipeline.end_kind or end.kind
        status = self.status if self.status is not None else turn.status
        if kind == "protocol_error":  # (at the row showing the line's start, if any)
            at = self._oversized if self._oversized is not None else self._n
            self._emit("sse.line-too-long", at, end.detail or "")
        if (status is not None and status >= 400) or kind == "not_a_stream":
            # not a stream at all: what the framing rules said of its bytes is noise
            self.findings = [f for f in self.findings if f.rule.startswith("transport.")]
            if status is not None and status >= 400:
                self._emit("transport.http-status", None, f"HTTP {status}")
            else:
                self._emit("transport.not-a-stream", None, turn.reason)
        elif kind not in _NO_STREAM_ENDS:
            self._stream_end(turn, kind, t)
        self._flush_counts()
        self.findings = self._grouped()
        self._verdict = Verdict(
            dialect=turn.dialect or self.pipeline.dialect_name,
            outcome=turn.outcome.value if turn.outcome is not None else None,
            findings=tuple(self.findings),
            turn=turn,
        )
        return self._verdict

    def take_new(self) -> list[Finding]:
        """The findings since the last call."""
        new, self._new = self._new, []
        return new

    # -- internals ----------------------------------------------------------------------------

    def _forget_text(self) -> None:
        """Drop the text and reasoning the reducer has gathered (see ``keep_text``)."""
        asm = self.pipeline.assembler
        for name in ("_text", "_reasoning"):
            pieces = getattr(asm, name)
            if pieces.parts or pieces.chunks:
                setattr(asm, name, type(pieces)())

    def _header(self, name: str) -> str | None:
        for key, value in self.headers or ():
            if key.lower() == name:
                return value
        return None

    def _emit(self, rule_id: str, frame: int | None, detail: str) -> None:
        key = (rule_id, detail)
        group = self._groups.get(key)
        if group is not None:  # the same finding again: counted, its frame listed (once)
            group[1] += 1
            listed = group[2]
            if frame is not None and len(listed) < MAX_FRAMES and frame not in listed[-1:]:
                listed.append(frame)
            return
        count = self._counts.get(rule_id, 0) + 1
        self._counts[rule_id] = count
        if count > MAX_PER_RULE:
            return
        r = RULES[rule_id]
        message = f"{r.message}: {detail}" if detail else r.message
        frames = (frame,) if frame is not None else ()
        finding = Finding(rule_id, r.severity, frame, message, r.hint, 1, frames)
        self._groups[key] = [finding, 1, list(frames)]
        self.findings.append(finding)
        self._new.append(finding)

    def _grouped(self) -> list[Finding]:
        """The findings, each with its count and frames."""
        repeated = {id(g[0]): g for g in self._groups.values() if g[1] > 1}
        if not repeated:
            return self.findings
        out = []
        for f in self.findings:
            g = repeated.get(id(f))
            out.append(f if g is None else replace(f, count=g[1], frames=tuple(g[2])))
        return out

    def _flush_counts(self) -> None:
        for rule_id, count in self._counts.items():
            if count > MAX_PER_RULE:
                r = RULES[rule_id]
                more = count - MAX_PER_RULE
                finding = Finding(
                    rule_id, r.severity, None, f"{r.message}: {more} more like this", r.hint
                )
                self.findings.append(finding)
                self._new.append(finding)

    def _check_head(self) -> None:
        self._head_checked = True
        if self.headers is None or (self.status is not None and self.status >= 400):
            return
        encoding = (self._header("content-encoding") or "identity").strip().lower()
        if encoding not in ("", "identity"):
            self._emit("transport.content-encoding", None, f"Content-Encoding: {encoding}")

    def _decide(self) -> None:
        name = self.pipeline.dialect_name
        if name is None:
            return
        self._decided = True
        lint = dialect_lints().get(name)
        self._checks = lint.checks(self._emit, self.request) if lint is not None else None
        if lint is not None:
            self._done_sentinel = lint.done_sentinel
            self._sse.data_only = lint.data_only
            self._sse.no_data = lint.no_data
        if self.headers is None or (self.status is not None and self.status >= 400):
            return
        ctype = (self._header("content-type") or "").strip()
        ndjson = get_dialect(name).framing == "ndjson"
        ok = (
            is_ndjson_content_type(ctype.lower())
            if ndjson
            else ("text/event-stream" in ctype.lower())
        )
        if not ok:
            want = "application/x-ndjson" if ndjson else "text/event-stream"
            self._emit("transport.content-type", None, f"{ctype or '(none)'}, not {want}")

    def _frames(self, update: PipelineUpdate, t: float) -> int:
        """Run the rules on the update's frames; return how many had an event."""
        if update.usual is not None:
            return self._usual(update.usual, t)
        frames: list[ParsedFrame] = update.frames
        if not frames:
            return 0
        if not self._decided:
            self._decide()
        sse = self.pipeline.framing != "ndjson"
        sse_checks = self._sse
        lf = sse and sse_checks.plain_lf
        emit = self._emit
        checks = self._checks
        timing = self._timing if self.timed else None
        text_total = 0
        smallest_top = timing.smallest_top() if timing is not None else 0
        n = self._n
        no_event = 0
        for frame, events in frames:
            raw = frame.raw
            if type(frame) is MarkedFrame and frame.role == "oversized":  # (no block)
                self._oversized = n
            # The usual SSE frame ("data: <value>\n\n", LF so far) needs no framing check.
            # (Bytes searched for int needles, 10 and 13: half the time of b"\n" and b"\r".)
            if sse and not (
                lf
                and raw[:6] == b"data: "
                and raw.find(10) == len(raw) - 2  # (so raw[6] exists)
                and raw[6] != 32
                and raw[-1] == 10
                and 13 not in raw
            ):
                sse_checks.frame(n, frame)
                lf = sse_checks.plain_lf
            if frame.invalid_utf8:
                emit("sse.invalid-utf8", n, "")
            if not frame.complete and sse:
                emit("sse.truncated-frame", n, f"{len(raw)} bytes")
            ev = frame.event
            if ev is None:
                if frame.comments:
                    self._keepalives += 1
                no_event += 1
            elif self._terminal_at is None and len(events) == 1 and type(events[0]) is TextDelta:
                if checks is not None:  # the usual frame
                    checks.frame(n, ev, events)
                if timing is not None:
                    chars = len(events[0].text)
                    text_total += chars
                    if chars > smallest_top:
                        timing.text_frame(n, chars, t)
                        smallest_top = timing.smallest_top()
            else:
                self._event(n, ev, events, t)
                smallest_top = timing.smallest_top() if timing is not None else 0
            n += 1
        self._n = n
        if timing is not None:
            timing.text_total += text_total
        return len(frames) - no_event

    def _usual(self, pairs: list[tuple[SSEEvent, list[StreamEvent]]], t: float) -> int:
        """:meth:`_frames` for usual frames (``PipelineUpdate.usual``): each one a
        ``data: <value>`` line and LF LF, so no framing rule but the line ends' can fire."""
        if not self._decided:
            self._decide()
        if not self._sse.plain_lf:  # (LF line ends here: the first such frame tells)
            self._sse.frame(self._n, _USUAL)
        checks = self._checks
        timing = self._timing if self.timed else None
        text_total = 0
        smallest_top = timing.smallest_top() if timing is not None else 0
        n = self._n
        for ev, events in pairs:
            if self._terminal_at is None and len(events) == 1 and type(events[0]) is TextDelta:
                if checks is not None:
                    checks.frame(n, ev, events)
                if timing is not None:
                    chars = len(events[0].text)
                    text_total += chars
                    if chars > smallest_top:
                        timing.text_frame(n, chars, t)
                        smallest_top = timing.smallest_top()
            else:
                self._event(n, ev, events, t)
                smallest_top = timing.smallest_top() if timing is not None else 0
            n += 1
        self._n = n
        if timing is not None:
            timing.text_total += text_total
        return len(pairs)

    def _event(self, n: int, ev: SSEEvent, events: list[StreamEvent], t: float) -> None:
        """The rules on frame ``n``'s event and what the dialect made of it (all but the usual
        text frame, which the loops above check themselves)."""
        emit = self._emit
        terminal_at = self._terminal_at
        sentinel = False  # a bare [DONE] after the terminal, where the dialect shrugs
        if terminal_at is not None:
            sentinel = self._done_sentinel and ev.data == "[DONE]"
            rule_id = "stream.done-sentinel" if sentinel else "stream.data-after-terminal"
            emit(rule_id, n, f"terminal at frame {terminal_at}")
        ollama = self.pipeline.dialect_name == "ollama"
        chars = 0
        malformed = False
        for e in events:
            if isinstance(e, (TextDelta, ReasoningDelta)):
                chars += len(e.text)
            elif isinstance(e, ToolCallDelta):
                chars += len(e.arguments)
            elif isinstance(e, KeepAlive):
                self._keepalives += 1
                self._ping_events += 1
            elif isinstance(e, Terminal):
                if self._terminal_at is None:
                    self._terminal_at = n
            elif isinstance(e, MalformedFrame):
                malformed = True
                if sentinel:
                    continue
                rule_id = "ollama.one-object-per-line" if ollama else "stream.malformed-frame"
                emit(rule_id, n, e.reason)
            elif isinstance(e, ServerError):
                emit("stream.server-error", n, e.message)
        if self._checks is not None and not (malformed and ollama):
            self._checks.frame(n, ev, events)
        if self.timed and chars:
            self._timing.text_total += chars
            if chars > self._timing.smallest_top():
                self._timing.text_frame(n, chars, t)

    def _stream_end(self, turn: Turn, kind: str, t: float) -> None:
        emit = self._emit
        if turn.events <= self._ping_events:  # nothing but keep-alives, if anything
            if self._keepalives:
                emit("timing.keepalives-only", None, plural(self._keepalives, "keep-alive"))
            else:
                emit("stream.empty", None, plural(turn.bytes_received, "byte"))
        if turn.terminal_signal is None and kind != "cancelled" and turn.server_error is None:
            dialect = self.pipeline.dialect_name
            expected = get_dialect(dialect).terminal if dialect else "terminal signal"
            emit("stream.terminal-missing", None, f"{expected} ({turn.reason or kind})")
        mismatch = self.pipeline.assembler.dialect_mismatch
        if mismatch is not None:
            emit("stream.dialect-mismatch", None, f"they look like {mismatch}")
        if self._checks is not None:
            self._checks.finish(turn)
        if self.timed:
            self._timing.keepalives = self._keepalives
            self._timing.diagnose(turn, t, emit)


_USUAL = RawFrame(0, b"data: x\n\n", SSEEvent("message", "x"), (), False)
"""A usual frame, for the framing rules of a run of them (all alike there)."""
