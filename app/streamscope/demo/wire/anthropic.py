"""Anthropic Messages: named events from `message_start` to `message_stop`."""

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

_ERROR_TYPES = {
    "auth": "authentication_error",
    "rate_limit": "rate_limit_error",
    "server": "api_error",
    "overloaded": "overloaded_error",
    "invalid_request": "invalid_request_error",
    "not_found": "not_found_error",
}
_SIGNATURE = "ZGVtby1zaWduYXR1cmU="


class AnthropicWriter(Writer):
    finish_reasons: ClassVar[Mapping[FinishKind, str]] = {
        "stop": "end_turn",
        "length": "max_tokens",
        "tool_calls": "tool_use",
    }
    """How this wire spells each way an answer ends."""

    def __init__(self, ask: Ask, framing: Framing) -> None:
        super().__init__(ask, framing)
        self.id = f"msg_demo{self.created}"
        self._block = -1
        self._block_type = ""
        self._text_prefix = b""

    def _event(self, name: str, payload: JSON) -> bytes:
        return self.framing.event(dumps({"type": name, **payload}), name)

    def _switch(self, block_type: str, block: JSON) -> list[bytes]:
        frames = self._close_block()
        self._block += 1
        self._block_type = block_type
        frames.append(
            self._event("content_block_start", {"index": self._block, "content_block": block})
        )
        if block_type == "text":
            template = self._event(
                "content_block_delta",
                {"index": self._block, "delta": {"type": "text_delta", "text": "\x00"}},
            )
            self._text_prefix, self._text_suffix = template.split(b'"\\u0000"')
        return frames

    def _close_block(self) -> list[bytes]:
        if self._block < 0 or not self._block_type:
            return []
        frames = []
        if self._block_type == "thinking":
            delta = {"type": "signature_delta", "signature": _SIGNATURE}
            frames.append(
                self._event("content_block_delta", {"index": self._block, "delta": delta})
            )
        frames.append(self._event("content_block_stop", {"index": self._block}))
        self._block_type = ""
        return frames

    def open(self) -> list[bytes]:
        message: JSON = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.ask.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 8 + len(self.ask.last_user) // 4, "output_tokens": 1},
        }
        return [self._event("message_start", {"message": message}), self._event("ping", {})]

    def step(self, step: Step) -> list[bytes]:
        match step:
            case TextDelta(text):
                frames = [] if self._block_type == "text" else self._switch("text", _TEXT_BLOCK)
                frames.append(self._text_prefix + dumps(text) + self._text_suffix)
                return frames
            case ReasoningDelta(text):
                frames = []
                if self._block_type != "thinking":
                    frames = self._switch("thinking", {"type": "thinking", "thinking": ""})
                delta = {"type": "thinking_delta", "thinking": text}
                frames.append(
                    self._event("content_block_delta", {"index": self._block, "delta": delta})
                )
                return frames
            case ToolCallStarted(_, call_id, name):
                block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                return self._switch("tool_use", block)
            case ToolArgsDelta(_, fragment):
                delta = {"type": "input_json_delta", "partial_json": fragment}
                return [self._event("content_block_delta", {"index": self._block, "delta": delta})]

    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        frames = self._close_block()
        delta = {"stop_reason": self.finish_reasons[kind], "stop_sequence": None}
        frames.append(
            self._event(
                "message_delta", {"delta": delta, "usage": {"output_tokens": usage.output_tokens}}
            )
        )
        return frames

    def terminal(self) -> list[bytes]:
        return [self._event("message_stop", {})]

    def keepalive(self) -> bytes | None:
        return self._event("ping", {})

    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        return [self.framing.event(dumps(self.error_body(500, kind, message)), "error")]

    def bad_json(self) -> bytes:
        return self.framing.event(b'{"type": "content_block_delta", oops', "content_block_delta")

    def body(self, reply: Reply) -> JSON:
        content: list[JSON] = []
        if reply.reasoning:
            content.append(
                {"type": "thinking", "thinking": reply.reasoning, "signature": _SIGNATURE}
            )
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call in reply.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": call.call_id,
                    "name": call.name,
                    "input": arguments_object(call.arguments),
                }
            )
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.ask.model,
            "content": content,
            "stop_reason": self.finish_reasons[reply.finish],
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.usage.input_tokens,
                "output_tokens": reply.usage.output_tokens,
            },
        }

    @staticmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        error = {"type": _ERROR_TYPES.get(kind, "invalid_request_error"), "message": message}
        return {"type": "error", "error": error}


_TEXT_BLOCK: JSON = {"type": "text", "text": ""}
