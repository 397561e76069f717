"""Anthropic Messages: ``POST {base}/messages`` with ``x-api-key`` and ``anthropic-version``.

Stream: named events ``message_start``, ``content_block_start/delta/stop`` (``text_delta``,
``input_json_delta``, ``thinking_delta``, ``signature_delta``), ``message_delta``
(``stop_reason``, ``usage``), ``ping``, ``error`` and finally ``message_stop``. Dispatch is
on the JSON ``type`` (falling back to the SSE event name).
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
)
from streamscope.core.wire.events import (
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ReasoningSignature,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)
from streamscope.core.wire.sse import SSEEvent
from streamscope.core.wire.summary import SummaryLabels

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_ANTHROPIC_MAX_TOKENS = 4096
"""Sent when the conversation sets no limit: the Messages API requires ``max_tokens``."""
EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
"""The Messages stream's own event names (``error`` is shared with other dialects)."""


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(raw, as_int(raw.get("input_tokens")), as_int(raw.get("output_tokens")))


class AnthropicParser:
    """Maps Messages stream events to StreamEvents."""

    __slots__ = ("_tool_blocks",)

    def __init__(self) -> None:
        # content block index -> (input given at start, whether fragments came)
        self._tool_blocks: dict[int, list[Any]] = {}

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        obj = load_object(ev.data)
        if isinstance(obj, MalformedFrame):
            return [obj]
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = ev.event
        match kind:
            case "content_block_delta":
                return self._block_delta(obj)
            case "message_start":
                return self._message_start(obj)
            case "content_block_start":
                return self._block_start(obj)
            case "content_block_stop":
                return self._block_stop(obj)
            case "message_delta":
                out: list[StreamEvent] = []
                delta = obj.get("delta")
                if isinstance(delta, dict):
                    reason = delta.get("stop_reason")
                    if isinstance(reason, str):
                        out.append(FinishReason(reason))
                usage = _usage(obj.get("usage"))
                if usage is not None:
                    out.append(usage)
                return out or [Ignored("message_delta")]
            case "message_stop":
                return [Terminal("message_stop")]
            case "ping":
                return [KeepAlive("ping")]
            case "error":
                return [error_event(obj.get("error", obj), obj)]
        return [Ignored(kind)]

    def _message_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return [MalformedFrame("message_start without message", "")]
        out: list[StreamEvent] = [MessageStarted(as_str(msg.get("id")), as_str(msg.get("model")))]
        usage = _usage(msg.get("usage"))
        if usage is not None:
            out.append(usage)
        return out

    def _block_start(self, obj: dict[str, Any]) -> list[StreamEvent]:
        index = as_int(obj.get("index"))
        block = obj.get("content_block")
        if not isinstance(block, dict):
            return [MalformedFrame("content_block_start without content_block", "")]
        match block.get("type"):
            case "tool_use" | "server_tool_use":
                if index is not None:
                    self._tool_blocks[index] = [block.get("input"), False]
                return [ToolCallStarted(index, as_str(block.get("id")), as_str(block.get("name")))]
            case "text":
                text = block.get("text")
                return [TextDelta(text)] if isinstance(text, str) and text else [Ignored("text")]
            case "thinking":
                text = block.get("thinking")
                if isinstance(text, str) and text:
                    return [ReasoningDelta(text, "thinking")]
                return [Ignored("thinking")]
        return [Ignored(f"content_block_start {block.get('type')}")]

    def _block_delta(self, obj: dict[str, Any]) -> list[StreamEvent]:
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            return [MalformedFrame("content_block_delta without delta", "")]
        match delta.get("type"):
            case "text_delta":
                text = delta.get("text")
                if isinstance(text, str):
                    return [TextDelta(text)] if text else [Ignored("empty text_delta")]
            case "input_json_delta":
                part = delta.get("partial_json")
                if isinstance(part, str):
                    index = as_int(obj.get("index"))
                    block = self._tool_blocks.get(index) if index is not None else None
                    if block is not None and part:
                        block[1] = True
                    return [ToolCallDelta(index, None, None, part)]
            case "thinking_delta":
                text = delta.get("thinking")
                if isinstance(text, str):
                    return [ReasoningDelta(text, "thinking")] if text else [Ignored("thinking")]
            case "signature_delta":
                sig = delta.get("signature")
                if isinstance(sig, str):
                    return [ReasoningSignature(sig)]
            case other:
                return [Ignored(f"content_block_delta {other}")]
        return [MalformedFrame("content_block_delta with an unexpected shape", "")]

    def _block_stop(self, obj: dict[str, Any]) -> list[StreamEvent]:
        index = as_int(obj.get("index"))
        block = self._tool_blocks.pop(index, None) if index is not None else None
        if block is None:
            return [Ignored("content_block_stop")]
        start_input, had_fragments = block
        if had_fragments:
            return [ToolCallDone(index)]
        # No input_json_delta: the input given at the start is the whole input.
        return [ToolCallDone(index, compact_json(start_input if start_input is not None else {}))]

    def end_of_body(self) -> list[StreamEvent]:
        return []


@dataclass(frozen=True, slots=True)
class Anthropic(DialectDefaults):
    """The ``anthropic`` dialect."""

    name: str = "anthropic"
    label: str = "Anthropic messages"
    framing: Framing = "sse"
    terminal: str = "message_stop"
    demo_name: str | None = "anthropic"
    request_paths: tuple[str, ...] = ("/messages",)
    lint: str | None = "streamscope.core.verdict.dialects.anthropic"
    summary_labels: ClassVar[SummaryLabels] = SummaryLabels("tool_use", "input", "stop_reason")

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def models_url(self, base_url: str) -> str:
        return join_url(base_url, "/models?limit=1000")

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        if ev.event in EVENTS:
            return Evidence.EVENT_NAME
        obj = data_object(ev)
        if obj is not None and obj.get("type") in EVENTS:
            return Evidence.TYPE_FIELD
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
        # Roles alternate: the results of a message's tool calls open the next user message
        # (before any text), and consecutive messages of one role (the results and the
        # user's next message, or two prompts around an answer that failed) become one.
        messages: list[dict[str, Any]] = []
        for msg in settle_tool_calls(conv.messages):
            role = "assistant" if msg.role == "assistant" else "user"
            content: str | list[dict[str, Any]]
            if msg.role == "tool":
                content = [
                    {"type": "tool_result", "tool_use_id": msg.tool_call_id, "content": msg.text}
                ]
            elif msg.tool_calls:
                content = [{"type": "text", "text": msg.text}] if msg.text else []
                content.extend(
                    {
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": arguments_object(c.arguments),
                    }
                    for c in msg.tool_calls
                )
            else:
                content = msg.text
            last = messages[-1] if messages else None
            if last is not None and last["role"] == role:
                last["content"] = _blocks(last["content"]) + _blocks(content)
            else:
                messages.append({"role": role, "content": content})
        max_tokens = (
            conv.max_tokens if conv.max_tokens is not None else DEFAULT_ANTHROPIC_MAX_TOKENS
        )
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": True,
        }
        if conv.system:
            body["system"] = conv.system
        if conv.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
                for t in conv.tools
            ]
        if conv.temperature is not None:
            body["temperature"] = conv.temperature
        merge_extra_body(body, conv.extra_body)
        headers = {"Accept": "text/event-stream", **self.auth_headers(api_key)}
        return RequestSpec(
            "POST", join_url(base_url, "/messages"), headers_with(headers, extra_headers), body
        )

    def new_parser(self) -> AnthropicParser:
        return AnthropicParser()


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (an empty text is no block)."""
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


ANTHROPIC = Anthropic()
