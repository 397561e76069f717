"""The demo endpoint's one list of dialects: a toy dialect registered there, and nowhere else,
is served (its route, base URL, request reading, finish reasons), listed and expected."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import httpx
import pytest

from streamscope.demo.ask import ask_openai
from streamscope.demo.dialects import (
    DemoDialect,
    demo_dialects,
    dialects_for,
    expected_finish_reason,
    finish_reason,
    registered,
)
from streamscope.demo.scenarios import SCENARIOS, FinishKind
from streamscope.demo.server import DemoServer
from streamscope.demo.wire.openai_chat import OpenAIChatWriter


class ToyWriter(OpenAIChatWriter):
    """OpenAI chat frames, with finish reasons of its own."""

    finish_reasons: ClassVar[dict[FinishKind, str]] = {
        "stop": "toy_stop",
        "length": "toy_length",
        "tool_calls": "toy_tools",
    }


TOY = DemoDialect("toy", ToyWriter, ask_openai, "/toy/v1", "/toy/v1/chat/completions")


@pytest.fixture
def toy_server() -> Iterator[DemoServer]:
    with registered(TOY), DemoServer(host="127.0.0.1", port=0, speed=1000) as srv:
        yield srv


def test_the_builtins_in_order() -> None:
    assert [d.name for d in demo_dialects()] == [
        "openai",
        "responses",
        "anthropic",
        "gemini",
        "ollama",
    ]
    assert [d.sse for d in demo_dialects()] == [True, True, True, True, False]
    assert dialects_for(SCENARIOS["demo-crlf"]) == ("openai", "responses", "anthropic", "gemini")
    assert finish_reason("anthropic", "length") == "max_tokens"
    assert expected_finish_reason(SCENARIOS["demo-no-done"], "responses") is None
    assert expected_finish_reason(SCENARIOS["demo-no-done"], "gemini") == "STOP"


def test_a_registered_dialect_is_served_listed_and_expected(toy_server: DemoServer) -> None:
    assert toy_server.base_url("toy") == toy_server.root_url + "/toy/v1"
    assert "toy" in toy_server.describe()
    assert "toy" in dialects_for(SCENARIOS["demo-crlf"])  # (an SSE dialect)
    assert expected_finish_reason(SCENARIOS["demo-length"], "toy") == "toy_length"
    body = {"model": "demo", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.Client(timeout=10) as http:
        response = http.post(toy_server.base_url("toy") + "/chat/completions", json=body)
        models = http.get(toy_server.root_url + "/v1/models").json()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert '"finish_reason":"toy_stop"' in response.text
    assert response.text.rstrip().endswith("data: [DONE]")
    demo = next(m for m in models["data"] if m["id"] == "demo")
    assert demo["dialects"] == ["openai", "responses", "anthropic", "gemini", "ollama", "toy"]


def test_it_goes_with_its_registration() -> None:
    assert "toy" not in [d.name for d in demo_dialects()]
    with DemoServer(host="127.0.0.1", port=0, speed=1000) as srv, pytest.raises(ValueError):
        srv.base_url("toy")
    with registered(TOY), pytest.raises(ValueError, match="already serves"), registered(TOY):
        pass
