"""OpenAI Chat Completions (and the many compatible servers): ``POST {base}/chat/completions``.

Stream: ``chat.completion.chunk`` objects in ``data:`` lines, then ``data: [DONE]``.
Quirks handled: ``delta.reasoning_content`` vs ``delta.reasoning``; tool calls by ``index``
(id/name first, then argument fragments; a missing index is placed by position); the
deprecated ``delta.function_call``; a usage chunk with ``choices: []`` (or one empty
choice); ``finish_reason: null`` annotation chunks after the finish (the real reason is
kept); an in-stream ``{"error": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from streamscope.core.wire.conversation import Conversation, merge_extra_body, settle_tool_calls
from streamscope.core.wire.dialects.base import (
    DialectDefaults,
    Evidence,
    Framing,
    RequestSpec,
    as_int,
    as_str,
    data_object,
    error_event,
    excerpt,
    headers_with,
    join_url,
    openai_tools,
)
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from streamscope.core.wire.sse import SSEEvent

_loads = orjson.loads
_JSONError = orjson.JSONDecodeError


class OpenAIChatParser:
    """Maps chat-completion chunks to StreamEvents."""

    __slots__ = ("_finish", "_started", "_tools_seen")

    def __init__(self) -> None:
        self._started = False
        self._finish: str | None = None
        self._tools_seen = False

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        data = ev.data
        if self._started:
            content = content_only(data)
            if content:
                delta: TextDelta = _new(TextDelta)
                _set_text(delta, content)
                return [delta]
            if content is not None:
                return [Ignored("empty delta")]
        try:
            obj = _loads(data)
        except _JSONError as exc:
            if data.strip() == "[DONE]":
                return [Terminal("[DONE]")]
            return [MalformedFrame(f"invalid JSON: {exc}", excerpt(data))]
        if type(obj) is not dict:
            return [MalformedFrame("expected a JSON object", excerpt(data))]
        return self._parse_chunk(obj, obj.get("choices"))

    def _parse_chunk(self, obj: dict[str, Any], choices: Any) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        err = obj.get("error")
        if err is not None:
            return [error_event(err, obj)]
        if not self._started:
            self._started = True
            out.append(MessageStarted(as_str(obj.get("id")), as_str(obj.get("model"))))
        if isinstance(choices, list) and choices:
            choice = choices[0]
            if isinstance(choice, dict):
                self._parse_choice(choice, out)
            if len(choices) > 1:
                out.append(DialectWarning("more than one choice: only the first is shown"))
        usage = obj.get("usage")
        if isinstance(usage, dict):
            out.append(
                Usage(
                    usage,
                    as_int(usage.get("prompt_tokens")),
                    as_int(usage.get("completion_tokens")),
                )
            )
        if not out:
            after = " after the finish" if self._finish is not None else ""
            out.append(Ignored(f"chunk without content{after}"))
        return out

    def _parse_choice(self, choice: dict[str, Any], out: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            content = delta.get("content")
            if isinstance(content, str) and content:
                out.append(TextDelta(content))
            for channel in ("reasoning_content", "reasoning"):
                text = delta.get(channel)
                if isinstance(text, str) and text:
                    out.append(ReasoningDelta(text, channel))
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                out.append(TextDelta(refusal))
                out.append(DialectWarning("the model refused (delta.refusal)"))
            tool_calls = delta.get("tool_calls")
            if isinstance(tool_calls, list):
                for call in tool_calls:
                    if isinstance(call, dict):
                        out.append(self._tool_call(call))
            fc = delta.get("function_call")
            if isinstance(fc, dict):
                self._tools_seen = True
                out.append(DialectWarning("deprecated delta.function_call used"))
                out.append(
                    ToolCallDelta(
                        0, None, as_str(fc.get("name")), as_str(fc.get("arguments")) or ""
                    )
                )
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason and reason != self._finish:
            if self._finish is not None:
                out.append(DialectWarning(f"finish_reason changed from {self._finish} to {reason}"))
            self._finish = reason
            out.append(FinishReason(reason))
            if reason == "stop" and self._tools_seen:
                out.append(DialectWarning("tool calls arrived with finish_reason=stop"))

    def _tool_call(self, call: dict[str, Any]) -> ToolCallDelta:
        self._tools_seen = True
        fn = call.get("function")
        name = args = None
        if isinstance(fn, dict):
            name = as_str(fn.get("name"))
            args = as_str(fn.get("arguments"))
        return ToolCallDelta(as_int(call.get("index")), as_str(call.get("id")), name, args or "")

    def end_of_body(self) -> list[StreamEvent]:
        return []


_CONTENT = '"choices":[{"index":0,"delta":{"content":"'
# How a content-only chunk ends: the choice's tail, then "}" or ',"usage":null}' (sent on
# every chunk when stream_options.include_usage is on). Most common first.
_SUFFIXES = tuple(
    (s, len(s))
    for tail in (
        '"},"logprobs":null,"finish_reason":null}]',
        '"},"finish_reason":null}]',
        '"},"finish_reason":null,"logprobs":null}]',
    )
    for s in (tail + ',"usage":null}', tail + "}")
)
_OBFUSCATION = ',"obfuscation":"'

_new = object.__new__
_set_text: Any = TextDelta.__dict__["text"].__set__


def text_delta(text: str) -> TextDelta:
    """``TextDelta(text)`` without the frozen-dataclass ``__setattr__`` round trip (hot path)."""
    ev = _new(TextDelta)
    _set_text(ev, text)
    return ev


def content_only(data: str) -> str | None:
    """The text of a chunk that carries nothing but one choice's ``delta.content`` and a null
    ``finish_reason``, found without building the whole JSON tree; ``None`` for any other
    chunk (which then takes the full parse). Only the compact layout OpenAI and most
    compatible servers emit is recognised (``usage: null`` and ``obfuscation`` may follow
    the choices); anything unusual falls through."""
    for suffix, n in _SUFFIXES:
        if data.endswith(suffix):
            end = len(data) - n
            break
    else:
        return _without_obfuscation(data)
    # Without escapes the literal's opening quote is the last quote before its end.
    start = data.rfind('"', 0, end) + 1
    k = start - len(_CONTENT)
    if data[k:start] != _CONTENT:
        k = data.find(_CONTENT)
        start = k + len(_CONTENT)
        if k < 0 or start > end:
            return None
    # The fields before "choices" must be scalars (no usage or error object hiding there).
    if data[0] != "{" or data.find("{", 1, k) >= 0 or data.find("[", 1, k) >= 0:
        return None
    text = data[start:end]
    if "\\" in text or '"' in text:
        # escapes: let orjson decode (and validate) exactly this one string literal
        try:
            value = _loads(data[start - 1 : end + 1])
        except _JSONError:
            return None
        return value if type(value) is str else None
    return text


def _without_obfuscation(data: str) -> str | None:
    """:func:`content_only` for a chunk ending in ``,"obfuscation":"<padding>"}``."""
    i = data.rfind(_OBFUSCATION)
    if i < 0 or not data.endswith('"}'):
        return None
    padding = data[i + len(_OBFUSCATION) : -2]
    if '"' in padding or "\\" in padding:
        return None
    return content_only(data[:i] + "}")


@dataclass(frozen=True, slots=True)
class OpenAIChat(DialectDefaults):
    """The ``openai`` dialect."""

    name: str = "openai"
    label: str = "OpenAI chat completions"
    framing: Framing = "sse"
    terminal: str = "[DONE]"
    demo_name: str | None = "openai"
    request_paths: tuple[str, ...] = ("/chat/completions",)
    lint: str | None = "streamscope.core.verdict.dialects.openai_chat"

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        obj = data_object(ev)
        if obj is None:
            return Evidence.NONE
        if obj.get("object") == "chat.completion.chunk":
            return Evidence.TYPE_FIELD
        return Evidence.SHAPE if "choices" in obj else Evidence.NONE

    def build_request(
        self,
        conv: Conversation,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RequestSpec:
        messages: list[dict[str, Any]] = []
        if conv.system:
            messages.append({"role": "system", "content": conv.system})
        for msg in settle_tool_calls(conv.messages):
            if msg.role == "tool":
                messages.append(
                    {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.text}
                )
            elif msg.role == "assistant" and msg.tool_calls:
                messages.append(
                    {
                        "role": "assistant",
                        "content": msg.text or None,
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            }
                            for c in msg.tool_calls
                        ],
                    }
                )
            else:
                messages.append({"role": msg.role, "content": msg.text})
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        if conv.include_usage:
            body["stream_options"] = {"include_usage": True}
        if conv.tools:
            body["tools"] = openai_tools(conv)
        if conv.temperature is not None:
            body["temperature"] = conv.temperature
        if conv.max_tokens is not None:
            body["max_tokens"] = conv.max_tokens
        merge_extra_body(body, conv.extra_body)
        headers = {"Accept": "text/event-stream", **self.auth_headers(api_key)}
        return RequestSpec(
            "POST",
            join_url(base_url, "/chat/completions"),
            headers_with(headers, extra_headers),
            body,
        )

    def new_parser(self) -> OpenAIChatParser:
        return OpenAIChatParser()


OPENAI_CHAT = OpenAIChat()
