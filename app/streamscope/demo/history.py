"""What real providers refuse in a conversation's history: tool calls and their results.

OpenAI (chat and Responses), Anthropic and Gemini answer HTTP 400 when a tool call is not
answered right after it, or a result answers no call. The demo endpoint refuses the same
histories with the same words, so a client that sends them fails here first, not against a
paid API. Ollama accepts any order (and so does the demo for it). Written from the
providers' documentation and error messages, not from StreamScope's own dialects.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JSON", "anthropic", "gemini", "openai", "responses"]

JSON = dict[str, Any]


def _dicts(items: Any) -> list[JSON]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def openai(body: JSON) -> str | None:
    """Chat completions: an assistant message's ``tool_calls`` are answered by ``tool``
    messages right after it, one per ``tool_call_id``."""
    waiting: list[str] = []
    for message in [*_dicts(body.get("messages")), None]:
        role = message.get("role") if message is not None else None
        if message is not None and role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a"
                    " preceeding message with 'tool_calls'."
                )
            waiting.remove(call_id)
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages"
                " responding to each 'tool_call_id'. The following tool_call_ids did not have"
                f" response messages: {', '.join(waiting)}"
            )
        if message is not None and role == "assistant":
            waiting = [str(c.get("id")) for c in _dicts(message.get("tool_calls"))]
    return None


def responses(body: JSON) -> str | None:
    """Responses: every ``function_call`` item has a ``function_call_output`` with its
    ``call_id`` later in the input, and every output a call before it."""
    items = body.get("input")
    calls: list[str] = []
    outputs: set[str] = set()
    for item in _dicts(items):
        kind = item.get("type")
        call_id = str(item.get("call_id"))
        if kind == "function_call":
            calls.append(call_id)
        elif kind == "function_call_output":
            if call_id not in calls:
                return f"No tool call found for function call output with call_id {call_id}."
            outputs.add(call_id)
    for call_id in calls:
        if call_id not in outputs:
            return f"No tool output found for function call {call_id}."
    return None


def anthropic(body: JSON) -> str | None:
    """Messages: the ``tool_use`` blocks of an assistant message are answered by
    ``tool_result`` blocks in the next (user) message, which come before any text."""
    messages = _dicts(body.get("messages"))
    for i, message in enumerate(messages):
        blocks = _dicts(message.get("content"))
        results = [b for b in blocks if b.get("type") == "tool_result"]
        previous = _dicts(messages[i - 1].get("content")) if i else []
        uses = [str(b.get("id")) for b in previous if b.get("type") == "tool_use"]
        if i and messages[i - 1].get("role") != "assistant":
            uses = []
        for j, block in enumerate(blocks):
            if block.get("type") == "tool_result" and str(block.get("tool_use_id")) not in uses:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result`"
                    f" blocks: {block.get('tool_use_id')}. Each `tool_result` block must have a"
                    " corresponding `tool_use` block in the previous message."
                )
        if results and any(b.get("type") != "tool_result" for b in blocks[: len(results)]):
            return (
                f"messages.{i}: `tool_result` blocks must come first in the content, before"
                " any other block."
            )
        if message.get("role") != "assistant":
            continue
        ids = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = {
            str(b.get("tool_use_id"))
            for b in (_dicts(following.get("content")) if following is not None else [])
            if b.get("type") == "tool_result"
        }
        missing = [x for x in ids if x not in answered]
        if missing and following is not None:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks"
                f" immediately after: {', '.join(missing)}. Each `tool_use` block must have a"
                " corresponding `tool_result` block in the next message."
            )
    return None


def gemini(body: JSON) -> str | None:
    """Gemini: a function call turn comes right after a user turn or a function response
    turn, and is answered by the next turn with one function response part per call."""
    contents = _dicts(body.get("contents"))
    for i, content in enumerate(contents):
        parts = _dicts(content.get("parts"))
        calls = sum(1 for p in parts if "functionCall" in p)
        responses = sum(1 for p in parts if "functionResponse" in p)
        previous = _dicts(contents[i - 1].get("parts")) if i else []
        previous_calls = sum(1 for p in previous if "functionCall" in p)
        if responses and not previous_calls:
            return (
                "Please ensure that function response turn comes immediately after a function"
                " call turn."
            )
        if previous_calls and responses != previous_calls:
            return (
                "Please ensure that the number of function response parts is equal to the"
                " number of function call parts of the function call turn."
            )
        if calls and i and contents[i - 1].get("role") == "model":
            return (
                "Please ensure that function call turn comes immediately after a user turn or"
                " after a function response turn."
            )
    return None
