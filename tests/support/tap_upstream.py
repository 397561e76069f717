"""Helpers for the tap's end-to-end tests: a scripted upstream (Starlette under uvicorn, on a
loopback port) whose every byte and every pause the test decides, and a listener that
collects the tap's finished exchanges."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from streamscope.core.tap.proxy import ExchangeResult, TapExchange
from streamscope.core.turn.observer import TurnObserver

SSE = "text/event-stream"


def chat_frame(text: str) -> bytes:
    return (
        b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"' + text.encode() + b'"},"finish_reason":null}]}\n\n'
    )


FINAL = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Script:
    """What the scripted upstream does; ``gates[i]`` must be set before read ``i + 1`` goes."""

    reads: list[bytes] = field(default_factory=list)
    gates: list[threading.Event] = field(default_factory=list)
    cut: bool = False  # drop the connection after the reads (no end of the chunked body)
    stall: threading.Event | None = None  # after the reads, wait for this, then end
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": SSE})
    gzip: bool = False  # one gzip member, sent as the reads' compressed bytes
    repeat: int = 1  # send the reads this many times over (not kept in ``sent``)


class _CutError(Exception):
    pass


class ScriptedUpstream:
    def __init__(self) -> None:
        self.script = Script()
        self.seen: list[Seen] = []
        self.sent: list[bytes] = []  # the exact bytes of each body sent (compressed if so)
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="critical", lifespan="off", loop="asyncio", log_config=None
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ScriptedUpstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the scripted upstream did not start"
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        for gate in self.script.gates:
            gate.set()
        if self.script.stall is not None:
            self.script.stall.set()
        self._thread.join(5)
        self._sock.close()

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        self.seen.append(
            Seen(
                request.method,
                request.url.path,
                request.url.query,
                [(k.decode(), v.decode()) for k, v in request.headers.raw],
                body,
            )
        )
        s = self.script
        reads = s.reads
        headers = dict(s.headers)
        if s.gzip:
            whole = gzip.compress(b"".join(reads), mtime=0)
            cut = len(whole) // 3
            reads = [whole[:cut], whole[cut:]]
            headers["content-encoding"] = "gzip"
        sent = bytearray()
        self.sent.append(b"")
        index = len(self.sent) - 1

        async def body_iter() -> AsyncIterator[bytes]:
            if s.repeat > 1:
                for _ in range(s.repeat):
                    for data in reads:
                        yield data
                return
            for i, data in enumerate(reads):
                if i > 0 and i - 1 < len(s.gates):
                    ok = await asyncio.to_thread(s.gates[i - 1].wait, 10)
                    assert ok, "the test never opened the gate"
                sent.extend(data)
                self.sent[index] = bytes(sent)
                yield data
            if s.stall is not None:
                await asyncio.to_thread(s.stall.wait, 10)
            if s.cut:
                raise _CutError("cut on purpose")

        return StreamingResponse(body_iter(), status_code=s.status, headers=headers)


class Collector:
    """The tap's listener: every finished exchange, and whether one has finished."""

    def __init__(self, observer: TurnObserver | None = None) -> None:
        self.results: list[ExchangeResult] = []
        self.started: list[TapExchange] = []
        self.observer = observer
        self._cond = threading.Condition()

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        self.started.append(exchange)
        return self.observer

    def exchange_finished(self, result: ExchangeResult) -> None:
        with self._cond:
            self.results.append(result)
            self._cond.notify_all()

    def wait(self, count: int = 1, timeout: float = 10.0) -> list[ExchangeResult]:
        with self._cond:
            ok = self._cond.wait_for(lambda: len(self.results) >= count, timeout)
        assert ok, f"{len(self.results)} of {count} exchanges finished"
        return list(self.results)


def json_keys() -> list[str]:
    return [
        "id",
        "method",
        "path",
        "status",
        "outcome",
        "reason",
        "dialect",
        "frames",
        "bytes",
        "ttft_ms",
        "duration_ms",
        "capture",
        "faults",
    ]


def body_of(result: ExchangeResult) -> Any:
    from streamscope.core.capture.format import read_capture

    assert result.exchange.capture is not None
    return read_capture(result.exchange.capture)
