"""OpenAI Responses: ``POST {base}/responses`` with ``stream: true``.

Stream: typed events (``response.created``, ``response.output_item.added/done``,
``response.output_text.delta``, ``response.function_call_arguments.delta/done``,
``response.reasoning_summary_text.delta``, ``response.completed``/``incomplete``/``failed``,
``error``). Dispatch is on the JSON ``type`` because some gateways omit the ``event:``
lines; a trailing ``data: [DONE]`` some gateways append is tolerated. Function-call items
carry ``call_id`` (reported as the tool call's id) and ``name``; argument events refer to
them by ``output_index``/``item_id``.
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
    as_int,
    as_str,
    data_object,
    error_event,
    headers_with,
    join_url,
    last_user_text,
    load_object,
)
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ServerError,
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


def _usage(response: Any) -> list[StreamEvent]:
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return []
    return [Usage(usage, as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens")))]


class ResponsesParser:
    """Maps Responses stream events to StreamEvents."""

    __slots__ = ("_items", "_terminal")

    def __init__(self) -> None:
        self._items: dict[str, int] = {}  # item id -> output_index
        self._terminal = False

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        if ev.data.strip() == "[DONE]":
            if self._terminal:
                return [Ignored("[DONE] after the terminal event")]
            return [DialectWarning("[DONE] arrived before response.completed; not a terminal")]
        obj = load_object(ev.data)
        if isinstance(obj, MalformedFrame):
            return [obj]
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = ev.event
        match kind:
            case "response.output_text.delta":
                delta = obj.get("delta")
                if isinstance(delta, str):
                    return [TextDelta(delta)] if delta else [Ignored(kind)]
            case "response.function_call_arguments.delta":
                delta = obj.get("delta")
                if isinstance(delta, str):
                    return [ToolCallDelta(self._index(obj), None, None, delta)]
            case "response.function_call_arguments.done":
                args = obj.get("arguments")
                return [ToolCallDone(self._index(obj), args if isinstance(args, str) else None)]
            case "response.reasoning_summary_text.delta":
                delta = obj.get("delta")
                if isinstance(delta, str):
                    return [ReasoningDelta(delta, "summary")] if delta else [Ignored(kind)]
            case "response.reasoning_text.delta":
                delta = obj.get("delta")
                if isinstance(delta, str):
                    return [ReasoningDelta(delta, "reasoning")] if delta else [Ignored(kind)]
            case "response.refusal.delta":
                delta = obj.get("delta")
                if isinstance(delta, str):
                    return [TextDelta(delta), DialectWarning("the model refused")]
            case "response.output_item.added" | "response.output_item.done":
                return self._item(kind, obj)
            case "response.created":
                resp = obj.get("response")
                if isinstance(resp, dict):
                    return [MessageStarted(as_str(resp.get("id")), as_str(resp.get("model")))]
            case "response.completed":
                self._terminal = True
                return [*_usage(obj.get("response")), FinishReason("completed"), Terminal(kind)]
            case "response.incomplete":
                self._terminal = True
                return [
                    *_usage(obj.get("response")),
                    FinishReason(_incomplete_reason(obj.get("response"))),
                    Terminal(kind),
                ]
            case "response.failed":
                resp = obj.get("response")
                err = resp.get("error") if isinstance(resp, dict) else None
                return [
                    *_usage(resp),
                    error_event(err, obj) if err else ServerError("response.failed", None, obj),
                ]
            case "error":
                err = obj.get("error")
                return [error_event(err if isinstance(err, dict) else obj, obj)]
            case "keepalive" | "response.keepalive":
                return [KeepAlive(kind)]
            case _:
                return [Ignored(kind)]
        return [MalformedFrame(f"{kind} with an unexpected shape", "")]

    def _index(self, obj: dict[str, Any]) -> int | None:
        index = as_int(obj.get("output_index"))
        if index is None:
            item_id = obj.get("item_id")
            if isinstance(item_id, str):
                return self._items.get(item_id)
        return index

    def _item(self, kind: str, obj: dict[str, Any]) -> list[StreamEvent]:
        item = obj.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            what = item.get("type") if isinstance(item, dict) else None
            return [Ignored(f"{kind} {what}")]
        index = as_int(obj.get("output_index"))
        item_id = item.get("id")
        if isinstance(item_id, str) and index is not None:
            self._items[item_id] = index
        if kind == "response.output_item.added":
            out: list[StreamEvent] = [
                ToolCallStarted(index, as_str(item.get("call_id")), as_str(item.get("name")))
            ]
            args = item.get("arguments")
            if isinstance(args, str) and args:
                out.append(ToolCallDelta(index, None, None, args))
            return out
        args = item.get("arguments")
        return [ToolCallDone(index, args if isinstance(args, str) else None)]

    def end_of_body(self) -> list[StreamEvent]:
        return []


def _incomplete_reason(response: Any) -> str:
    if isinstance(response, dict):
        details = response.get("incomplete_details")
        if isinstance(details, dict) and isinstance(details.get("reason"), str):
            return str(details["reason"])
    return "incomplete"


@dataclass(frozen=True, slots=True)
class OpenAIResponses(DialectDefaults):
    """The ``responses`` dialect."""

    name: str = "responses"
    label: str = "OpenAI Responses"
    framing: Framing = "sse"
    terminal: str = "response.completed"
    demo_name: str | None = "responses"
    request_paths: tuple[str, ...] = ("/responses",)
    lint: str | None = "streamscope.core.verdict.dialects.openai_responses"
    summary_labels: ClassVar[SummaryLabels] = SummaryLabels("output")

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        if ev.event.startswith("response."):
            return Evidence.EVENT_NAME
        obj = data_object(ev)
        kind = obj.get("type") if obj is not None else None
        if isinstance(kind, str) and kind.startswith("response."):
            return Evidence.TYPE_FIELD
        return Evidence.NONE

    def user_text(self, body: Mapping[str, Any]) -> str | None:
        items = body.get("input")
        return items if isinstance(items, str) else last_user_text(items, "content")

    def build_request(
        self,
        conv: Conversation,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RequestSpec:
        items: list[dict[str, Any]] = []
        for msg in settle_tool_calls(conv.messages):
            if msg.role == "tool":
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": msg.tool_call_id,
                        "output": msg.text,
                    }
                )
                continue
            if msg.text or not msg.tool_calls:
                items.append({"role": msg.role, "content": msg.text})
            items.extend(
                {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                for c in msg.tool_calls
            )
        body: dict[str, Any] = {"model": model, "input": items, "stream": True}
        if conv.system:
            body["instructions"] = conv.system
        if conv.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                    # (required by the SDK's FunctionToolParam: left out, Responses makes a
                    # function strict, and most schemas are not written for strict mode)
                    "strict": False,
                }
                for t in conv.tools
            ]
        if conv.temperature is not None:
            body["temperature"] = conv.temperature
        if conv.max_tokens is not None:
            body["max_output_tokens"] = conv.max_tokens
        merge_extra_body(body, conv.extra_body)
        headers = {"Accept": "text/event-stream", **self.auth_headers(api_key)}
        return RequestSpec(
            "POST", join_url(base_url, "/responses"), headers_with(headers, extra_headers), body
        )

    def new_parser(self) -> ResponsesParser:
        return ResponsesParser()


OPENAI_RESPONSES = OpenAIResponses()
