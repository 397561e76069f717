"""A frame's one-line summary, from the events a dialect parsed out of it.

    summarize_events([TextDelta("Hel")])                  -> 'text "Hel"'
    summarize_events([ToolCallDelta(0, None, None, '{"ci')],
                     SummaryLabels("tool_use", "input"))  -> 'tool_use[0].input +"{\\"ci"'

Payload (text, reasoning, tool calls) comes first, then the rest in arrival order, joined by
`` · ``. Quoted text is a JSON string literal clipped to :data:`CLIP_CHARS`. This only formats
events (no JSON parsing): views call it for every row they paint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

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

__all__ = ["CLIP_CHARS", "SEPARATOR", "SummaryLabels", "clip", "quote", "summarize_events"]

CLIP_CHARS = 60
SEPARATOR = " · "
_PAYLOAD = (TextDelta, ReasoningDelta, ToolCallStarted, ToolCallDelta, ToolCallDone)


def _listed_first_or_empty(event: StreamEvent) -> bool:
    """Payload (listed first) or a message start that says nothing (no id, no model)."""
    if isinstance(event, MessageStarted):
        return event.id is None and event.model is None
    return isinstance(event, _PAYLOAD)


@dataclass(frozen=True, slots=True)
class SummaryLabels:
    """How a dialect names things on the wire (its tool call list and arguments field,
    its finish reason field): ``tool_calls[0].arguments``, ``tool_use[1].input`` ..."""

    tool_calls: str = "tool_calls"
    arguments: str = "arguments"
    finish_reason: str = "finish_reason"


OPENAI_LABELS = SummaryLabels()


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: str) -> str:
    """``text`` clipped, as a JSON string literal (``"Hel\\n…"``)."""
    return json.dumps(clip(text), ensure_ascii=False)


def _tool(labels: SummaryLabels, index: int | None) -> str:
    return f"{labels.tool_calls}[{'?' if index is None else index}]"


def summarize_event(ev: StreamEvent, labels: SummaryLabels = OPENAI_LABELS) -> str:
    """One event as text (see the module docstring)."""
    match ev:
        case TextDelta(text):
            return f"text {quote(text)}"
        case ReasoningDelta(text, channel):
            return f"{channel} {quote(text)}"
        case ToolCallStarted(index, call_id, name):
            return " ".join(x for x in (_tool(labels, index), "start", name, call_id) if x)
        case ToolCallDelta(index, call_id, name, arguments):
            head = _tool(labels, index)
            if name or call_id:
                head = " ".join(x for x in (head, name, call_id) if x)
                return f"{head} +{quote(arguments)}" if arguments else head
            return f"{head}.{labels.arguments} +{quote(arguments)}"
        case ToolCallDone(index, arguments):
            done = f"{_tool(labels, index)} done"
            return done if arguments is None else f"{done} {quote(arguments)}"
        case FinishReason(reason):
            return f"{labels.finish_reason}={reason}"
        case Usage(raw, input_tokens, output_tokens):
            counts = [f"{k}={v}" for k, v in (("in", input_tokens), ("out", output_tokens)) if v]
            if not counts:  # (a shape the dialect does not map: its own counters)
                counts = [f"{k}={v}" for k, v in raw.items() if type(v) is int][:3]
            return " ".join(["usage", *counts])
        case Terminal(signal):
            return signal
        case MessageStarted(message_id, model):
            return " ".join(x for x in ("message_start", message_id, model) if x)
        case ServerError(message, code):
            return f"error {code}: {quote(message)}" if code else f"error: {quote(message)}"
        case MalformedFrame(reason):
            return f"malformed: {clip(reason, 2 * CLIP_CHARS)}"
        case ReasoningSignature(signature):
            return f"signature ({len(signature)} chars)"
        case KeepAlive(what) | Ignored(what):
            return what
        case DialectWarning(text):
            return f"warning: {clip(text, 2 * CLIP_CHARS)}"


def summarize_events(events: Sequence[StreamEvent], labels: SummaryLabels = OPENAI_LABELS) -> str:
    """A frame's events as one line: payload first, then the rest in order."""
    if len(events) == 1:
        return summarize_event(events[0], labels)
    payload = [summarize_event(e, labels) for e in events if isinstance(e, _PAYLOAD)]
    rest = [summarize_event(e, labels) for e in events if not _listed_first_or_empty(e)]
    return SEPARATOR.join(payload + rest)
