"""A turn's values: the :class:`Turn` (whole, so far or finished) and the :class:`TurnDelta`
the reducer publishes (what changed since the previous one).

Both come from one place, :class:`~streamscope.core.turn.assembler.TurnAssembler`; every view
(chat card, Tool calls, status bar, timeline, the saved answer) renders or saves them and
never merges events itself. Times are whatever monotonic clock the pipeline's caller uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, NamedTuple

import jiter
import orjson

from streamscope.core.redact import Scrubber
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.wire.events import ServerError
from streamscope.core.wire.sizes import plural

__all__ = [
    "LIMIT_WORDS",
    "Fragment",
    "Timings",
    "ToolCallState",
    "Turn",
    "TurnDelta",
    "apply_tool_calls",
    "parse_arguments",
    "stopped_at_limit",
]


class Fragment(NamedTuple):
    """One piece of a tool call's arguments as it arrived: when, the text, and the number of
    the frame it came in (as the Frames tab numbers them; -1 when frames are not kept)."""

    t: float
    text: str
    frame: int = -1


LENGTH_FINISH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
"""Finish reasons (compared in lower case) that mean "stopped at the token limit": OpenAI chat
and Ollama ``length``, Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``, Responses
``max_output_tokens`` (its ``response.incomplete`` reason)."""

LIMIT_WORDS = "stopped at max tokens"
"""What a turn cut by the token limit is called everywhere (the card's badge, the inspector's
header, the status bar, the CLI): a completed answer, but not what the model would have
said."""


def stopped_at_limit(outcome: Outcome | None, finish_reason: str | None) -> bool:
    """Whether a turn that ended so (a saved one: its outcome and finish reason) completed
    cut by the token limit (see :data:`LENGTH_FINISH_REASONS`)."""
    return (
        outcome is Outcome.COMPLETED
        and finish_reason is not None
        and finish_reason.lower() in LENGTH_FINISH_REASONS
    )


PARTIAL_PARSE_LIMIT = 256 * 1024
"""Arguments longer than this are not parsed partially (only checked whole): a partial
parse of every batch of a huge argument would cost more than the stream itself."""


def parse_arguments(arguments: str) -> tuple[bool, Any]:
    """Whether ``arguments`` parse as JSON, and the value so far: the whole value when they
    parse, else what ``jiter``'s partial mode makes of them (``None`` if nothing)."""
    if not arguments.strip():
        return False, None
    data = arguments.encode()
    try:
        return True, orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if len(data) > PARTIAL_PARSE_LIMIT:
        return False, None
    try:
        return False, jiter.from_json(data, partial_mode="trailing-strings")
    except ValueError:
        return False, None


@dataclass(frozen=True, slots=True)
class ToolCallState:
    """One tool call as assembled so far: ``arguments`` is the raw text (never repaired);
    ``fragments`` as they arrived; ``parses``/``partial``: whether the arguments parse as
    JSON yet, and the (partial) value (computed when not given). ``position``: the call's
    place in the turn, the key views keep calls by (``-1`` when made outside the reducer:
    then the order of a list)."""

    index: int
    id: str | None
    name: str | None
    arguments: str
    fragments: tuple[Fragment, ...] = ()
    done: bool = False
    position: int = -1
    parses: bool | None = field(default=None, compare=False)
    partial: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.parses is None:  # made outside the reducer: parse once here
            parses, partial = parse_arguments(self.arguments)
            object.__setattr__(self, "parses", parses)
            object.__setattr__(self, "partial", partial)

    def arguments_parse(self) -> bool:
        """Whether the arguments are valid JSON."""
        return bool(self.parses)

    def scrubbed(self, scrubber: Scrubber) -> ToolCallState:
        """This call with the scrubber's secrets masked (for what is saved)."""
        if not scrubber:
            return self
        text = scrubber.text
        return replace(
            self,
            id=text(self.id) if self.id is not None else None,
            name=text(self.name) if self.name is not None else None,
            arguments=text(self.arguments),
            fragments=tuple(Fragment(f.t, text(f.text), f.frame) for f in self.fragments),
            partial=scrubber.value(self.partial),
        )


def apply_tool_calls(
    calls: list[ToolCallState], changed: Iterable[ToolCallState]
) -> list[ToolCallState]:
    """``calls`` (a view's list, by position) with the changed calls of a delta put in
    place: the one rule every view uses, so all show the same calls. Returns ``calls``."""
    for call in changed:
        pos = call.position if call.position >= 0 else len(calls)
        if pos < len(calls):
            calls[pos] = call
        else:
            calls.extend([call] * (pos + 1 - len(calls)))
    return calls


@dataclass(frozen=True, slots=True)
class Timings:
    """Monotonic times of the turn's milestones (``None`` until they happen).

    ``first_token`` is the first semantic progress of any kind (reasoning, answer text or
    tool-call arguments: what TTFT counts); ``first_reasoning`` and ``first_answer`` (text
    or tool-call arguments) split it; ``terminal`` is when the terminal signal arrived.
    """

    request_sent: float | None = None
    headers: float | None = None
    first_byte: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    end: float | None = None
    first_reasoning: float | None = None
    first_answer: float | None = None
    terminal: float | None = None

    @property
    def ttft(self) -> float | None:
        """Time to first token from the request (or first byte when that is unknown)."""
        start = self.request_sent if self.request_sent is not None else self.first_byte
        if start is None or self.first_token is None:
            return None
        return self.first_token - start

    def to_dict(self) -> dict[str, float | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Timings:
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


@dataclass(frozen=True, slots=True)
class TurnDelta:
    """What changed in a turn since the previous delta, as the reducer publishes it.

    ``text``/``reasoning``: appended; ``tool_calls``: the calls that changed, each whole so
    far (put them in place with :func:`apply_tool_calls`); ``warnings``: new ones. The rest
    is the whole turn so far: counters, timings, finish reason, usage, the dialect in use and
    ``dialect_mismatch`` (the dialect the frames look like, when it is not the one in use).
    ``progress``: how many progress events (text, reasoning, argument fragments) so far.
    ``finished``: the turn has ended (this is its last delta: end-of-body events, calls
    done, the last warnings)."""

    text: str = ""
    reasoning: str = ""
    reasoning_channel: str | None = None
    tool_calls: tuple[ToolCallState, ...] = ()
    warnings: tuple[str, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    message_id: str | None = None
    model: str | None = None
    terminal_signal: str | None = None
    error: str | None = None
    timings: Timings = Timings()
    events: int = 0
    progress: int = 0
    text_deltas: int = 0
    malformed_frames: int = 0
    bytes_received: int = 0
    dialect: str | None = None
    dialect_mismatch: str | None = None
    finished: bool = False

    def merge(self, later: TurnDelta) -> TurnDelta:
        """This delta followed by ``later``, as one (for batches joined in transport)."""
        if not self.tool_calls:
            calls = later.tool_calls
        else:
            by_pos = {c.position: c for c in self.tool_calls}
            by_pos.update((c.position, c) for c in later.tool_calls)
            calls = tuple(by_pos[p] for p in sorted(by_pos))
        return replace(
            later,
            text=self.text + later.text,
            reasoning=self.reasoning + later.reasoning,
            tool_calls=calls,
            warnings=self.warnings + later.warnings,
        )

    @staticmethod
    def joined(deltas: Sequence[TurnDelta]) -> TurnDelta | None:
        """``deltas`` in order, as one — :meth:`merge` over them all, in time linear in their
        size (merging one by one copies the text so far each time)."""
        if not deltas:
            return None
        if len(deltas) == 1:
            return deltas[0]
        by_pos: dict[int, ToolCallState] = {}
        for d in deltas:
            by_pos.update((c.position, c) for c in d.tool_calls)
        return replace(
            deltas[-1],
            text="".join(d.text for d in deltas),
            reasoning="".join(d.reasoning for d in deltas),
            tool_calls=tuple(by_pos[p] for p in sorted(by_pos)),
            warnings=tuple(w for d in deltas for w in d.warnings),
        )


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
    dialect: str | None = None
    stream_end: StreamEnd | None = None
    """How the byte stream ended, as the outcome was decided from it (its kind, the
    transport's detail, the timeout that fired; without the response's head and body):
    whoever checks the turn's bytes again ends them the same way."""

    @property
    def stopped_at_limit(self) -> bool:
        """Completed, but cut by the token limit (see :data:`LENGTH_FINISH_REASONS`): the
        answer is whole as sent, yet not what the model would have said."""
        return stopped_at_limit(self.outcome, self.finish_reason)

    def summary(self) -> str:
        """One compact line for the status bar, e.g.
        ``Completed · stop · 412 tokens · TTFT 0.31 s · 58 tok/s`` (``Completed · stopped at
        max tokens · length · …`` when the token limit cut it)."""
        if self.outcome is None:
            return "Streaming…"
        head = self.outcome.value.capitalize()
        if self.outcome is Outcome.CANCELLED and self.reason.startswith(head):
            return self.reason  # "Cancelled by you after 2.1 s"
        if self.outcome is not Outcome.COMPLETED:
            return f"{head} · {self.reason}"
        limit = [LIMIT_WORDS] if self.stopped_at_limit else []
        return " · ".join([head, *limit, *self.figures()])

    def figures(self) -> list[str]:
        """The turn's figures in words: finish reason, tokens, tool calls, TTFT, tok/s,
        malformed frames (what the status bar and an answer's footer show)."""
        parts = []
        if self.finish_reason:
            parts.append(self.finish_reason)
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens} tokens")
        if self.tool_calls:
            parts.append(plural(len(self.tool_calls), "tool call"))
        ttft = self.timings.ttft
        if ttft is not None:
            parts.append(f"TTFT {ttft:.2f} s")
        rate = self.tokens_per_second()
        if rate is not None:
            parts.append(f"{rate:.0f} tok/s")
        if self.malformed_frames:
            parts.append(plural(self.malformed_frames, "malformed frame"))
        return parts

    def scrubbed(self, scrubber: Scrubber) -> Turn:
        """This turn with the scrubber's secrets masked in every text it holds (what is
        saved or exported; the turn itself stays as it came)."""
        if not scrubber:
            return self
        text = scrubber.text
        error = self.server_error
        return replace(
            self,
            text=text(self.text),
            reasoning=text(self.reasoning),
            reasoning_signature=(
                text(self.reasoning_signature) if self.reasoning_signature is not None else None
            ),
            tool_calls=tuple(c.scrubbed(scrubber) for c in self.tool_calls),
            finish_reason=text(self.finish_reason) if self.finish_reason is not None else None,
            usage=scrubber.value(self.usage),
            message_id=text(self.message_id) if self.message_id is not None else None,
            model=text(self.model) if self.model is not None else None,
            warnings=tuple(text(w) for w in self.warnings),
            server_error=(
                ServerError(
                    text(error.message),
                    text(error.code) if error.code is not None else None,
                    scrubber.value(error.raw),
                )
                if error is not None
                else None
            ),
            reason=text(self.reason),
            stream_end=(
                replace(self.stream_end, detail=text(self.stream_end.detail))
                if self.stream_end is not None
                else None
            ),
        )

    def as_delta(self) -> TurnDelta:
        """The whole turn as one delta (a saved turn is shown as a live one is), its tool
        calls done."""
        error = self.server_error
        return TurnDelta(
            text=self.text,
            reasoning=self.reasoning,
            reasoning_channel=self.reasoning_channel,
            tool_calls=tuple(
                replace(call, position=i, done=True) for i, call in enumerate(self.tool_calls)
            ),
            warnings=self.warnings,
            finish_reason=self.finish_reason,
            usage=self.usage,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            message_id=self.message_id,
            model=self.model,
            terminal_signal=self.terminal_signal,
            error=None if error is None else error.message,
            timings=self.timings,
            events=self.events,
            malformed_frames=self.malformed_frames,
            bytes_received=self.bytes_received,
            dialect=self.dialect,
        )

    def tokens_per_second(self) -> float | None:
        """Output tokens over the first-to-last token span, when both are known."""
        t0, t1 = self.timings.first_token, self.timings.last_token
        if self.output_tokens is None or t0 is None or t1 is None or t1 <= t0:
            return None
        return self.output_tokens / (t1 - t0)


def turn_to_json(turn: Turn) -> dict[str, Any]:
    """The CLI's ``--json`` object for a finished turn (extra keys are allowed by the
    contract: ``reasoning_channel``)."""
    return {
        "outcome": turn.outcome.value if turn.outcome is not None else None,
        "reason": turn.reason,
        "text": turn.text,
        "reasoning": turn.reasoning,
        "reasoning_channel": turn.reasoning_channel,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.tool_calls
        ],
        "finish_reason": turn.finish_reason,
        "usage": turn.usage,
        "events": turn.events,
        "warnings": list(turn.warnings),
    }
