"""The tap's forwarder at its limits, over loopback with the forwarding child: as many
upstream connections at once as the clients open, a request body far larger than the
recording keeps streamed through without the child holding it, and a burst of upstream
reads recorded read by read however the client's writes were joined."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import read_capture
from streamscope.core.tap.bodies import RECORDED_BODY_LIMIT
from streamscope.core.tap.server import TapServer
from support.tap_upstream import FINAL, Collector, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
STREAMS = 120  # (past httpx's default pool of 100 connections)
MB = 1024 * 1024


class HeldUpstream:
    """An upstream that answers each stream's first frame at once and holds every stream
    open until ``STREAMS`` of them are open together (or ``hold`` seconds have passed);
    ``most``: the most it saw open at once. Also ``/upload``: the size and SHA-256 of the
    body it was sent, read as it arrives."""

    def __init__(self, hold: float = 8.0) -> None:
        self.hold = hold
        self.open = 0
        self.most = 0
        self._all_open: asyncio.Event | None = None
        app = Starlette(
            routes=[
                Route(CHAT, self._stream, methods=["POST"]),
                Route("/upload", self._upload, methods=["POST"]),
            ]
        )
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=512)
        config = uvicorn.Config(
            app, log_level="critical", lifespan="off", loop="asyncio", log_config=None
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> HeldUpstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the upstream did not start"
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    async def _stream(self, request: Request) -> Response:
        await request.body()
        if self._all_open is None:
            self._all_open = asyncio.Event()
        all_open = self._all_open

        async def body() -> AsyncIterator[bytes]:
            self.open += 1
            self.most = max(self.most, self.open)
            if self.open >= STREAMS:
                all_open.set()
            try:
                yield chat_frame("held")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(all_open.wait(), self.hold)
                yield FINAL
            finally:
                self.open -= 1

        return StreamingResponse(body(), media_type="text/event-stream")

    async def _upload(self, request: Request) -> Response:
        digest = hashlib.sha256()
        size = 0
        async for piece in request.stream():
            digest.update(piece)
            size += len(piece)
        return JSONResponse({"size": size, "sha256": digest.hexdigest()})


@pytest.fixture
def held() -> Iterator[HeldUpstream]:
    with HeldUpstream() as server:
        yield server


def test_the_tap_opens_as_many_upstream_connections_as_its_clients_do(
    held: HeldUpstream,
) -> None:
    """120 streams held open together: each gets its 200 and its whole stream (a pool
    capped at 100 would hold 20 back — they never all open — or answer them 502)."""
    collector = Collector()

    async def one(client: httpx.AsyncClient, base: str) -> tuple[int, bytes]:
        async with client.stream("POST", base + CHAT, json={"stream": True}) as response:
            return response.status_code, await response.aread()

    async def all_at_once(base: str) -> list[tuple[int, bytes]]:
        limits = httpx.Limits(max_connections=None)
        async with httpx.AsyncClient(timeout=30, limits=limits) as client:
            return await asyncio.gather(*(one(client, base) for _ in range(STREAMS)))

    with TapServer(held.url, port=0, captures=None, listener=collector) as tap:
        answers = asyncio.run(all_at_once(tap.root_url))
        results = collector.wait(STREAMS, timeout=30)
    assert held.most == STREAMS
    assert answers == [(200, chat_frame("held") + FINAL)] * STREAMS
    assert sorted(r.outcome for r in results) == ["completed"] * STREAMS


def _vm_hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _blocks(count: int, digest: hashlib._Hash) -> Iterator[bytes]:
    """``count`` MiB, made as they are sent (and hashed into ``digest``)."""
    for i in range(count):
        block = bytes([i % 251]) * MB
        digest.update(block)
        yield block


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("framing", ["chunked", "content-length"])
def test_a_large_request_body_streams_through_without_the_tap_holding_it(
    held: HeldUpstream, framing: str
) -> None:
    """200 MB up through the tap: the upstream gets every byte, the forwarding child's peak
    memory grows far less than the body, and the recording keeps its first 8 MiB and
    says so."""
    size_mb = 200
    collector = Collector()
    with (
        TapServer(held.url, port=0, captures=CaptureStore(), listener=collector) as tap,
        httpx.Client(timeout=60) as client,
    ):
        [child] = tap.forwarder_pids()
        warm = client.post(tap.root_url + "/upload", content=b"warm")  # (imports, pool)
        assert warm.json()["size"] == 4
        collector.wait(1)
        before = _vm_hwm_kb(child)
        sent = hashlib.sha256()
        headers = {"content-type": "application/octet-stream"}
        if framing == "content-length":
            headers["content-length"] = str(size_mb * MB)
        response = client.post(
            tap.root_url + "/upload", content=_blocks(size_mb, sent), headers=headers
        )
        grew = _vm_hwm_kb(child) - before
        [_warm, result] = collector.wait(2)
    assert response.status_code == 200
    assert response.json() == {"size": size_mb * MB, "sha256": sent.hexdigest()}
    assert grew < 100 * 1024, f"the forwarding child's peak grew {grew:,} kB"
    first = bytes([0]) * MB + bytes([1]) * MB
    assert result.exchange.body[: 2 * MB] == first
    assert len(result.exchange.body) == RECORDED_BODY_LIMIT
    assert result.reason == (
        f"HTTP 200, not a stream (application/json, {len(response.content)} bytes); the "
        f"request body is longer than {RECORDED_BODY_LIMIT:,} bytes: the upstream got all of "
        f"it, the capture keeps its first {RECORDED_BODY_LIMIT:,}"
    )
    capture = read_capture(Path(str(result.exchange.capture)))
    assert capture.request is not None
    assert len(capture.request.body) == RECORDED_BODY_LIMIT


def test_a_burst_of_upstream_reads_is_recorded_read_by_read() -> None:
    """Upstream sends 3,000 reads as fast as it can: the client gets every byte (however
    its writes were joined) and the capture keeps every byte in the tap's network reads of
    it, each with its own time (a read is one network read: a burst's writes that arrive
    together are one read — see core/tap/upstream_body.py)."""
    reads = [chat_frame(f"t{i}") for i in range(3000)] + [FINAL]
    collector = Collector()
    with (
        ScriptedUpstream() as upstream,
        TapServer(upstream.url, port=0, captures=CaptureStore(), listener=collector) as tap,
        httpx.Client(timeout=30) as client,
    ):
        upstream.script.reads = reads
        got = client.post(tap.root_url + CHAT, json={"stream": True}).content
        [result] = collector.wait(timeout=30)
    assert got == b"".join(reads)
    assert (result.outcome, result.frames, result.bytes) == ("completed", 3002, len(got))
    capture = read_capture(Path(str(result.exchange.capture)))
    recorded = [data for _t, data in capture.reads]
    times = [t for t, _data in capture.reads]
    assert b"".join(recorded) == got
    assert times == sorted(times)
