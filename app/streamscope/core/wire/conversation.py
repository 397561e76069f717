"""Provider-neutral request input: one conversation every dialect can turn into a request.

A :class:`Conversation` holds the system prompt, the messages (including assistant tool
calls and the tool results answering them), tool definitions and sampling parameters.
Each dialect's ``build_request`` maps it to its own wire shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the assistant made; ``arguments`` is the raw JSON text as received."""

    id: str | None
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One message.

    - ``user``: ``text``.
    - ``assistant``: ``text`` and/or ``tool_calls``.
    - ``tool``: the result of a tool call: ``text`` is the result, ``tool_call_id`` the id
      of the call it answers and ``name`` the function's name (Gemini and Ollama need the
      name; when it is missing it is looked up from the answered call).
    """

    role: Role
    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A function the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True, slots=True)
class Conversation:
    """Everything a request is built from, independent of the wire dialect.

    ``extra_body`` is merged (recursively for objects) into the finished JSON body; a
    ``None`` value removes that key. ``include_usage`` only affects the OpenAI chat dialect
    (``stream_options.include_usage``); some compatible servers reject it.
    ``max_tokens=None`` sends no limit, except where the API requires one (Anthropic:
    :data:`DEFAULT_ANTHROPIC_MAX_TOKENS`).
    """

    messages: Sequence[Message] = ()
    system: str | None = None
    tools: Sequence[ToolDefinition] = ()
    temperature: float | None = None
    max_tokens: int | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    include_usage: bool = True


def merge_extra_body(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``extra`` into ``body`` in place and return it.

    Objects merge recursively; any other value replaces; ``None`` deletes the key.
    """
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(body.get(key), dict):
            merge_extra_body(body[key], value)
        elif isinstance(value, Mapping):
            body[key] = merge_extra_body({}, value)
        else:
            body[key] = value
    return body


def tool_names_by_id(conv: Conversation) -> dict[str, str]:
    """Map every assistant tool-call id in ``conv`` to its function name."""
    names: dict[str, str] = {}
    for msg in conv.messages:
        for call in msg.tool_calls:
            if call.id is not None:
                names[call.id] = call.name
    return names


__all__ = [
    "Conversation",
    "Message",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "merge_extra_body",
    "tool_names_by_id",
]
