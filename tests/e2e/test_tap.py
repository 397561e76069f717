"""The tap end to end over loopback: real clients (httpx, the official SDKs) -> the tap ->
an upstream (the demo endpoint, or a scripted one whose every byte and pause the test
decides). Pass-through is exact, faults stay faults, every exchange is recorded right, and
a key the client sends reaches upstream untouched and no file."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import anthropic
import httpx
import openai
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import read_capture
from streamscope.core.paths import home
from streamscope.core.tap.proxy import upstream_url
from streamscope.core.tap.server import TapServer, env_lines, is_loopback, parse_listen
from streamscope.core.turn.observer import TurnObserver
from streamscope.demo.server import DemoServer
from streamscope.headless import replay_body
from support.tap_upstream import FINAL, Collector, ScriptedUpstream, chat_frame, json_keys

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=1000) as server:
        yield server


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


def tap_for(url: str, collector: Collector) -> TapServer:
    return TapServer(url, port=0, captures=CaptureStore(), listener=collector)


# -- routing ------------------------------------------------------------------------------


def test_paths_map_onto_the_upstream_without_doubling_its_prefix() -> None:
    assert upstream_url("http://h:1", "/v1/chat/completions", "a=1") == (
        "http://h:1/v1/chat/completions?a=1"
    )
    assert upstream_url("https://or.ai/api/v1", "/api/v1/chat/completions") == (
        "https://or.ai/api/v1/chat/completions"
    )
    assert upstream_url("https://or.ai/api/v1/", "/chat/completions") == (
        "https://or.ai/api/v1/chat/completions"
    )
    assert upstream_url("https://or.ai/api/v1", "/api/v10/x") == "https://or.ai/api/v1/api/v10/x"


def test_listen_addresses_and_env_lines() -> None:
    assert parse_listen("127.0.0.1:8700") == ("127.0.0.1", 8700)
    assert parse_listen("[::1]:0") == ("::1", 0)
    assert parse_listen("9000") == ("127.0.0.1", 9000)
    with pytest.raises(ValueError):
        parse_listen("127.0.0.1:http")
    assert [is_loopback(h) for h in ("127.0.0.2", "::1", "localhost", "0.0.0.0", "10.0.0.1")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert env_lines("http://127.0.0.1:8700", "https://or.ai/api/v1") == [
        "OPENAI_BASE_URL=http://127.0.0.1:8700/api/v1",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:8700",
        "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8700",
        "OLLAMA_HOST=http://127.0.0.1:8700",
    ]


# -- pass-through, read by read -------------------------------------------------------------


def test_each_upstream_read_reaches_the_client_before_the_next_is_sent(
    upstream: ScriptedUpstream,
) -> None:
    reads = [chat_frame("one"), chat_frame("two") + chat_frame("three"), FINAL]
    upstream.script.reads = reads
    upstream.script.gates = [threading.Event(), threading.Event()]
    collector = Collector()
    got: list[bytes] = []
    with (
        tap_for(upstream.url, collector) as tap,
        httpx.Client(timeout=httpx.Timeout(5.0)) as client,
        client.stream("POST", tap.root_url + CHAT, json=ASK) as response,
    ):
        chunks = response.iter_raw()
        for i in range(len(reads)):
            got.append(next(chunks))  # a tap that buffers times out here (read timeout 5 s)
            if i < len(upstream.script.gates):
                upstream.script.gates[i].set()
        assert next(chunks, None) is None
    assert got == reads  # one client read per upstream read: none merged, none split
    [result] = collector.wait()
    assert result.to_json() | {"duration_ms": 0, "ttft_ms": 0} == {
        "id": 1,
        "method": "POST",
        "path": CHAT,
        "status": 200,
        "outcome": "completed",
        "reason": "[DONE] received (finish_reason=stop)",
        "dialect": "openai",
        "frames": 5,
        "bytes": sum(map(len, reads)),
        "ttft_ms": 0,
        "duration_ms": 0,
        "capture": str(result.exchange.capture),
        "faults": [],
    }
    assert list(result.to_json()) == json_keys()
    capture = read_capture(Path(str(result.exchange.capture)))
    assert [data for _t, data in capture.reads] == reads  # recorded read by read
    assert capture.end is not None and capture.end.outcome == "completed"
    assert capture.request is not None and capture.request.url == upstream.url + CHAT
    assert Path(str(result.exchange.capture)).parent == home() / "captures"


def test_a_cut_upstream_is_a_cut_for_the_client(upstream: ScriptedUpstream) -> None:
    half = chat_frame("two")[:30]
    upstream.script.reads = [chat_frame("one"), half]
    upstream.script.cut = True
    collector = Collector()
    got = bytearray()
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        with (
            pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
            client.stream("POST", tap.root_url + CHAT, json=ASK) as response,
        ):
            for chunk in response.iter_raw():
                got += chunk
        [result] = collector.wait()
    assert bytes(got) == chat_frame("one") + half
    assert (result.outcome, result.status, result.frames, result.bytes) == (
        "truncated",
        200,
        2,
        len(got),
    )
    assert result.reason.startswith("connection broken mid-frame after 153 B, no [DONE]: ")


def test_a_stall_stays_a_stall_and_a_client_hanging_up_ends_the_exchange(
    upstream: ScriptedUpstream,
) -> None:
    upstream.script.reads = [chat_frame("one")]
    upstream.script.stall = threading.Event()
    collector = Collector()
    with (
        tap_for(upstream.url, collector) as tap,
        httpx.Client(timeout=httpx.Timeout(5.0, read=0.5)) as client,
    ):
        with client.stream("POST", tap.root_url + CHAT, json=ASK) as response:
            chunks = response.iter_raw()
            assert next(chunks) == chat_frame("one")
            with pytest.raises(httpx.ReadTimeout):  # the tap did not end the body for us
                next(chunks)
        [result] = collector.wait()
        upstream.script.stall.set()
    assert result.outcome == "cancelled"
    assert result.reason.startswith("the client closed the connection after ")
    assert (result.frames, result.bytes) == (1, len(chat_frame("one")))


def test_gzip_passes_untouched_and_is_decoded_only_for_the_recording(
    upstream: ScriptedUpstream,
) -> None:
    plain = [chat_frame("zipped"), FINAL]
    upstream.script.reads = plain
    upstream.script.gzip = True
    collector = Collector()
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        headers = {"accept-encoding": "gzip"}
        with client.stream("POST", tap.root_url + CHAT, json=ASK, headers=headers) as response:
            raw = b"".join(response.iter_raw())
            assert response.headers["content-encoding"] == "gzip"
        [result] = collector.wait()
        # a client that asks for no encoding gets none asked for upstream
        upstream.script.gzip = False
        request = client.build_request("POST", tap.root_url + CHAT, json=ASK)
        del request.headers["accept-encoding"]
        client.send(request)
        collector.wait(2)
    assert raw == upstream.sent[0]  # the compressed bytes, byte for byte
    assert gzip.decompress(raw) == b"".join(plain)
    assert ("accept-encoding", "gzip") in upstream.seen[0].headers
    assert [k for k, _ in upstream.seen[1].headers if k == "accept-encoding"] == []
    assert (result.outcome, result.frames, result.bytes) == ("completed", 3, len(raw))
    capture = read_capture(Path(str(result.exchange.capture)))
    assert capture.reads.body() == b"".join(plain)


def test_an_error_status_passes_with_its_headers_and_body(upstream: ScriptedUpstream) -> None:
    error = b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}'
    upstream.script.reads = [error]
    upstream.script.status = 429
    upstream.script.headers = {"content-type": "application/json", "retry-after": "17"}
    collector = Collector()
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        response = client.post(tap.root_url + CHAT, json=ASK)
        [result] = collector.wait()
    assert (response.status_code, response.headers["retry-after"]) == (429, "17")
    assert response.content == error
    # the tap adds no headers of its own (upstream's uvicorn sent one server and one date)
    assert [k for k, _ in response.headers.multi_items()] == [
        "date",
        "server",
        "content-type",
        "retry-after",
        "transfer-encoding",
    ]
    assert (result.outcome, result.status, result.frames, result.dialect) == (
        "error",
        429,
        0,
        None,
    )
    assert result.reason == "429 rate_limit_exceeded · slow down · retry after 17 s"


def test_a_plain_json_answer_passes_and_is_recorded(demo: DemoServer) -> None:
    collector = Collector()
    with tap_for(demo.root_url, collector) as tap:
        direct = httpx.get(demo.root_url + "/v1/models")
        tapped = httpx.get(tap.root_url + "/v1/models")
        [result] = collector.wait()
    assert tapped.status_code == 200 and tapped.content == direct.content
    assert (
        result.exchange.method,
        result.outcome,
        result.frames,
        result.bytes,
        result.dialect,
    ) == (
        "GET",
        "completed",
        0,
        len(direct.content),
        None,
    )
    assert (
        result.reason == f"HTTP 200, not a stream (application/json, {len(direct.content)} bytes)"
    )
    assert read_capture(Path(str(result.exchange.capture))).reads.body() == direct.content


def test_an_unreachable_upstream_is_a_502_and_an_error() -> None:
    collector = Collector()
    with TapServer("http://127.0.0.1:9", port=0, listener=collector) as tap:
        response = httpx.post(tap.root_url + CHAT, json=ASK)
        [result] = collector.wait()
    assert response.status_code == 502
    said = "Connection refused by 127.0.0.1:9 — is the server running?"  # (the chat's words)
    assert response.text == f"streamscope tap: {said}\n"
    assert (result.status, result.outcome, result.reason) == (502, "error", said)


# -- the demo endpoint's faults, and the official SDKs ------------------------------------


@pytest.mark.parametrize(
    ("model", "outcome"),
    [
        ("demo", "completed"),
        ("demo-cut", "truncated"),
        ("demo-no-done", "truncated"),
        ("demo-error-429", "error"),
        ("demo-html-502", "error"),
    ],
)
def test_demo_scenarios_fail_the_same_through_the_tap(
    demo: DemoServer, model: str, outcome: str
) -> None:
    ask = {**ASK, "model": model}
    seen = []
    collector = Collector()
    with tap_for(demo.root_url, collector) as tap:
        for root in (demo.root_url, tap.root_url):
            got, failure = bytearray(), None
            try:
                with httpx.stream("POST", root + CHAT, json=ask, timeout=5.0) as response:
                    for chunk in response.iter_raw():
                        got += chunk
            except httpx.HTTPError as exc:
                failure = type(exc).__name__
            seen.append((response.status_code, response.headers.get("retry-after"), failure))
        [result] = collector.wait()
    assert seen[0] == seen[1]
    assert result.outcome == outcome
    assert result.bytes == len(got)
    if model == "demo-error-429":
        assert seen[1] == (429, "20", None)
        assert result.reason == (
            "429 rate_limit_exceeded · Rate limit reached (the demo-error-429 scenario). "
            "· retry after 20 s"
        )


def _oai_tools(client: openai.OpenAI) -> tuple[str | None, list[tuple[str, str]]]:
    with client.chat.completions.stream(
        model="demo-tools", messages=[{"role": "user", "content": "weather?"}]
    ) as stream:
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    return choice.finish_reason, calls


def test_the_openai_and_anthropic_sdks_get_the_same_answers_through_the_tap(
    demo: DemoServer,
) -> None:
    collector = Collector()
    with tap_for(demo.root_url, collector) as tap:
        answers = []
        for root in (demo.root_url, tap.root_url):
            with openai.OpenAI(base_url=root + "/v1", api_key="sk-x", max_retries=0) as oai:
                finish, calls = _oai_tools(oai)
                stream = oai.chat.completions.create(
                    model="demo", messages=[{"role": "user", "content": "hi"}], stream=True
                )
                text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                response = oai.responses.create(model="demo", input="hi")
                with pytest.raises(openai.RateLimitError) as info:
                    oai.chat.completions.create(
                        model="demo-error-429", messages=[{"role": "user", "content": "hi"}]
                    )
            with anthropic.Anthropic(base_url=root, api_key="sk-x", max_retries=0) as claude:
                message = claude.messages.create(
                    model="demo",
                    max_tokens=100,
                    messages=[{"role": "user", "content": "hi"}],
                    stream=False,
                )
                with claude.messages.stream(
                    model="demo", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
                ) as s:
                    streamed = s.get_final_text()
            answers.append(
                (
                    finish,
                    calls,
                    text,
                    response.output_text,
                    info.value.response.headers["retry-after"],
                    [b.type for b in message.content],
                    streamed,
                )
            )
        collector.wait(6)
    assert answers[0] == answers[1]
    assert answers[1][0] == "tool_calls" and [c[0] for c in answers[1][1]] == [
        "get_weather",
        "get_time",
    ]
    outcomes = sorted(r.outcome for r in collector.results)
    assert outcomes == ["completed"] * 5 + ["error"]
    # (the Responses and one Anthropic call were not streamed)
    assert sorted(r.dialect or "-" for r in collector.results) == [
        "-",
        "-",
        "-",
        "anthropic",
        "openai",
        "openai",
    ]


def test_fifty_concurrent_streams_do_not_mix(demo: DemoServer) -> None:
    collector = Collector()
    results: dict[int, bytes] = {}

    def one(i: int) -> None:
        ask = {"model": "demo", "messages": [{"role": "user", "content": f"client {i}"}]}
        ask["stream"] = True
        with httpx.stream("POST", tap.root_url + CHAT, json=ask, timeout=30.0) as response:
            results[i] = b"".join(response.iter_raw())

    with tap_for(demo.root_url, collector) as tap:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        collector.wait(50, timeout=60)
    assert len(results) == 50
    captures = {}
    for r in collector.results:
        capture = read_capture(Path(str(r.exchange.capture)))
        assert capture.request is not None
        prompt = json.loads(capture.request.body)["messages"][0]["content"]
        captures[int(prompt.split()[1])] = (capture.reads.body(), r.outcome)
    for i, body in results.items():
        assert f"client {i}" in replay_body(body, "openai").text  # the demo echoes the prompt
        assert captures[i] == (body, "completed")
    assert len(list((home() / "captures").glob("*.sscap"))) == 50


# -- secrets ------------------------------------------------------------------------------

KEY = "sk-tapcanary-5f0c9a1e7b2d4c86"


def _forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [
        raw,
        base64.b64encode(raw),
        base64.b64encode(raw)[:-4],
        quote(secret, safe="").encode(),
        raw.hex().encode(),
        raw.hex().upper().encode(),
    ]


def test_a_planted_key_goes_upstream_untouched_and_into_no_file(
    upstream: ScriptedUpstream,
) -> None:
    echo = f"echo {KEY} b64 {base64.b64encode(KEY.encode()).decode()} hex {KEY.encode().hex()}"
    upstream.script.reads = [chat_frame(echo[:20]), chat_frame(echo[20:]), FINAL]
    upstream.script.headers = {"content-type": "text/event-stream", "x-echo": KEY}
    collector = Collector()
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        ask = {**ASK, "messages": [{"role": "user", "content": f"my key is {KEY}"}]}
        response = client.post(
            tap.root_url + CHAT + f"?key={KEY}",
            json=ask,
            headers={"authorization": f"Bearer {KEY}", "x-api-key": KEY},
        )
        [result] = collector.wait()
        result_line = json.dumps(result.to_json())
        done = read_capture(Path(str(result.exchange.capture)))  # (waits for nothing: the
    assert done.end is not None  # file is complete once the end line is there)
    seen = upstream.seen[0]
    assert seen.query == f"key={KEY}"
    assert ("authorization", f"Bearer {KEY}") in seen.headers
    assert ("x-api-key", KEY) in seen.headers
    assert KEY.encode() in seen.body
    assert response.content == b"".join(upstream.script.reads)  # the key as upstream sent it
    assert response.headers["x-echo"] == KEY
    files = [p for p in home().rglob("*") if p.is_file()]
    assert [p.suffix for p in files] == [".sscap"]
    leaks = []
    for path in files:
        data = path.read_bytes()
        decoded = read_capture(path)
        assert decoded.request is not None
        replayed = replay_body(decoded.reads.body(), "openai").text.encode()  # (pieces joined)
        texts = [data, decoded.reads.body(), decoded.request.body, str(decoded).encode(), replayed]
        leaks += [(path.name, form) for form in _forms(KEY) for t in texts if form in t]
    assert leaks == []
    assert not any(form.decode() in result_line for form in _forms(KEY))
    assert "key=***" in result.exchange.path


def test_responses_and_gemini_streams_through_the_tap_match_direct(demo: DemoServer) -> None:
    from google import genai
    from google.genai import types as genai_types

    collector = Collector()
    with tap_for(demo.root_url, collector) as tap:
        answers = []
        for root in (demo.root_url, tap.root_url):
            with openai.OpenAI(base_url=root + "/v1", api_key="sk-x", max_retries=0) as oai:
                with oai.responses.stream(model="demo-tools", input="weather?") as stream:
                    response = stream.get_final_response()
                calls = [
                    (item.name, item.arguments)
                    for item in response.output
                    if item.type == "function_call"
                ]
            client = genai.Client(
                api_key="gm-canary-key-123456",
                http_options=genai_types.HttpOptions(base_url=root, api_version="v1beta"),
            )
            chunks = list(client.models.generate_content_stream(model="demo", contents="hi"))
            text = "".join(c.text or "" for c in chunks)
            finish = (chunks[-1].candidates or [])[0].finish_reason
            answers.append((response.status, calls, text, finish))
        results = collector.wait(2)
    assert answers[0] == answers[1]
    assert answers[1][0] == "completed" and [c[0] for c in answers[1][1]] == [
        "get_weather",
        "get_time",
    ]
    assert [(r.dialect, r.outcome) for r in results] == [
        ("responses", "completed"),
        ("gemini", "completed"),
    ]
    gemini = results[1]
    assert gemini.reason == "finishReason+end received (finish_reason=STOP)"
    assert b"gm-canary-key-123456" not in Path(str(gemini.exchange.capture)).read_bytes()


@pytest.mark.parametrize("bind", ["tap", "demo"])
def test_listeners_hand_out_connections_with_tcp_nodelay(bind: str) -> None:
    """asyncio sets TCP_NODELAY only on sockets made for TCP by name; without it a reused
    keep-alive connection's first frame waits for the client's delayed ACK (~40 ms)."""
    import socket

    from streamscope.core.tap.server import bind_nodelay
    from streamscope.demo.server import _bind

    listener = bind_nodelay("127.0.0.1", 0) if bind == "tap" else _bind("127.0.0.1", 0)
    with listener, socket.create_connection(listener.getsockname()) as _client:
        conn, _addr = listener.accept()
        with conn:
            assert conn.proto == socket.IPPROTO_TCP  # what asyncio's _set_nodelay checks
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_an_endless_stream_costs_the_tap_no_memory_per_byte(upstream: ScriptedUpstream) -> None:
    """Reads go to the capture file as they arrive and are kept nowhere else: 8 MB through
    the tap, its allocations peak far below that (the answer's text is what is kept)."""
    import tracemalloc

    frame = b'data: {"choices":[{"delta":{"content":"x"}}]}' + b" " * 400 + b"\n\n"
    upstream.script.reads = [frame * 16]  # 7 KB a read
    upstream.script.repeat = 1200  # 8.5 MB
    collector = Collector()
    size = 0
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=30) as client:
        tracemalloc.start()
        try:
            with client.stream("POST", tap.root_url + CHAT, json=ASK) as response:
                for chunk in response.iter_raw():
                    size += len(chunk)
            [result] = collector.wait(timeout=60)
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert size == len(frame) * 16 * 1200
    assert (result.bytes, result.frames) == (size, 16 * 1200)
    assert result.outcome == "truncated"  # (no [DONE]: an endless stream cut off)
    assert peak < 3_000_000, f"peak {peak:,} B for {size:,} B streamed"
    assert Path(str(result.exchange.capture)).stat().st_size > size  # all of it on disk


# -- the forwarding process --------------------------------------------------------------------


class _SlowReader(TurnObserver):
    """A recording far slower than the stream: each read takes it 0.2 s."""

    def read(self, data: bytes, t: float) -> None:
        time.sleep(0.2)


def test_a_slow_recording_never_slows_the_client(upstream: ScriptedUpstream) -> None:
    """The forwarding runs in a process of its own: ten reads reach the client at once
    while the recording (2 s of work) catches up behind, and records all of them."""
    reads = [chat_frame(f"r{i}") for i in range(10)] + [FINAL]
    upstream.script.reads = reads
    collector = Collector(_SlowReader())
    with tap_for(upstream.url, collector) as tap, httpx.Client(timeout=30) as client:
        t0 = time.monotonic()
        response = client.post(tap.root_url + CHAT, json=ASK)
        took = time.monotonic() - t0
        [result] = collector.wait(timeout=30)
    assert response.content == b"".join(reads)
    assert took < 1.5, f"the client waited {took:.2f} s for its stream: forwarding waited"
    assert (result.outcome, result.frames, result.bytes) == (
        "completed",
        12,
        sum(map(len, reads)),
    )


class _ReadSeen(TurnObserver):
    def __init__(self) -> None:
        self.seen = threading.Event()

    def read(self, data: bytes, t: float) -> None:
        self.seen.set()


def test_the_forwarding_process_dying_cuts_its_streams_and_says_so(
    upstream: ScriptedUpstream,
) -> None:
    upstream.script.reads = [chat_frame("one")]
    upstream.script.stall = threading.Event()
    recorded = _ReadSeen()
    collector = Collector(recorded)
    whys: list[str] = []
    tap = TapServer(
        upstream.url, port=0, captures=CaptureStore(), listener=collector, died=whys.append
    )
    with tap, httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        with client.stream("POST", tap.root_url + CHAT, json=ASK) as response:
            chunks = response.iter_raw()
            assert next(chunks) == chat_frame("one")
            # (what the child had not handed over yet would die with it: wait for the read)
            assert recorded.seen.wait(10)
            [child] = tap.forwarder_pids()
            os.kill(child, signal.SIGKILL)
            with pytest.raises(httpx.RemoteProtocolError):  # cut, not a clean end
                next(chunks)
        [result] = collector.wait()
        upstream.script.stall.set()
        deadline = time.monotonic() + 10
        while tap.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not tap.running
    assert whys == ["the tap's forwarding process ended (exit code -9)"]
    assert result.outcome == "truncated"
    assert result.reason == (
        f"connection broken after {len(chat_frame('one'))} B, no [DONE]: "
        "the tap's forwarding process ended (exit code -9)"
    )
    assert (result.frames, result.bytes) == (1, len(chat_frame("one")))


def test_forwarding_in_this_process_passes_streams_the_same(demo: DemoServer) -> None:
    """Where a child cannot be given the socket (off POSIX), the tap forwards in-process."""
    collector = Collector()
    tap = TapServer(
        demo.root_url, port=0, captures=CaptureStore(), listener=collector, in_process=True
    )
    with tap, httpx.Client(timeout=30) as client:
        direct = client.post(demo.root_url + CHAT, json=ASK | {"model": "demo-tools"}).content
        tapped = client.post(tap.root_url + CHAT, json=ASK | {"model": "demo-tools"}).content
        [result] = collector.wait()
        assert tap.forwarder_pids() == []
    # (the same bytes but the demo's clock: its ids and `created` are the second it answered)
    assert re.sub(rb"\d{10}", b"<s>", tapped) == re.sub(rb"\d{10}", b"<s>", direct)
    assert (result.outcome, result.dialect, result.bytes) == ("completed", "openai", len(direct))


def test_the_backlog_for_a_slow_recording_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child queues what the recording has not taken yet; past the limit, forwarding
    waits (``drain``) until half of it has gone — and nothing is lost or reordered."""
    import asyncio
    import socket

    from streamscope.core.net.messages import receive
    from streamscope.core.tap import forward, forward_child

    monkeypatch.setattr(forward, "BACKLOG_LIMIT", 1_000_000)
    monkeypatch.setattr(forward_child, "BACKLOG_LIMIT", 1_000_000)  # (the child's copy)
    ours, theirs = socket.socketpair()
    got: list[tuple[object, ...]] = []

    async def run() -> tuple[int, bool, bool]:
        sender = forward_child.Sender(ours, asyncio.get_running_loop())
        for i in range(60):  # ~1.8 MB, while nobody reads the other end
            sender.emit(("read", 1, bytes([i % 256]) * 30_000, float(i)))
        queued = sender.backlog()
        drained = asyncio.ensure_future(sender.drain())
        await asyncio.sleep(0.3)
        waited = not drained.done()  # nobody reads: it must wait
        reader, writer = await asyncio.open_connection(sock=theirs)
        while len(got) < 60:
            message = await receive(reader)
            assert message is not None
            got.append(message)
        await asyncio.wait_for(drained, 5)
        sender.close(5)
        writer.close()
        await writer.wait_closed()
        ours.close()
        return queued, waited, sender.backlog() <= forward.BACKLOG_LIMIT // 2

    queued, waited, below = asyncio.run(run())
    assert queued > 1_000_000 and waited and below
    assert got == [("read", 1, bytes([i % 256]) * 30_000, float(i)) for i in range(60)]
