"""The stream worker process: a live turn read and parsed in a child, watched from here.

Real processes and real sockets: the child is ``python -m streamscope --stream-worker``,
the endpoint the demo server (or a raw server) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest

from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.net.worker import StreamWorker
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import MultiObserver, TurnObserver
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.progress import FrameKind, Progress
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer
from support.rawhttp import RawServer, chunk, head

KEY = "sk-worker-test-SECRET"


class Log(TurnObserver):
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.batches: list[Progress] = []
        self.merged = Progress()
        self.turn: Turn | None = None

    def request_started(self, spec: object, body: bytes, t: float) -> None:  # type: ignore[override]
        self.calls.append("request")

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.calls.append(f"response {status}")

    def batch(self, progress: Progress) -> None:
        self.calls.append("batch")
        self.batches.append(progress)
        self.merged.merge(progress)
        super().batch(progress)

    def ended(self, end: StreamEnd) -> None:
        self.calls.append(f"ended {end.kind}")

    def finished(self, turn: Turn) -> None:
        self.calls.append("finished")
        self.turn = turn


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=200) as server:
        yield server


def spec_for(base_url: str, dialect: str = "openai", model: str = "demo"):  # type: ignore[no-untyped-def]
    conv = Conversation(messages=[Message("user", "Hello there")])
    return get_dialect(dialect).build_request(conv, base_url=base_url, model=model, api_key=KEY)


@pytest.mark.parametrize(
    ("dialect", "model"), [("openai", "demo-tools"), ("anthropic", "demo"), ("gemini", "demo")]
)
def test_a_turn_in_the_worker_equals_the_same_turn_in_process(
    demo: DemoServer, dialect: str, model: str
) -> None:
    spec = spec_for(demo.base_url(dialect), dialect, model)
    timeouts = StreamTimeouts(first_byte=10, idle=5)

    async def main() -> tuple[Turn, Log, Turn, CaptureRecorder]:
        worker = StreamWorker()
        log = Log()
        recorder = CaptureRecorder(dialect)
        try:
            remote = await worker.run_turn(
                spec, dialect=dialect, timeouts=timeouts, observer=MultiObserver(recorder, log)
            )
        finally:
            await worker.aclose()
        client = StreamClient()
        try:
            local = await client.run_turn(spec, dialect=dialect, timeouts=timeouts)
        finally:
            await client.aclose()
        return remote, log, local, recorder

    remote, log, local, recorder = asyncio.run(main())
    assert remote.outcome is Outcome.COMPLETED and log.turn == remote

    def calls(turn: Turn) -> list[tuple[object, ...]]:
        return [(c.index, c.id, c.name, c.arguments) for c in turn.tool_calls]

    assert (remote.text, remote.finish_reason) == (local.text, local.finish_reason)
    assert calls(remote) == calls(local)
    assert log.calls[:2] == ["request", "response 200"]
    # the last batch brings what finishing changed (calls done, last warnings)
    assert log.calls[-3:] == ["ended eof", "batch", "finished"]
    body = b"".join(d for d, _t in log.merged.reads)
    rows = log.merged.rows
    assert (
        b"".join(body[o : o + n] for o, n in zip(rows.offsets, rows.lengths, strict=True)) == body
    )
    assert FrameKind.TEXT in rows.kinds or FrameKind.TOOL in rows.kinds
    # the capture recorder, fed the batches' reads, recorded the stream (key redacted)
    assert recorder.capture.reads.body() == body and recorder.turn == remote
    assert KEY not in repr(recorder.capture.request)


def slow_stream(n: int = 400, pause: float = 0.02):  # type: ignore[no-untyped-def]
    async def handler(_req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(n):
            obj = b'{"choices":[{"index":0,"delta":{"content":"w%d "}}]}' % i
            w.write(chunk(b"data: " + obj + b"\n\n"))
            await w.drain()
            await asyncio.sleep(pause)

    return handler


def test_cancel_returns_promptly_with_the_text_so_far() -> None:
    server = RawServer()
    server.handler = slow_stream()

    async def main() -> tuple[Turn, float, Log]:
        worker = StreamWorker()
        log = Log()
        try:
            task = asyncio.ensure_future(
                worker.run_turn(spec_for(server.url + "/v1"), observer=log)
            )
            while log.merged.delta is None or "w5 " not in log.merged.delta.text:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            took = time.monotonic() - started
            assert log.turn is not None
            return log.turn, took, log
        finally:
            await worker.aclose()

    try:
        turn, took, log = asyncio.run(main())
    finally:
        server.close()
    assert turn.outcome is Outcome.CANCELLED
    assert took < 0.5
    assert turn.text.startswith("w0 w1 w2 w3 w4 w5 ")
    assert log.calls.count("finished") == 1


def test_a_dead_worker_ends_the_turn_as_an_error_and_the_next_turn_starts_a_new_one() -> None:
    server = RawServer()
    server.handler = slow_stream()

    async def main() -> tuple[Turn, Turn, int | None, int | None]:
        worker = StreamWorker()
        log = Log()
        try:
            task = asyncio.ensure_future(
                worker.run_turn(spec_for(server.url + "/v1"), observer=log)
            )
            while log.merged.delta is None or "w3 " not in log.merged.delta.text:
                await asyncio.sleep(0.01)
            first_pid = worker.pid
            assert first_pid is not None
            os.kill(first_pid, signal.SIGKILL)
            lost = await asyncio.wait_for(task, 5)
            server.handler = slow_stream(n=3, pause=0)
            again = await worker.run_turn(spec_for(server.url + "/v1"), observer=Log())
            return lost, again, first_pid, worker.pid
        finally:
            await worker.aclose()

    try:
        lost, again, first_pid, second_pid = asyncio.run(main())
    finally:
        server.close()
    assert lost.outcome is Outcome.ERROR and "worker" in lost.reason
    assert lost.text.startswith("w0 w1 w2 w3 ")  # what arrived is kept
    assert again.outcome is Outcome.TRUNCATED and again.text == "w0 w1 w2 "  # (no [DONE])
    assert second_pid != first_pid


def test_the_worker_stops_when_its_parent_closes_it() -> None:
    async def main() -> int | None:
        worker = StreamWorker()
        await worker.start()
        pid = worker.pid
        await worker.aclose()
        return pid

    pid = asyncio.run(main())
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


ORPHAN = r"""
import asyncio, os, sys
from streamscope.core.net.worker import StreamWorker

async def main():
    worker = StreamWorker()
    await worker.start()
    print(worker.pid, flush=True)
    os._exit(0)  # the window's process dies without closing anything

asyncio.run(main())
"""


def test_the_worker_exits_when_the_window_process_dies() -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", ORPHAN], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.strip())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return  # gone (reaped by init: it was its own session's leader)
        try:  # a zombie still answers kill(0): look at its state
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"the stream worker {pid} outlived its parent")
