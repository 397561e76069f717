"""OpenAI Chat Completions: `chat.completion.chunk` frames, `data: [DONE]` at the end."""

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
from streamscope.demo.wire.base import JSON, Framing, Writer, dumps

_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "auth": ("invalid_request_error", "invalid_api_key"),
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "server": ("server_error", None),
    "overloaded": ("server_error", "server_overloaded"),
    "invalid_request": ("invalid_request_error", None),
    "not_found": ("invalid_request_error", "model_not_found"),
}


def _usage(usage: Usage) -> JSON:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


class OpenAIChatWriter(Writer):
    finish_reasons: ClassVar[Mapping[FinishKind, str]] = {
        "stop": "stop",
        "length": "length",
        "tool_calls": "tool_calls",
    }
    """How this wire spells each way an answer ends."""
    interleaves_tool_calls = True

    def __init__(self, ask: Ask, framing: Framing) -> None:
        super().__init__(ask, framing)
        self.id = f"chatcmpl-demo{self.created}"
        head: JSON = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": ask.model,
            "system_fingerprint": "fp_demo",
        }
        self._head = head
        # Text deltas dominate a firehose: splice the JSON-encoded text into a fixed template.
        template = self._chunk({"content": "\x00"}, None)
        self._text_prefix, self._text_suffix = template.split(b'"\\u0000"')

    def _chunk(self, delta: JSON, finish: str | None, **extra: object) -> bytes:
        chunk = {
            **self._head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **extra,
        }
        if self.ask.include_usage:
            chunk.setdefault("usage", None)
        return self.framing.event(dumps(chunk))

    def open(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": "", "refusal": None}, None)]

    def step(self, step: Step) -> list[bytes]:
        match step:
            case TextDelta(text):
                return [self._text_prefix + dumps(text) + self._text_suffix]
            case ReasoningDelta(text):
                return [self._chunk({"reasoning_content": text}, None)]
            case ToolCallStarted(index, call_id, name):
                call = {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
                return [self._chunk({"tool_calls": [call]}, None)]
            case ToolArgsDelta(index, fragment):
                call = {"index": index, "function": {"arguments": fragment}}
                return [self._chunk({"tool_calls": [call]}, None)]

    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        frames = [self._chunk({}, self.finish_reasons[kind])]
        if self.ask.include_usage:
            chunk = {**self._head, "choices": [], "usage": _usage(usage)}
            frames.append(self.framing.event(dumps(chunk)))
        return frames

    def terminal(self) -> list[bytes]:
        return [self.framing.event(b"[DONE]")]

    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        return [self.framing.event(dumps(self.error_body(500, kind, message)))]

    def body(self, reply: Reply) -> JSON:
        message: JSON = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in reply.tool_calls
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.ask.model,
            "system_fingerprint": "fp_demo",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reasons[reply.finish],
                }
            ],
            "usage": _usage(reply.usage),
        }

    @staticmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        type_, code = _ERROR_TYPES.get(kind, ("invalid_request_error", None))
        return {"error": {"message": message, "type": type_, "param": None, "code": code}}
