"""The demo endpoint on a real loopback socket: every scenario in every dialect it applies to,
checked at the byte level with raw httpx reads (no parsing from `streamscope.core`)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from demo_wire_reading import PROMPT, read, request_for

from streamscope.demo.dialects import (
    demo_dialect,
    demo_dialects,
    expected_finish_reason,
    expected_outcome,
    finish_reason,
    serves,
)
from streamscope.demo.scenarios import (
    SCENARIOS,
    BadJson,
    BadUtf8,
    CutMidFrame,
    DropTerminal,
    HtmlError,
    HttpError,
    LongLine,
    MidstreamError,
    Stall,
)
from streamscope.demo.script import BAD_UTF8_WIRE
from streamscope.demo.server import DemoServer

DIALECTS = [d.name for d in demo_dialects()]
CASES = [(name, d) for name, s in SCENARIOS.items() for d in DIALECTS if serves(s, d)]
STREAM_TYPES = {"ollama": "application/x-ndjson"}


@dataclass
class Fetched:
    status: int
    headers: httpx.Headers
    reads: list[bytes]
    error: Exception | None

    @property
    def body(self) -> bytes:
        return b"".join(self.reads)


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(10.0, read=5.0)) as client:
        yield client


def fetch(
    client: httpx.Client,
    srv: DemoServer,
    dialect: str,
    model: str,
    *,
    max_tokens: int | None = None,
    read_timeout: float = 5.0,
) -> Fetched:
    path, body = request_for(dialect, model, max_tokens=max_tokens)
    headers = {"Accept-Encoding": "identity", "Authorization": "Bearer demo-key"}
    timeout = httpx.Timeout(10.0, read=read_timeout)
    reads: list[bytes] = []
    error: Exception | None = None
    url = srv.base_url(dialect) + path
    with client.stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
        try:
            for chunk in response.iter_raw():
                reads.append(chunk)
        except (httpx.RemoteProtocolError, httpx.ReadTimeout) as exc:
            error = exc
        return Fetched(response.status_code, response.headers, reads, error)


def check_error_body(dialect: str, body: object, status: int) -> str:
    """The provider's error shape; returns the message."""
    assert isinstance(body, dict)
    match dialect:
        case "openai" | "responses":
            assert set(body["error"]) >= {"message", "type", "param", "code"}
            return str(body["error"]["message"])
        case "anthropic":
            assert body["type"] == "error" and body["error"]["type"].endswith("_error")
            return str(body["error"]["message"])
        case "gemini":
            assert body["error"]["code"] == status and body["error"]["status"].isupper()
            return str(body["error"]["message"])
        case _:
            assert isinstance(body["error"], str)
            return body["error"]


@pytest.mark.parametrize(("name", "dialect"), CASES)
def test_scenario_on_the_wire(
    demo_server: DemoServer, http: httpx.Client, name: str, dialect: str
) -> None:
    scenario = SCENARIOS[name]
    fault = scenario.fault
    max_tokens = 300 if scenario.content == "firehose" else None
    read_timeout = 0.3 if isinstance(fault, Stall) else 5.0
    got = fetch(http, demo_server, dialect, name, max_tokens=max_tokens, read_timeout=read_timeout)

    if isinstance(fault, HttpError):
        assert got.status == fault.status
        assert got.headers["content-type"].startswith("application/json")
        check_error_body(dialect, json.loads(got.body), fault.status)
        if fault.retry_after:
            assert got.headers["retry-after"] == str(fault.retry_after)
        return
    if isinstance(fault, HtmlError):
        assert got.status == 502
        assert got.headers["content-type"].startswith("text/html")
        assert b"502 Bad Gateway" in got.body
        return

    assert got.status == 200
    assert got.headers["content-type"].startswith(STREAM_TYPES.get(dialect, "text/event-stream"))
    body = got.body
    r = read(dialect, body)
    outcome = expected_outcome(scenario, dialect)
    finish = expected_finish_reason(scenario, dialect)
    if isinstance(fault, LongLine):  # on the wire it is all there; a client stops at the line
        finish = finish_reason(dialect, scenario.finish)
    assert r.finish == finish

    if outcome == "completed":
        assert got.error is None
        assert r.terminal and r.error is None
        assert PROMPT in r.text or scenario.content == "firehose"
    if outcome == "truncated":
        assert not r.terminal or dialect == "gemini"
        assert r.text
    match fault:
        case CutMidFrame():
            assert isinstance(got.error, httpx.RemoteProtocolError)
        case Stall():
            assert isinstance(got.error, httpx.ReadTimeout)
        case DropTerminal():
            assert got.error is None
            assert r.terminal == (dialect == "gemini")
        case MidstreamError():
            assert got.error is None and r.error is not None and not r.terminal
        case LongLine(size=size):
            assert max(len(line) for line in body.split(b"\n")) >= size
            assert r.terminal
        case BadUtf8():
            assert BAD_UTF8_WIRE in body
        case BadJson():
            assert r.bad_frames == 1
        case None:
            assert r.bad_frames == 0

    match scenario.content:
        case "markdown":
            for piece in ("## ", "- ", "| Dialect |", "```python\n", "naïve café — 日本語 — 🚀"):
                assert piece in r.text
        case "reasoning":
            assert r.reasoning.startswith("The user wants")
            assert PROMPT in r.text
        case "firehose":
            assert r.content_frames == 300
        case "tools":
            assert [t["name"] for t in r.tools.values()] == ["get_weather", "get_time"]
            args = [json.loads(t["arguments"]) for t in r.tools.values()]
            assert args[0]["city"] == "Zürich" and args[1] == {"timezone": "Europe/Zurich"}
            if dialect in ("openai", "anthropic", "responses"):
                assert all(t["id"] for t in r.tools.values())

    if scenario.keepalive and dialect != "ollama":
        assert r.keepalives >= 3
    if demo_dialect(dialect).sse and scenario.line_ending == "\r\n":
        assert b"\r\n\r\n" in body and b"\n" not in body.replace(b"\r\n", b"")
    if demo_dialect(dialect).sse:
        assert (b"data: " in body) == scenario.space_after_colon
    if scenario.split_writes:
        assert any(not _is_utf8(chunk) for chunk in got.reads)
        if demo_dialect(dialect).sse:
            pairs = zip(got.reads, got.reads[1:], strict=False)
            assert any(a.endswith(b"\r") and b.startswith(b"\n") for a, b in pairs)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_openai_tool_fragments_interleave_and_split_escapes(
    demo_server: DemoServer, http: httpx.Client
) -> None:
    got = fetch(http, demo_server, "openai", "demo-tools")
    order, fragments = [], []
    for line in got.body.split(b"\n"):
        if line.startswith(b"data: {"):
            for choice in json.loads(line[6:])["choices"]:
                for call in choice["delta"].get("tool_calls", []):
                    order.append(call["index"])
                    fragments.append(call["function"]["arguments"])
    assert order[:2] == [0, 1] and order[2:6] == [0, 1, 0, 1]
    assert any(f.endswith("\\") for f in fragments)  # a fragment ends inside an escape
    assert any(f.startswith("u0") for f in fragments)  # ...the rest of \u00fc
    assert "\\ud83c" in "".join(fragments)  # a surrogate-pair escape, split between halves
    assert len(fragments) > 30


# --- raw sockets: what really went over the wire -------------------------------------------


def raw_post(
    srv: DemoServer, path: str, body: dict[str, object]
) -> tuple[bytes, list[bytes], bool]:
    """POST over a plain socket; returns (head, chunks, saw the terminating zero chunk)."""
    payload = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    data = bytearray()
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as sock:
        sock.sendall(head + payload)
        while chunk := sock.recv(65536):
            data += chunk
    response_head, _, rest = bytes(data).partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in response_head.lower()
    chunks: list[bytes] = []
    terminated = False
    while rest:
        size_line, sep, rest = rest.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line, 16)
        if size == 0:
            terminated = True
            break
        if len(rest) < size + 2:
            chunks.append(rest[:size])
            break
        chunks.append(rest[:size])
        rest = rest[size + 2 :]
    return response_head, chunks, terminated


def test_cut_leaves_chunked_body_incomplete(demo_server: DemoServer) -> None:
    path, body = request_for("openai", "demo-cut")
    head, chunks, terminated = raw_post(demo_server, "/v1" + path, body)
    assert head.startswith(b"HTTP/1.1 200")
    assert not terminated
    wire = b"".join(chunks)
    assert wire.count(b"data: ") >= 5
    assert not wire.endswith(b"\n\n")  # the last frame is cut in half
    assert b"[DONE]" not in wire


def test_split_utf8_writes_are_separate_chunks(demo_server: DemoServer) -> None:
    path, body = request_for("anthropic", "demo-split-utf8")
    _, chunks, terminated = raw_post(demo_server, "/v1" + path, body)
    assert terminated
    assert any(c[-1:] == b"\r" for c in chunks)
    assert any(c[:1] == b"\n" for c in chunks)
    inside = [c for c in chunks if not _is_utf8(c)]
    assert len(inside) > 10
    assert "日本語".encode() in b"".join(chunks)


def test_normal_stream_ends_with_zero_chunk(demo_server: DemoServer) -> None:
    path, body = request_for("openai", "demo")
    _, chunks, terminated = raw_post(demo_server, "/v1" + path, body)
    assert terminated and b"".join(chunks).endswith(b"data: [DONE]\n\n")


# --- stall, shutdown, firehose ------------------------------------------------------------


def test_stall_sends_nothing_and_stop_is_prompt() -> None:
    srv = DemoServer(speed=1000)
    srv.start()
    srv.start()  # idempotent
    path, body = request_for("openai", "demo-stall")
    timeout = httpx.Timeout(5.0, read=1.0)
    with httpx.Client(timeout=timeout) as client:
        with client.stream("POST", srv.base_url("openai") + path, json=body) as response:
            received = bytearray()
            with pytest.raises(httpx.ReadTimeout):  # some text, then no byte for a second
                for chunk in response.iter_raw():
                    received += chunk
            assert received.count(b'"content":"') >= 3
            assert b"[DONE]" not in received and b'finish_reason":"' not in received
        # A second stall stays open while the server stops; it must not hold up shutdown.
        with client.stream("POST", srv.base_url("openai") + path, json=body) as response:
            chunks = response.iter_raw(1)
            assert next(chunks) == b"d"
            started = time.monotonic()
            srv.stop()
            assert time.monotonic() - started < 3.0
            rest = b"".join(chunks)  # the body then ends (without [DONE])
            assert b"[DONE]" not in rest
    srv.stop()  # idempotent
    with pytest.raises(httpx.ConnectError), httpx.Client() as client:
        client.get(srv.root_url + "/v1/models")


def test_stop_during_keepalives_at_real_speed() -> None:
    with DemoServer(speed=1.0) as srv, httpx.Client(timeout=5) as client:
        path, body = request_for("anthropic", "demo-keepalive")
        with client.stream("POST", srv.base_url("anthropic") + path, json=body) as response:
            assert next(response.iter_raw()).startswith(b"event: message_start")
            started = time.monotonic()
            srv.stop()
            assert time.monotonic() - started < 3.0


def test_firehose_sends_100k_deltas(demo_server: DemoServer, http: httpx.Client) -> None:
    """Its speed is a benchmark's (tests/benchmarks), not a timed test's."""
    path, body = request_for("openai", "demo-firehose")
    body.pop("stream_options")
    received = bytearray()
    with http.stream("POST", demo_server.base_url("openai") + path, json=body) as response:
        for chunk in response.iter_raw():
            received += chunk
    frames = received.count(b"data: ")
    assert frames == 100_000 + 3  # role chunk, the deltas, finish chunk, [DONE]
    assert received.endswith(b"data: [DONE]\n\n")


# --- listings, non-streaming answers, bad requests ------------------------------------------


def test_models_lists_every_scenario(demo_server: DemoServer, http: httpx.Client) -> None:
    listing = http.get(demo_server.base_url("openai") + "/models").json()
    assert listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == [*SCENARIOS, "demo-bench"]
    for entry in listing["data"]:
        assert entry["object"] == "model" and entry["description"] and entry["dialects"]
    tags = http.get(demo_server.root_url + "/api/tags").json()
    names = {m["name"] for m in tags["models"]}
    assert "demo" in names and "demo-crlf" not in names


@pytest.mark.parametrize("dialect", DIALECTS)
def test_non_streaming_answers(demo_server: DemoServer, http: httpx.Client, dialect: str) -> None:
    path, body = request_for(dialect, "demo-tools", stream=False)
    response = http.post(demo_server.base_url(dialect) + path, json=body)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    match dialect:
        case "openai":
            message = answer["choices"][0]["message"]
            assert answer["choices"][0]["finish_reason"] == "tool_calls"
            assert PROMPT in message["content"]
            args = json.loads(message["tool_calls"][0]["function"]["arguments"])
        case "responses":
            assert answer["status"] == "completed"
            calls = [o for o in answer["output"] if o["type"] == "function_call"]
            args = json.loads(calls[0]["arguments"])
        case "anthropic":
            assert answer["stop_reason"] == "tool_use"
            args = next(b for b in answer["content"] if b["type"] == "tool_use")["input"]
        case "gemini":
            parts = answer["candidates"][0]["content"]["parts"]
            args = next(p for p in parts if "functionCall" in p)["functionCall"]["args"]
        case _:
            assert answer["done"] is True
            args = answer["message"]["tool_calls"][0]["function"]["arguments"]
    assert args["city"] == "Zürich"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_bad_requests_get_the_providers_error_shape(
    demo_server: DemoServer, http: httpx.Client, dialect: str
) -> None:
    path, body = request_for(dialect, "demo")
    url = demo_server.base_url(dialect) + path
    malformed = http.post(
        url, content=b'{"model": "demo", oops', headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400
    check_error_body(dialect, malformed.json(), 400)

    key = "contents" if dialect == "gemini" else "input" if dialect == "responses" else "messages"
    missing = http.post(url, json={k: v for k, v in body.items() if k != key})
    assert missing.status_code == 400
    assert key in check_error_body(dialect, missing.json(), 400)

    path, body = request_for(dialect, "no-such-model")
    unknown = http.post(demo_server.base_url(dialect) + path, json=body)
    assert unknown.status_code == 404
    assert "no-such-model" in check_error_body(dialect, unknown.json(), 404)

    path, body = request_for(dialect, "demo-error-401")
    for headers in ({}, {"x-api-key": "k", "x-goog-api-key": "k", "Authorization": "Bearer k"}):
        denied = http.post(demo_server.base_url(dialect) + path, json=body, headers=headers)
        assert denied.status_code == 401
        check_error_body(dialect, denied.json(), 401)


def test_scenario_not_applicable_to_dialect(demo_server: DemoServer, http: httpx.Client) -> None:
    path, body = request_for("ollama", "demo-crlf")
    response = http.post(demo_server.base_url("ollama") + path, json=body)
    assert response.status_code == 404 and "ollama" in response.json()["error"]


def test_base_urls() -> None:
    srv = DemoServer(port=0)
    with pytest.raises(ValueError):
        srv.base_url("klingon")
    with srv:
        root = srv.root_url
        assert root.startswith("http://127.0.0.1:") and srv.port > 0
        assert srv.base_url("openai") == srv.base_url("responses") == root + "/v1"
        assert srv.base_url("anthropic") == root + "/v1"
        assert srv.base_url("gemini") == root + "/v1beta"
        assert srv.base_url("ollama") == root
