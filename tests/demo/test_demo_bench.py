"""The ``demo-bench`` model: parameters from the model name and the body, the plan (due times,
reasoning, length stop, jitter, stalls), the seeded outcome mix, and the stamped frames on a
real loopback socket for every dialect the demo serves."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from demo_wire_reading import read, request_for

from streamscope.demo.app import DemoApp
from streamscope.demo.bench import (
    BenchParamError,
    BenchParams,
    is_bench_model,
    parse_params,
    plan,
    token_text,
)
from streamscope.demo.bench_playback import (
    SENT_SLOT,
    SENT_WIDTH,
    SLOT_MARK,
    fill_slots,
    play_bench,
    sent_field,
)
from streamscope.demo.dialects import demo_dialect, demo_dialects
from streamscope.demo.playback import DeliberateCutError
from streamscope.demo.script import usage_for
from streamscope.demo.server import DemoServer
from streamscope.demo.stamping import StampingH11Protocol, _StampingTransport
from streamscope.demo.wire.base import Framing

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
    assert SLOT_MARK not in response.content  # (every slot filled as it was written)
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


# -- the send stamp, taken as the chunk is written ----------------------------------------


def test_the_sent_field_has_one_width_whatever_the_time() -> None:
    assert sent_field(29949.415923, sse=True) == b"        demo_sent=29949.415923"
    assert sent_field(29949.415923, sse=False) == b'      "demo_sent":29949.415923'
    assert sent_field(3.5, sse=True) == b"demo_sent=3.500000".rjust(SENT_WIDTH)
    long = sent_field(12345678901234.5, sse=False)  # (a time too long: decimals go first)
    assert long == b'"demo_sent":12345678901234.500'
    assert {len(f) for f in (long, sent_field(0.0, sse=True))} == {SENT_WIDTH}
    assert {len(slot) for slot in SENT_SLOT.values()} == {SENT_WIDTH}


def test_filled_slots_leave_valid_frames() -> None:
    sse = b":" + SENT_SLOT[True] + b" demo_due=1.000000\ndata: {}\n\n"
    assert fill_slots(sse, 2.25) == (
        b":" + b" " * 12 + b"demo_sent=2.250000 demo_due=1.000000\ndata: {}\n\n"
    )
    line = b'{"done":false,' + SENT_SLOT[False] + b',"demo_due":1.000000}\n'
    filled = fill_slots(line * 2, 2.25)
    assert [json.loads(x) for x in filled.splitlines()] == [
        {"done": False, "demo_sent": 2.25, "demo_due": 1.0}
    ] * 2
    assert fill_slots(b"data: [DONE]\n\n", 2.25) == b"data: [DONE]\n\n"


class _Transport:
    def __init__(self) -> None:
        self.written: list[tuple[bytes, float]] = []

    def write(self, data: bytes) -> None:
        self.written.append((data, time.monotonic()))

    def get_extra_info(self, name: str) -> Any:
        return f"extra:{name}"


def test_the_stamping_transport_fills_slots_as_it_writes() -> None:
    inner = _Transport()
    transport = _StampingTransport(inner)  # type: ignore[arg-type]
    plain = b"data: {}\n\n"
    transport.write(plain)
    before = time.monotonic()
    transport.write(b":" + SENT_SLOT[True] + b" demo_due=1.000000\n" + plain)
    (first, _), (second, written_at) = inner.written
    assert first is plain  # (passed on untouched)
    sent = float(re.findall(rb"demo_sent=(\d+\.\d+)", second)[0])
    assert before - 1e-6 <= sent <= written_at + 1e-6  # (taken in the write)
    assert transport.get_extra_info("socket") == "extra:socket"  # (the rest: delegated)


def test_the_demo_server_writes_through_the_stamping_protocol() -> None:
    config = DemoServer()._make_server(log_config=False).config
    assert config.http is StampingH11Protocol


async def _asgi_body(app: DemoApp, model: str) -> bytes:
    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo") as client:
        response = await client.post("/v1/chat/completions", json=body)
    return response.content


def test_without_the_stamping_server_the_app_stamps_the_frames_itself() -> None:
    """Under another ASGI server (here httpx's, in memory) the app stamps each chunk as it
    hands it on; told the server stamps at write, it leaves the slots for it."""
    model = "demo-bench?ttft=1&itl=1&tokens=3"
    own = asyncio.run(_asgi_body(DemoApp(1.0, threading.Event()), model))
    assert SLOT_MARK not in own and len(_STAMP.findall(own)) == 6  # role, 3, finish, [DONE]
    left = asyncio.run(_asgi_body(DemoApp(1.0, threading.Event(), stamp_at_write=True), model))
    assert left.count(SENT_SLOT[True]) == 6 and not _STAMP.findall(left)


def test_a_cut_chunk_is_stamped_before_it_is_cut() -> None:
    """A cut hands on half a chunk, which could split a slot: the chunk is stamped first
    (the other chunks keep their slots for the transport)."""
    model = "demo-bench?ttft=1&itl=1&tokens=8&cut=1&seed=3"
    dialect = demo_dialect("openai")
    ask = dialect.ask(request_for("openai", model)[1], model, True)
    the_plan = plan(parse_params(model), 0)
    assert the_plan.outcome == "cut" and the_plan.break_at is not None

    async def play() -> list[bytes]:
        chunks: list[bytes] = []
        stream = play_bench(
            the_plan,
            dialect.writer(ask, Framing()),
            time.monotonic(),
            usage_for(ask, the_plan.tokens),
            threading.Event(),
            sse=True,
            stamp_at_write=True,
        )
        with pytest.raises(DeliberateCutError):
            async for chunk in stream:
                chunks.append(chunk)
        return chunks

    chunks = asyncio.run(play())
    *whole, cut = chunks
    assert len(whole) == 1 + the_plan.break_at  # (the opening, the chunks before the cut)
    assert all(c.count(SENT_SLOT[True]) == 1 for c in whole)
    assert SLOT_MARK[:1] not in cut and len(_STAMP.findall(cut)) == 1
