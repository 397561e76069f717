"""TurnRunner: coalesced flushes with an exact final state, and a prompt Stop."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
import qasync

from streamscope.core.net.client import StreamClient
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.ui.chat.turn_runner import TurnRunner
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from support.rawhttp import RawServer, chunk, head


def frame(text: str) -> bytes:
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    yield srv
    srv.close()


def spec(server: RawServer):  # type: ignore[no-untyped-def]
    conv = Conversation(messages=[Message("user", "hi")])
    return get_dialect("openai").build_request(conv, base_url=server.url + "/v1", model="m")


def test_many_deltas_arrive_in_few_flushes_with_exact_text(
    server: RawServer, aloop: qasync.QEventLoop
) -> None:
    n = 3000

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(n):
            w.write(chunk(frame(f"{i},")))
            if i % 50 == 0:
                await w.drain()
                await asyncio.sleep(0.001)
        w.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    server.handler = handler
    runner = TurnRunner(StreamClient())
    batches: list[ProgressBatch] = []
    started: list[TurnStart] = []
    finished: list[Turn] = []
    order: list[str] = []
    runner.turnStarted.connect(started.append)
    runner.turnProgressed.connect(lambda b: (batches.append(b), order.append("p")))
    runner.turnFinished.connect(lambda t: (finished.append(t), order.append("f")))

    async def main() -> Turn | None:
        runner.start(spec(server), dialect="openai")
        turn = await runner.wait()
        await runner.client.aclose()
        return turn

    turn = aloop.run_until_complete(main())
    assert turn is not None and turn.outcome is Outcome.COMPLETED
    expected = "".join(f"{i}," for i in range(n))
    assert "".join(b.delta.text for b in batches if b.delta is not None) == expected
    assert turn.text == expected
    assert sum(len(b.rows) for b in batches) == n + 1
    assert b"".join(d for b in batches for d, _ in b.reads) == server_body(n)
    assert len(started) == 1 and finished == [turn]
    assert order[-1] == "f" and "f" not in order[:-1]
    assert runner.flushes == len(batches)
    assert runner.flushes < n / 10  # coalesced, not one flush per delta


def server_body(n: int) -> bytes:
    return b"".join(frame(f"{i},") for i in range(n)) + b"data: [DONE]\n\n"


def test_stop_returns_within_half_a_second_and_keeps_partial_text(
    server: RawServer, aloop: qasync.QEventLoop
) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(1000):
            w.write(chunk(frame(f"w{i} ")))
            await w.drain()
            await asyncio.sleep(0.05)

    server.handler = handler
    runner = TurnRunner(StreamClient())
    finished: list[Turn] = []
    runner.turnFinished.connect(finished.append)

    async def main() -> float:
        runner.start(spec(server), dialect="openai")
        await asyncio.sleep(0.5)
        t = time.monotonic()
        runner.stop()
        await runner.wait()
        took = time.monotonic() - t
        await runner.client.aclose()
        return took

    took = aloop.run_until_complete(main())
    assert took < 0.5
    [turn] = finished
    assert turn.outcome is Outcome.CANCELLED
    assert turn.text.startswith("w0 ")
    assert not runner.running


def test_main_thread_collector_collects_cycles_on_schedule(qapp: object) -> None:
    import gc

    from streamscope.ui.shell.gc_guard import MainThreadCollector

    gc.enable()
    collector = MainThreadCollector(interval_ms=10_000)
    try:
        assert not gc.isenabled()
        gc.collect()
        for _ in range(gc.get_threshold()[0] + 10):
            cycle: list[object] = []
            cycle.append(cycle)
        assert collector.check() == 0
        assert collector.check() is None  # nothing over the threshold now
    finally:
        collector.stop()
    assert gc.isenabled()


def test_a_worker_that_cannot_start_leaves_the_turn_to_this_thread(
    server: RawServer, aloop: qasync.QEventLoop
) -> None:
    from streamscope.core.net.worker import StreamWorker

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(frame("hello")) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    server.handler = handler
    broken = StreamWorker(command=lambda fd, _board: ["/nonexistent/streamscope-worker", str(fd)])
    runner = TurnRunner(StreamClient(), worker=broken)
    batches: list[ProgressBatch] = []
    runner.turnProgressed.connect(batches.append)

    async def main() -> Turn | None:
        runner.start(spec(server), dialect="openai")
        turn = await runner.wait()
        await runner.aclose()
        return turn

    turn = aloop.run_until_complete(main())
    assert turn is not None and turn.outcome is Outcome.COMPLETED and turn.text == "hello"
    assert runner.worker is None  # not tried again
    assert sum(len(b.rows) for b in batches) == 2


def test_a_turn_read_here_reports_its_arrivals_as_the_worker_does(
    server: RawServer, aloop: qasync.QEventLoop
) -> None:
    """No stream worker: the runner's own reads fill a private arrival board, which the
    TurnStart points at — the same numbers the worker's board would hold."""

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(frame("a")))
        await w.drain()
        await asyncio.sleep(0.1)  # (reads more than MARK_STEP apart: each one marked)
        w.write(chunk(b": keep-alive\n\n"))
        await w.drain()
        await asyncio.sleep(0.1)
        w.write(chunk(frame("b") + b"data: [DONE]\n\n") + b"0\r\n\r\n")

    server.handler = handler
    runner = TurnRunner(StreamClient(), warm_up=False)
    started: list[TurnStart] = []
    batches: list[ProgressBatch] = []
    runner.turnStarted.connect(started.append)
    runner.turnProgressed.connect(batches.append)

    async def main() -> Turn | None:
        runner.start(spec(server), dialect="openai")
        turn = await runner.wait()
        await runner.aclose()
        return turn

    turn = aloop.run_until_complete(main())
    assert turn is not None and turn.outcome is Outcome.COMPLETED and turn.text == "ab"
    source = started[0].arrivals
    assert source is not None
    reads = [r for b in batches for r in b.reads]
    size = sum(len(d) for d, _t in reads)
    assert len(reads) == 3
    arrived = source(size)
    assert arrived is not None
    assert (arrived.first, arrived.read, arrived.bytes) == (reads[0][1], reads[-1][1], size)
    assert (arrived.data, arrived.progress, arrived.count) == (reads[2][1], reads[2][1], 2)
    assert arrived.keepalive == reads[1][1]
    assert arrived.ended and arrived.unshown_since is None
    assert source(len(reads[0][0])).unshown_since == reads[1][1]  # type: ignore[union-attr]
