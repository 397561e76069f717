"""Turn assembly: a pure reducer from StreamEvents to a Turn (outcome rules: outcome.py).

``TurnAssembler.apply(event, t)`` folds one event in; ``snapshot()`` returns the Turn so
far; ``finish(end, t)`` decides the :class:`Outcome` from how the stream ended
(:class:`StreamEnd`, supplied by whoever ran the stream) and what arrived. Partial text and
tool calls are kept in every outcome. Times are whatever monotonic clock the caller uses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson

from streamscope.core.turn.outcome import (
    EndKind,
    Outcome,
    StreamEnd,
    describe_end,
    describe_http_error,
    error_body_fields,
    format_bytes,
)
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


@dataclass(frozen=True, slots=True)
class ToolCallState:
    """One tool call as assembled: ``arguments`` is the raw text, never repaired;
    ``fragments`` are ``(t, text)`` as they arrived."""

    index: int
    id: str | None
    name: str | None
    arguments: str
    fragments: tuple[tuple[float, str], ...]
    done: bool = False

    def arguments_parse(self) -> bool:
        """Whether the arguments so far are valid JSON."""
        try:
            orjson.loads(self.arguments)
        except orjson.JSONDecodeError:
            return False
        return True


@dataclass(frozen=True, slots=True)
class Timings:
    """Monotonic times of the turn's milestones (``None`` until they happen)."""

    request_sent: float | None = None
    headers: float | None = None
    first_byte: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    end: float | None = None

    @property
    def ttft(self) -> float | None:
        """Time to first token from the request (or first byte when that is unknown)."""
        start = self.request_sent if self.request_sent is not None else self.first_byte
        if start is None or self.first_token is None:
            return None
        return self.first_token - start


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn so far (``outcome`` is ``None`` until the stream has ended)."""

    text: str = ""
    reasoning: str = ""
    reasoning_channel: str | None = None
    reasoning_signature: str | None = None
    tool_calls: tuple[ToolCallState, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    message_id: str | None = None
    model: str | None = None
    timings: Timings = Timings()
    warnings: tuple[str, ...] = ()
    malformed_frames: int = 0
    events: int = 0
    bytes_received: int = 0
    terminal_signal: str | None = None
    server_error: ServerError | None = None
    outcome: Outcome | None = None
    reason: str = ""
    status: int | None = None

    def summary(self) -> str:
        """One compact line for the status bar, e.g.
        ``Completed · stop · 412 tokens · TTFT 0.31 s · 58 tok/s``."""
        if self.outcome is None:
            return "Streaming…"
        head = self.outcome.value.capitalize()
        if self.outcome is Outcome.CANCELLED and self.reason.startswith(head):
            return self.reason  # "Cancelled by you after 2.1 s"
        if self.outcome is not Outcome.COMPLETED:
            return f"{head} · {self.reason}"
        parts = [head]
        if self.finish_reason:
            parts.append(self.finish_reason)
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens} tokens")
        if self.tool_calls:
            n = len(self.tool_calls)
            parts.append(f"{n} tool call{'s' if n != 1 else ''}")
        ttft = self.timings.ttft
        if ttft is not None:
            parts.append(f"TTFT {ttft:.2f} s")
        rate = self.tokens_per_second()
        if rate is not None:
            parts.append(f"{rate:.0f} tok/s")
        if self.malformed_frames:
            parts.append(f"{self.malformed_frames} malformed frames")
        return " · ".join(parts)

    def tokens_per_second(self) -> float | None:
        """Output tokens over the first-to-last token span, when both are known."""
        t0, t1 = self.timings.first_token, self.timings.last_token
        if self.output_tokens is None or t0 is None or t1 is None or t1 <= t0:
            return None
        return self.output_tokens / (t1 - t0)


class _ToolCallBuilder:
    __slots__ = ("arguments", "done", "fragments", "id", "index", "name", "parts")

    def __init__(self, index: int, id: str | None, name: str | None) -> None:
        self.index = index
        self.id = id
        self.name = name
        self.parts: list[str] = []
        self.fragments: list[tuple[float, str]] = []
        self.arguments: str | None = None  # from ToolCallDone when no fragments came
        self.done = False

    def text(self) -> str:
        if self.parts:
            return "".join(self.parts)
        return self.arguments or ""

    def freeze(self) -> ToolCallState:
        return ToolCallState(
            self.index, self.id, self.name, self.text(), tuple(self.fragments), self.done
        )


_COMPACT = 4096
"""Answer deltas are joined into one string every this many (see ``_compact_text``)."""


class TurnAssembler:
    """Folds StreamEvents into a Turn. No I/O, no clocks: times are passed in.

    ``expected_terminal`` names the dialect's terminal signal for reasons ("no [DONE]").
    The pipeline maintains ``events``, ``bytes_received``, ``first_byte`` and
    ``partial_frame``.
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
        self._request_sent = request_sent
        self._headers = headers
        self._text: list[str] = []  # the latest deltas
        self._text_chunks: list[str] = []  # earlier deltas, joined _COMPACT at a time
        self._text_cache: str | None = ""
        self._reasoning: list[str] = []
        self._channel: str | None = None
        self._signature: str | None = None
        self._calls: list[_ToolCallBuilder] = []
        self._by_index: dict[int, _ToolCallBuilder] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._in_tokens: int | None = None
        self._out_tokens: int | None = None
        self._message_id: str | None = None
        self._model: str | None = None
        self._first_token: float | None = None
        self._last_token: float | None = None
        self._warnings: list[str] = []
        self._malformed = 0
        self._terminal: str | None = None
        self._error: ServerError | None = None
        self._finished: Turn | None = None

    # -- reducing ---------------------------------------------------------------------

    def apply(self, event: StreamEvent, t: float) -> bool:
        """Fold ``event`` in; return whether it was semantic progress (text, reasoning or
        argument bytes), which is what the idle timeout watches."""
        if type(event) is TextDelta:  # the hot path
            parts = self._text
            parts.append(event.text)
            self._text_cache = None
            if len(parts) >= _COMPACT:
                self._compact_text()
            if self._first_token is None:
                self._first_token = t
            self._last_token = t
            return True
        match event:
            case TextDelta(text):
                self._text.append(text)
                self._text_cache = None
                if len(self._text) >= _COMPACT:
                    self._compact_text()
            case ReasoningDelta(text, channel):
                self._reasoning.append(text)
                if self._channel is None:
                    self._channel = channel
                elif self._channel != channel and channel not in self._channel.split("+"):
                    self._channel = f"{self._channel}+{channel}"
            case ToolCallDelta(index, id, name, arguments):
                call = self._call_for(index, id, name)
                if arguments:
                    call.parts.append(arguments)
                    call.fragments.append((t, arguments))
                else:
                    return False
            case ToolCallStarted(index, id, name):
                self._call_for(index, id, name)
                return False
            case ToolCallDone(index, arguments):
                self._tool_call_done(index, arguments)
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
                return False
            case MalformedFrame(reason):
                self._malformed += 1
                self._warn(f"malformed frame: {reason}")
                return False
            case DialectWarning(text):
                self._warn(text)
                return False
            case KeepAlive() | Ignored():
                return False
        if self._first_token is None:
            self._first_token = t
        self._last_token = t
        return True

    def _warn(self, text: str) -> None:
        if text not in self._warnings:
            self._warnings.append(text)

    def _call_for(self, index: int | None, id: str | None, name: str | None) -> _ToolCallBuilder:
        calls = self._calls
        if index is None:
            call = None
            if id is not None:
                call = next((c for c in calls if c.id == id), None)
            elif name is None and calls:
                call = calls[-1]
            if call is None:
                self._warn("tool call without index: placed by position")
                call = self._new_call(len(calls), id, name)
        else:
            call = self._by_index.get(index)
            if call is None:
                call = self._new_call(index, id, name)
            elif id is not None and call.id is not None and id != call.id:
                self._warn(
                    f"tool call index {index} reused for a different id ({call.id} -> {id}):"
                    " kept as separate calls"
                )
                call = self._new_call(index, id, name)
        if call.id is None and id is not None:
            call.id = id
        if call.name is None and name:
            call.name = name
        return call

    def _new_call(self, index: int, id: str | None, name: str | None) -> _ToolCallBuilder:
        call = _ToolCallBuilder(index, id, name)
        self._calls.append(call)
        self._by_index[index] = call
        return call

    def _tool_call_done(self, index: int | None, arguments: str | None) -> None:
        call = self._by_index.get(index) if index is not None else None
        if call is None and index is None and self._calls:
            call = self._calls[-1]
        if call is None:
            call = self._call_for(index, None, None)
        call.done = True
        if arguments is None:
            return
        if not call.parts:
            call.arguments = arguments
        elif call.text() != arguments:
            self._warn(
                f"tool call {call.index}: final arguments differ from the fragments;"
                " kept the fragments"
            )

    # -- reading ----------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The answer text so far (joined lazily, cached until the next delta)."""
        if self._text_cache is None:
            self._text_cache = "".join([*self._text_chunks, *self._text])
            self._text_chunks = [self._text_cache]
            self._text = []
        return self._text_cache

    def _compact_text(self) -> None:
        # A million one-word strings would otherwise be joined, and freed, in one go at
        # the end of the turn (tens of ms on the UI thread); this spreads that work.
        self._text_chunks.append("".join(self._text))
        self._text = []

    @property
    def terminal_signal(self) -> str | None:
        """The terminal signal, once it arrived."""
        return self._terminal

    def snapshot(self, *, end_time: float | None = None) -> Turn:
        """The Turn so far (after :meth:`finish`, the finished Turn)."""
        if self._finished is not None:
            return self._finished
        return Turn(
            text=self.text,
            reasoning="".join(self._reasoning),
            reasoning_channel=self._channel,
            reasoning_signature=self._signature,
            tool_calls=tuple(c.freeze() for c in self._calls),
            finish_reason=self._finish,
            usage=self._usage,
            input_tokens=self._in_tokens,
            output_tokens=self._out_tokens,
            message_id=self._message_id,
            model=self._model,
            timings=Timings(
                self._request_sent,
                self._headers,
                self.first_byte,
                self._first_token,
                self._last_token,
                end_time,
            ),
            warnings=tuple(self._warnings),
            malformed_frames=self._malformed,
            events=self.events,
            bytes_received=self.bytes_received,
            terminal_signal=self._terminal,
            server_error=self._error,
        )

    def finish(self, end: StreamEnd, t: float) -> Turn:
        """Decide the outcome and return the finished Turn (idempotent: the first end wins)."""
        if self._finished is not None:
            return self._finished
        for call in self._calls:
            text = call.text()
            try:
                orjson.loads(text)
            except orjson.JSONDecodeError:
                name = call.name or "?"
                self._warn(f"tool call {call.index} ({name}): arguments are not valid JSON")
        turn = self.snapshot(end_time=t)
        if end.bytes_received == 0 and self.bytes_received:
            end = _with_bytes(end, self.bytes_received)
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
        self._finished = _replace_turn(turn, outcome, reason, end.status, end.bytes_received)
        return self._finished


def _with_bytes(end: StreamEnd, n: int) -> StreamEnd:
    return replace(end, bytes_received=n)


def _replace_turn(
    turn: Turn, outcome: Outcome, reason: str, status: int | None, n_bytes: int
) -> Turn:
    return replace(
        turn,
        outcome=outcome,
        reason=reason,
        status=status,
        bytes_received=max(n_bytes, turn.bytes_received),
    )


# -- outcome rules ----------------------------------------------------------------------


__all__ = [  # the outcome types are re-exported: most callers only import from here
    "EndKind",
    "Outcome",
    "StreamEnd",
    "Timings",
    "ToolCallState",
    "Turn",
    "TurnAssembler",
    "describe_http_error",
    "error_body_fields",
    "format_bytes",
]
