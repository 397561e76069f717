"""The official SDKs, as real clients on a loopback socket, get the failure the spec names:
each dialect's injected error frame makes its SDK raise (or, for Responses, yield its ``error``
event), and the openai SDK's retries of a 429 show up in the reaction report as three
attempts that honoured ``Retry-After``. (A minimal player stands in for ``serve`` here.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from streamscope.core.faults import (
    ObservedExchange,
    Playback,
    Write,
    apply,
    client_reactions,
    parse_fault_spec,
)
from support.rawhttp import RawServer, chunk

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _recorded(fixture: str) -> Playback:
    data = (FIXTURES / fixture).read_bytes()
    return Playback(200, (("content-type", "text/event-stream"),), (Write(0.0, data),))


async def _play(playback: Playback, writer: asyncio.StreamWriter) -> None:
    """Write ``playback`` as a chunked HTTP/1.1 response, on its times."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def until(at: float) -> None:
        await asyncio.sleep(max(0.0, start + at - loop.time()))

    await until(playback.headers_at)
    lines = [f"HTTP/1.1 {playback.status} X"]
    lines += [f"{k}: {v}" for k, v in playback.headers if k.lower() != "content-length"]
    lines += ["transfer-encoding: chunked", "connection: close", "", ""]
    writer.write("\r\n".join(lines).encode())
    for at, data in playback.writes:
        await until(at)
        writer.write(chunk(data))
        await writer.drain()
    if playback.end == "cut":
        writer.transport.abort()
        return
    writer.write(b"0\r\n\r\n")
    await writer.drain()


def _serve(server: RawServer, spec: str, recorded: Playback, dialect: str) -> list[float]:
    """Answer every request with ``recorded`` under ``spec``; returns the arrival times."""
    parsed = parse_fault_spec(spec)
    arrivals: list[float] = []

    async def handler(_request: bytes, writer: asyncio.StreamWriter) -> None:
        arrivals.append(time.monotonic())
        await _play(apply(parsed, recorded, dialect, len(arrivals)), writer)

    server.handler = handler
    return arrivals


def test_openai_chat_raises_on_the_error_frame(raw_server: RawServer) -> None:
    _serve(raw_server, "error@frame:4", _recorded("openai/plain_text.sse"), "openai")
    with openai.OpenAI(base_url=raw_server.url + "/v1", api_key="k", max_retries=0) as client:
        text = ""
        with pytest.raises(openai.APIError) as info:
            for part in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            ):
                text += part.choices[0].delta.content or ""
    assert info.value.message == "injected by StreamScope: error@frame:4"
    assert text == "Hello! How"  # frames 0-3: the role, "Hello", "!", " How"


def test_openai_responses_yields_the_error_event(raw_server: RawServer) -> None:
    _serve(raw_server, "error@frame:3", _recorded("responses/plain_text.sse"), "responses")
    with openai.OpenAI(base_url=raw_server.url + "/v1", api_key="k", max_retries=0) as client:
        events = list(client.responses.create(model="m", input="hi", stream=True))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "error",
    ]
    assert getattr(events[-1], "message", None) == "injected by StreamScope: error@frame:3"


def test_anthropic_raises_overloaded(raw_server: RawServer) -> None:
    _serve(raw_server, "error@frame:4", _recorded("anthropic/plain_text.sse"), "anthropic")
    client = anthropic.Anthropic(base_url=raw_server.url, api_key="k", max_retries=0)
    with client, pytest.raises(anthropic.APIStatusError) as info:
        for _event in client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}], stream=True
        ):
            pass
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "injected by StreamScope: error@frame:4"},
    }


def test_google_genai_raises_a_server_error(raw_server: RawServer) -> None:
    _serve(raw_server, "error@frame:1", _recorded("gemini/plain_text.sse"), "gemini")
    options = genai_types.HttpOptions(base_url=raw_server.url, api_version="v1beta")
    client = genai.Client(api_key="k", http_options=options)
    texts: list[str | None] = []
    with pytest.raises(genai_errors.ServerError) as info:
        for part in client.models.generate_content_stream(model="m", contents="hi"):
            texts.append(part.text)
    assert (info.value.code, info.value.message) == (500, "injected by StreamScope: error@frame:1")
    assert texts == ["The sky is blue"]


def test_openai_retries_a_429_and_the_report_counts_three_attempts(raw_server: RawServer) -> None:
    recorded = _recorded("openai/plain_text.sse")
    arrivals = _serve(raw_server, "http=429:retry-after=1", recorded, "openai")
    client = openai.OpenAI(base_url=raw_server.url + "/v1", api_key="k", max_retries=2)
    with client, pytest.raises(openai.RateLimitError):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    spec = parse_fault_spec("http=429:retry-after=1")
    faults = tuple(apply(spec, recorded, "openai", 1).describe())
    seen = [ObservedExchange(str(i), t, "same body", faults, t) for i, t in enumerate(arrivals)]
    report = client_reactions(seen, now=time.monotonic())
    (chain,) = report["exchanges"]
    assert (chain["retries"], chain["retry_after"], chain["retry_after_honoured"]) == (2, 1.0, True)
    assert all(gap >= 1.0 for gap in chain["intervals"])  # the SDK waited Retry-After each time
