"""Ollama native chat: ``POST {base}/api/chat``, answered with newline-delimited JSON.

Each line is an object with ``message.content``, ``message.thinking`` and
``message.tool_calls`` (whole calls, ``arguments`` an object, reported as compact JSON);
the last line has ``done: true`` with ``done_reason`` and the token counts. An error is a
line ``{"error": "..."}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from streamscope.core.wire.conversation import Conversation, merge_extra_body, settle_tool_calls
from streamscope.core.wire.dialects.base import (
    DialectDefaults,
    Evidence,
    Framing,
    RequestSpec,
    arguments_object,
    as_int,
    as_str,
    compact_json,
    data_object,
    error_event,
    headers_with,
    join_url,
    load_object,
    openai_tools,
)
from streamscope.core.wire.events import (
    FinishReason,
    Ignored,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    Usage,
)
from streamscope.core.wire.sse import SSEEvent
from streamscope.core.wire.summary import SummaryLabels

TERMINAL_SIGNAL = "done:true"
_USAGE_KEYS = (
    "prompt_eval_count",
    "eval_count",
    "total_duration",
    "load_duration",
    "prompt_eval_duration",
    "eval_duration",
)


class OllamaParser:
    """Maps Ollama chat lines to StreamEvents."""

    __slots__ = ("_calls", "_started")

    def __init__(self) -> None:
        self._started = False
        self._calls = 0

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        obj = load_object(ev.data)
        if isinstance(obj, MalformedFrame):
            return [obj]
        if "error" in obj:
            return [error_event(obj["error"], obj)]
        out: list[StreamEvent] = []
        if not self._started:
            self._started = True
            out.append(MessageStarted(None, as_str(obj.get("model"))))
        msg = obj.get("message")
        if isinstance(msg, dict):
            thinking = msg.get("thinking")
            if isinstance(thinking, str) and thinking:
                out.append(ReasoningDelta(thinking, "thinking"))
            content = msg.get("content")
            if isinstance(content, str) and content:
                out.append(TextDelta(content))
            calls = msg.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict):
                        out.extend(self._tool_call(call))
        if obj.get("done") is True:
            reason = obj.get("done_reason")
            if isinstance(reason, str) and reason:
                out.append(FinishReason(reason))
            usage = {k: obj[k] for k in _USAGE_KEYS if k in obj}
            if usage:
                out.append(
                    Usage(
                        usage,
                        as_int(usage.get("prompt_eval_count")),
                        as_int(usage.get("eval_count")),
                    )
                )
            out.append(Terminal(TERMINAL_SIGNAL))
        return out or [Ignored("line without content")]

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        fn = call.get("function")
        if not isinstance(fn, dict):
            return [MalformedFrame("tool call without function", "")]
        index = self._calls
        self._calls += 1
        args = fn.get("arguments")
        arguments = (
            args if isinstance(args, str) else compact_json(args if args is not None else {})
        )
        return [
            ToolCallDelta(index, as_str(call.get("id")), as_str(fn.get("name")), arguments),
            ToolCallDone(index),
        ]

    def end_of_body(self) -> list[StreamEvent]:
        return []


@dataclass(frozen=True, slots=True)
class Ollama(DialectDefaults):
    """The ``ollama`` dialect (NDJSON framing)."""

    name: str = "ollama"
    label: str = "Ollama native chat (NDJSON)"
    framing: Framing = "ndjson"
    terminal: str = TERMINAL_SIGNAL
    demo_name: str | None = "ollama"
    request_paths: tuple[str, ...] = ("/api/chat",)
    lint: str | None = "streamscope.core.verdict.dialects.ollama"
    summary_labels: ClassVar[SummaryLabels] = SummaryLabels(finish_reason="done_reason")

    def models_url(self, base_url: str) -> str:
        return join_url(base_url, "/api/tags")

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        obj = data_object(ev)
        if obj is not None and "done" in obj and ("message" in obj or "model" in obj):
            return Evidence.SHAPE
        return Evidence.NONE

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
            entry: dict[str, Any] = {"role": msg.role, "content": msg.text}
            if msg.tool_calls:
                entry["tool_calls"] = [
                    {"function": {"name": c.name, "arguments": arguments_object(c.arguments)}}
                    for c in msg.tool_calls
                ]
            if msg.role == "tool" and msg.name:
                entry["tool_name"] = msg.name
            messages.append(entry)
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
        if conv.tools:
            body["tools"] = openai_tools(conv)
        options: dict[str, Any] = {}
        if conv.temperature is not None:
            options["temperature"] = conv.temperature
        if conv.max_tokens is not None:
            options["num_predict"] = conv.max_tokens
        if options:
            body["options"] = options
        merge_extra_body(body, conv.extra_body)
        # Ollama needs no key; a proxy in front of it may (Bearer)
        headers = {"Accept": "application/x-ndjson", **self.auth_headers(api_key)}
        return RequestSpec(
            "POST", join_url(base_url, "/api/chat"), headers_with(headers, extra_headers), body
        )

    def new_parser(self) -> OllamaParser:
        return OllamaParser()


OLLAMA = Ollama()
