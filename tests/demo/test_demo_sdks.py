"""The official SDKs as real clients of the demo endpoint (retries off): proof that the demo
speaks the providers' real wire formats, not only our own reading of them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from streamscope.demo.server import DemoServer

PROMPT = "What's the weather in Zürich?"


@pytest.fixture(scope="module")
def oai(demo_server: DemoServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=demo_server.base_url("openai"), api_key="demo", max_retries=0
    ) as client:
        yield client


@pytest.fixture(scope="module")
def claude(demo_server: DemoServer) -> Iterator[anthropic.Anthropic]:
    # The SDK's base URL is the root: it appends /v1/messages itself.
    with anthropic.Anthropic(base_url=demo_server.root_url, api_key="demo", max_retries=0) as c:
        yield c


def test_openai_chat_text(oai: openai.OpenAI) -> None:
    stream = oai.chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": PROMPT}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    with stream:
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
    assert PROMPT in text and "naïve café — 日本語 — 🚀" in text and "```python" in text
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens > 0


def test_openai_chat_two_tool_calls(oai: openai.OpenAI) -> None:
    with oai.chat.completions.stream(
        model="demo-tools", messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]
    args = [json.loads(c.function.arguments) for c in calls]
    assert args[0]["city"] == "Zürich" and args[1] == {"timezone": "Europe/Zurich"}
    assert all(c.id for c in calls)


def test_openai_rate_limit_error(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError) as info:
        oai.chat.completions.create(
            model="demo-error-429", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert info.value.status_code == 429
    assert info.value.response.headers["retry-after"] == "20"


def test_openai_not_found_and_bad_request(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="demo", messages=[])


def test_openai_non_streaming(oai: openai.OpenAI) -> None:
    completion = oai.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": PROMPT}]
    )
    assert PROMPT in (completion.choices[0].message.content or "")


def test_openai_responses_text(oai: openai.OpenAI) -> None:
    with oai.responses.stream(model="demo", input=PROMPT) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        response = stream.get_final_response()
    assert response.status == "completed"
    assert "".join(deltas) == response.output_text
    assert PROMPT in response.output_text and "日本語" in response.output_text
    assert response.usage is not None and response.usage.output_tokens > 0


def test_openai_responses_tool_calls(oai: openai.OpenAI) -> None:
    with oai.responses.stream(
        model="demo-tools", input=[{"role": "user", "content": PROMPT}]
    ) as stream:
        response = stream.get_final_response()
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert [c.call_id for c in calls] == ["call_demo_weather_0", "call_demo_time_1"]
    assert json.loads(calls[0].arguments)["city"] == "Zürich"


def test_openai_responses_reasoning_summary(oai: openai.OpenAI) -> None:
    with oai.responses.stream(model="demo-reasoning", input=PROMPT) as stream:
        summary = "".join(
            e.delta for e in stream if e.type == "response.reasoning_summary_text.delta"
        )
        response = stream.get_final_response()
    assert summary.startswith("The user wants") and PROMPT in response.output_text


def test_anthropic_text(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="demo", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert PROMPT in text and "日本語" in text
    assert message.stop_reason == "end_turn"
    assert message.content[0].type == "text" and message.content[0].text == text


def test_anthropic_two_tool_use_blocks(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="demo-tools",
        max_tokens=1024,
        messages=[{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
    ) as stream:
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    tools = [b for b in message.content if b.type == "tool_use"]
    assert [t.name for t in tools] == ["get_weather", "get_time"]
    assert tools[0].input["city"] == "Zürich"
    assert tools[1].input == {"timezone": "Europe/Zurich"}


def test_anthropic_thinking_and_errors(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(
        model="demo-reasoning", max_tokens=1024, messages=[{"role": "user", "content": PROMPT}]
    ) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["thinking", "text"]
    with pytest.raises(anthropic.RateLimitError):
        claude.messages.create(
            model="demo-error-429", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    with (
        pytest.raises(anthropic.APIStatusError) as info,
        claude.messages.stream(
            model="demo-midstream-error",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
        ) as stream,
    ):
        for _ in stream:
            pass
    assert "overloaded" in str(info.value).lower()


def test_google_genai_text(demo_server: DemoServer) -> None:
    client = genai.Client(
        api_key="demo",
        http_options=genai_types.HttpOptions(base_url=demo_server.root_url, api_version="v1beta"),
    )
    try:
        chunks = list(client.models.generate_content_stream(model="demo", contents=PROMPT))
        text = "".join(c.text or "" for c in chunks)
        assert PROMPT in text and "naïve café — 日本語 — 🚀" in text
        last = (chunks[-1].candidates or [])[0]
        assert last.finish_reason == genai_types.FinishReason.STOP
        whole = client.models.generate_content(model="demo-tools", contents=PROMPT)
        calls = whole.function_calls or []
        assert [c.name for c in calls] == ["get_weather", "get_time"]
        assert calls[0].args == {
            "city": "Zürich",
            "country": "CH",
            "unit": "celsius",
            "note": 'say "grüezi" 🌦 — 日本',
        }
    finally:
        client.close()
