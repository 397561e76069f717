"""Test-side reading of the demo's wire bytes: requests per dialect, and a tiny SSE/NDJSON
splitter (deliberately independent of `streamscope.core`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

PROMPT = "Hello there, demo!"


def request_for(
    dialect: str, model: str, *, stream: bool = True, max_tokens: int | None = None
) -> tuple[str, dict[str, Any]]:
    """(path relative to the dialect's base URL, JSON body)."""
    match dialect:
        case "openai":
            body: dict[str, Any] = {
                "model": model,
                "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                "stream": stream,
                "stream_options": {"include_usage": True},
            }
            if max_tokens:
                body["max_completion_tokens"] = max_tokens
            return "/chat/completions", body
        case "responses":
            body = {
                "model": model,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": PROMPT}]}],
                "stream": stream,
            }
            if max_tokens:
                body["max_output_tokens"] = max_tokens
            return "/responses", body
        case "anthropic":
            body = {
                "model": model,
                "max_tokens": max_tokens or 1024,
                "messages": [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
                "stream": stream,
            }
            return "/messages", body
        case "gemini":
            body = {"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}
            if max_tokens:
                body["generationConfig"] = {"maxOutputTokens": max_tokens}
            method = "streamGenerateContent?alt=sse" if stream else "generateContent"
            return f"/models/{model}:{method}", body
        case "ollama":
            body = {"model": model, "messages": [{"role": "user", "content": PROMPT}]}
            if not stream:
                body["stream"] = False
            if max_tokens:
                body["options"] = {"num_predict": max_tokens}
            return "/api/chat", body
    raise AssertionError(dialect)


@dataclass
class Frame:
    event: str | None
    data: str
    comment: bool = False

    def json(self) -> Any:
        return json.loads(self.data)


def split_frames(dialect: str, body: bytes) -> list[Frame]:
    """SSE events (and comments) or NDJSON lines; invalid UTF-8 is replaced."""
    text = body.decode("utf-8", "replace")
    if dialect == "ollama":
        return [Frame(None, line) for line in text.split("\n") if line]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    frames = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        event, data, comment = None, [], False
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "":
                comment = True
            elif name == "event":
                event = value
            elif name == "data":
                data.append(value)
        frames.append(Frame(event, "\n".join(data), comment and not data))
    return frames


def _loads(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


@dataclass
class Reading:
    """What the frames say, per dialect: text, reasoning, tool calls, finish, terminal."""

    text: str = ""
    reasoning: str = ""
    tools: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    terminal: bool = False
    error: Any = None
    keepalives: int = 0
    bad_frames: int = 0
    content_frames: int = 0


def read(dialect: str, body: bytes) -> Reading:
    r = Reading()
    for frame in split_frames(dialect, body):
        if frame.comment:
            r.keepalives += 1
            continue
        if dialect == "openai" and frame.data == "[DONE]":
            r.terminal = True
            continue
        obj = _loads(frame.data)
        if not isinstance(obj, dict):
            r.bad_frames += 1
            continue
        _apply(dialect, frame, obj, r)
    return r


def _tool(r: Reading, index: int) -> dict[str, Any]:
    return r.tools.setdefault(index, {"id": None, "name": None, "arguments": ""})


def _apply(dialect: str, frame: Frame, obj: dict[str, Any], r: Reading) -> None:
    if "error" in obj and dialect in ("openai", "gemini", "ollama"):
        r.error = obj["error"]
        return
    match dialect:
        case "openai":
            for choice in obj.get("choices", []):
                delta = choice.get("delta", {})
                if delta.get("content"):
                    r.text += delta["content"]
                    r.content_frames += 1
                r.reasoning += delta.get("reasoning_content") or ""
                for call in delta.get("tool_calls") or []:
                    t = _tool(r, call["index"])
                    t["id"] = call.get("id") or t["id"]
                    t["name"] = call.get("function", {}).get("name") or t["name"]
                    t["arguments"] += call.get("function", {}).get("arguments", "")
                r.finish = choice.get("finish_reason") or r.finish
        case "anthropic":
            kind = obj.get("type")
            assert kind == frame.event, (kind, frame.event)
            if kind == "ping":
                r.keepalives += 1
            elif kind == "content_block_start" and obj["content_block"]["type"] == "tool_use":
                block = obj["content_block"]
                r.tools[obj["index"]] = {"id": block["id"], "name": block["name"], "arguments": ""}
            elif kind == "content_block_delta":
                delta = obj["delta"]
                if delta["type"] == "text_delta":
                    r.text += delta["text"]
                    r.content_frames += 1
                elif delta["type"] == "thinking_delta":
                    r.reasoning += delta["thinking"]
                elif delta["type"] == "input_json_delta":
                    r.tools[obj["index"]]["arguments"] += delta["partial_json"]
            elif kind == "message_delta":
                r.finish = obj["delta"]["stop_reason"]
            elif kind == "message_stop":
                r.terminal = True
            elif kind == "error":
                r.error = obj["error"]
        case "responses":
            kind = obj.get("type")
            assert kind == frame.event, (kind, frame.event)
            if kind == "response.output_text.delta":
                r.text += obj["delta"]
                r.content_frames += 1
            elif kind == "response.reasoning_summary_text.delta":
                r.reasoning += obj["delta"]
            elif kind == "response.output_item.added" and obj["item"]["type"] == "function_call":
                item = obj["item"]
                r.tools[obj["output_index"]] = {
                    "id": item["call_id"],
                    "name": item["name"],
                    "arguments": "",
                }
            elif kind == "response.function_call_arguments.delta":
                r.tools[obj["output_index"]]["arguments"] += obj["delta"]
            elif kind == "response.completed":
                r.terminal, r.finish = True, "completed"
            elif kind == "response.incomplete":
                r.terminal = True
                r.finish = obj["response"]["incomplete_details"]["reason"]
            elif kind == "error":
                r.error = obj
        case "gemini":
            candidate = obj["candidates"][0]
            for part in candidate.get("content", {}).get("parts", []):
                if "functionCall" in part:
                    call = part["functionCall"]
                    r.tools[len(r.tools)] = {
                        "id": None,
                        "name": call["name"],
                        "arguments": json.dumps(call["args"], ensure_ascii=False),
                    }
                elif part.get("thought"):
                    r.reasoning += part["text"]
                elif part.get("text"):
                    r.text += part["text"]
                    r.content_frames += 1
            if candidate.get("finishReason"):
                r.finish = candidate["finishReason"]
                r.terminal = True  # completes once the body then ends cleanly
        case "ollama":
            message = obj.get("message", {})
            if message.get("content"):
                r.text += message["content"]
                r.content_frames += 1
            r.reasoning += message.get("thinking", "")
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                r.tools[len(r.tools)] = {
                    "id": None,
                    "name": fn["name"],
                    "arguments": json.dumps(fn["arguments"], ensure_ascii=False),
                }
            if obj.get("done"):
                r.terminal, r.finish = True, obj["done_reason"]
