"""Provider-neutral request input: one conversation every dialect can turn into a request.

A :class:`Conversation` holds the system prompt, the messages (including assistant tool
calls and the tool results answering them), tool definitions and sampling parameters.
Each dialect's ``build_request`` maps it to its own wire shape.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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


SKIPPED_RESULT = (
    "Not run: the user did not answer this tool call and went on with the conversation."
)
"""The result sent for a tool call nobody answered (see :func:`settle_tool_calls`)."""


def match_results(calls: Sequence[ToolCall], results: Sequence[Message]) -> list[Message | None]:
    """Which of ``results`` answers each of ``calls`` (``None``: none does). A result with
    an id answers the call with that id (once); a result without one answers the first call
    still unanswered with its function's name, else the first one still unanswered."""
    answers: list[Message | None] = [None] * len(calls)
    anonymous: list[Message] = []
    for result in results:
        if result.tool_call_id is None:
            anonymous.append(result)
            continue
        for n, call in enumerate(calls):
            if call.id == result.tool_call_id and answers[n] is None:
                answers[n] = result
                break
    for result in anonymous:
        free = [n for n, a in enumerate(answers) if a is None]
        named = [n for n in free if result.name and calls[n].name == result.name]
        if named or free:
            answers[(named or free)[0]] = result
    return answers


def settle_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as every provider accepts them: each assistant message with tool calls
    is followed directly by exactly one ``tool`` message per call, in the calls' order.

    OpenAI (chat and Responses), Anthropic and Gemini answer HTTP 400 to a history where a
    tool call has no result before the next message. So:

    - a call nobody answered gets the explicit result :data:`SKIPPED_RESULT` (the model
      learns the call was not run, instead of the call silently vanishing);
    - results are matched to calls as :func:`match_results` says; every call gets an id
      (``call_N``) where it had none (Gemini and Ollama send none), and its result the same
      id and the function's name;
    - a result that answers no call right before it (a duplicate, or one sent after the
      conversation went on) is left out: no provider accepts it there.

    A settled list settles to itself.
    """
    taken = {c.id for m in messages for c in m.tool_calls if c.id}
    fresh = (f"call_{n}" for n in itertools.count() if f"call_{n}" not in taken)
    out: list[Message] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        i += 1
        if msg.role == "tool":
            continue  # answers no call right before it
        if msg.role != "assistant" or not msg.tool_calls:
            out.append(msg)
            continue
        results: list[Message] = []
        while i < len(messages) and messages[i].role == "tool":
            results.append(messages[i])
            i += 1
        calls: list[ToolCall] = []
        for call in msg.tool_calls:
            call_id = call.id
            if not call_id or any(c.id == call_id for c in calls):
                call_id = next(fresh)
            calls.append(replace(call, id=call_id))
        answers = match_results(msg.tool_calls, results)
        out.append(replace(msg, tool_calls=tuple(calls)))
        for call, answer in zip(calls, answers, strict=True):
            if answer is None:
                answer = Message("tool", SKIPPED_RESULT)
            out.append(replace(answer, tool_call_id=call.id, name=answer.name or call.name))
    return out


__all__ = [
    "SKIPPED_RESULT",
    "Conversation",
    "Message",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "match_results",
    "merge_extra_body",
    "settle_tool_calls",
    "tool_names_by_id",
]
