"""Google Gemini: ``POST {base}/models/{model}:streamGenerateContent?alt=sse``.

Stream: ``GenerateContentResponse`` objects in ``data:`` lines. ``candidates[0].content
.parts[]`` carry ``text`` (``thought: true`` marks reasoning) and ``functionCall`` (whole
calls; ``args`` is an object, reported as compact JSON; Gemini sends no call id);
``finishReason`` and ``usageMetadata`` arrive on the last chunks. There is no sentinel: a
``finishReason`` followed by a clean end of body is the terminal signal.
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
    last_user_text,
    load_object,
    result_object,
)
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ReasoningSignature,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    Usage,
)
from streamscope.core.wire.sse import SSEEvent
from streamscope.core.wire.summary import SummaryLabels

TERMINAL_SIGNAL = "finishReason+end"


class GeminiParser:
    """Maps streamGenerateContent chunks to StreamEvents."""

    __slots__ = ("_calls", "_finished", "_started")

    def __init__(self) -> None:
        self._started = False
        self._finished = False
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
            out.append(
                MessageStarted(as_str(obj.get("responseId")), as_str(obj.get("modelVersion")))
            )
        candidates = obj.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            self._candidate(candidates[0], out)
        feedback = obj.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            reason = feedback["blockReason"]
            out.append(DialectWarning(f"prompt blocked: {reason}"))
            out.append(FinishReason(reason))
            self._finished = True
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict):
            out.append(
                Usage(
                    usage,
                    as_int(usage.get("promptTokenCount")),
                    as_int(usage.get("candidatesTokenCount")),
                )
            )
        return out or [Ignored("chunk without content")]

    def _candidate(self, cand: dict[str, Any], out: list[StreamEvent]) -> None:
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict):
                    self._part(part, out)
        reason = cand.get("finishReason")
        if isinstance(reason, str) and reason:
            out.append(FinishReason(reason))
            self._finished = True

    def _part(self, part: dict[str, Any], out: list[StreamEvent]) -> None:
        text = part.get("text")
        if isinstance(text, str) and text:
            if part.get("thought") is True:
                out.append(ReasoningDelta(text, "thought"))
            else:
                out.append(TextDelta(text))
        call = part.get("functionCall")
        if isinstance(call, dict):
            index = self._calls
            self._calls += 1
            args = call.get("args")
            arguments = compact_json(args if args is not None else {})
            out.append(
                ToolCallDelta(index, as_str(call.get("id")), as_str(call.get("name")), arguments)
            )
            out.append(ToolCallDone(index))
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            out.append(ReasoningSignature(signature))

    def end_of_body(self) -> list[StreamEvent]:
        return [Terminal(TERMINAL_SIGNAL)] if self._finished else []


@dataclass(frozen=True, slots=True)
class Gemini(DialectDefaults):
    """The ``gemini`` dialect."""

    name: str = "gemini"
    label: str = "Google Gemini"
    framing: Framing = "sse"
    terminal: str = "finishReason"
    demo_name: str | None = "gemini"
    request_paths: tuple[str, ...] = (":streamGenerateContent", ":generateContent")
    lint: str | None = "streamscope.core.verdict.dialects.gemini"
    summary_labels: ClassVar[SummaryLabels] = SummaryLabels("functionCall", "args", "finishReason")

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def models_url(self, base_url: str) -> str:
        return join_url(base_url, "/models?pageSize=1000")

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        obj = data_object(ev)
        if obj is not None and ("candidates" in obj or "usageMetadata" in obj):
            return Evidence.SHAPE
        return Evidence.NONE

    def user_text(self, body: Mapping[str, Any]) -> str | None:
        return last_user_text(body.get("contents"), "parts")

    def build_request(
        self,
        conv: Conversation,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RequestSpec:
        # Turns alternate: a function call turn is answered by one response part per call in
        # the next turn; consecutive messages of one role (the results and the user's next
        # message, or two prompts around an answer that failed) become one turn.
        contents: list[dict[str, Any]] = []
        for msg in settle_tool_calls(conv.messages):
            parts: list[dict[str, Any]] = []
            if msg.role == "tool":
                response = result_object(msg.text)
                parts.append({"functionResponse": {"name": msg.name or "", "response": response}})
            elif msg.text:
                parts.append({"text": msg.text})
            parts.extend(
                {"functionCall": {"name": c.name, "args": arguments_object(c.arguments)}}
                for c in msg.tool_calls
            )
            role = "model" if msg.role == "assistant" else "user"
            last = contents[-1] if contents else None
            if last is not None and last["role"] == role:
                last["parts"].extend(parts)
            else:
                contents.append({"role": role, "parts": parts or [{"text": ""}]})
        body: dict[str, Any] = {"contents": contents}
        if conv.system:
            body["systemInstruction"] = {"parts": [{"text": conv.system}]}
        if conv.tools:
            body["tools"] = [
                {
                    "functionDeclarations": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parameters": dict(t.parameters),
                        }
                        for t in conv.tools
                    ]
                }
            ]
        config: dict[str, Any] = {}
        if conv.temperature is not None:
            config["temperature"] = conv.temperature
        if conv.max_tokens is not None:
            config["maxOutputTokens"] = conv.max_tokens
        if config:
            body["generationConfig"] = config
        merge_extra_body(body, conv.extra_body)
        headers = {"Accept": "text/event-stream", **self.auth_headers(api_key)}
        model_id = model.removeprefix("models/")
        url = join_url(base_url, f"/models/{model_id}:streamGenerateContent?alt=sse")
        return RequestSpec("POST", url, headers_with(headers, extra_headers), body)

    def new_parser(self) -> GeminiParser:
        return GeminiParser()


GEMINI = Gemini()
