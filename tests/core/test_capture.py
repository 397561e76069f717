"""Captures: recording a live turn, the .sscap file, replay through the same pipeline,
and the size cap of the stored captures."""

from __future__ import annotations

import asyncio
import base64
import io
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    dump_capture,
    is_capture,
    read_capture,
    write_capture,
)
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.capture.replay import replay_capture
from streamscope.core.net.client import StreamClient, StreamTimeouts, TurnObserver
from streamscope.core.paths import capture_dir
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn, turn_to_json
from streamscope.core.turn.observer import MultiObserver
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import PipelineUpdate, StreamPipeline
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.demo.server import DemoServer

KEY = "sk-CAPTURE-SECRET-77"


class FrameLog(TurnObserver):
    """Everything an observer sees, for comparing live and replayed runs."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.reads: list[bytes] = []
        self.events = 0
        self.calls: list[str] = []

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self.calls.append("request")

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.calls.append("response")

    def read(self, data: bytes, t: float) -> None:
        self.reads.append(data)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.frames += [p.frame.raw for p in update.frames]
        self.events += len(update.events)

    def finished(self, turn: Turn) -> None:
        self.calls.append("finished")


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=200) as server:
        yield server


def run_live(demo: DemoServer, model: str, dialect: str) -> tuple[Turn, Capture, FrameLog]:
    conv = Conversation(messages=[Message("user", "Hello there")])
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key=KEY
    )
    recorder = CaptureRecorder(dialect)
    log = FrameLog()

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(
                spec,
                dialect=dialect,
                timeouts=StreamTimeouts(first_byte=10, idle=2.0),
                observer=MultiObserver(recorder, log),
            )
        finally:
            await client.aclose()

    turn = asyncio.run(main())
    assert recorder.turn is turn
    return turn, recorder.capture, log


CASES = [
    ("demo", "openai"),
    ("demo-tools", "openai"),
    ("demo-reasoning", "anthropic"),
    ("demo-split-utf8", "gemini"),
    ("demo-tools", "responses"),
    ("demo", "ollama"),
    ("demo-cut", "openai"),
    ("demo-no-done", "openai"),
    ("demo-error-429", "openai"),
    ("demo-html-502", "anthropic"),
    ("demo-midstream-error", "openai"),
    ("demo-bad-json", "openai"),
]


@pytest.mark.parametrize(("model", "dialect"), CASES, ids=[f"{m}-{d}" for m, d in CASES])
def test_a_replayed_capture_gives_the_identical_turn_and_frames(
    demo: DemoServer, model: str, dialect: str, tmp_path: Path
) -> None:
    live, capture, live_log = run_live(demo, model, dialect)
    path = tmp_path / "turn.sscap"
    write_capture(path, capture)
    loaded = read_capture(path)
    assert loaded.reads == capture.reads
    assert loaded.request == capture.request and loaded.response == capture.response
    assert loaded.end == capture.end

    replay_log = FrameLog()
    replayed = asyncio.run(replay_capture(loaded, observer=replay_log))
    assert turn_to_json(replayed) == turn_to_json(live)
    assert (replayed.outcome, replayed.reason, replayed.status) == (
        live.outcome,
        live.reason,
        live.status,
    )
    assert replay_log.frames == live_log.frames  # byte for byte
    assert replay_log.reads == live_log.reads
    assert replay_log.events == live_log.events
    assert replay_log.calls == live_log.calls
    assert replayed.bytes_received == live.bytes_received
    if live.timings.ttft is not None:
        assert replayed.timings.ttft == pytest.approx(live.timings.ttft, abs=1e-6)
    assert KEY not in path.read_text()


def test_the_capture_file_is_readable_json_lines_with_secrets_redacted(
    demo: DemoServer, tmp_path: Path
) -> None:
    _, capture, _ = run_live(demo, "demo", "anthropic")
    path = tmp_path / "a.sscap"
    write_capture(path, capture)
    lines = path.read_bytes().splitlines()
    head = orjson.loads(lines[0])
    assert lines[0].startswith(b'{"format":"streamscope-capture","version":1,')
    assert head["dialect"] == "anthropic"
    assert head["request"]["method"] == "POST"
    assert head["request"]["url"].endswith("/v1/messages")
    assert ["x-api-key", "***"] in head["request"]["headers"]
    assert head["request"]["body"]["stream"] is True
    assert head["response"]["status"] == 200
    reads = [orjson.loads(line) for line in lines[1:-1]]
    assert all(set(r) == {"t", "b64"} for r in reads)
    assert [r["t"] for r in reads] == sorted(r["t"] for r in reads)
    body = b"".join(base64.b64decode(r["b64"]) for r in reads)
    assert b"event: message_stop" in body
    end = orjson.loads(lines[-1])["end"]
    assert end["kind"] == "eof" and end["outcome"] == "completed"
    assert KEY.encode() not in path.read_bytes()


def test_is_capture_and_damaged_files(tmp_path: Path) -> None:
    assert is_capture(b'{"format":"streamscope-capture","version":1}\n')
    assert is_capture(b'{ "format" : "streamscope-capture"')
    assert not is_capture(b'data: {"format":"streamscope-capture"}\n\n')
    assert not is_capture(b'{"id": 1}\n')
    bad = tmp_path / "x.sscap"
    bad.write_bytes(b"data: hello\n\n")
    with pytest.raises(CaptureError, match="not a StreamScope capture"):
        read_capture(bad)
    bad.write_bytes(b'{"format":"streamscope-capture","version":99}\n')
    with pytest.raises(CaptureError, match="version 99"):
        read_capture(bad)
    bad.write_bytes(b'{"format":"streamscope-capture","version":1}\n{"t":0,"b64":"!!"}\n')
    with pytest.raises(CaptureError, match="line 2"):
        read_capture(bad)


def test_a_capture_cut_short_replays_as_a_broken_connection(tmp_path: Path) -> None:
    capture = Capture(
        "openai", response=CaptureResponse(200, (("content-type", "text/event-stream"),))
    )
    capture.reads.append(0.1, b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n')
    buf = io.BytesIO()
    dump_capture(capture, buf)
    damaged = buf.getvalue() + b'{"t":0.2,"b64":"ZGF0'  # killed mid-line, no end line
    loaded = read_capture(io.BytesIO(damaged))
    assert len(loaded.reads) == 1 and loaded.end is None
    turn = asyncio.run(replay_capture(loaded))
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.text == "Hi"
    assert "connection broken" in turn.reason


def test_replay_at_recorded_speed_keeps_the_times(tmp_path: Path) -> None:
    capture = Capture(
        "openai", response=CaptureResponse(200, (("content-type", "text/event-stream"),), 0.01)
    )
    for i in range(4):
        chunk = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
        capture.reads.append(0.05 * (i + 1), chunk)
    capture.reads.append(0.25, b"data: [DONE]\n\n")
    capture.end = CaptureEnd("eof", elapsed=0.26)
    seen: list[tuple[float, float]] = []

    class Clocked(TurnObserver):
        def read(self, data: bytes, t: float) -> None:
            seen.append((t, time.monotonic()))

    start = time.monotonic()
    turn = asyncio.run(replay_capture(capture, speed=2.0, observer=Clocked()))
    took = time.monotonic() - start
    assert turn.outcome is Outcome.COMPLETED and turn.text == "xxxx"
    assert [t for t, _ in seen] == pytest.approx([0.05, 0.1, 0.15, 0.2, 0.25])  # recorded
    assert 0.12 <= took < 2.0  # 0.26 s at x2
    assert seen[-1][1] - seen[0][1] >= 0.09  # (0.25 - 0.05) / 2, paced
    with pytest.raises(ValueError, match="speed"):
        asyncio.run(replay_capture(capture, speed=0))


def test_replay_with_another_dialect(tmp_path: Path) -> None:
    capture = Capture("ollama")
    capture.reads.append(0.0, b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n')
    capture.reads.append(0.0, b"data: [DONE]\n\n")
    capture.end = CaptureEnd("eof", elapsed=0.1)
    turn = asyncio.run(replay_capture(capture, dialect="openai"))
    assert (turn.outcome, turn.text) == (Outcome.COMPLETED, "Hi")


def test_a_100_mb_capture_opens_within_a_small_multiple_of_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.sscap"
    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"y" * 16300 + b'"}}]}\n\n'
    n = (100 << 20) // len(chunk)
    with path.open("wb") as fp:
        fp.write(b'{"format":"streamscope-capture","version":1,"dialect":"openai",')
        fp.write(b'"request":null,"response":{"status":200,"headers":[],"t":0}}\n')
        line = b'{"t":0.5,"b64":"' + base64.b64encode(chunk) + b'"}\n'
        for _ in range(n):
            fp.write(line)
        fp.write(b'{"end":{"kind":"eof","elapsed":1.0}}\n')
    size = n * len(chunk)
    tracemalloc.start()
    try:
        capture = read_capture(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.size == size
    assert len(capture.reads) == n
    assert peak < 2.5 * size, f"peak {peak / 2**20:.0f} MB for {size / 2**20:.0f} MB"


def test_read_log_is_compact_and_iterates_in_order() -> None:
    log = ReadLog([(0.1, b"ab"), (0.2, b""), (0.3, b"cde")])
    assert list(log) == [(0.1, b"ab"), (0.2, b""), (0.3, b"cde")]
    assert (len(log), log.size, log.body()) == (3, 5, b"abcde")


def test_capture_store_caps_the_total_size_oldest_first(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        conv = store.create_conversation()
        captures = CaptureStore(cap_bytes=2500, index=store)
        assert captures.directory == capture_dir()
        ids = []
        for i in range(4):
            cap = Capture("openai", request=CaptureRequest("POST", "http://x/v1", (), b"{}"))
            cap.reads.append(0.0, bytes([65 + i]) * 700)
            ids.append(captures.save(cap))
            msg = store.begin_assistant_message(conv)
            store.finish_assistant_message(
                msg, Turn(text=f"answer {i}", outcome=Outcome.COMPLETED), ids[-1]
            )
        assert ids == sorted(ids)
        assert not captures.exists(ids[0]) and not captures.exists(ids[1])
        assert captures.exists(ids[2]) and captures.exists(ids[3])
        assert captures.total_size() <= 2500
        msgs = store.load_conversation(conv).messages
        assert [m.text for m in msgs] == [f"answer {i}" for i in range(4)]  # text kept
        assert [m.turn.capture_id for m in msgs if m.turn] == [None, None, ids[2], ids[3]]
        assert captures.load(ids[3]).reads.body() == b"D" * 700

        tiny = CaptureStore(cap_bytes=10, index=store)
        kept = tiny.save(Capture("openai"))
        assert tiny.exists(kept)  # the newest is never pruned, even over the cap


def test_an_exact_stream_end_keeps_the_error_body_for_replay() -> None:
    """When the client reports the StreamEnd (``ended``), an HTTP error replays from its
    body, not from the recorded reason."""
    body = b'{"error": {"type": "rate_limit_exceeded", "message": "Slow down"}}'
    headers = [("content-type", "application/json"), ("retry-after", "20")]
    recorder = CaptureRecorder("openai")
    log = FrameLog()
    obs = MultiObserver(recorder, log)  # log has no `ended`: skipped
    spec = RequestSpec("POST", "http://h/v1/chat/completions", {"Authorization": f"Bearer {KEY}"})
    obs.request_started(spec, b"{}", 100.0)
    obs.response_started(429, headers, 100.1)
    end = StreamEnd("http_error", elapsed=0.2, status=429, headers=dict(headers), body=body)
    pipeline = StreamPipeline("openai", request_sent=100.0)
    live = pipeline.close(end, 100.2)
    obs.ended(end)
    obs.finished(live)
    assert recorder.capture.end is not None and recorder.capture.end.body == body
    buf = io.BytesIO()
    dump_capture(recorder.capture, buf)
    assert KEY.encode() not in buf.getvalue()
    loaded = read_capture(io.BytesIO(buf.getvalue()))
    replayed = asyncio.run(replay_capture(loaded, dialect="openai"))  # recomputed, not copied
    assert (
        replayed.reason == live.reason == "429 rate_limit_exceeded · Slow down · retry after 20 s"
    )


def test_a_live_http_error_keeps_its_body_with_an_echoed_key_masked(
    raw_server: object,
) -> None:
    """The client reports the exact end (with the error body) to the recorder; a proxy
    that echoes the request's key into its error page does not leak it into the capture."""
    from support.rawhttp import RawServer

    assert isinstance(raw_server, RawServer)
    key = "sk-ECHOED-KEY-98765"

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        body = b'{"error":{"message":"bad key ' + key.encode() + b'","type":"invalid_api_key"}}'
        w.write(
            b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )

    raw_server.handler = handler
    conv = Conversation(messages=[Message("user", "hi")])
    spec = get_dialect("openai").build_request(
        conv, base_url=raw_server.url + "/v1", model="m", api_key=key
    )
    recorder = CaptureRecorder("openai")

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(spec, observer=recorder)
        finally:
            await client.aclose()

    turn = asyncio.run(main())
    assert turn.outcome is Outcome.ERROR and "401" in turn.reason
    end = recorder.capture.end
    assert end is not None and end.kind == "http_error"
    assert end.body is not None and b"invalid_api_key" in end.body
    assert key.encode() not in end.body and b"***" in end.body
    buffer = io.BytesIO()
    dump_capture(recorder.capture, buffer)
    assert key.encode() not in buffer.getvalue()
    replayed = asyncio.run(replay_capture(read_capture(io.BytesIO(buffer.getvalue()))))
    assert replayed.outcome is Outcome.ERROR and "401" in replayed.reason


def test_a_background_read_lets_other_threads_run_and_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(A window's event loop waits for the interpreter lock while a capture is read.)"""
    import streamscope.core.capture.format.read as fmt

    reads = ReadLog([(0.001 * i, f"data: {i}\n\n".encode()) for i in range(1000)])
    capture = Capture("openai", None, None, reads, CaptureEnd("eof", elapsed=1.0))
    path = tmp_path / "many.sscap"
    write_capture(path, capture)
    sleeps: list[float] = []
    monkeypatch.setattr(fmt.time, "sleep", sleeps.append)
    assert read_capture(path).reads == reads and sleeps == []
    again = read_capture(path, background=True)
    assert again.reads == reads
    assert len(sleeps) >= 1000 // fmt.YIELD_EVERY_LINES and set(sleeps) == {0}
