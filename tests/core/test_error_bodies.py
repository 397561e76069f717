"""Error bodies are frames; over-long lines leave their first KB; the line cap is a setting;
connection errors are one sentence; reasons are whole (issue 15)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
from pathlib import Path

import httpx
import pytest

from streamscope.cli import main as cli_main
from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse
from streamscope.core.capture.frames_export import capture_frames, records_from_log, to_jsonl
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.capture.replay import line_cap, replay_capture
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.net.connect_errors import describe_connect_error, host_port
from streamscope.core.net.endpoint_store import (
    EndpointConfigError,
    endpoint_from_dict,
    endpoint_to_dict,
)
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.models_api import test_connection as probe_connection
from streamscope.core.turn.error_body import body_summary, error_fields, read_body
from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import MultiObserver, TurnObserver
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import (
    FLAG_BODY,
    FLAG_DETACHED,
    FLAG_OVERSIZED,
    FrameKind,
    MarkedFrame,
    ProgressEncoder,
)
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import SSEDecoder, SSEProtocolError
from support.rawhttp import RawServer, chunk, head

OPENAI_429 = (
    b'{"error":{"message":"Rate limit reached for gpt-4o in organization org-1 on tokens per'
    b' min.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}'
)
HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"
)


# -- reading a body -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "headers", "fields"),
    [
        (
            OPENAI_429,
            [("Retry-After", "20"), ("x-request-id", "req_abc")],
            [
                ("type", "tokens"),
                ("code", "rate_limit_exceeded"),
                ("param", "null"),
                (
                    "message",
                    "Rate limit reached for gpt-4o in organization org-1 on tokens per min.",
                ),
                ("Retry-After", "20 s"),
                ("request id", "req_abc"),
            ],
        ),
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            [("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT"), ("request-id", "req_01")],
            [
                ("type", "overloaded_error"),
                ("message", "Overloaded"),
                ("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"),
                ("request id", "req_01"),
            ],
        ),
        (
            b'{"error":{"code":429,"message":"Resource exhausted.","status":"RESOURCE_EXHAUSTED"}}',
            [],
            [("code", "429"), ("status", "RESOURCE_EXHAUSTED"), ("message", "Resource exhausted.")],
        ),
        (b'{"error":"model \\"x\\" not found"}', [], [("message", 'model "x" not found')]),
        (HTML_502, [("content-type", "text/html")], [("title", "502 Bad Gateway")]),
        (b"upstream connect error", [("retry-after", "3")], [("Retry-After", "3 s")]),
    ],
    ids=["openai", "anthropic", "gemini", "ollama", "html", "text"],
)
def test_error_fields_of_each_provider_shape(
    body: bytes, headers: list[tuple[str, str]], fields: list[tuple[str, str]]
) -> None:
    assert error_fields(body, headers) == fields


def test_a_body_reads_as_pretty_json_or_as_its_text() -> None:
    read = read_body(OPENAI_429, {"content-type": "application/json"})
    assert read.kind == "json"
    assert read.text == (
        '{\n  "error": {\n    "message": "Rate limit reached for gpt-4o in organization org-1'
        ' on tokens per min.",\n    "type": "tokens",\n    "param": null,\n'
        '    "code": "rate_limit_exceeded"\n  }\n}'
    )
    html = read_body(HTML_502, [("Content-Type", "text/html; charset=utf-8")])
    assert html.kind == "html"
    assert html.text == HTML_502.decode().replace("\r\n", "\n")  # the page's source, as text
    assert read_body(b"").kind == "empty" and read_body(b" \n").text == " \n"


@pytest.mark.parametrize(
    ("body", "summary"),
    [
        (
            OPENAI_429,
            "rate_limit_exceeded: Rate limit reached for gpt-4o in organization org-1"
            " on tokens per min.",
        ),
        (HTML_502, "HTML page: 502 Bad Gateway"),
        (
            b'{"id":"x","object":"chat.completion","choices":[]}',
            "JSON object (id, object, choices)",
        ),
        (b"", "(empty body)"),
        (b"Bad\n  gateway", "Bad gateway"),
    ],
)
def test_body_summary(body: bytes, summary: str) -> None:
    assert body_summary(body) == summary


# -- the body is a frame, from the pipeline -----------------------------------------------------


def _log_of(encoder: ProgressEncoder) -> FrameLog:
    log = FrameLog()
    log.add(encoder.take())
    return log


def test_an_http_error_body_is_one_frame_of_the_pipeline() -> None:
    pipe = StreamPipeline("openai")
    encoder = ProgressEncoder()
    end = StreamEnd("http_error", status=429, body=OPENAI_429, headers={"retry-after": "20"})
    update = pipe.end_input(end, 0.25)
    assert [type(f.frame) for f in update.frames] == [MarkedFrame]
    encoder.progressed(update, 0.25)
    log = _log_of(encoder)
    assert len(log) == 1 and log.body_row() == 0
    assert log.frame_bytes(0) == OPENAI_429
    assert (log.kinds[0], log.flags[0]) == (FrameKind.ERROR, FLAG_BODY | FLAG_DETACHED)
    assert log.label(0) == "body" and log.role(0) == "body" and log.events(0) == []
    assert log.summary(0).startswith("rate_limit_exceeded: Rate limit reached")
    assert log.time(0) == 0.25
    # once only, and not for a stream's end, an empty body or a pipeline keeping no frames
    assert pipe.end_input(end, 0.3).frames == []
    assert StreamPipeline("openai").end_input(StreamEnd("eof", body=b"x"), 0).frames == []
    assert StreamPipeline("openai").end_input(StreamEnd("http_error"), 0).frames == []
    assert StreamPipeline("openai", keep_frames=False).end_input(end, 0).frames == []
    turn = pipe.close(end, 0.3)
    assert turn.reason == (
        "429 rate_limit_exceeded · Rate limit reached for gpt-4o in organization org-1 on tokens"
        " per min. · retry after 20 s"
    )


class _Ended(TurnObserver):
    def __init__(self) -> None:
        self.end: StreamEnd | None = None
        self.turn: Turn | None = None

    def ended(self, end: StreamEnd) -> None:
        self.end = end

    def finished(self, turn: Turn) -> None:
        self.turn = turn


def _spec(server: RawServer, key: str = "sk-test-KEY-123456") -> object:
    conv = Conversation(messages=[Message("user", "hi")])
    return get_dialect("openai").build_request(
        conv, base_url=server.url + "/v1", model="m", api_key=key
    )


def _live(
    server: RawServer, timeouts: StreamTimeouts = StreamTimeouts(connect=5, first_byte=5, idle=5)
) -> tuple[FrameLog, CaptureRecorder, Turn]:
    encoder, recorder = ProgressEncoder(), CaptureRecorder("openai")

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(
                _spec(server),  # type: ignore[arg-type]
                dialect="openai",
                timeouts=timeouts,
                observer=MultiObserver(recorder, encoder),
            )
        finally:
            await client.aclose()

    turn = asyncio.run(main())
    return _log_of(encoder), recorder, turn


def test_a_live_error_body_is_the_same_frame_replayed_and_exported(raw_server: RawServer) -> None:
    echo = b'{"error":{"message":"Incorrect API key provided: sk-test-KEY-123456","code":"k"}}'

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head("401 Unauthorized", "application/json") + chunk(echo) + b"0\r\n\r\n")

    raw_server.handler = handler
    log, recorder, turn = _live(raw_server)
    masked = echo.replace(b"sk-test-KEY-123456", b"*" * 18)
    assert turn.outcome is Outcome.ERROR
    assert (len(log), log.frame_bytes(0), log.label(0)) == (1, masked, "body")  # scrubbed
    capture = recorder.capture
    assert capture.end is not None and capture.end.body == masked
    # replayed (as an older turn is opened): the same row
    replayed = ProgressEncoder()
    asyncio.run(replay_capture(capture, observer=replayed))
    again = _log_of(replayed)
    assert [again.frame_bytes(r) for r in range(len(again))] == [masked]
    assert (again.kinds[0], again.flags[0]) == (log.kinds[0], log.flags[0])
    # exported: a row with its role and the body as data
    records = records_from_log(log)
    assert json.loads(to_jsonl(records)) == {
        "i": 0, "t": round(log.time(0), 6), "event": None, "data": masked.decode(), "role": "body"
    }  # fmt: skip
    from_capture, _turn = asyncio.run(capture_frames(capture))
    assert [r.to_json(0)["data"] for r in from_capture] == [masked.decode()]


# -- an over-long line leaves its first KB ------------------------------------------------------


def _long_stream(cap: int) -> tuple[bytes, int]:
    """Two good frames, then a block whose data line is longer than ``cap``."""
    good = b"data: one\n\n: ping\n\n"
    return good + b"event: big\ndata: " + b"x" * (cap + 10) + b"\n\n", len(good)


@pytest.mark.parametrize("read", [7, 1024, 5000, 1 << 20])
def test_the_sse_decoder_keeps_the_start_of_the_block_it_gives_up_on(read: int) -> None:
    cap = 6000
    stream, start = _long_stream(cap)
    decoder = SSEDecoder(cap)
    frames = []
    with pytest.raises(SSEProtocolError) as caught:
        for i in range(0, len(stream), read):
            frames += decoder.feed_frames(stream[i : i + read])
    frames += caught.value.frames
    head_frame = caught.value.oversized
    assert [f.raw for f in frames] == [b"data: one\n\n", b": ping\n\n"]
    assert head_frame is not None and head_frame.offset == start
    assert head_frame.raw == stream[start : start + 4096]  # the first 4 KB, exactly


@pytest.mark.parametrize("read", [3, 1000, 1 << 20])
def test_the_ndjson_decoder_keeps_the_start_of_the_line_it_gives_up_on(read: int) -> None:
    cap = 5000
    good = b'{"a":1}\n\n'
    stream = good + b'{"text":"' + b"y" * cap + b'"}\n'
    decoder = NDJSONDecoder(cap)
    with pytest.raises(SSEProtocolError) as caught:
        for i in range(0, len(stream), read):
            decoder.feed_frames(stream[i : i + read])
    oversized = caught.value.oversized
    assert oversized is not None and oversized.offset == len(good)
    assert oversized.raw == stream[len(good) : len(good) + 4096]


def test_an_oversized_row_is_in_the_reads_and_ends_the_turn() -> None:
    stream, start = _long_stream(8192)
    pipe = StreamPipeline("openai", max_line_bytes=8192)
    encoder = ProgressEncoder()
    for i in range(0, len(stream), 1000):
        data = stream[i : i + 1000]
        encoder.read(data, 0.1)
        update = pipe.feed(data, 0.1)
        encoder.progressed(update, 0.1)
        if update.protocol_error:
            break
    log = _log_of(encoder)
    assert len(log) == 3
    assert (log.label(2), log.kinds[2], log.flags[2]) == (
        "oversized",
        FrameKind.ERROR,
        FLAG_OVERSIZED,
    )
    assert log.stream_offset(2) == start and log.frame_bytes(2) == stream[start : start + 4096]
    assert log.summary(2) == (
        'line over the line cap; its first 4,096 bytes: "event: big\\ndata: ' + "x" * 42 + '…"'
    )
    turn = pipe.close(StreamEnd("protocol_error"), 0.2)
    assert turn.reason.endswith(": line longer than 8192 bytes")


# -- the line cap is the endpoint's ---------------------------------------------------------------


def test_the_endpoint_line_cap_round_trips_and_reaches_the_client(raw_server: RawServer) -> None:
    ep = Endpoint(id="e1", name="e", base_url="http://x/v1", max_line_bytes=3 << 20)
    assert endpoint_from_dict(endpoint_to_dict(ep)) == ep
    assert endpoint_to_dict(ep)["max_line_bytes"] == 3 << 20
    assert ep.timeouts().max_line_bytes == 3 << 20
    assert endpoint_from_dict({"id": "e2"}).max_line_bytes == 1 << 20  # older files
    with pytest.raises(EndpointConfigError, match="max_line_bytes: expected 4096 to"):
        endpoint_from_dict({"id": "e3", "max_line_bytes": 100})

    line = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"z" * 20_000 + b'"}}]}\n\n'

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(line) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    raw_server.handler = handler
    small = StreamTimeouts(connect=5, first_byte=5, idle=5, max_line_bytes=16 * 1024)
    log, recorder, turn = _live(raw_server, small)
    assert turn.reason == "protocol error after 19.6 KB: line longer than 16384 bytes"
    assert log.label(len(log) - 1) == "oversized"
    # replayed with the cap that ended it live, not the default one
    capture = recorder.capture
    assert line_cap(capture) == 16 * 1024
    assert asyncio.run(replay_capture(capture)).reason == turn.reason
    large = StreamTimeouts(connect=5, first_byte=5, idle=5, max_line_bytes=64 * 1024)
    _log, recorder, turn = _live(raw_server, large)
    assert turn.outcome is Outcome.COMPLETED and len(turn.text) == 20_000


def test_a_capture_that_passed_a_raised_cap_replays_whole() -> None:
    line = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"w" * (2 << 20) + b'"}}]}\n\n'
    capture = Capture(
        "openai",
        response=CaptureResponse(200, (("content-type", "text/event-stream"),), 0.01),
        end=CaptureEnd("eof", 0.5),
    )
    capture.reads.append(0.1, line)
    capture.reads.append(0.2, b"data: [DONE]\n\n")
    assert line_cap(capture) == len(line) + 15
    turn = asyncio.run(replay_capture(capture))
    assert turn.outcome is Outcome.COMPLETED and len(turn.text) == 2 << 20


# -- connection errors ----------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_reads_the_same_in_a_turn_and_in_test_connection() -> None:
    port = _closed_port()
    sentence = f"Connection refused by 127.0.0.1:{port} — is the server running?"
    spec = get_dialect("openai").build_request(
        Conversation(messages=[Message("user", "hi")]),
        base_url=f"http://127.0.0.1:{port}/v1",
        model="m",
        api_key=None,
    )
    observer = _Ended()

    async def main() -> tuple[Turn, tuple[bool, str]]:
        client = StreamClient()
        try:
            turn = await client.run_turn(spec, observer=observer)
        finally:
            await client.aclose()
        ep = Endpoint(id="x", name="x", base_url=f"http://127.0.0.1:{port}/v1")
        async with httpx.AsyncClient() as http:
            return turn, await probe_connection(ep, None, http)

    turn, probe = asyncio.run(main())
    assert (turn.outcome, turn.reason) == (Outcome.ERROR, sentence)
    assert observer.end is not None and observer.end.detail == sentence
    assert probe == (False, sentence)


def _request() -> httpx.Request:
    return httpx.Request("POST", "https://api.example.com/v1/chat/completions")


@pytest.mark.parametrize(
    ("exc", "sentence"),
    [
        (
            httpx.ConnectError("[Errno -2] Name or service not known", request=_request()),
            "Could not resolve host 'api.example.com' — check the base URL",
        ),
        (
            httpx.ConnectError(
                "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", request=_request()
            ),
            "TLS error talking to api.example.com:443: [SSL: CERTIFICATE_VERIFY_FAILED]"
            " certificate verify failed — set a CA bundle for a self-signed server, or turn"
            " verification off",
        ),
        (
            httpx.ConnectTimeout("", request=_request()),
            "Timed out after 2.5 s connecting to api.example.com:443",
        ),
        (
            httpx.ProxyError("Invalid username/password", request=_request()),
            "Could not connect to api.example.com:443: ProxyError: Invalid username/password",
        ),
        (
            httpx.RemoteProtocolError("Server disconnected", request=_request()),
            "No response from api.example.com:443: RemoteProtocolError: Server disconnected",
        ),
    ],
    ids=["dns", "tls", "timeout", "proxy", "no-response"],
)
def test_connect_error_sentences(exc: Exception, sentence: str) -> None:
    url = "https://api.example.com/v1/chat/completions?key=SECRET"
    assert describe_connect_error(exc, url, connect_timeout=2.5) == sentence


def test_host_port() -> None:
    assert host_port("http://[::1]:8000/v1") == "[::1]:8000"
    assert host_port("http://localhost/v1") == "localhost:80"
    assert host_port("https://h.example/v1?key=x") == "h.example:443"


# -- reasons are whole in the CLI's JSON -----------------------------------------------------------

LONG = "The model `gpt-4o-2024-08-06` does not exist or you do not have access to it. " * 8


def test_send_json_prints_the_whole_reason(raw_server: RawServer) -> None:
    body = json.dumps({"error": {"message": LONG, "code": "model_not_found"}}).encode()

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head("404 Not Found", "application/json") + chunk(body) + b"0\r\n\r\n")

    raw_server.handler = handler
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["send", "--base-url", raw_server.url + "/v1", "--model", "m", "--json",
                         "hi"])  # fmt: skip
    result = json.loads(out.getvalue())
    assert code == 4
    assert result["reason"] == f"404 model_not_found · {LONG.strip()}"
    assert len(result["reason"]) == 645 and "…" not in result["reason"]  # (was cut at 160)


def test_replay_json_prints_the_whole_reason(tmp_path: Path) -> None:
    path = tmp_path / "error.sse"
    error = {"error": {"message": LONG, "type": "server_error", "code": "overloaded"}}
    path.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
                     + b"data: " + json.dumps(error).encode() + b"\n\n")  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["replay", str(path), "--dialect", "openai", "--json"])
    result = json.loads(out.getvalue())
    assert code == 4
    assert result["reason"] == f"in-stream error: overloaded: {LONG.strip()}"


def test_a_body_that_is_no_error_lists_no_error_fields() -> None:
    answer = b'{"model":"m","message":{"role":"assistant","content":"Hi"},"done":true}'
    assert error_fields(answer) == []
    assert body_summary(answer) == "JSON object (model, message, done)"
    vllm = b'{"object":"error","message":"max_tokens is too large","type":"BadRequestError"}'
    assert error_fields(vllm) == [
        ("type", "BadRequestError"),
        ("message", "max_tokens is too large"),
    ]
    assert error_fields(b'{"detail":"Not Found"}') == [("detail", "Not Found")]
