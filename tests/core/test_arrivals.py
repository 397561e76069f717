"""The arrival board: what a turn's reader has received, written by one process (or thread)
and read by another at any moment (issue 23).

A child process writes a shared board made here (a real ``mmap`` handed over by descriptor,
as the stream worker gets it); the fields, the marks that date the oldest byte not shown,
several turns, a turn that is not there, a torn read; then the real worker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest

from streamscope.core.net.arrivals import (
    MARK_STEP,
    MARKS,
    SLOT_SIZE,
    SLOTS,
    ArrivalBoard,
)
from streamscope.core.net.worker import StreamWorker
from streamscope.core.turn.liveness import Arrivals
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import Progress
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from support.rawhttp import RawServer, chunk, head

TEXT = (
    b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
)
ROLE = (
    b'data: {"object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant"}}]}\n\n'
)

CHILD = textwrap.dedent(
    """
    import sys
    from streamscope.core.net.arrivals import ArrivalBoard
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import StreamPipeline

    board = ArrivalBoard.attach(int(sys.argv[1]))
    TEXT = {text!r}
    for turn, t0 in ((3, 10.0), (4, 20.0)):
        log = board.log(turn)
        pipe = StreamPipeline("openai", request_sent=t0)
        for i, data in enumerate((TEXT, TEXT, b": keep-alive\\n\\n")):
            t = t0 + 0.5 * (i + 1)
            log.read(data, t)
            log.progressed(pipe.feed(data, t), t)
        if turn == 4:
            log.ended(StreamEnd("eof"))
    print("written", flush=True)
    """
)


@pytest.mark.parametrize("memfd", [True, False], ids=["memfd", "temporary-file"])
def test_a_child_writes_and_the_parent_reads_several_turns(
    memfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not memfd:  # (macOS has no memfd; a sandbox may refuse it)

        def refused(*args: object) -> int:
            raise OSError("memfd_create refused")

        monkeypatch.setattr(os, "memfd_create", refused, raising=False)
    board = ArrivalBoard.create()
    assert board.fd is not None
    code = CHILD.format(text=TEXT)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(board.fd)],
        pass_fds=(board.fd,),
        capture_output=True,
        text=True,
        timeout=60,
    )
    board.close_fd()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "written\n"
    size = 2 * len(TEXT) + len(b": keep-alive\n\n")
    assert board.arrivals(3, size) == Arrivals(
        first=10.5,
        read=11.5,
        data=11.0,
        keepalive=11.5,
        progress=11.0,
        count=2,
        bytes=size,
        ended=False,
        unshown_since=None,
    )
    # turn 4: ended; the views have the first read only: the second arrived at 21.0
    assert board.arrivals(4, len(TEXT)) == Arrivals(
        first=20.5,
        read=21.5,
        data=21.0,
        keepalive=21.5,
        progress=21.0,
        count=2,
        bytes=size,
        ended=True,
        unshown_since=21.0,
    )
    assert board.arrivals(4, 0).unshown_since == 20.5  # (nothing shown yet)
    # a turn that is not there: never written, or its slot taken over by a later turn
    assert board.arrivals(5, 0) is None
    assert board.arrivals(3 + SLOTS, 0) is None
    board.log(3 + SLOTS)
    assert board.arrivals(3, 0) is None
    assert board.arrivals(3 + SLOTS, 0) == Arrivals()


def test_the_marks_date_the_oldest_byte_not_shown_to_within_a_step() -> None:
    board = ArrivalBoard.private()
    log = board.log(1)
    # 10-byte reads every 10 ms from t=100: a mark every 5 reads (one per MARK_STEP)
    for i in range(50):
        log.read(b"x" * 10, 100.0 + 0.01 * i)
    assert MARK_STEP == 0.05
    since = [board.arrivals(1, shown).unshown_since for shown in (0, 10, 49, 50, 255, 499)]  # type: ignore[union-attr]
    assert since == pytest.approx([100.0, 100.0, 100.0, 100.05, 100.25, 100.45])
    for shown in range(0, 500, 7):  # never later than the byte's read, at most a step earlier
        read_at = 100.0 + 0.01 * (shown // 10)
        got = board.arrivals(1, shown).unshown_since  # type: ignore[union-attr]
        assert got is not None and read_at - MARK_STEP < got <= read_at + 1e-9
    assert board.arrivals(1, 500).unshown_since is None  # (all shown)
    assert board.arrivals(1, 600).unshown_since is None


def test_a_drip_marks_every_read() -> None:
    board = ArrivalBoard.private()
    log = board.log(1)
    for t in (1.0, 6.0, 11.0):
        log.read(b"y" * 7, t)
    assert board.arrivals(1, 14).unshown_since == 11.0  # (not 6.0: the newest read)
    assert board.arrivals(1, 7).unshown_since == 6.0


def test_beyond_the_marks_kept_the_lag_is_at_least_the_oldest_mark() -> None:
    board = ArrivalBoard.private()
    log = board.log(1)
    for i in range(MARKS + 10):  # one mark per read
        log.read(b"z", 1000.0 + MARK_STEP * i)
    arrived = board.arrivals(1, 0)
    assert arrived is not None and arrived.bytes == MARKS + 10
    assert arrived.unshown_since == pytest.approx(1000.0 + MARK_STEP * 10)  # (the oldest kept)
    later = board.arrivals(1, 500)
    assert later is not None and later.unshown_since == pytest.approx(1000.0 + MARK_STEP * 500)


def test_keepalives_data_and_bytes_still_arriving_as_the_pipeline_sees_them() -> None:
    board = ArrivalBoard.private()
    log = board.log(7)
    pipe = StreamPipeline("anthropic", request_sent=0.0)
    ping = b"event: ping\ndata: {}\n\n"
    start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c"}}\n\n'
    )
    for data, t in ((start, 1.0), (ping, 2.0), (b": hello\n\n", 3.0), (b"event: content_bl", 4.0)):
        log.read(data, t)
        log.progressed(pipe.feed(data, t), t)
        arrived = board.arrivals(7, 0)
        assert arrived is not None
        if t == 1.0:
            assert (arrived.data, arrived.keepalive) == (1.0, None)
    assert arrived.data == 4.0  # (a frame still arriving is data)
    assert arrived.keepalive == 3.0  # (a ping event and a comment are keep-alives)
    assert arrived.progress is None and arrived.count == 0
    assert arrived.first == 1.0 and arrived.read == 4.0 and not arrived.ended
    log.ended(StreamEnd("eof"))
    assert board.arrivals(7, 0).ended  # type: ignore[union-attr]


def test_a_torn_slot_is_read_again_or_not_at_all() -> None:
    board = ArrivalBoard.private()
    log = board.log(2)
    log.read(b"abc", 5.0)
    assert board.arrivals(2, 0) is not None
    seq = int.from_bytes(board.buffer[0:8], sys.byteorder)
    assert seq % 2 == 0 and seq > 0
    board.buffer[0:8] = (seq + 1).to_bytes(8, sys.byteorder)  # a writer stopped mid-write
    assert board.arrivals(2, 0) is None
    board.buffer[0:8] = (seq + 2).to_bytes(8, sys.byteorder)
    assert board.arrivals(2, 0) == Arrivals(first=5.0, read=5.0, bytes=3, unshown_since=5.0)


def test_a_new_turn_in_a_slot_starts_from_nothing() -> None:
    board = ArrivalBoard(bytearray(SLOTS * SLOT_SIZE))
    first = board.log(1)
    first.read(b"abcdef", 1.0)
    first.ended(StreamEnd("eof"))
    board.log(1 + SLOTS)
    assert board.arrivals(1 + SLOTS, 0) == Arrivals()
    with pytest.raises(ValueError):
        ArrivalBoard(bytearray(SLOT_SIZE), slots=2)


class Batches(TurnObserver):
    def __init__(self) -> None:
        self.merged = Progress()

    def batch(self, progress: Progress) -> None:
        self.merged.merge(progress)


def test_the_stream_worker_writes_every_read_on_the_board() -> None:
    """The real child: what the board says matches what the batches brought, read by read,
    while the stream stalls with the connection open; then the end."""
    server = RawServer()

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(ROLE))
        await w.drain()
        await asyncio.sleep(0.1)
        w.write(chunk(TEXT))
        await w.drain()
        await asyncio.sleep(30)  # a stall

    server.handler = handler
    conv = Conversation(messages=[Message("user", "hi")])
    spec = get_dialect("openai").build_request(conv, base_url=server.url + "/v1", model="m")
    observer = Batches()
    sources: list[object] = []

    async def main() -> None:
        worker = StreamWorker()
        task = asyncio.ensure_future(
            worker.run_turn(spec, observer=observer, arrivals=sources.append)
        )
        try:
            for _ in range(500):
                await asyncio.sleep(0.01)
                if len(observer.merged.reads) >= 2 or task.done():
                    break
            assert len(sources) == 1
            source = sources[0]
            reads = observer.merged.reads
            size = sum(len(d) for d, _t in reads)
            arrived = source(size)  # type: ignore[operator]
            assert arrived == Arrivals(
                first=reads[0][1],
                read=reads[-1][1],
                data=reads[-1][1],
                keepalive=None,
                progress=reads[-1][1],
                count=1,
                bytes=size,
                ended=False,
                unshown_since=None,
            )
            assert source(len(reads[0][0])).unshown_since == reads[1][1]  # type: ignore[operator]
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            assert source(size).ended  # type: ignore[operator]
        finally:
            await worker.aclose()

    try:
        asyncio.run(main())
    finally:
        server.close()
