"""Record once through the tap, replay with `serve`: the official SDKs, pointed at the
replay, return exactly what they returned live from the demo endpoint — text, tool calls,
finish reasons, usage, an HTTP error with its Retry-After, a cut."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.serve import ServeServer
from streamscope.core.tap.server import TapServer
from streamscope.demo.server import DemoServer
from support.tap_upstream import Collector

HI = [{"role": "user", "content": "hi"}]


def _openai(base_url: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as oai:
        stream = oai.chat.completions.create(
            model="demo", messages=HI, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        out["text"] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        out["finish"] = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
        usage = chunks[-1].usage
        assert usage is not None
        out["usage"] = (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens)
        with oai.chat.completions.stream(
            model="demo-tools", messages=[{"role": "user", "content": "weather?"}]
        ) as tools:
            choice = tools.get_final_completion().choices[0]
        out["tool_finish"] = choice.finish_reason
        out["calls"] = [
            (c.function.name, c.function.arguments) for c in choice.message.tool_calls or []
        ]
        with pytest.raises(openai.RateLimitError) as info:
            oai.chat.completions.create(model="demo-error-429", messages=HI, stream=True)
        out["429"] = (info.value.status_code, info.value.response.headers["retry-after"])
        out["429_message"] = info.value.message
        cut_text = ""
        try:
            for c in oai.chat.completions.create(model="demo-cut", messages=HI, stream=True):
                cut_text += c.choices[0].delta.content or "" if c.choices else ""
        except Exception as exc:  # (whatever the SDK raises for a cut, live and replayed)
            out["cut"] = (cut_text, type(exc).__name__)
    return out


def _anthropic(root: str) -> dict[str, Any]:
    with (
        anthropic.Anthropic(base_url=root, api_key="sk-test", max_retries=0) as claude,
        claude.messages.stream(model="demo", max_tokens=100, messages=HI) as s,
    ):
        message = s.get_final_message()
    return {
        "text": "".join(b.text for b in message.content if b.type == "text"),
        "stop": message.stop_reason,
        "usage": (message.usage.input_tokens, message.usage.output_tokens),
    }


def test_the_sdks_get_from_a_replay_what_they_got_live(tmp_path: Path) -> None:
    collector = Collector()
    captures = CaptureStore(tmp_path / "captures")
    with (
        DemoServer(speed=1000) as demo,
        TapServer(demo.root_url, port=0, captures=captures, listener=collector) as tap,
    ):
        live = _openai(tap.root_url + "/v1"), _anthropic(tap.root_url)
        collector.wait(5)
    files = sorted((tmp_path / "captures").glob("*.sscap"))
    assert len(files) == 5
    for match in ("order", "request"):
        with ServeServer([tmp_path / "captures"], port=0, match=match) as serve:  # type: ignore[arg-type]
            assert serve.base_url == serve.root_url + "/v1"
            replayed = _openai(serve.base_url), _anthropic(serve.root_url)
        assert replayed == live, match
    oai, claude = live
    assert oai["text"].startswith("You wrote: “hi”\n\n## What this demo shows\n")
    assert oai["text"].endswith("Multi-byte text survives every split: naïve café — 日本語 — 🚀\n")
    assert (oai["finish"], oai["usage"]) == ("stop", (8, 101, 109))
    assert oai["tool_finish"] == "tool_calls"
    assert oai["calls"] == [
        (
            "get_weather",
            '{"city": "Z\\u00fcrich", "country": "CH", "unit": "celsius", '
            '"note": "say \\"grüezi\\" \\ud83c\\udf26 — 日本"}',
        ),
        ("get_time", '{"timezone": "Europe/Zurich"}'),
    ]
    assert oai["429"] == (429, "20")
    assert oai["429_message"] == (
        "Error code: 429 - Rate limit reached (the demo-error-429 scenario)."
    )
    assert oai["cut"] == ("You wrote: “hi”\n\nThis is ", "APIConnectionError")
    assert (claude["text"], claude["stop"], claude["usage"]) == (oai["text"], "end_turn", (8, 101))


def test_a_tapped_stream_is_served_to_httpx_byte_for_byte(tmp_path: Path) -> None:
    collector = Collector()
    body = {"model": "demo-split-utf8", "messages": HI, "stream": True}
    with (
        DemoServer(speed=1000) as demo,
        TapServer(
            demo.root_url, port=0, captures=CaptureStore(tmp_path), listener=collector
        ) as tap,
        httpx.Client() as client,
        client.stream("POST", tap.root_url + "/v1/chat/completions", json=body) as r,
    ):
        live = b"".join(r.iter_raw())
    collector.wait(1)
    with (
        ServeServer([tmp_path], port=0, speed=None) as serve,
        httpx.Client() as client,
        client.stream("POST", serve.base_url + "/chat/completions", json=body) as r,
    ):
        replayed = b"".join(r.iter_raw())
    assert replayed == live
    assert "\r\n" in live.decode()  # (the scenario: CRLF line ends, reads split inside them)


def _responses_and_gemini(root: str) -> tuple[Any, ...]:
    from google import genai
    from google.genai import types as genai_types

    with (
        openai.OpenAI(base_url=root + "/v1", api_key="sk-test", max_retries=0) as oai,
        oai.responses.stream(model="demo-tools", input="weather?") as stream,
    ):
        response = stream.get_final_response()
    calls = [(i.name, i.arguments) for i in response.output if i.type == "function_call"]
    usage = response.usage
    assert usage is not None
    client = genai.Client(
        api_key="gm-test-key",
        http_options=genai_types.HttpOptions(base_url=root, api_version="v1beta"),
    )
    chunks = list(client.models.generate_content_stream(model="demo", contents="hi"))
    text = "".join(c.text or "" for c in chunks)
    finish = (chunks[-1].candidates or [])[0].finish_reason
    meta = chunks[-1].usage_metadata
    assert meta is not None
    return (
        response.status,
        calls,
        (usage.input_tokens, usage.output_tokens),
        text,
        finish,
        (meta.prompt_token_count, meta.candidates_token_count),
    )


def test_responses_and_gemini_sdks_get_from_a_replay_what_they_got_live(tmp_path: Path) -> None:
    collector = Collector()
    with (
        DemoServer(speed=1000) as demo,
        TapServer(
            demo.root_url, port=0, captures=CaptureStore(tmp_path), listener=collector
        ) as tap,
    ):
        live = _responses_and_gemini(tap.root_url)
        collector.wait(2)
    with ServeServer([tmp_path], port=0, match="request") as serve:
        assert serve.base_url == serve.root_url  # (/v1 and /v1beta share no prefix)
        replayed = _responses_and_gemini(serve.root_url)
    assert replayed == live
    status, calls, usage, text, finish, meta = live
    assert (status, usage, meta) == ("completed", (10, 72), (8, 101))
    assert [name for name, _ in calls] == ["get_weather", "get_time"]
    assert text.startswith("You wrote: “hi”\n\n## What this demo shows\n")
    assert (len(text), str(finish)) == (634, "FinishReason.STOP")
