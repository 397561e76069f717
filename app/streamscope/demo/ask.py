"""Read what the server needs (`Ask`) from a request body, in each dialect's own shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from streamscope.demo.script import Ask, ToolResult


class BadRequestError(Exception):
    """The body is well-formed JSON but not a valid request for the dialect (HTTP 400)."""


def _text_of(content: Any) -> str:
    """Text of a message's content: a string, or a list of parts/blocks carrying `text`."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return " ".join(texts)
    return ""


def _last_user(messages: list[Any], content_key: str = "content") -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role", "user") == "user":
            return _text_of(message.get(content_key))
    return ""


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _trailing(
    items: list[dict[str, Any]], is_result: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The items at the end of ``items`` that are tool results, in order."""
    out: list[dict[str, Any]] = []
    for item in reversed(items):
        if not is_result(item):
            break
        out.append(item)
    return out[::-1]


def _chat_results(messages: list[Any]) -> tuple[ToolResult, ...]:
    """OpenAI chat and Ollama: ``tool`` messages at the end (named by the assistant's calls
    they answer, or by Ollama's ``tool_name``)."""
    items = _dicts(messages)
    names: dict[Any, str | None] = {}
    for message in items:
        for call in _dicts(message.get("tool_calls")):
            if call.get("id") is None:  # (Ollama's calls have none: its results name the tool)
                continue
            function = call.get("function")
            names[call.get("id")] = (
                _name(function.get("name")) if isinstance(function, dict) else None
            )
    return tuple(
        ToolResult(
            _name(m.get("tool_name")) or _name(m.get("name")) or names.get(m.get("tool_call_id")),
            _text_of(m.get("content")),
        )
        for m in _trailing(items, lambda m: m.get("role") == "tool")
    )


def _responses_results(items: Any) -> tuple[ToolResult, ...]:
    """Responses: ``function_call_output`` items at the end of ``input``."""
    entries = _dicts(items)
    names = {
        i.get("call_id"): _name(i.get("name")) for i in entries if i.get("type") == "function_call"
    }
    return tuple(
        ToolResult(names.get(i.get("call_id")), _text_of(i.get("output")))
        for i in _trailing(entries, lambda i: i.get("type") == "function_call_output")
    )


def _anthropic_results(messages: list[Any]) -> tuple[ToolResult, ...]:
    """Anthropic: a last user message made of ``tool_result`` blocks."""
    items = _dicts(messages)
    if not items or items[-1].get("role") != "user":
        return ()
    blocks = _dicts(items[-1].get("content"))
    if not blocks or any(b.get("type") != "tool_result" for b in blocks):
        return ()
    names = {
        b.get("id"): _name(b.get("name"))
        for m in items
        if m.get("role") == "assistant"
        for b in _dicts(m.get("content"))
        if b.get("type") == "tool_use"
    }
    return tuple(
        ToolResult(names.get(b.get("tool_use_id")), _text_of(b.get("content"))) for b in blocks
    )


def _gemini_results(contents: list[Any]) -> tuple[ToolResult, ...]:
    """Gemini: a last content made of ``functionResponse`` parts."""
    items = _dicts(contents)
    parts = _dicts(items[-1].get("parts")) if items else []
    responses = [p.get("functionResponse") for p in parts]
    if not responses or not all(isinstance(r, dict) for r in responses):
        return ()
    out: list[ToolResult] = []
    for response in _dicts(responses):
        value = response.get("response")
        if (
            isinstance(value, dict)
            and set(value) == {"result"}
            and isinstance(value["result"], str)
        ):
            text = value["result"]
        else:
            text = json.dumps(value, ensure_ascii=False)
        out.append(ToolResult(_name(response.get("name")), text))
    return tuple(out)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequestError("'model' is a required property")
    return model


def _messages(body: dict[str, Any], key: str = "messages") -> list[Any]:
    messages = body.get(key)
    if not isinstance(messages, list) or not messages:
        raise BadRequestError(f"'{key}' is a required property (a non-empty list)")
    return messages


def ask_openai(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    messages = _messages(body)
    options = body.get("stream_options")
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", False)),
        last_user=_last_user(messages),
        max_tokens=_int(body.get("max_completion_tokens")) or _int(body.get("max_tokens")),
        include_usage=isinstance(options, dict) and bool(options.get("include_usage")),
        tool_results=_chat_results(messages),
    )


def ask_responses(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    items = body.get("input")
    if isinstance(items, str):
        last_user = items
    elif isinstance(items, list) and items:
        last_user = _last_user([i for i in items if isinstance(i, dict) and "role" in i])
    else:
        raise BadRequestError("'input' is a required property (a string or a list of items)")
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", False)),
        last_user=last_user,
        max_tokens=_int(body.get("max_output_tokens")),
        tool_results=_responses_results(items),
    )


def ask_anthropic(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    messages = _messages(body)
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", False)),
        last_user=_last_user(messages),
        max_tokens=_int(body.get("max_tokens")),
        tool_results=_anthropic_results(messages),
    )


def ask_gemini(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    contents = _messages(body, "contents")
    config = body.get("generationConfig")
    max_tokens = _int(config.get("maxOutputTokens")) if isinstance(config, dict) else None
    return Ask(
        model=model or "",
        stream=bool(stream),
        last_user=_last_user(contents, content_key="parts"),
        max_tokens=max_tokens,
        tool_results=_gemini_results(contents),
    )


def ask_ollama(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    messages = _messages(body)
    options = body.get("options")
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", True)),  # Ollama streams unless told not to
        last_user=_last_user(messages),
        max_tokens=_int(options.get("num_predict")) if isinstance(options, dict) else None,
        tool_results=_chat_results(messages),
    )


AskParser = Callable[[dict[str, Any], str | None, bool | None], Ask]
"""Reads a request body (with the model and stream flag its path gave, if any) into an `Ask`."""
