"""Faults on cue against the official SDKs: each gets the failure the spec names (or, for a
fault it cannot see, the answer as if whole), and the reaction report states what that SDK
really did — its retries, their intervals, whether it honoured ``Retry-After``."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from streamscope.core.serve import ServeServer
from support.serve_client import FINAL, capture, frame, save

HI = [{"role": "user", "content": "hi"}]
OPENAI_READS = [(0.01, frame("Hello")), (0.02, frame(", world")), (0.03, FINAL)]


def _anthropic_reads() -> list[tuple[float, bytes]]:
    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    frames = [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Hello"},
            },
        ),
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": ", world"},
            },
        ),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return [(0.01 * (i + 1), f) for i, f in enumerate(frames)]


@pytest.fixture
def openai_capture(tmp_path: Path) -> Path:
    path: Path = save(tmp_path, "chat.sscap", capture(OPENAI_READS))
    return path


@pytest.fixture
def anthropic_capture(tmp_path: Path) -> Path:
    cap = dataclasses.replace(capture(_anthropic_reads(), path="/v1/messages"), dialect="anthropic")
    path: Path = save(tmp_path, "claude.sscap", cap)
    return path


def serving(path: Path, spec: str) -> ServeServer:
    return ServeServer([path], port=0, speed=None, loop=True, faults=spec)


def _openai_text(base_url: str, *, retries: int = 2, timeout: float = 10.0) -> str:
    with openai.OpenAI(
        base_url=base_url, api_key="sk-test", max_retries=retries, timeout=timeout
    ) as client:
        stream = client.chat.completions.create(model="m", messages=HI, stream=True)  # type: ignore[arg-type]
        chunks: list[Any] = list(stream)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _one(server: ServeServer) -> dict[str, Any]:
    assert server.wait_idle()
    reactions = server.reactions()
    assert len(reactions["exchanges"]) == 1, reactions
    report: dict[str, Any] = reactions["exchanges"][0]
    return report


def test_openai_retries_a_429_twice_three_attempts_honouring_retry_after(
    openai_capture: Path,
) -> None:
    with serving(openai_capture, "http=429:retry-after=0") as server:
        with pytest.raises(openai.RateLimitError) as info:
            _openai_text(server.base_url)
        report = _one(server)
    assert info.value.status_code == 429
    assert "injected by StreamScope: http=429:retry-after=0" in info.value.message
    assert (report["retries"], report["attempt_ids"]) == (2, ["1", "2", "3"])
    assert len(report["intervals"]) == 2 and report["retry_after_honoured"] is True


def test_openai_backs_off_after_a_500_and_gets_the_answer(openai_capture: Path) -> None:
    with serving(openai_capture, "http=500/next") as server:
        text = _openai_text(server.base_url)
        report = _one(server)
    assert text == "Hello, world"
    assert report["retries"] == 1 and report["retry_after"] is None
    assert report["intervals"][0] >= 0.2  # (its back-off: 0.5 s less up to 25 % jitter)


@pytest.mark.parametrize(
    ("spec", "raises", "says"),
    [
        ("cut@frame:1", openai.APIConnectionError, "Connection error."),
        ("error@frame:1", openai.APIError, "injected by StreamScope: error@frame:1"),
        ("garble@frame:1", json.JSONDecodeError, ""),
    ],
)
def test_openai_gets_the_failure_the_spec_names_and_does_not_retry_mid_stream(
    openai_capture: Path, spec: str, raises: type[Exception], says: str
) -> None:
    with serving(openai_capture, spec) as server:
        with pytest.raises(raises) as info:
            _openai_text(server.base_url)
        report = _one(server)
    assert says in str(info.value)
    assert (report["retries"], report["fault"]) == (
        0,
        spec.replace("garble@frame:1", "garble@frame:1=json"),
    )


def test_openai_takes_a_dropped_terminal_as_a_whole_answer_and_the_report_says_so(
    openai_capture: Path,
) -> None:
    with serving(openai_capture, "drop-terminal") as server:
        text = _openai_text(server.base_url)
        report = _one(server)
    assert text == "Hello, world"  # (no [DONE], no error: the SDK cannot tell)
    assert report["finished_as_if_whole"] is True


def test_openai_with_a_read_timeout_closes_during_a_stall(openai_capture: Path) -> None:
    with serving(openai_capture, "stall@frame:1=5") as server:
        with pytest.raises(openai.APITimeoutError):
            _openai_text(server.base_url, timeout=0.5)
        report = _one(server)
    assert 0.4 <= report["closed_after"] < 4 and report["retries"] == 0


@pytest.mark.parametrize("spec", ["slow=20", "split-reads", "merge-reads", "delay-headers=0.2"])
def test_shape_faults_leave_the_openai_answer_whole(openai_capture: Path, spec: str) -> None:
    with serving(openai_capture, spec) as server:
        assert _openai_text(server.base_url) == "Hello, world"
        assert _one(server)["read_to_end"] is True


def _claude(root: str) -> Iterator[str]:
    with (
        anthropic.Anthropic(base_url=root, api_key="sk-test", max_retries=2) as claude,
        claude.messages.stream(model="claude", max_tokens=100, messages=HI) as stream,  # type: ignore[arg-type]
    ):
        yield from stream.text_stream


def test_anthropic_gets_its_own_error_event_and_retries_an_overload(
    anthropic_capture: Path,
) -> None:
    with serving(anthropic_capture, "error@frame:3") as server:
        with pytest.raises(anthropic.APIStatusError) as info:
            list(_claude(server.root_url))
        assert "injected by StreamScope: error@frame:3" in str(info.value)
        assert _one(server)["retries"] == 0
    with serving(anthropic_capture, "http=529:retry-after=0/next") as server:
        assert "".join(_claude(server.root_url)) == "Hello, world"
        report = _one(server)
    assert (report["retries"], report["retry_after_honoured"]) == (1, True)


@pytest.fixture(scope="module")
def responses_and_gemini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Responses and a Gemini exchange recorded through the tap from the demo."""
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.tap.server import TapServer
    from streamscope.demo.server import DemoServer
    from support.tap_upstream import Collector

    folder = tmp_path_factory.mktemp("recorded")
    collector = Collector()
    with (
        DemoServer(speed=1000) as demo,
        TapServer(demo.root_url, port=0, captures=CaptureStore(folder), listener=collector) as tap,
    ):
        _responses(tap.root_url, retries=0)
        _gemini(tap.root_url)
        collector.wait(2)
    return folder


def _responses(root: str, *, retries: int = 2) -> str:
    with (
        openai.OpenAI(base_url=root + "/v1", api_key="sk-test", max_retries=retries) as oai,
        oai.responses.stream(model="demo", input="hi") as stream,
    ):
        return stream.get_final_response().output_text


def _gemini(root: str) -> tuple[str, object]:
    from google import genai
    from google.genai import types as genai_types

    client = genai.Client(
        api_key="gm-test-key",
        http_options=genai_types.HttpOptions(base_url=root, api_version="v1beta"),
    )
    chunks = list(client.models.generate_content_stream(model="demo", contents="hi"))
    return "".join(c.text or "" for c in chunks), (chunks[-1].candidates or [])[0].finish_reason


def test_the_responses_sdk_under_faults(responses_and_gemini: Path) -> None:
    with serving(responses_and_gemini, "drop-terminal") as server:
        with pytest.raises(
            RuntimeError, match=re.escape("Didn't receive a `response.completed` event")
        ):
            _responses(server.root_url)
        assert _one(server)["finished_as_if_whole"] is True  # (it read to the close, then raised)
    with serving(responses_and_gemini, "http=503:retry-after=0/next") as server:
        assert len(_responses(server.root_url)) == 634
        assert _one(server)["retries"] == 1  # (the SDK retried the 503 once and got the answer)
    with serving(responses_and_gemini, "cut@frame:3") as server:
        with pytest.raises(openai.APIConnectionError):
            _responses(server.root_url)
        assert _one(server)["retries"] == 0  # (no retry once the stream had begun)


def test_the_gemini_sdk_under_faults(responses_and_gemini: Path) -> None:
    from google.genai import errors

    with serving(responses_and_gemini, "drop-terminal") as server:
        text, finish = _gemini(server.root_url)
        assert (len(text), finish) == (634, None)  # (no finish reason, and no complaint)
        assert _one(server)["finished_as_if_whole"] is True
    with (
        serving(responses_and_gemini, "error@frame:3") as server,
        pytest.raises(errors.ServerError, match="injected by StreamScope: error@frame:3"),
    ):
        _gemini(server.root_url)
    with serving(responses_and_gemini, "http=503:retry-after=0/next") as server:
        with pytest.raises(errors.ServerError, match=r"^503 UNAVAILABLE"):
            _gemini(server.root_url)
        report = _one(server)
    assert (report["retries"], report["retry_after_honoured"]) == (0, None)  # (no retry)
