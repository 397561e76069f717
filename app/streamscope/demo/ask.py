"""Read what the server needs (`Ask`) from a request body, in each dialect's own shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamscope.demo.scenarios import Dialect
from streamscope.demo.script import Ask


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
    )


def ask_anthropic(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    messages = _messages(body)
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", False)),
        last_user=_last_user(messages),
        max_tokens=_int(body.get("max_tokens")),
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
    )


def ask_ollama(body: dict[str, Any], model: str | None, stream: bool | None) -> Ask:
    messages = _messages(body)
    options = body.get("options")
    return Ask(
        model=_model(body),
        stream=bool(body.get("stream", True)),  # Ollama streams unless told not to
        last_user=_last_user(messages),
        max_tokens=_int(options.get("num_predict")) if isinstance(options, dict) else None,
    )


AskParser = Callable[[dict[str, Any], str | None, bool | None], Ask]

PARSERS: dict[Dialect, AskParser] = {
    "openai": ask_openai,
    "responses": ask_responses,
    "anthropic": ask_anthropic,
    "gemini": ask_gemini,
    "ollama": ask_ollama,
}
