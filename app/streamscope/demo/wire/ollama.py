"""Ollama native `/api/chat`: newline-delimited JSON objects, the last one with `done: true`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import ClassVar

from streamscope.demo.scenarios import ErrorKind, FinishKind
from streamscope.demo.script import (
    Ask,
    ReasoningDelta,
    Reply,
    Step,
    TextDelta,
    ToolArgsDelta,
    ToolCall,
    ToolCallStarted,
    Usage,
)
from streamscope.demo.wire.base import JSON, Framing, Writer, arguments_object, dumps


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _tool_calls(calls: list[ToolCall]) -> list[JSON]:
    return [
        {"function": {"index": i, "name": c.name, "arguments": arguments_object(c.arguments)}}
        for i, c in enumerate(calls)
    ]


class OllamaWriter(Writer):
    finish_reasons: ClassVar[Mapping[FinishKind, str]] = {
        "stop": "stop",
        "length": "length",
        "tool_calls": "stop",
    }
    """How this wire spells each way an answer ends."""
    media_type = "application/x-ndjson"

    def __init__(self, ask: Ask, framing: Framing) -> None:
        super().__init__(ask, framing)
        self._calls: dict[int, ToolCall] = {}
        self._kind: FinishKind = "stop"
        self._usage = Usage(0, 0)

    def _line(self, message: JSON, done: bool = False, **extra: object) -> bytes:
        obj: JSON = {"model": self.ask.model, "created_at": _now(), "message": message, **extra}
        obj["done"] = done
        return dumps(obj) + b"\n"

    def open(self) -> list[bytes]:
        return []

    def step(self, step: Step) -> list[bytes]:
        match step:
            case TextDelta(text):
                return [self._line({"role": "assistant", "content": text})]
            case ReasoningDelta(text):
                return [self._line({"role": "assistant", "content": "", "thinking": text})]
            case ToolCallStarted(index, call_id, name):
                self._calls[index] = ToolCall(call_id, name, "")
                return []
            case ToolArgsDelta(index, fragment):
                call = self._calls[index]
                self._calls[index] = ToolCall(call.call_id, call.name, call.arguments + fragment)
                return []

    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        self._kind, self._usage = kind, usage
        if not self._calls:
            return []
        calls = [self._calls[i] for i in sorted(self._calls)]
        message = {"role": "assistant", "content": "", "tool_calls": _tool_calls(calls)}
        return [self._line(message)]

    def _done_fields(self, kind: FinishKind, usage: Usage) -> JSON:
        return {
            "done_reason": self.finish_reasons[kind],
            "total_duration": 1_000_000 * (usage.output_tokens + 50),
            "load_duration": 1_000_000,
            "prompt_eval_count": usage.input_tokens,
            "prompt_eval_duration": 1_000_000,
            "eval_count": usage.output_tokens,
            "eval_duration": 1_000_000 * usage.output_tokens,
        }

    def terminal(self) -> list[bytes]:
        message = {"role": "assistant", "content": ""}
        return [self._line(message, True, **self._done_fields(self._kind, self._usage))]

    def keepalive(self) -> bytes | None:
        return None

    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        return [dumps({"error": message}) + b"\n"]

    def bad_json(self) -> bytes:
        return b'{"model": oops, this is not JSON\n'

    def body(self, reply: Reply) -> JSON:
        message: JSON = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            message["thinking"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = _tool_calls(reply.tool_calls)
        obj: JSON = {"model": self.ask.model, "created_at": _now(), "message": message}
        obj.update(self._done_fields(reply.finish, reply.usage))
        obj["done"] = True
        return obj

    @staticmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        return {"error": message}
