"""OpenAI Responses: typed events with `sequence_number`, ending in `response.completed`
(or `response.incomplete` for a length stop)."""

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
from streamscope.demo.wire.openai_chat import OpenAIChatWriter

_ERROR_CODES = {
    "auth": "invalid_api_key",
    "rate_limit": "rate_limit_exceeded",
    "server": "server_error",
    "overloaded": "server_is_overloaded",
}


def _usage(usage: Usage) -> JSON:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


class _Item:
    """One output item being streamed: a message, a reasoning summary or a function call."""

    def __init__(self, index: int, item: JSON) -> None:
        self.index = index
        self.item = item
        self.text: list[str] = []

    @property
    def id(self) -> str:
        return str(self.item["id"])


class ResponsesWriter(Writer):
    finish_reasons: ClassVar[Mapping[FinishKind, str]] = {
        "stop": "completed",
        "length": "max_output_tokens",
        "tool_calls": "completed",
    }
    """How this wire spells each way an answer ends."""

    def __init__(self, ask: Ask, framing: Framing) -> None:
        super().__init__(ask, framing)
        self.id = f"resp_demo{self.created}"
        self._seq = 0
        self._items: list[_Item] = []
        self._open: _Item | None = None  # the open message or reasoning item
        self._calls: dict[int, _Item] = {}  # open function calls by tool index
        self._kind: FinishKind = "stop"
        self._usage: Usage | None = None

    # --- framing ---

    def _event(self, name: str, payload: JSON) -> bytes:
        event = {"type": name, **payload, "sequence_number": self._seq}
        self._seq += 1
        return self.framing.event(dumps(event), name)

    def _response(self, status: str) -> JSON:
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": None,
            "max_output_tokens": self.ask.max_tokens,
            "model": self.ask.model,
            "output": [i.item for i in self._items] if status != "in_progress" else [],
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": _usage(self._usage) if self._usage and status != "in_progress" else None,
            "metadata": {},
        }

    # --- items ---

    def _add(self, item: JSON) -> tuple[_Item, bytes]:
        entry = _Item(len(self._items), item)
        self._items.append(entry)
        added = self._event(
            "response.output_item.added", {"output_index": entry.index, "item": item}
        )
        return entry, added

    def _start(self, kind: str) -> list[bytes]:
        frames = self._close_open()
        n = len(self._items)
        if kind == "message":
            item: JSON = {
                "id": f"msg_demo{n}",
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
            }
            entry, added = self._add(item)
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            loc = {"item_id": entry.id, "output_index": entry.index, "content_index": 0}
            frames += [added, self._event("response.content_part.added", {**loc, "part": part})]
        else:
            item = {"id": f"rs_demo{n}", "type": "reasoning", "summary": []}
            entry, added = self._add(item)
            part = {"type": "summary_text", "text": ""}
            loc = {"item_id": entry.id, "output_index": entry.index, "summary_index": 0}
            frames += [
                added,
                self._event("response.reasoning_summary_part.added", {**loc, "part": part}),
            ]
        self._open = entry
        return frames

    def _close_open(self) -> list[bytes]:
        entry, self._open = self._open, None
        if entry is None:
            return []
        text = "".join(entry.text)
        if entry.item["type"] == "message":
            status = "incomplete" if self._kind == "length" else "completed"
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
            entry.item.update(status=status, content=[part])
            loc = {"item_id": entry.id, "output_index": entry.index, "content_index": 0}
            frames = [
                self._event("response.output_text.done", {**loc, "text": text, "logprobs": []}),
                self._event("response.content_part.done", {**loc, "part": part}),
            ]
        else:
            part = {"type": "summary_text", "text": text}
            entry.item.update(summary=[part])
            loc = {"item_id": entry.id, "output_index": entry.index, "summary_index": 0}
            frames = [
                self._event("response.reasoning_summary_text.done", {**loc, "text": text}),
                self._event("response.reasoning_summary_part.done", {**loc, "part": part}),
            ]
        item_done = {"output_index": entry.index, "item": entry.item}
        return [*frames, self._event("response.output_item.done", item_done)]

    def _close_calls(self) -> list[bytes]:
        frames = []
        for entry in self._calls.values():
            arguments = "".join(entry.text)
            entry.item.update(arguments=arguments, status="completed")
            loc = {"item_id": entry.id, "output_index": entry.index}
            done = {**loc, "name": entry.item["name"], "arguments": arguments}
            frames.append(self._event("response.function_call_arguments.done", done))
            frames.append(
                self._event(
                    "response.output_item.done", {"output_index": entry.index, "item": entry.item}
                )
            )
        self._calls.clear()
        return frames

    # --- Writer ---

    def open(self) -> list[bytes]:
        response = self._response("in_progress")
        return [
            self._event("response.created", {"response": response}),
            self._event("response.in_progress", {"response": response}),
        ]

    def step(self, step: Step) -> list[bytes]:
        match step:
            case TextDelta(text):
                frames = [] if self._is_open("message") else self._start("message")
                assert self._open is not None
                self._open.text.append(text)
                loc = {
                    "item_id": self._open.id,
                    "output_index": self._open.index,
                    "content_index": 0,
                }
                delta = {**loc, "delta": text, "logprobs": []}
                return [*frames, self._event("response.output_text.delta", delta)]
            case ReasoningDelta(text):
                frames = [] if self._is_open("reasoning") else self._start("reasoning")
                assert self._open is not None
                self._open.text.append(text)
                loc = {
                    "item_id": self._open.id,
                    "output_index": self._open.index,
                    "summary_index": 0,
                }
                return [
                    *frames,
                    self._event("response.reasoning_summary_text.delta", {**loc, "delta": text}),
                ]
            case ToolCallStarted(index, call_id, name):
                frames = [*self._close_open(), *self._close_calls()]
                item = {
                    "id": f"fc_demo{len(self._items)}",
                    "type": "function_call",
                    "status": "in_progress",
                    "arguments": "",
                    "call_id": call_id,
                    "name": name,
                }
                entry, added = self._add(item)
                self._calls[index] = entry
                return [*frames, added]
            case ToolArgsDelta(index, fragment):
                entry = self._calls[index]
                entry.text.append(fragment)
                loc = {"item_id": entry.id, "output_index": entry.index}
                return [
                    self._event(
                        "response.function_call_arguments.delta", {**loc, "delta": fragment}
                    )
                ]

    def _is_open(self, kind: str) -> bool:
        return self._open is not None and self._open.item["type"] == kind

    def finish(self, kind: FinishKind, usage: Usage) -> list[bytes]:
        self._kind, self._usage = kind, usage
        return [*self._close_open(), *self._close_calls()]

    def terminal(self) -> list[bytes]:
        if self._kind == "length":
            return [self._event("response.incomplete", {"response": self._response("incomplete")})]
        return [self._event("response.completed", {"response": self._response("completed")})]

    def error(self, kind: ErrorKind, message: str) -> list[bytes]:
        payload = {
            "code": _ERROR_CODES.get(kind, "server_error"),
            "message": message,
            "param": None,
        }
        return [self._event("error", payload)]

    def bad_json(self) -> bytes:
        return self.framing.event(
            b'{"type": "response.output_text.delta", oops', "response.output_text.delta"
        )

    def body(self, reply: Reply) -> JSON:
        if reply.reasoning:
            self.step(ReasoningDelta(reply.reasoning))
        if reply.text:
            self.step(TextDelta(reply.text))
        for index, call in enumerate(reply.tool_calls):
            self.step(ToolCallStarted(index, call.call_id, call.name))
            self.step(ToolArgsDelta(index, call.arguments))
        self.finish(reply.finish, reply.usage)
        return self._response("incomplete" if reply.finish == "length" else "completed")

    @staticmethod
    def error_body(status: int, kind: str, message: str) -> JSON:
        return OpenAIChatWriter.error_body(status, kind, message)
