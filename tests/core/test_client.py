"""The streaming client against a real socket: outcomes for every way a stream can end."""

from __future__ import annotations

import asyncio
import gzip
import json
import time

import pytest

from streamscope.core.net.client import (
    StreamClient,
    StreamTimeouts,
    TurnObserver,
    classify_content_type,
)
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.pipeline import PipelineUpdate
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.dialects.base import RequestSpec
from support.rawhttp import RawServer, chunk, head


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def delta(text: str, finish: str | None = None) -> bytes:
    return sse(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
        }
    )


def spec_for(
    server: RawServer, dialect: str = "openai", key: str | None = "sk-test"
) -> RequestSpec:
    conv = Conversation(messages=[Message("user", "hi")])
    base = server.url if dialect == "ollama" else server.url + "/v1"
    return get_dialect(dialect).build_request(conv, base_url=base, model="m", api_key=key)


class Recorder(TurnObserver):
    def __init__(self) -> None:
        self.reads: list[bytes] = []
        self.updates: list[PipelineUpdate] = []
        self.finished_turns: list[Turn] = []
        self.status: int | None = None

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.status = status

    def read(self, data: bytes, t: float) -> None:
        self.reads.append(data)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.updates.append(update)

    def finished(self, turn: Turn) -> None:
        self.finished_turns.append(turn)


def run_turn(
    server: RawServer,
    dialect: str = "openai",
    timeouts: StreamTimeouts = StreamTimeouts(connect=5, first_byte=5, idle=5),
    observer: TurnObserver | None = None,
) -> Turn:
    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(
                spec_for(server, dialect), dialect=dialect, timeouts=timeouts, observer=observer
            )
        finally:
            await client.aclose()

    return asyncio.run(main())


BODY = (
    delta("Hel") + b": keep-alive\n\n" + delta("lo ") + delta("wörld", "stop") + b"data: [DONE]\n\n"
)


def test_complete_stream_reads_are_kept_byte_exact(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(0, len(BODY), 37):  # reads split anywhere, even inside "ö"
            w.write(chunk(BODY[i : i + 37]))
            await w.drain()
            await asyncio.sleep(0.002)
        w.write(b"0\r\n\r\n")

    raw_server.handler = handler
    rec = Recorder()
    turn = run_turn(raw_server, observer=rec)
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert turn.text == "Hello wörld"
    assert turn.finish_reason == "stop"
    assert b"".join(rec.reads) == BODY
    frames = [pf.frame for u in rec.updates for pf in u.frames]
    assert b"".join(f.raw for f in frames) == BODY
    assert any(f.comments for f in frames)  # the keep-alive is a frame of its own
    assert rec.finished_turns == [turn]
    request = raw_server.requests[0].lower()
    assert b"accept-encoding: identity" in request
    assert b"authorization: bearer sk-test" in request
    assert b'"stream":true' in request.replace(b" ", b"")


def test_cut_mid_frame_is_truncated_with_partial_text(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(delta("partial ") + delta("answer")[:25]))
        await w.drain()
        w.transport.abort()  # reset mid-chunk: no terminating 0-chunk

    raw_server.handler = handler
    rec = Recorder()
    turn = run_turn(raw_server, observer=rec)
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.text == "partial "
    assert "[DONE]" in turn.reason
    # observers see every received byte as frames, the unterminated last one included
    frames = [pf.frame for u in rec.updates for pf in u.frames]
    assert b"".join(f.raw for f in frames) == b"".join(rec.reads)
    assert frames[-1].raw == delta("answer")[:25] and not frames[-1].complete


def test_finish_reason_without_done_is_truncated(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(delta("all of it", "stop")) + b"0\r\n\r\n")

    raw_server.handler = handler
    turn = run_turn(raw_server)
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.finish_reason == "stop"
    assert turn.text == "all of it"
    assert "no [DONE]" in turn.reason and "finish_reason=stop" in turn.reason


def test_keepalives_do_not_hold_a_stalled_stream_open(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(delta("thinking…")))
        for _ in range(100):
            w.write(chunk(b": ping\n\n"))
            await w.drain()
            await asyncio.sleep(0.05)

    raw_server.handler = handler
    started = time.monotonic()
    turn = run_turn(raw_server, timeouts=StreamTimeouts(first_byte=5, idle=0.6))
    elapsed = time.monotonic() - started
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.text == "thinking…"
    assert "idle" in turn.reason.lower()
    assert 0.5 < elapsed < 3.5


def test_first_byte_timeout(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        await w.drain()
        await asyncio.sleep(10)

    raw_server.handler = handler
    turn = run_turn(raw_server, timeouts=StreamTimeouts(first_byte=0.5, idle=5))
    assert turn.outcome in (Outcome.TRUNCATED, Outcome.ERROR)
    assert "within 0.5 s" in turn.reason, turn.reason


def test_http_429_reports_message_and_retry_after(raw_server: RawServer) -> None:
    body = json.dumps(
        {"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}
    ).encode()

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(
            b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n"
            b"retry-after: 20\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )

    raw_server.handler = handler
    rec = Recorder()
    turn = run_turn(raw_server, observer=rec)
    assert turn.outcome is Outcome.ERROR
    assert turn.status == 429 and rec.status == 429
    assert "429" in turn.reason and "rate_limit_exceeded" in turn.reason
    assert "retry after 20 s" in turn.reason


def test_html_error_page_is_an_error_not_a_stream(raw_server: RawServer) -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head("200 OK", "text/html") + chunk(page) + b"0\r\n\r\n")

    raw_server.handler = handler
    turn = run_turn(raw_server)
    assert turn.outcome is Outcome.ERROR
    assert "HTML" in turn.reason and "502 Bad Gateway" in turn.reason


def test_plain_json_body_is_not_a_stream(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        payload = b'{"choices": [{"message": {"content": "not streamed"}}]}'
        w.write(head("200 OK", "application/json") + chunk(payload) + b"0\r\n\r\n")

    raw_server.handler = handler
    turn = run_turn(raw_server)
    assert turn.outcome is Outcome.ERROR
    assert "stream" in turn.reason.lower()


def test_cancel_closes_the_connection_quickly_and_keeps_partial_text(
    raw_server: RawServer,
) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(200):
            w.write(chunk(delta(f"w{i} ")))
            await w.drain()
            await asyncio.sleep(0.05)

    raw_server.handler = handler
    rec = Recorder()

    async def main() -> float:
        client = StreamClient()
        task = asyncio.create_task(
            client.run_turn(spec_for(raw_server), dialect="openai", observer=rec)
        )
        await asyncio.sleep(0.4)
        t = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        took = time.monotonic() - t
        await client.aclose()
        return took

    took = asyncio.run(main())
    assert took < 0.5
    [turn] = rec.finished_turns
    assert turn.outcome is Outcome.CANCELLED
    assert turn.text.startswith("w0 w1 ")
    assert "cancelled by you" in turn.reason.lower()
    assert raw_server.disconnected.wait(2)


def test_connection_refused_is_an_error() -> None:
    import socket

    with socket.socket() as s:  # find a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conv = Conversation(messages=[Message("user", "hi")])
    spec = get_dialect("openai").build_request(
        conv, base_url=f"http://127.0.0.1:{port}/v1", model="m"
    )

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(spec)
        finally:
            await client.aclose()

    turn = asyncio.run(main())
    assert turn.outcome is Outcome.ERROR
    assert turn.reason


def test_compressed_body_is_decoded_and_flagged(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(
            head(extra="content-encoding: gzip\r\n") + chunk(gzip.compress(BODY)) + b"0\r\n\r\n"
        )

    raw_server.handler = handler
    turn = run_turn(raw_server)
    assert turn.outcome is Outcome.COMPLETED
    assert turn.text == "Hello wörld"
    assert any("gzip" in w for w in turn.warnings)


def test_endless_line_is_a_protocol_error_with_partial_text(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(delta("before ")))
        w.write(chunk(b"data: " + b"x" * (1 << 20)))
        w.write(chunk(b"y" * (1 << 20)))
        await w.drain()
        await asyncio.sleep(5)

    raw_server.handler = handler
    turn = run_turn(raw_server)
    assert turn.outcome is Outcome.ERROR
    assert turn.text == "before "
    assert "line" in turn.reason.lower()


def test_ollama_ndjson_is_a_stream(raw_server: RawServer) -> None:
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "Hi "}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "there"}, "done": False},
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "eval_count": 2,
        },
    ]
    body = b"".join(json.dumps(x).encode() + b"\n" for x in lines)

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head(ctype="application/x-ndjson") + chunk(body) + b"0\r\n\r\n")

    raw_server.handler = handler
    turn = run_turn(raw_server, dialect="ollama")
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert turn.text == "Hi there"
    assert raw_server.requests[0].startswith(b"POST /api/chat ")


@pytest.mark.parametrize(
    ("ctype", "head_bytes", "stream", "warn"),
    [
        ("text/event-stream; charset=utf-8", b"", True, False),
        ("application/x-ndjson", b"{", True, False),
        ("text/html", b"<html>", False, False),
        ("application/json", b"{", False, False),
        ("text/plain", b"data: {}", True, True),
        (None, b": ping\n\n", True, True),
        ("text/plain", b"Internal error", False, False),
    ],
)
def test_classify_content_type(
    ctype: str | None, head_bytes: bytes, stream: bool, warn: bool
) -> None:
    is_stream, warning = classify_content_type(ctype, head_bytes)
    assert is_stream is stream
    assert (warning is not None) is warn
