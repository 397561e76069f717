"""The reducer: the only place a turn is assembled from its StreamEvents.

``TurnAssembler.apply(event, t)`` folds one event in; :meth:`~TurnAssembler.take_delta`
returns what changed since it was last called (a :class:`~streamscope.core.turn.model.TurnDelta`
— what every view renders); ``snapshot()`` the whole :class:`~streamscope.core.turn.model.Turn`
so far; ``finish(end, t)`` decides the :class:`~streamscope.core.turn.outcome.Outcome` from how
the stream ended and what arrived. Partial text and tool calls are kept in every outcome. No
I/O, no clocks: times are passed in.

Progress (what the client's idle timeout watches, and what TTFT counts): a non-empty text,
reasoning or tool-call argument fragment. Nothing else counts — keep-alives, usage, a finish
reason, an announced tool call without arguments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from streamscope.core.turn.model import Timings, Turn, TurnDelta
from streamscope.core.turn.outcome import StreamEnd, describe_end
from streamscope.core.turn.tool_calls import ToolCalls
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ReasoningSignature,
    ServerError,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)

__all__ = ["TurnAssembler"]


class _Pieces:
    """Appended text, joined lazily: ``new()`` is what arrived since the last ``new()``."""

    __slots__ = ("chunks", "joined", "parts", "taken")

    COMPACT = 4096
    """The latest pieces are joined into one chunk every this many (so a million one-word
    strings are not joined, and freed, in one go at the end of a turn)."""

    def __init__(self) -> None:
        self.parts: list[str] = []  # the latest pieces
        self.chunks: list[str] = []  # earlier pieces, joined COMPACT at a time
        self.taken = 0  # chunks already handed out by new()
        self.joined: str | None = ""

    def compact(self) -> None:
        self.chunks.append("".join(self.parts))
        self.parts = []

    def new(self) -> str:
        if self.parts:
            self.compact()
        fresh = "".join(self.chunks[self.taken :])
        self.taken = len(self.chunks)
        return fresh

    def text(self) -> str:
        if self.joined is None:
            self.joined = "".join([*self.chunks, *self.parts])
        return self.joined


class TurnAssembler:
    """Folds StreamEvents into a Turn; see the module docstring.

    ``expected_terminal`` names the dialect's terminal signal for reasons ("no [DONE]").
    The pipeline maintains ``events``, ``bytes_received``, ``first_byte``, ``partial_frame``,
    ``frame`` (the number of the frame being parsed), ``dialect`` and ``dialect_mismatch``.
    """

    def __init__(
        self,
        *,
        expected_terminal: str = "terminal signal",
        request_sent: float | None = None,
        headers: float | None = None,
    ) -> None:
        self.expected_terminal = expected_terminal
        self.events = 0
        self.bytes_received = 0
        self.first_byte: float | None = None
        self.partial_frame = False
        self.frame = -1
        self.dialect: str | None = None
        self.dialect_mismatch: str | None = None
        self._request_sent = request_sent
        self._headers = headers
        self._text = _Pieces()
        self._reasoning = _Pieces()
        self._channel: str | None = None
        self._signature: str | None = None
        self._calls = ToolCalls(self.warn)
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._in_tokens: int | None = None
        self._out_tokens: int | None = None
        self._message_id: str | None = None
        self._model: str | None = None
        self._first_token: float | None = None
        self._first_reasoning: float | None = None
        self._first_answer: float | None = None
        self._last_token: float | None = None
        self._terminal_at: float | None = None
        self._progress = 0
        self._text_deltas = 0
        self._warnings: list[str] = []
        self._warnings_taken = 0
        self._malformed = 0
        self._malformed_reason: str | None = None  # the reason of the last malformed frame
        self._terminal: str | None = None
        self._error: ServerError | None = None
        self._finished: Turn | None = None

    # -- reducing ---------------------------------------------------------------------

    def apply(self, event: StreamEvent, t: float) -> bool:
        """Fold ``event`` in; return whether it was progress (see the module docstring)."""
        if type(event) is TextDelta:  # the hot path
            answer = self._text
            answer.parts.append(event.text)
            answer.joined = None
            if len(answer.parts) >= _Pieces.COMPACT:
                answer.compact()
            self._text_deltas += 1
            self._progress += 1
            if self._first_token is None:
                self._first_token = t
            if self._first_answer is None:
                self._first_answer = t
            self._last_token = t
            return True
        if type(event) is MalformedFrame:  # (a frame that is not JSON may come millions of times)
            self._malformed += 1
            reason = event.reason
            if reason is not self._malformed_reason:  # (the same one as the last: warned)
                self._malformed_reason = reason
                self.warn(f"malformed frame: {reason}")
            return False
        match event:
            case TextDelta():  # (a subclass; the hot path above takes the rest)
                raise TypeError("TextDelta subclasses are not supported")
            case ReasoningDelta(text, channel):
                pieces = self._reasoning
                pieces.parts.append(text)
                pieces.joined = None
                if len(pieces.parts) >= _Pieces.COMPACT:
                    pieces.compact()
                if self._channel is None:
                    self._channel = channel
                elif self._channel != channel and channel not in self._channel.split("+"):
                    self._channel = f"{self._channel}+{channel}"
                if self._first_reasoning is None:
                    self._first_reasoning = t
            case ToolCallDelta(index, id, name, arguments):
                if not self._calls.fragment(index, id, name, arguments, t, self.frame):
                    return False
                if self._first_answer is None:
                    self._first_answer = t
            case ToolCallStarted(index, id, name):
                self._calls.started(index, id, name)
                return False
            case ToolCallDone(index, arguments):
                self._calls.done(index, arguments)
                return False
            case FinishReason(reason):
                self._finish = reason
                return False
            case Usage(raw, input_tokens, output_tokens):
                self._usage = raw if self._usage is None else {**self._usage, **raw}
                if input_tokens is not None:
                    self._in_tokens = input_tokens
                if output_tokens is not None:
                    self._out_tokens = output_tokens
                return False
            case MessageStarted(id, model):
                self._message_id = self._message_id or id
                self._model = self._model or model
                return False
            case ReasoningSignature(signature):
                self._signature = signature
                return False
            case ServerError():
                if self._error is None:
                    self._error = event
                return False
            case Terminal(signal):
                if self._terminal is None:
                    self._terminal = signal
                    self._terminal_at = t
                return False
            case MalformedFrame(reason):
                self._malformed += 1
                self.warn(f"malformed frame: {reason}")
                return False
            case DialectWarning(text):
                self.warn(text)
                return False
            case KeepAlive() | Ignored():
                return False
        self._progress += 1
        if self._first_token is None:
            self._first_token = t
        self._last_token = t
        return True

    def warn(self, text: str) -> None:
        """Add a turn warning (once)."""
        if text not in self._warnings:
            self._warnings.append(text)

    # -- reading ----------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The answer text so far."""
        return self._text.text()

    @property
    def terminal_signal(self) -> str | None:
        """The terminal signal, once it arrived."""
        return self._terminal

    @property
    def progress(self) -> int:
        """Progress events so far (what :attr:`TurnDelta.progress` counts)."""
        return self._progress

    def _timings(self, end_time: float | None = None) -> Timings:
        return Timings(
            self._request_sent,
            self._headers,
            self.first_byte,
            self._first_token,
            self._last_token,
            end_time,
            self._first_reasoning,
            self._first_answer,
            self._terminal_at,
        )

    def take_delta(self) -> TurnDelta:
        """What changed since the previous call (the first call: since the start)."""
        changed = self._calls.take_changed()
        warnings = tuple(self._warnings[self._warnings_taken :])
        self._warnings_taken = len(self._warnings)
        error = self._error
        return TurnDelta(
            self._text.new(),
            self._reasoning.new(),
            self._channel,
            changed,
            warnings,
            self._finish,
            self._usage,
            self._in_tokens,
            self._out_tokens,
            self._message_id,
            self._model,
            self._terminal,
            None if error is None else (f"{error.code}: " if error.code else "") + error.message,
            self._timings(),
            self.events,
            self._progress,
            self._text_deltas,
            self._malformed,
            self.bytes_received,
            self.dialect,
            self.dialect_mismatch,
            self._finished is not None,
        )

    def snapshot(self, *, end_time: float | None = None) -> Turn:
        """The Turn so far (after :meth:`finish`, the finished Turn)."""
        if self._finished is not None:
            return self._finished
        return Turn(
            text=self.text,
            reasoning=self._reasoning.text(),
            reasoning_channel=self._channel,
            reasoning_signature=self._signature,
            tool_calls=self._calls.freeze(),
            finish_reason=self._finish,
            usage=self._usage,
            input_tokens=self._in_tokens,
            output_tokens=self._out_tokens,
            message_id=self._message_id,
            model=self._model,
            timings=self._timings(end_time),
            warnings=tuple(self._warnings),
            malformed_frames=self._malformed,
            events=self.events,
            bytes_received=self.bytes_received,
            terminal_signal=self._terminal,
            server_error=self._error,
            dialect=self.dialect,
        )

    def finish(self, end: StreamEnd, t: float) -> Turn:
        """Decide the outcome and return the finished Turn (idempotent: the first end wins).
        Calls still streaming are done now; arguments that are not JSON are warned about."""
        if self._finished is not None:
            return self._finished
        self._calls.finish()
        turn = self.snapshot(end_time=t)
        if end.bytes_received == 0 and self.bytes_received:
            end = replace(end, bytes_received=self.bytes_received)
        elapsed = end.elapsed
        if elapsed is None and self._request_sent is not None:
            elapsed = t - self._request_sent
        outcome, reason = describe_end(
            end,
            elapsed=elapsed,
            terminal=self._terminal,
            expected_terminal=self.expected_terminal,
            finish_reason=self._finish,
            server_error=self._error,
            partial_frame=self.partial_frame,
        )
        self._finished = replace(
            turn,
            outcome=outcome,
            reason=reason,
            status=end.status,
            bytes_received=max(end.bytes_received, turn.bytes_received),
            stream_end=replace(end, headers={}, content_type=None, body=b""),
        )
        return self._finished
