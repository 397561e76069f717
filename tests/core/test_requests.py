"""Every dialect builds its own wire request from one provider-neutral conversation."""

from __future__ import annotations

from typing import Any

import pytest

from streamscope.core.wire.conversation import (
    Conversation,
    Message,
    ToolCall,
    ToolDefinition,
    merge_extra_body,
)
from streamscope.core.wire.dialects import dialect_names, get_dialect
from streamscope.core.wire.dialects.anthropic import DEFAULT_ANTHROPIC_MAX_TOKENS

WEATHER = ToolDefinition(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALL = ToolCall("call_1", "get_weather", '{"city":"Zürich"}')
CONTINUED = Conversation(
    system="Be brief.",
    messages=[
        Message("user", "Weather in Zürich?"),
        Message("assistant", "Checking.", tool_calls=[CALL]),
        Message("tool", '{"temp_c": 21}', tool_call_id="call_1"),
    ],
    tools=[WEATHER],
    temperature=0.2,
    max_tokens=256,
)


def _build(dialect: str, conv: Conversation, **kw: Any) -> Any:
    kw.setdefault("base_url", "https://api.example.com/v1/")
    kw.setdefault("model", "m-1")
    return get_dialect(dialect).build_request(conv, **kw)


def test_openai_request() -> None:
    req = _build("openai", CONTINUED, api_key="sk-test", extra_headers={"X-Org": "o"})
    assert (req.method, req.url) == ("POST", "https://api.example.com/v1/chat/completions")
    assert req.headers == {
        "Accept": "text/event-stream",
        "Authorization": "Bearer sk-test",
        "X-Org": "o",
    }
    assert req.json == {
        "model": "m-1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Zürich?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": dict(WEATHER.parameters),
                },
            }
        ],
        "temperature": 0.2,
        "max_tokens": 256,
    }


def test_openai_include_usage_switch_and_no_key() -> None:
    req = _build("openai", Conversation([Message("user", "hi")], include_usage=False))
    assert "stream_options" not in req.json
    assert "Authorization" not in req.headers
    assert (
        "tools" not in req.json and "temperature" not in req.json and "max_tokens" not in req.json
    )


def test_anthropic_request() -> None:
    req = _build("anthropic", CONTINUED, api_key="sk-ant")
    assert req.url == "https://api.example.com/v1/messages"
    assert req.headers == {
        "Accept": "text/event-stream",
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant",
    }
    assert req.json == {
        "model": "m-1",
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "Weather in Zürich?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Zürich"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": '{"temp_c": 21}'}
                ],
            },
        ],
        "stream": True,
        "system": "Be brief.",
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": dict(WEATHER.parameters),
            }
        ],
        "temperature": 0.2,
    }


def test_anthropic_default_max_tokens_and_grouped_tool_results() -> None:
    conv = Conversation(
        [
            Message("user", "two calls"),
            Message(
                "assistant", tool_calls=[ToolCall("a", "f", "{}"), ToolCall("b", "f", "not json")]
            ),
            Message("tool", "1", tool_call_id="a"),
            Message("tool", "2", tool_call_id="b"),
        ]
    )
    req = _build("anthropic", conv)
    assert req.json["max_tokens"] == DEFAULT_ANTHROPIC_MAX_TOKENS == 4096
    assert "x-api-key" not in req.headers
    assistant, results = req.json["messages"][1:]
    assert assistant["content"][1]["input"] == {"raw_arguments": "not json"}
    assert [b["tool_use_id"] for b in results["content"]] == ["a", "b"]


def test_gemini_request() -> None:
    req = _build(
        "gemini",
        CONTINUED,
        base_url="https://generativelanguage.googleapis.com/v1beta",
        model="models/gemini-2.5-flash",
        api_key="AIza",
    )
    assert (
        req.url
        == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert req.headers == {"Accept": "text/event-stream", "x-goog-api-key": "AIza"}
    assert req.json == {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Zürich?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Checking."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Zürich"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"temp_c": 21}}}
                ],
            },
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather for a city",
                        "parameters": dict(WEATHER.parameters),
                    }
                ]
            }
        ],
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 256},
    }


def test_gemini_plain_text_tool_result_is_wrapped() -> None:
    call = Message("assistant", tool_calls=(ToolCall("x", "get_weather", "{}"),))
    conv = Conversation([call, Message("tool", "sunny", tool_call_id="x", name="get_weather")])
    part = _build("gemini", conv).json["contents"][1]["parts"][0]
    assert part == {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}}


def test_responses_request() -> None:
    req = _build("responses", CONTINUED, api_key="sk")
    assert req.url == "https://api.example.com/v1/responses"
    assert req.headers == {"Accept": "text/event-stream", "Authorization": "Bearer sk"}
    assert req.json == {
        "model": "m-1",
        "input": [
            {"role": "user", "content": "Weather in Zürich?"},
            {"role": "assistant", "content": "Checking."},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Zürich"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": '{"temp_c": 21}'},
        ],
        "stream": True,
        "instructions": "Be brief.",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": dict(WEATHER.parameters),
                "strict": False,
            }
        ],
        "temperature": 0.2,
        "max_output_tokens": 256,
    }


def test_ollama_request() -> None:
    req = _build("ollama", CONTINUED, base_url="http://localhost:11434")
    assert req.url == "http://localhost:11434/api/chat"
    assert req.headers == {"Accept": "application/x-ndjson"}
    assert req.json == {
        "model": "m-1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Zürich?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}
                ],
            },
            {"role": "tool", "content": '{"temp_c": 21}', "tool_name": "get_weather"},
        ],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": dict(WEATHER.parameters),
                },
            }
        ],
        "options": {"temperature": 0.2, "num_predict": 256},
    }


@pytest.mark.parametrize("name", sorted(dialect_names()))
def test_extra_body_merges_and_null_removes(name: str) -> None:
    conv = Conversation(
        [Message("user", "hi")],
        temperature=0.5,
        extra_body={"stream": None, "temperature": None, "top_k": 40, "nested": {"a": 1}},
    )
    body = _build(name, conv).json
    assert "stream" not in body and "temperature" not in body
    assert body["top_k"] == 40 and body["nested"] == {"a": 1}


def test_extra_body_merges_objects_recursively() -> None:
    body = {"options": {"temperature": 0.2, "num_predict": 5}, "keep": 1}
    merge_extra_body(body, {"options": {"num_predict": None, "seed": 7}, "new": [1]})
    assert body == {"options": {"temperature": 0.2, "seed": 7}, "keep": 1, "new": [1]}


def test_extra_body_can_drop_stream_options() -> None:
    conv = Conversation([Message("user", "hi")], extra_body={"stream_options": None})
    assert "stream_options" not in _build("openai", conv).json


@pytest.mark.parametrize("name", sorted(dialect_names()))
def test_request_does_not_alias_the_conversation(name: str) -> None:
    params = {"type": "object", "properties": {}}
    conv = Conversation(
        [Message("user", "hi")], tools=[ToolDefinition("t", "", params)], extra_body={"x": {"y": 1}}
    )
    body = _build(name, conv).json
    body["x"]["y"] = 2
    assert conv.extra_body == {"x": {"y": 1}}
