"""Minimal valid streams per dialect, as lists of frames, for the verdict tests.

A frame is a dict (``data: <json>``), ``(event, dict)`` (an ``event:`` line too), or bytes
(written as they are, blank line included). :func:`body` joins them."""

from __future__ import annotations

import copy
import json
from typing import Any

Frame = dict[str, Any] | tuple[str, dict[str, Any]] | bytes


def frame_bytes(frame: Frame, dialect: str) -> bytes:
    if isinstance(frame, bytes):
        return frame
    if dialect == "ollama":
        assert isinstance(frame, dict)
        return json.dumps(frame, ensure_ascii=False).encode() + b"\n"
    if isinstance(frame, tuple):
        name, data = frame
        return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
    return f"data: {json.dumps(frame, ensure_ascii=False)}\n\n".encode()


def body(frames: list[Frame], dialect: str) -> bytes:
    return b"".join(frame_bytes(f, dialect) for f in frames)


def oa(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1764449000,
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    chunk.update(top)
    return chunk


DONE = b"data: [DONE]\n\n"


def openai_text(n: int = 3, text: str = "word ") -> list[Frame]:
    return [
        oa({"role": "assistant", "content": ""}),
        *[oa({"content": text}) for _ in range(n)],
        oa({}, "stop"),
        DONE,
    ]


def tc(index: Any, args: str, *, first: bool = False, name: str = "get_weather") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if first:
        call = {"index": index, "id": f"call_{index}", "type": "function",
                "function": {"name": name, "arguments": args}}  # fmt: skip
    return oa({"tool_calls": [call]})


def openai_tools() -> list[Frame]:
    return [
        oa({"role": "assistant", "content": None}),
        tc(0, "", first=True),
        tc(0, '{"city": '),
        tc(0, '"Bern"}'),
        oa({}, "tool_calls"),
        DONE,
    ]


JSON_DELTA = "input_json_delta"


def anthropic_text() -> list[Frame]:
    return [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-x", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Hello"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": " there"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "tool_use", "id": "toolu_1",
                                                   "name": "get_weather", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": JSON_DELTA, "partial_json": '{"city":'}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": JSON_DELTA, "partial_json": ' "Bern"}'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip


def gm(text: str, finish: str | None = None, **top: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    chunk = {"candidates": [cand], "modelVersion": "gemini-x", "responseId": "r1"}
    chunk.update(top)
    return chunk


def gemini_text() -> list[Frame]:
    return [gm("The sky"), gm(" is blue."), gm("", "STOP")]


def responses_text() -> list[Frame]:
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-x",
            "output": []}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": resp},
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "part": {"type": "output_text", "text": ""}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": "Hi"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": " there"},
        {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "text": "Hi there"},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.completed", "response": {**resp, "status": "completed"}},
    ]  # fmt: skip
    return renumber([(e["type"], e) for e in events])


def responses_call(args: list[str]) -> list[Frame]:
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-x",
            "output": []}  # fmt: skip
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather",
            "arguments": ""}  # fmt: skip
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": resp},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        *[{"type": "response.function_call_arguments.delta", "item_id": "fc_1",
           "output_index": 0, "delta": a} for a in args],
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": {**resp, "status": "completed"}},
    ]  # fmt: skip
    return renumber([(e["type"], e) for e in events])


def renumber(frames: list[Frame], start: int = 1) -> list[Frame]:
    """Responses frames with sequence numbers start, start+1, ..."""
    out: list[Frame] = []
    n = start
    for f in frames:
        if isinstance(f, tuple):
            data = copy.deepcopy(f[1])
            data["sequence_number"] = n
            n += 1
            out.append((f[0], data))
        else:
            out.append(f)
    return out


def ol(content: str, done: bool = False, **top: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": "llama3.2",
        "created_at": "2025-05-27T22:54:57Z",
        "message": {"role": "assistant", "content": content},
        "done": done,
    }
    if done:
        line["done_reason"] = "stop"
    line.update(top)
    return line


def ollama_text() -> list[Frame]:
    return [ol("The"), ol(" sky"), ol(" is blue."), ol("", True)]


CLEAN: dict[str, list[Frame]] = {
    "openai": openai_text(),
    "anthropic": anthropic_text(),
    "gemini": gemini_text(),
    "responses": responses_text(),
    "ollama": ollama_text(),
}
CONTENT_TYPES = {
    "openai": "text/event-stream",
    "anthropic": "text/event-stream",
    "gemini": "text/event-stream",
    "responses": "text/event-stream",
    "ollama": "application/x-ndjson",
}
