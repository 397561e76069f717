"""The tap's recording half alone: the forwarder's messages in, exchanges out — each outcome,
reason, count and timing pinned, with the clock the messages carry (no processes, no
sockets; the end-to-end tests in tests/e2e/test_tap.py run the whole tap)."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import read_capture
from streamscope.core.net.client import MAX_ERROR_BODY
from streamscope.core.net.options import ProxyOptions, TLSOptions
from streamscope.core.tap.proxy import ExchangeResult, TapExchange, TapRecorder
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import PipelineUpdate
from support.echo_streams import AROUND, ENCODINGS, echo_stream
from support.echo_streams import cut as echo_cut

UP = "https://api.example.test/v1"
CHAT = "/v1/chat/completions"
SSE = [("content-type", "text/event-stream")]
KEY = "sk-proj-RECORDERCANARY0123456789"


def frame(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"' + text.encode() + b'"}}]}\n\n'


STOP = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
DONE = b"data: [DONE]\n\n"


class Listener:
    def __init__(self, observer: TurnObserver | None = None) -> None:
        self.started: list[TapExchange] = []
        self.results: list[ExchangeResult] = []
        self.observer = observer

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        self.started.append(exchange)
        return self.observer

    def exchange_finished(self, result: ExchangeResult) -> None:
        self.results.append(result)


def run(
    messages: list[tuple[Any, ...]], *, dialect: str = "auto", observer: TurnObserver | None = None
) -> tuple[Listener, TapRecorder]:
    listener = Listener(observer)
    recorder = TapRecorder(UP, dialect=dialect, listener=listener)
    for message in messages:
        recorder.handle(message)
    return listener, recorder


def start(
    xid: int = 1,
    *,
    path: str = CHAT,
    query: str = "",
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b'{"model":"m","stream":true}',
    t: float = 100.0,
) -> tuple[Any, ...]:
    return ("start", xid, "POST", path, query, headers or [], body, t)


def one(messages: list[tuple[Any, ...]], **kw: Any) -> dict[str, Any]:
    listener, _recorder = run(messages, **kw)
    [result] = listener.results
    return result.to_json()


def test_a_stream_with_its_terminal_signal_is_completed_with_exact_counts() -> None:
    reads = [frame("Hel"), frame("lo") + STOP, DONE]
    watcher = Watcher()
    listener, _ = run(
        [
            start(),
            ("head", 1, 200, SSE, 100.050),
            ("read", 1, reads[0], 100.100),
            ("read", 1, reads[1], 100.200),
            ("read", 1, reads[2], 100.300),
            ("end", 1, "eof", "", 100.400, False),
        ],
        observer=watcher,
    )
    [result] = listener.results
    turn = result.turn
    assert (turn.text, turn.status, turn.warnings, turn.dialect) == ("Hello", 200, (), "openai")
    assert (turn.timings.request_sent, turn.timings.headers) == (100.0, 100.05)
    assert (turn.timings.first_byte, turn.timings.first_token) == (100.1, 100.1)
    [end] = watcher.ends
    assert (end.kind, end.status, end.content_type) == ("eof", 200, "text/event-stream")
    assert end.elapsed == pytest.approx(0.4)
    got = result.to_json()
    assert got == {
        "id": 1,
        "method": "POST",
        "path": CHAT,
        "status": 200,
        "outcome": "completed",
        "reason": "[DONE] received (finish_reason=stop)",
        "dialect": "openai",
        "frames": 4,
        "bytes": sum(map(len, reads)),
        "ttft_ms": 100.0,
        "duration_ms": 400.0,
        "capture": None,
        "faults": [],
    }


def test_the_request_is_mapped_onto_the_upstream_and_its_headers_joined() -> None:
    listener, _ = run(
        [
            start(
                path="/v1/chat/completions",
                query="api-key=s3cret&x=1",
                headers=[("x-a", "1"), ("x-a", "2"), ("authorization", f"Bearer {KEY}")],
            )
        ]
    )
    [ex] = listener.started
    assert ex.url == "https://api.example.test/v1/chat/completions?api-key=s3cret&x=1"
    assert ex.headers == {"x-a": "1, 2", "authorization": f"Bearer {KEY}"}
    assert ex.path == "/v1/chat/completions?api-key=***&x=1"
    assert (ex.id, ex.method, ex.started, ex.spec.method) == (1, "POST", 100.0, "POST")


def test_a_stream_cut_before_its_terminal_signal_is_truncated() -> None:
    got = one(
        [
            start(),
            ("head", 1, 200, SSE, 100.0),
            ("read", 1, frame("one") + b'data: {"cho', 100.1),
            ("end", 1, "broken", "RemoteProtocolError: peer closed", 100.2, False),
        ]
    )
    assert (got["outcome"], got["frames"], got["status"]) == (
        "truncated",
        2,
        200,
    )  # (+ the cut one)
    assert got["reason"] == (
        f"connection broken mid-frame after {len(frame('one')) + 11} B, no [DONE]: "
        "RemoteProtocolError: peer closed"
    )


def test_a_client_hanging_up_is_cancelled_unless_the_terminal_signal_was_in() -> None:
    early = one(
        [
            start(),
            ("head", 1, 200, SSE, 100.0),
            ("read", 1, frame("a"), 100.1),
            ("end", 1, "cancelled", "", 102.25, False),
        ]
    )
    assert (early["outcome"], early["reason"]) == (
        "cancelled",
        "the client closed the connection after 2.2 s",
    )
    watcher = Watcher()
    late = one(
        [
            start(),
            ("head", 1, 200, SSE, 100.0),
            ("read", 1, frame("a") + STOP + DONE, 100.1),
            ("end", 1, "cancelled", "", 100.2, False),
        ],
        observer=watcher,
    )
    assert (late["outcome"], late["reason"]) == (
        "completed",
        "[DONE] received (finish_reason=stop)",
    )
    assert [e.kind for e in watcher.ends] == ["eof"]  # (what the capture's end line says)


def test_the_tap_stopping_is_said_as_such_and_stays_said() -> None:
    listener, recorder = run(
        [
            start(1),
            start(2),
            ("head", 1, 200, SSE, 100.0),
            start(3, t=104.0),
            ("end", 1, "cancelled", "", 101.0, True),
            ("end", 2, "cancelled", "", 103.0, False),
            ("end", 3, "cancelled", "", 104.0, False),
        ]
    )
    assert [r.reason for r in listener.results] == [
        "the tap stopped after 1.0 s",
        "the tap stopped after 3.0 s",
        "the tap stopped after 0.0 s",
    ]
    assert [r.outcome for r in listener.results] == ["cancelled"] * 3
    assert recorder.stopping


def test_an_error_status_keeps_its_body_bounded_and_counts_no_frames() -> None:
    body = b'{"error":{"message":"Rate limit reached","type":"rate_limit"}}'
    watcher = Watcher()
    listener, _ = run(
        [
            start(),
            ("head", 1, 429, [("content-type", "application/json"), ("retry-after", "20")], 100.0),
            ("read", 1, body, 100.1),
            ("end", 1, "eof", "", 100.2, False),
        ],
        observer=watcher,
    )
    [result] = listener.results
    assert result.turn.status == 429
    assert watcher.calls[-2:] == ["progressed 1 100.2", "finished error"]  # (the body's row)
    [end] = watcher.ends
    assert (end.kind, end.body, end.elapsed) == ("http_error", body, pytest.approx(0.2))
    edge = one([start(), ("head", 1, 400, [], 100.0), ("end", 1, "eof", "", 100.1, False)])
    assert (edge["status"], edge["outcome"]) == (400, "error")
    assert edge["reason"] == "400 Bad Request · empty body"
    bad = b'{"error":{"message":"bad field"}}'
    edge = one(
        [
            start(),
            ("head", 1, 400, [("content-type", "application/json")], 100.0),
            ("read", 1, bad, 100.05),
            ("end", 1, "eof", "", 100.1, False),
        ]
    )
    assert (edge["outcome"], edge["reason"], edge["frames"]) == (
        "error",
        "400 Bad Request · bad field",
        0,
    )
    assert (result.status, result.outcome, result.frames, result.bytes) == (
        429,
        "error",
        0,
        len(body),
    )
    assert result.reason == "429 rate_limit · Rate limit reached · retry after 20 s"
    big = b"x" * (MAX_ERROR_BODY + 5000)
    watcher = Watcher()
    listener, _ = run(
        [
            start(),
            ("head", 1, 500, [("content-type", "text/plain")], 100.0),
            ("read", 1, big[: MAX_ERROR_BODY - 1], 100.1),  # (room for one byte more)
            ("read", 1, big[MAX_ERROR_BODY - 1 :], 100.2),
            ("end", 1, "eof", "", 100.3, False),
        ],
        observer=watcher,
    )
    [result] = listener.results
    assert result.bytes == len(big)
    [end] = watcher.ends
    assert (end.kind, end.status, end.body) == ("http_error", 500, big[:MAX_ERROR_BODY])


def test_an_unreachable_upstream_is_a_502_error_with_its_reason() -> None:
    watcher = Watcher()
    listener, _ = run(
        [start(), ("end", 1, "connect_error", "ConnectError: refused", 100.5, False)],
        observer=watcher,
    )
    [result] = listener.results
    assert result.turn.status == 502
    assert [(e.kind, e.elapsed) for e in watcher.ends] == [("connect_error", 0.5)]
    got = result.to_json()
    assert (got["status"], got["outcome"], got["frames"], got["bytes"]) == (502, "error", 0, 0)
    assert got["reason"] == "could not connect: ConnectError: refused"
    assert (got["dialect"], got["ttft_ms"], got["duration_ms"]) == (None, None, 500.0)


def test_a_plain_json_answer_is_completed_by_its_status() -> None:
    body = b'{"object":"list","data":[{"id":"m"}]}'
    got = one(
        [
            ("start", 1, "GET", "/v1/models", "", [], b"", 100.0),
            ("head", 1, 200, [("content-type", "application/json")], 100.01),
            ("read", 1, body, 100.02),
            ("end", 1, "eof", "", 100.03, False),
        ]
    )
    assert (got["outcome"], got["frames"], got["dialect"], got["bytes"]) == (
        "completed",
        0,
        None,
        len(body),
    )
    assert got["reason"] == f"HTTP 200, not a stream (application/json, {len(body)} bytes)"
    listener, _ = run(
        [
            ("start", 1, "GET", "/v1/models", "", [], b"", 100.0),
            ("head", 1, 200, [], 100.01),
            ("end", 1, "eof", "", 100.03, False),
        ]
    )
    [result] = listener.results
    timings = result.turn.timings
    assert (timings.request_sent, timings.headers, timings.end) == (100.0, 100.01, 100.03)
    assert (result.turn.status, result.turn.bytes_received) == (200, 0)
    assert result.reason == "HTTP 200, not a stream (no content type, 0 bytes)"


def test_a_gzip_body_is_read_decompressed_and_counted_as_sent() -> None:
    plain = frame("zip") + STOP + DONE
    packed = gzip.compress(plain)
    headers = [*SSE, ("content-encoding", "gzip")]
    listener, _ = run(
        [
            start(),
            ("head", 1, 200, headers, 100.0),
            ("read", 1, packed[:10], 100.1),
            ("read", 1, packed[10:], 100.2),
            ("end", 1, "eof", "", 100.3, False),
        ]
    )
    [result] = listener.results
    assert (result.outcome, result.frames, result.bytes) == ("completed", 3, len(packed))
    assert result.turn.text == "zip"
    assert any("Content-Encoding: gzip" in w for w in result.turn.warnings)


def test_exchanges_interleave_without_mixing() -> None:
    listener, _ = run(
        [
            start(1),
            start(2),
            ("head", 2, 200, SSE, 100.0),
            ("head", 1, 200, SSE, 100.0),
            ("read", 1, frame("one"), 100.1),
            ("read", 2, frame("two"), 100.1),
            ("read", 1, STOP + DONE, 100.2),
            ("end", 1, "eof", "", 100.3, False),
            ("read", 2, DONE, 100.4),
            ("end", 2, "eof", "", 100.5, False),
            ("read", 9, frame("nobody's"), 100.6),  # (an unknown exchange: ignored)
        ]
    )
    assert [(r.exchange.id, r.turn.text, r.outcome) for r in listener.results] == [
        (1, "one", "completed"),
        (2, "two", "completed"),
    ]


def test_when_the_forwarder_dies_open_exchanges_are_cut_and_say_so() -> None:
    listener, recorder = run(
        [start(1), ("head", 1, 200, SSE, 100.0), ("read", 1, frame("a"), 100.1), start(2)]
    )
    recorder.lose_all(101.0, "the tap's forwarding process ended (exit code -9)")
    assert [(r.outcome, r.reason) for r in listener.results] == [
        (
            "truncated",
            f"connection broken after {len(frame('a'))} B, no [DONE]: "
            "the tap's forwarding process ended (exit code -9)",
        ),
        (
            "truncated",
            "connection broken after 0 B, no terminal signal: "
            "the tap's forwarding process ended (exit code -9)",
        ),
    ]
    assert not recorder.stopping
    listener, recorder = run([start(1), ("head", 1, 200, SSE, 100.0)])
    recorder.lose_all(102.0)
    assert [(r.outcome, r.reason) for r in listener.results] == [
        ("cancelled", "the tap stopped after 2.0 s")
    ]
    assert recorder.stopping


class Index:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, int]] = []

    def add_capture(self, capture_id: str, file_name: str, size: int) -> None:
        self.rows.append((capture_id, file_name, size))

    def remove_capture(self, capture_id: str) -> None:
        raise AssertionError("nothing is pruned here")


class Watcher(TurnObserver):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.ends: list[StreamEnd] = []

    def ended(self, end: StreamEnd) -> None:
        self.ends.append(end)

    def request_started(self, spec: Any, body: bytes, t: float) -> None:
        self.calls.append(f"request {t}")

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.calls.append(f"response {status} {t}")

    def read(self, data: bytes, t: float) -> None:
        self.calls.append(f"read {len(data)} {t}")

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.calls.append(f"progressed {len(update.frames)} {t}")

    def finished(self, turn: Any) -> None:
        self.calls.append(f"finished {turn.outcome.value}")


def test_a_watcher_hears_the_exchange_in_order_with_the_forwarders_times() -> None:
    watcher = Watcher()
    run(
        [
            start(),
            ("head", 1, 200, SSE, 100.5),
            ("read", 1, frame("a"), 100.6),
            ("read", 1, STOP + DONE, 100.7),
            ("end", 1, "eof", "", 100.8, False),
        ],
        observer=watcher,
    )
    assert watcher.calls == [
        "request 100.0",
        "response 200 100.5",
        f"read {len(frame('a'))} 100.6",
        "progressed 1 100.6",
        f"read {len(STOP + DONE)} 100.7",
        "progressed 2 100.7",
        "finished completed",
    ]


def test_the_capture_is_written_scrubbed_and_indexed_before_the_listener_hears(
    tmp_path: Any,
) -> None:
    index = Index()
    store = CaptureStore(index=index)
    listener = Listener()
    proxy_password = "pr0xy-PASSWORD-canary"
    proxy = ProxyOptions(mode="http", host="proxy.test", port=3128, password=proxy_password)
    tls = TLSOptions(proxy=proxy)
    recorder = TapRecorder(UP, captures=store, listener=listener, tls=tls)
    # The key echoed back, split across two reads; the proxy's password in a third.
    echo = frame(f"your key is {KEY}")
    cut = echo.index(KEY.encode()) + 10
    reads = [echo[:cut], echo[cut:], frame(f"and {proxy_password}") + STOP + DONE]

    async def main() -> None:
        for message in [
            start(headers=[("authorization", f"Bearer {KEY}")]),
            ("head", 1, 200, SSE, 100.0),
            ("read", 1, reads[0], 100.1),
            ("read", 1, reads[1], 100.15),
            ("read", 1, reads[2], 100.2),
            ("end", 1, "eof", "", 100.3, False),
        ]:
            recorder.handle(message)
        await recorder.settle(10)
        assert recorder._delivering == set()  # (each delivery forgotten once made)

    asyncio.run(main())
    [result] = listener.results
    path = result.exchange.capture
    assert path is not None and path.exists()
    written = path.read_bytes()
    capture = read_capture(path)
    assert capture.end is not None
    assert (capture.end.outcome, capture.end.reason) == (
        "completed",
        "[DONE] received (finish_reason=stop)",
    )
    joined = b"".join(reads)
    masked = joined.replace(KEY.encode(), b"*" * len(KEY))  # (masked in place, same length)
    masked = masked.replace(proxy_password.encode(), b"*" * len(proxy_password))
    assert capture.reads.body() == masked
    assert capture.request is not None  # the other app's request, with its own headers only
    assert capture.request.headers == (("authorization", "Bearer ***"),)
    assert capture.request.body == b'{"model":"m","stream":true}'
    assert capture.dialect == "auto"
    assert result.to_json()["capture"] == str(path)
    # indexed when begun (size 0), then with its size once written
    assert index.rows == [(path.stem, path.name, 0), (path.stem, path.name, len(written))]


@pytest.mark.parametrize("kind", ["eof", "broken", "cancelled"])
def test_an_exchange_ends_once(kind: str) -> None:
    listener, recorder = run(
        [start(), ("head", 1, 200, SSE, 100.0), ("end", 1, kind, "", 100.1, False)]
    )
    recorder.handle(("end", 1, "eof", "", 100.2, False))
    recorder.lose_all(100.3, "gone")
    assert len(listener.results) == 1


def test_a_body_served_as_plain_text_is_read_as_a_stream_and_said_so() -> None:
    listener, _ = run(
        [
            start(),
            ("head", 1, 200, [("content-type", "text/plain; charset=utf-8")], 100.0),
            ("read", 1, frame("t") + STOP + DONE, 100.1),
            ("end", 1, "eof", "", 100.2, False),
        ]
    )
    [result] = listener.results
    assert (result.outcome, result.frames, result.turn.text) == ("completed", 3, "t")
    assert result.turn.warnings == (
        "response has text/plain, not text/event-stream; decoded as a stream anyway",
    )


def test_a_body_that_is_not_the_gzip_it_claims_is_shown_raw() -> None:
    headers = [*SSE, ("content-encoding", "gzip")]
    listener, _ = run(
        [
            start(),
            ("head", 1, 200, headers, 100.0),
            ("read", 1, frame("raw") + STOP + DONE, 100.1),
            ("end", 1, "eof", "", 100.2, False),
        ]
    )
    [result] = listener.results
    assert (result.outcome, result.turn.text) == ("completed", "raw")
    assert result.turn.warnings == (
        "upstream compressed the body (Content-Encoding: gzip); it was passed to the client "
        "untouched; not decoded",
    )


def test_the_upstream_s_slash_and_a_missing_listener_are_fine() -> None:
    recorder = TapRecorder(UP + "/")
    for message in [start(body=b"{}"), ("head", 1, 200, SSE, 100.0), ("read", 1, DONE, 100.1)]:
        recorder.handle(message)
    recorder.handle(("end", 1, "eof", "", 100.2, False))
    listener, _ = run([start(body=b'{"a":1}')])
    [ex] = listener.started
    assert (ex.url, ex.body) == ("https://api.example.test/v1/chat/completions", b'{"a":1}')


def test_times_are_rounded_to_a_tenth_of_a_millisecond_and_secrets_masked_in_reasons() -> None:
    got = one(
        [
            start(),
            ("head", 1, 200, SSE, 100.01),
            ("read", 1, frame("x"), 100.06666),
            ("read", 1, STOP + DONE, 100.1),
            ("end", 1, "eof", "", 100.12345, False),
        ]
    )
    assert (got["ttft_ms"], got["duration_ms"]) == (66.7, 123.5)
    secret = "AIzaSyQUERYSECRET0123456789"
    got = one(
        [
            start(query=f"key={secret}&alt=sse"),
            (
                "end",
                1,
                "connect_error",
                f"ConnectError: no route to ...?key={secret}",
                100.1,
                False,
            ),
        ]
    )
    assert got["reason"] == "could not connect: ConnectError: no route to ...?key=" + "*" * len(
        secret
    )
    assert got["path"] == "/v1/chat/completions?key=***&alt=sse"


def jframe(text: str) -> bytes:
    delta = {"content": text}  # (as json.dumps writes it: "é" as \u00e9, quotes escaped)
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}).encode() + b"\n\n"


def tool_frame(fragment: str) -> bytes:
    delta = {"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}).encode() + b"\n\n"


def test_a_key_echoed_across_text_deltas_is_masked_in_the_capture() -> None:
    """A model repeating the key token by token puts it in frames of its own: no byte form of
    it is in the stream, yet a replay would join the pieces. Each piece is masked in its
    frame, in place: the reads keep their lengths and times."""
    from streamscope.headless import replay_body

    store = CaptureStore()
    listener = Listener()
    recorder = TapRecorder(UP, captures=store, listener=listener)
    pieces = [KEY[i : i + 5] for i in range(0, len(KEY), 5)]
    text = b"".join(jframe(p) for p in ["your key: ", *pieces, ' (é/"done")'])
    args = b"".join(tool_frame(p) for p in ['{"key": "', *pieces, '"}'])
    reads = [text[:50], text[50:], args, STOP + DONE]

    async def main() -> None:
        messages: list[tuple[Any, ...]] = [
            start(headers=[("authorization", f"Bearer {KEY}")]),
            ("head", 1, 200, SSE, 100.0),
        ]
        messages += [("read", 1, r, 100.1 + i / 10) for i, r in enumerate(reads)]
        for message in [*messages, ("end", 1, "eof", "", 100.6, False)]:
            recorder.handle(message)
        await recorder.settle(10)

    asyncio.run(main())
    [result] = listener.results
    capture = read_capture(result.exchange.capture)  # type: ignore[arg-type]
    assert [len(d) for _t, d in capture.reads] == [len(r) for r in reads]
    assert [round(t, 6) for t, _d in capture.reads] == [0.1, 0.2, 0.3, 0.4]
    replayed = replay_body(capture.reads.body(), "openai")
    stars = "*" * len(KEY)
    assert replayed.text == f'your key: {stars} (é/"done")'
    assert [c.arguments for c in replayed.tool_calls] == [f'{{"key": "{stars}"}}']
    assert (replayed.outcome, capture.end.outcome if capture.end else None) == (
        result.turn.outcome,
        "completed",
    )


def test_a_key_echoed_in_one_piece_or_not_at_all_leaves_the_capture_as_written() -> None:
    from streamscope.core.capture.echoes import echoed_spans

    body = frame("no secret here") + frame(KEY[:10]) + frame("elsewhere") + DONE
    assert echoed_spans(body, "openai", [KEY]) == []  # (only its start: nothing to mask)
    assert echoed_spans(body, "openai", []) == []
    two = frame(KEY[:10]) + frame(KEY[10:])
    first = len(b'data: {"choices":[{"index":0,"delta":{"content":"')
    second = len(frame(KEY[:10])) + first
    assert echoed_spans(two, "openai", [KEY]) == [
        (first, first + 10),
        (second, second + len(KEY) - 10),
    ]


def test_echoed_spans_map_each_piece_to_its_bytes_in_any_channel_and_dialect() -> None:
    from streamscope.core.capture.echoes import echoed_spans, mask_spans

    head = len(b'data: {"choices":[{"index":0,"delta":{"content":"')
    before, after = frame("say: "), frame("!")
    body = before + frame(KEY[:10]) + frame(KEY[10:]) + after + frame(KEY[:3]) + frame(KEY[3:])
    at = len(before)
    second = at + len(frame(KEY[:10]))
    again = second + len(frame(KEY[10:])) + len(after)
    assert (
        echoed_spans(body, "openai", [KEY])
        == [
            (at + head, at + head + 10),
            (second + head, second + head + len(KEY) - 10),
            (again + head, again + head + 3),  # (the key spelled out twice: both masked)
            (again + len(frame(KEY[:3])) + head, again + len(frame(KEY[:3])) + head + len(KEY) - 3),
        ]
    )
    # the pieces inside one frame's text: only the key's characters go
    mixed = frame(f"x{KEY[:5]}") + frame(f"{KEY[5:]}y")
    [(a1, b1), (a2, b2)] = echoed_spans(mixed, "openai", [KEY])
    assert (a1, b1) == (head + 1, head + 6)
    masked = b"".join(
        d for _t, d in mask_spans([(0.0, mixed[:40]), (1.0, mixed[40:])], [(a1, b1), (a2, b2)])
    )
    assert masked == frame("x" + "*" * 5) + frame("*" * (len(KEY) - 5) + "y")

    # Anthropic: text_delta and input_json_delta pieces, in events of their own
    def delta(kind: str, field: str, piece: str) -> bytes:
        payload = {"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: piece}}
        return b"event: content_block_delta\ndata: " + json.dumps(payload).encode() + b"\n\n"

    anthropic = delta("text_delta", "text", KEY[:8]) + delta("text_delta", "text", KEY[8:])
    spans = echoed_spans(anthropic, "anthropic", [KEY])
    assert [b - a for a, b in spans] == [8, len(KEY) - 8]
    assert b"".join(d for _t, d in mask_spans([(0.0, anthropic)], spans)).count(b"*") == len(KEY)


def test_a_piece_is_masked_in_every_value_that_is_it_and_never_in_a_key() -> None:
    """A piece that is also a field's name ("text" in Anthropic's ``"text":"text"``) is
    masked in the value only; a piece repeated in the frame (OpenAI's logprobs token) is
    masked wherever it is a whole string value."""
    from streamscope.core.capture.echoes import echoed_spans, mask_spans

    key = "sk-text-9f3a"

    def delta(piece: str) -> bytes:
        payload = {"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": piece}}  # fmt: skip
        return b"event: content_block_delta\ndata: " + json.dumps(payload).encode() + b"\n\n"

    spaced = delta("text").replace(b'"text": "text"', b'"text" :"text"')  # (as some write)
    body = delta("sk-") + spaced + delta("-9f3a")
    spans = echoed_spans(body, "anthropic", [key])
    masked = b"".join(d for _t, d in mask_spans([(0.0, body)], spans))
    assert masked == delta("***") + spaced.replace(b':"text"', b':"****"') + delta("*****")

    def chunk(piece: str, token: str) -> bytes:
        logprobs = {"content": [{"token": token, "logprob": -0.25}]}
        choice = {"index": 0, "delta": {"content": piece}, "logprobs": logprobs}
        return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"

    body = chunk("a ", "a ") + chunk(KEY[:9], KEY[:9]) + chunk(KEY[9:], KEY[9:])
    spans = echoed_spans(body, "openai", [KEY])
    masked = b"".join(d for _t, d in mask_spans([(0.0, body)], spans))
    first, rest = "*" * 9, "*" * (len(KEY) - 9)
    assert masked == chunk("a ", "a ") + chunk(first, first) + chunk(rest, rest)

    # a secret spelled out twice, overlapping: every character of both is masked
    body = frame("ab-") + frame("ab-ab")
    spans = echoed_spans(body, "openai", ["ab-ab"])
    assert b"".join(d for _t, d in mask_spans([(0.0, body)], spans)) == frame("***") + frame(
        "*****"
    )


def test_mask_spans_keeps_each_read_and_masks_across_their_edges() -> None:
    from streamscope.core.capture.echoes import mask_spans

    reads = [(0.5, b"abcd"), (0.75, b"efgh"), (1.0, b"ij")]
    assert mask_spans(reads, [(2, 6)]) == [(0.5, b"ab**"), (0.75, b"**gh"), (1.0, b"ij")]
    assert mask_spans(reads, [(4, 4), (8, 10)]) == [(0.5, b"abcd"), (0.75, b"efgh"), (1.0, b"**")]
    assert mask_spans(reads, [(3, 4)]) == [(0.5, b"abc*"), (0.75, b"efgh"), (1.0, b"ij")]
    assert mask_spans(reads, []) == reads


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("around", sorted(AROUND))
def test_a_key_echoed_in_pieces_among_non_ascii_text_is_masked_in_the_capture(
    around: str, encoding: str
) -> None:
    """Through the tap: pieces of the key next to Cyrillic, CJK or emoji in the same deltas
    (raw UTF-8 or ``\\u`` escapes), the reads cut through characters, escapes and the key.
    Exactly the key's bytes are masked; every other byte is as upstream sent it."""
    from streamscope.headless import replay_body

    stream = echo_stream(KEY, around, encoding)
    reads = echo_cut(stream.body, 5)
    listener = Listener()
    recorder = TapRecorder(UP, captures=CaptureStore(), listener=listener)

    async def main() -> None:
        messages: list[tuple[Any, ...]] = [
            start(headers=[("authorization", f"Bearer {KEY}")]),
            ("head", 1, 200, SSE, 100.0),
        ]
        messages += [("read", 1, r, 100.1 + i / 1000) for i, r in enumerate(reads)]
        for message in [*messages, ("end", 1, "eof", "", 101.0, False)]:
            recorder.handle(message)
        await recorder.settle(10)

    asyncio.run(main())
    [result] = listener.results
    assert result.exchange.capture is not None
    path = Path(str(result.exchange.capture))
    capture = read_capture(path)
    assert [len(d) for _t, d in capture.reads] == [len(r) for r in reads]
    assert capture.reads.body() == stream.masked
    replayed = replay_body(capture.reads.body(), "openai")
    assert (replayed.text, [c.arguments for c in replayed.tool_calls]) == (
        stream.text,
        [stream.arguments],
    )
    assert KEY.encode() not in path.read_bytes()
    assert capture.end is not None and capture.end.outcome == "completed"
