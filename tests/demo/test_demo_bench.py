"""The ``demo-bench`` model: parameters from the model name and the body, the plan (due times,
reasoning, length stop, jitter, stalls), the seeded outcome mix, and the stamped frames on a
real loopback socket for every dialect the demo serves."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from demo_wire_reading import read, request_for

from streamscope.demo.bench import (
    BenchParamError,
    BenchParams,
    is_bench_model,
    parse_params,
    plan,
    token_text,
)
from streamscope.demo.dialects import demo_dialects
from streamscope.demo.server import DemoServer

DIALECTS = [d.name for d in demo_dialects()]
_STAMP = re.compile(rb'demo_sent"?[=:](\d+\.\d{6})[ ,]"?demo_due"?[=:](\d+\.\d{6})')


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer() as srv:
        yield srv


# -- parameters -------------------------------------------------------------------------------


def test_the_model_name_sets_parameters_in_either_spelling() -> None:
    query = parse_params("demo-bench?ttft=150&itl=12.5&tokens=8&cut=0.1")
    semis = parse_params("demo-bench;ttft=150;itl=12.5;tokens=8;cut=0.1")
    assert query == semis == BenchParams(ttft=150, itl=12.5, tokens=8, cut=0.1)
    assert parse_params("demo-bench") == BenchParams()
    assert (BenchParams().ttft, BenchParams().itl, BenchParams().tokens) == (200, 20, 64)


def test_the_body_overrides_the_model_name() -> None:
    body = {"demo_bench": {"itl": 5, "seed": "7"}}
    assert parse_params("demo-bench?itl=20&tokens=3", body) == BenchParams(itl=5, tokens=3, seed=7)


def test_only_demo_bench_names_are_bench_models() -> None:
    assert is_bench_model("demo-bench")
    assert is_bench_model("demo-bench?ttft=1")
    assert is_bench_model("demo-bench;ttft=1")
    assert not is_bench_model("demo-benchmark")
    assert not is_bench_model("demo")


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("demo-bench?speed=2", "unknown parameter 'speed'"),
        ("demo-bench?tokens=2.5", "tokens must be a whole number"),
        ("demo-bench?ttft=-1", "ttft must be >= 0"),
        ("demo-bench?cut=0.6&e429=0.5", "sum to <= 1"),
        ("demo-bench?tokens=4&reasoning=5", "reasoning must be between 0 and tokens"),
        ("demo-bench?itl=fast", "itl must be a number"),
    ],
)
def test_bad_parameters_are_refused_with_a_reason(model: str, message: str) -> None:
    with pytest.raises(BenchParamError, match=re.escape(message)):
        parse_params(model)


# -- the plan ---------------------------------------------------------------------------------


def test_chunks_are_due_on_an_absolute_schedule() -> None:
    p = plan(BenchParams(ttft=200, itl=20, tokens=5, tpc=2, reasoning=3), 0)
    assert [c.due_ms for c in p.chunks] == [200, 240, 280]
    assert [c.tokens for c in p.chunks] == [2, 2, 1]
    assert [(c.reasoning, c.text) for c in p.chunks] == [
        (" lorem ipsum", ""),
        (" dolor", " sit"),
        ("", " amet"),
    ]
    assert (p.outcome, p.tokens, p.length_stop, p.break_at) == ("completed", 5, False, None)


def test_a_smaller_max_tokens_stops_at_it_with_a_length_stop() -> None:
    p = plan(BenchParams(tokens=64), 0, max_tokens=10)
    assert (p.tokens, p.length_stop, len(p.chunks)) == (10, True, 10)
    assert plan(BenchParams(tokens=8), 0, max_tokens=100).length_stop is False


def test_jitter_is_seeded_bounded_and_never_reorders() -> None:
    params = BenchParams(ttft=10, itl=1, tokens=50, jitter=5, seed=3)
    a, b = plan(params, 4), plan(params, 4)
    assert a == b
    assert a != plan(params, 5)
    late = [c.due_ms - (10 + k) for k, c in enumerate(a.chunks)]
    assert all(0 <= x <= 5 for x in late)
    assert max(late) > 2.5  # (the draws do spread)
    dues = [c.due_ms for c in a.chunks]
    assert dues == sorted(dues)


def test_a_stall_delays_every_token_from_its_place() -> None:
    p = plan(BenchParams(ttft=100, itl=10, tokens=6, stall=500, stall_at=4), 0)
    assert [c.due_ms for c in p.chunks] == [100, 110, 120, 130, 640, 650]
    default = plan(BenchParams(ttft=100, itl=10, tokens=6, stall=500), 0)
    assert [c.due_ms for c in default.chunks][2:4] == [120, 630]  # half-way by default
    never = plan(BenchParams(ttft=100, itl=10, tokens=6, stall=500, stall_p=0), 0)
    assert never.chunks[-1].due_ms == 150


def test_the_outcome_mix_is_exact_per_seed() -> None:
    params = BenchParams(tokens=4, cut=0.1, e429=0.05, e500=0.05, err=0.1, seed=11)
    outcomes = [plan(params, n).outcome for n in range(200)]
    assert Counter(outcomes) == {"completed": 144, "err": 23, "e429": 13, "e500": 11, "cut": 9}
    assert outcomes[:8] == [plan(params, n).outcome for n in range(8)]  # (same seed, same)
    other = [plan(BenchParams(tokens=4, cut=0.1, seed=12), n).outcome for n in range(200)]
    assert other != [o if o == "cut" else "completed" for o in outcomes]
    cut = plan(BenchParams(tokens=10, cut=1.0, seed=1), 0)
    assert cut.outcome == "cut" and cut.break_at is not None and 1 <= cut.break_at < 10


# -- on the wire ------------------------------------------------------------------------------


def _post(server: DemoServer, dialect: str, model: str, **kw: object) -> httpx.Response:
    path, body = request_for(dialect, model, **kw)  # type: ignore[arg-type]
    with httpx.Client(timeout=10) as client:
        response = client.post(server.base_url(dialect) + path, json=body)
    return response


def _model(dialect: str, query: str) -> str:
    return "demo-bench;" + query.replace("&", ";") if dialect == "gemini" else f"demo-bench?{query}"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_frame_is_stamped_and_the_answer_is_whole(server: DemoServer, dialect: str) -> None:
    response = _post(server, dialect, _model(dialect, "ttft=30&itl=4&tokens=6&reasoning=2"))
    assert response.status_code == 200
    arrived = float(response.headers["x-demo-arrived"])
    stamps = [(float(s), float(d)) for s, d in _STAMP.findall(response.content)]
    body = _STAMP.sub(b"", response.content)
    frames = response.content.count(b"\n\n") if dialect != "ollama" else body.count(b"\n")
    assert len(stamps) == frames  # one per frame
    sent = [s for s, _ in stamps]
    dues = [d for _, d in stamps]
    assert sent == sorted(sent) and dues == sorted(dues)
    assert all(s >= d for s, d in stamps)  # never early
    token_dues = sorted(set(dues) - {arrived})
    assert [round((d - arrived) * 1000, 3) for d in token_dues] == [30, 34, 38, 42, 46, 50]
    reading = read(dialect, response.content)
    assert reading.reasoning.strip() == "lorem ipsum"
    assert reading.text.strip() == "dolor sit amet consectetur"
    assert reading.finish is not None and reading.bad_frames == 0


@pytest.mark.parametrize(
    ("dialect", "usage"),
    [
        ("openai", b'"completion_tokens":7'),
        ("responses", b'"output_tokens":7'),
        ("anthropic", b'"usage":{"output_tokens":7}'),
        ("gemini", b'"candidatesTokenCount":7'),
        ("ollama", b'"eval_count":7'),
    ],
)
def test_usage_arrives_in_the_final_chunk(server: DemoServer, dialect: str, usage: bytes) -> None:
    response = _post(server, dialect, _model(dialect, "ttft=1&itl=1&tokens=7"))
    last_frames = response.content.rstrip().rsplit(b"demo_sent", 3)[-3:]
    assert any(usage in frame for frame in last_frames), response.content[-600:]


def test_the_outcome_mix_on_the_wire(server: DemoServer) -> None:
    model = "demo-bench?ttft=1&itl=1&tokens=6&cut=0.25&e429=0.25&seed=5"
    statuses = []
    for _ in range(8):
        try:
            response = _post(server, "openai", model)
            whole = b"data: [DONE]" in response.content
            statuses.append(response.status_code if response.status_code != 200 or whole else 0)
        except httpx.RemoteProtocolError:  # (the connection dropped mid-body)
            statuses.append(-1)
    expected = {-1: "cut", 429: "e429", 200: "completed"}
    wanted = [plan(parse_params(model), n).outcome for n in range(8)]
    assert [expected[s] for s in statuses] == wanted
    assert wanted == ["e429", *["completed"] * 6, "cut"]
    limited = _post(server, "openai", model + "&req=0")  # (request 0's draw, again)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"


def test_a_bad_parameter_is_an_http_400(server: DemoServer) -> None:
    response = _post(server, "anthropic", "demo-bench?ttft=soon")
    assert response.status_code == 400
    assert "ttft must be a number" in response.json()["error"]["message"]


def test_token_words_are_stable() -> None:
    assert [token_text(k) for k in (0, 1, 18, 19)] == [" lorem", " ipsum", " aliqua", " lorem"]
