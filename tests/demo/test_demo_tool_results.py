"""``demo-tools`` answers the results of its tool calls with a short final text: the results
are read from each dialect's own request shape (written here by hand, as the providers'
documentation spells them, not by the app's dialects)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from streamscope.demo.dialects import demo_dialect
from streamscope.demo.script import ToolResult, tool_answer
from streamscope.demo.server import DemoServer

WEATHER = "call_demo_weather_0"
TIME = "call_demo_time_1"
EXPECTED = (ToolResult("get_weather", "14 °C, light rain"), ToolResult("get_time", "15:42"))

BODIES: dict[str, dict[str, Any]] = {
    "openai": {
        "model": "demo-tools",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": WEATHER,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    },
                    {
                        "id": TIME,
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": WEATHER,
                "content": [{"type": "text", "text": "14 °C, light rain"}],
            },
            {"role": "tool", "tool_call_id": TIME, "content": "15:42"},
        ],
    },
    "responses": {
        "model": "demo-tools",
        "input": [
            {"role": "user", "content": "Weather?"},
            {"type": "function_call", "call_id": WEATHER, "name": "get_weather", "arguments": "{}"},
            {"type": "function_call", "call_id": TIME, "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": WEATHER, "output": "14 °C, light rain"},
            {"type": "function_call_output", "call_id": TIME, "output": "15:42"},
        ],
    },
    "anthropic": {
        "model": "demo-tools",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": WEATHER, "name": "get_weather", "input": {}},
                    {"type": "tool_use", "id": TIME, "name": "get_time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": WEATHER,
                        "content": [{"type": "text", "text": "14 °C, light rain"}],
                    },
                    {"type": "tool_result", "tool_use_id": TIME, "content": "15:42"},
                ],
            },
        ],
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "get_weather", "args": {}}},
                    {"functionCall": {"name": "get_time", "args": {}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"result": "14 °C, light rain"},
                        }
                    },
                    {"functionResponse": {"name": "get_time", "response": {"result": "15:42"}}},
                ],
            },
        ],
    },
    "ollama": {
        "model": "demo-tools",
        "messages": [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {}}},
                    {"function": {"name": "get_time", "arguments": {}}},
                ],
            },
            {"role": "tool", "tool_name": "get_weather", "content": "14 °C, light rain"},
            {"role": "tool", "tool_name": "get_time", "content": "15:42"},
        ],
    },
}


@pytest.mark.parametrize("dialect", sorted(BODIES))
def test_each_dialect_s_tool_results_are_read(dialect: str) -> None:
    ask = demo_dialect(dialect).ask(BODIES[dialect], "demo-tools", True)
    assert ask.tool_results == EXPECTED


def test_a_new_user_message_after_the_results_is_not_a_tool_follow_up() -> None:
    body = {**BODIES["openai"]}
    body["messages"] = [*body["messages"], {"role": "user", "content": "And tomorrow?"}]
    assert demo_dialect("openai").ask(body, None, None).tool_results == ()
    plain = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert demo_dialect("openai").ask(plain, None, None).tool_results == ()


def test_the_final_text() -> None:
    assert tool_answer(EXPECTED) == (
        "Thanks — 2 tool results arrived:\n\n"
        "- **get_weather**: 14 °C, light rain\n"
        "- **get_time**: 15:42\n"
        "\nThat completes the round trip: tool calls, your results, this answer."
    )
    long = ToolResult(None, "x " * 100)
    assert tool_answer((long,)).splitlines()[2] == "- **a tool**: " + "x " * 29 + "x…"


def test_non_streaming_and_streaming_answers_end_with_stop(demo_server: DemoServer) -> None:
    with httpx.Client(timeout=5) as client:
        url = demo_server.base_url("openai") + "/chat/completions"
        whole = client.post(url, json={**BODIES["openai"], "stream": False}).json()
        choice = whole["choices"][0]
        assert choice["finish_reason"] == "stop"
        assert choice["message"]["content"] == tool_answer(EXPECTED)
        assert "tool_calls" not in choice["message"]
        url = demo_server.base_url("anthropic") + "/messages"
        body = client.post(url, json={**BODIES["anthropic"], "stream": True}).text
    assert '"stop_reason":"end_turn"' in body and '"tool_use"' not in body
    assert body.count("text_delta") == len(tool_answer(EXPECTED).split())
