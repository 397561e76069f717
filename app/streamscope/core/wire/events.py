"""Provider-neutral stream events: what a dialect parser makes of one decoded frame.

The set is closed: :data:`StreamEvent` is the union of every type here, and consumers
dispatch on it with ``match``. All events are frozen, slotted dataclasses.

Additive events end in ``Delta``; lifecycle facts are in the past tense. Nothing here
knows about time or bytes: the pipeline pairs events with the frame they came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ReasoningChannel = Literal["reasoning_content", "reasoning", "thinking", "thought", "summary"]
"""Where reasoning text arrived: OpenAI-compatible ``delta.reasoning_content`` or
``delta.reasoning``, Anthropic ``thinking`` blocks, Gemini ``thought: true`` parts,
Responses reasoning summaries (Ollama's ``message.thinking`` is reported as ``thinking``)."""


@dataclass(frozen=True, slots=True)
class MessageStarted:
    """The server opened the assistant message (first chunk / ``message_start`` ...)."""

    id: str | None
    model: str | None


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning ("thinking") text and the channel it came in."""

    text: str
    channel: ReasoningChannel


@dataclass(frozen=True, slots=True)
class ReasoningSignature:
    """An opaque signature over reasoning (Anthropic ``signature_delta``)."""

    signature: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call was announced, usually with its id and name.

    ``index`` is the provider's index (``None`` when the provider sent none: the
    assembler then places the call by position).
    """

    index: int | None
    id: str | None
    name: str | None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call's arguments (raw JSON text, possibly split anywhere).

    ``id``/``name`` are set when the fragment carried them (OpenAI sends them on the first
    fragment, sometimes together with the first argument bytes).
    """

    index: int | None
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    """The provider closed a tool call; ``arguments`` is its final text when it sent one."""

    index: int | None
    arguments: str | None = None


@dataclass(frozen=True, slots=True)
class FinishReason:
    """Why generation stopped, exactly as the server spelled it (``stop``, ``end_turn``,
    ``STOP``, ``max_output_tokens`` ...)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage. ``raw`` is the provider's usage object as sent (merged by the assembler
    when a provider sends it in pieces, as Anthropic does)."""

    raw: dict[str, Any]
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ServerError:
    """An error reported inside the stream (``data: {"error": ...}``, ``event: error``,
    ``response.failed`` ...). It makes the turn's outcome ``error``."""

    message: str
    code: str | None = None
    raw: Any = None


@dataclass(frozen=True, slots=True)
class Terminal:
    """The dialect's end-of-turn signal arrived (``[DONE]``, ``message_stop``,
    ``response.completed``, ``done:true``, ``finishReason+end`` ...)."""

    signal: str


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """A frame whose only purpose is to keep the connection open (Anthropic ``ping``)."""

    what: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """A well-formed frame that carries nothing the turn needs (e.g. ``content_block_stop``,
    ``response.in_progress``). ``what`` names it for the inspector."""

    what: str


@dataclass(frozen=True, slots=True)
class MalformedFrame:
    """A frame whose data could not be understood (invalid JSON, wrong shape).

    It does not end the turn; it is flagged and counted.
    """

    reason: str
    excerpt: str


@dataclass(frozen=True, slots=True)
class DialectWarning:
    """A quirk the parser noticed and worked around; shown as a turn warning."""

    text: str


StreamEvent = (
    MessageStarted
    | TextDelta
    | ReasoningDelta
    | ReasoningSignature
    | ToolCallStarted
    | ToolCallDelta
    | ToolCallDone
    | FinishReason
    | Usage
    | ServerError
    | Terminal
    | KeepAlive
    | Ignored
    | MalformedFrame
    | DialectWarning
)
"""Every event a dialect parser can produce."""

__all__ = [
    "DialectWarning",
    "FinishReason",
    "Ignored",
    "KeepAlive",
    "MalformedFrame",
    "MessageStarted",
    "ReasoningChannel",
    "ReasoningDelta",
    "ReasoningSignature",
    "ServerError",
    "StreamEvent",
    "Terminal",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallDone",
    "ToolCallStarted",
    "Usage",
]
