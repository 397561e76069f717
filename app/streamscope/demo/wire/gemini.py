"""Gemini `streamGenerateContent?alt=sse`: `GenerateContentResponse` chunks, no sentinel.

A stream is complete when a candidate carries `finishReason` and the body then ends cleanly.
Gemini sends whole `functionCall` parts (arguments as objects), so tool-call fragments are
buffered and sent with the finishing chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from streamscope.demo.scenarios import ErrorKind, FinishKind
from streamscope.demo.script import (
    Ask,
    ReasoningDelta,
    Reply,
    Step,
    TextDelta,
    ToolArgsDelta,
    ToolCallStarted,
    Usage,
)
from streamscope.demo.wire.base import JSON, Framing, Writer, arguments_object, dumps

_STATUS = {
    "auth": "UNAUTHENTICATED",
    "rate_limit": "RESOURCE_EXHAUSTED",
    "server": "INTERNAL",
    "overloaded": "UNAVAILABLE",
    "invalid_request": "INVALID_ARGUMENT",
    "not_found": "NOT_FOUND",
}
_CODES = {"overloaded": 503}


def _usage(usage: Usage) -> JSON:
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }


class GeminiWriter(Writer):
    finish_reasons: ClassVar[Mapping[FinishKind, str]] = {
        "stop": "STOP",
        "length": "MAX_TOKENS",
        "tool_calls": "STOP",
    }
    """How this wire spells each way an answer ends."""

    def __init__(self, ask: Ask, framing: Framing) -> None:
        super().__init__(ask, framing)
        self.id = f"demo{self.created}"
        self._calls: dict[int, tuple[str, list[str]]] = {}

    def _chunk(self, parts: list[JSON], **candidate: object) -> JSON:
        return {
            "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0, **candidate}],
            "modelVersion": self.ask.model,
            "responseId": self.id,
        }

    def open(self) -> list[bytes]:
        return []

    def step(self, step: Step) -> list[bytes]:
        match step:
            case TextDelta(text):
                return [self.framing.event(dumps(self._chunk([{"text": text}])))]
            case ReasoningDelta(text):
                return [self.framing.event(dumps(self._chunk([{"text": text, "thought": True}])))]
            case ToolCallStarted(index, _, name):
                self._calls[index] = (name, [])
                return []
            case ToolArgsDelta(index, fragment):
                self._calls[index][1].append(fragment)
                return []

    def _call_parts(self) -> list[JSON]:
        return [
            {"functionCall": {"name": name, "args": arguments_object("".join(pieces))}}
            for name, pieces in (self._calls[i] for i in sorted(self._calls))
        ]

    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        parts = self._call_parts() or [{"text": ""}]
        chunk = self._chunk(parts, finishReason=self.finish_reasons[kind])
        chunk["usageMetadata"] = _usage(usage)
        return [self.framing.event(dumps(chunk))]

    def terminal(self) -> list[bytes]:
        return []

    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        return [self.framing.event(dumps(self.error_body(_CODES.get(kind, 500), kind, message)))]

    def bad_json(self) -> bytes:
        return self.framing.event(b'{"candidates": [{"content": oops')

    def body(self, reply: Reply) -> JSON:
        parts: list[JSON] = []
        if reply.reasoning:
            parts.append({"text": reply.reasoning, "thought": True})
        if reply.text:
            parts.append({"text": reply.text})
        parts += [
            {"functionCall": {"name": c.name, "args": arguments_object(c.arguments)}}
            for c in reply.tool_calls
        ]
        chunk = self._chunk(parts, finishReason=self.finish_reasons[reply.finish])
        chunk["usageMetadata"] = _usage(reply.usage)
        return chunk

    @staticmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        return {
            "error": {"code": status, "message": message, "status": _STATUS.get(kind, "UNKNOWN")}
        }
