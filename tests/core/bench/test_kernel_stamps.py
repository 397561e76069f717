"""Reads stamped by the kernel: the time a read's bytes reached the socket, not the time a
busy load process got to them; the clocks' conversion and its guards; the socket's writes
(a send the socket's buffer cannot take at once), its end; and a bench run saying which
stamps it used. Real loopback sockets (127.0.0.1)."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from array import array
from collections.abc import Iterator

import pytest

from streamscope.core.bench import kernel_stamps
from streamscope.core.bench.kernel_stamps import (
    MAX_HELD_S,
    SO_TIMESTAMPNS,
    KernelStampedSocket,
    kernel_time,
    open_stamped,
)
from streamscope.core.bench.load import LoadStep
from streamscope.core.bench.session import BenchPlan, run_bench
from streamscope.demo.server import DemoServer

linux_only = pytest.mark.skipif(not kernel_stamps.available(), reason="kernel stamps: Linux")


def _timespec(t_wall: float) -> list[tuple[int, int, bytes]]:
    ns = round(t_wall * 1e9)
    return [(socket.SOL_SOCKET, SO_TIMESTAMPNS, struct.pack("@ll", ns // 10**9, ns % 10**9))]


def test_the_kernel_time_comes_onto_the_monotonic_clock() -> None:
    now = time.monotonic()
    wall = time.time() - 0.25  # (received a quarter of a second before now)
    t = kernel_time(_timespec(wall), now)
    assert t is not None and t == pytest.approx(now - 0.25, abs=0.005)


@pytest.mark.parametrize(
    ("ago", "why"),
    [
        (-0.5, "after the read itself: a wall-clock step"),
        (MAX_HELD_S + 5, "implausibly long before the read"),
    ],
)
def test_an_implausible_kernel_time_is_not_used(ago: float, why: str) -> None:
    assert kernel_time(_timespec(time.time() - ago), time.monotonic()) is None, why


def test_no_timestamp_no_kernel_time() -> None:
    assert kernel_time([], time.monotonic()) is None
    other = [(socket.SOL_SOCKET, SO_TIMESTAMPNS + 1, b"\0" * 16)]
    assert kernel_time(other, time.monotonic()) is None


class _Recorder:
    """A receiver that keeps what a KernelStampedSocket hands it."""

    def __init__(self) -> None:
        self.reads: list[tuple[bytes, float, float]] = []  # (data, stamp, user-space time)
        self.lost: list[Exception | None] = []
        self.transport: KernelStampedSocket | None = None
        self.ended = asyncio.Event()

    def attach(self, transport: KernelStampedSocket) -> None:
        self.transport = transport

    def received(self, data: bytes, t: float) -> None:
        self.reads.append((data, t, time.monotonic()))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)
        self.ended.set()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.create_server(("127.0.0.1", 0))
    yield sock
    sock.close()


@linux_only
def test_a_read_is_stamped_when_its_bytes_arrived_not_when_it_was_read(
    listener: socket.socket,
) -> None:
    """The server sends while the client's loop is blocked for 0.3 s: the read's stamp is
    the arrival (within 0.1 s of the send), its user-space time 0.3 s later, and the wake
    lag between them is recorded."""
    port = listener.getsockname()[1]
    sent_at: list[float] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(16)  # (the client says it is blocked)
            sent_at.append(time.monotonic())
            conn.sendall(b"hello")
            conn.recv(16)  # (until the client closes)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    lags = array("d")

    async def main() -> _Recorder:
        rec = await open_stamped("127.0.0.1", port, _Recorder, time.monotonic, lags)
        assert rec.transport is not None
        rec.transport.write(b"go")
        time.sleep(0.3)  # (the loop is busy: the bytes wait in the socket)
        while not rec.reads:
            await asyncio.sleep(0.01)
        rec.transport.close()
        await asyncio.wait_for(rec.ended.wait(), 5)
        return rec

    rec = asyncio.run(main())
    server.join(5)
    ((data, stamp, read_at),) = rec.reads
    assert data == b"hello"
    assert sent_at[0] <= stamp < sent_at[0] + 0.1
    assert read_at >= sent_at[0] + 0.25
    (lag,) = lags
    assert lag == pytest.approx(read_at - stamp, abs=0.05) and lag > 0.15
    assert rec.lost == [None]  # (closed once, as an asyncio transport says it)


@linux_only
def test_a_write_larger_than_the_socket_takes_is_sent_whole(listener: socket.socket) -> None:
    """8 MiB written at once while the peer is not reading yet: the rest waits for the
    socket to be writable and goes out in order; the peer's end is an end."""
    port = listener.getsockname()[1]
    payload = bytes(range(256)) * (32 * 1024)
    got = bytearray()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            time.sleep(0.2)
            while len(got) < len(payload):
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                got.extend(chunk)
            conn.sendall(b"ok")

    server = threading.Thread(target=serve, daemon=True)
    server.start()

    async def main() -> _Recorder:
        rec = await open_stamped("127.0.0.1", port, _Recorder, time.monotonic)
        assert rec.transport is not None
        rec.transport.write(payload)
        rec.transport.write(b"")  # (nothing more: order kept)
        await asyncio.wait_for(rec.ended.wait(), 10)  # (the server closes after "ok")
        return rec

    rec = asyncio.run(main())
    server.join(5)
    assert bytes(got) == payload
    assert b"".join(d for d, _t, _u in rec.reads) == b"ok"
    assert rec.lost == [None]  # (the peer's end: EOF)


def test_no_address_that_answers_is_an_os_error(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    listener.close()  # (nobody listens there now)
    with pytest.raises(OSError):
        asyncio.run(open_stamped("127.0.0.1", port, _Recorder, time.monotonic))


# -- a run ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer() as srv:
        yield srv


def _runner(server: DemoServer, **step: object) -> dict[str, object]:
    plan = BenchPlan(
        server.base_url("openai"),
        "demo-bench?ttft=5&itl=1&tokens=4",
        "openai",
        ["hello"],
        [LoadStep(concurrency=2, requests=4, **step)],  # type: ignore[arg-type]
    )
    report = asyncio.run(run_bench(plan))
    runner: dict[str, object] = report["steps"][0]["runner"]
    return runner


@linux_only
def test_a_run_says_its_reads_were_stamped_by_the_kernel(server: DemoServer) -> None:
    runner = _runner(server)
    assert runner["read_stamps"] == "kernel"
    reads = runner["kernel_stamped_reads"]
    assert isinstance(reads, int) and reads >= runner["reads"]  # type: ignore[operator]
    p50, p99, top = (runner[f"read_wake_lag_{k}_ms"] for k in ("p50", "p99", "max"))
    assert isinstance(p50, float) and isinstance(p99, float) and isinstance(top, float)
    assert 0 <= p50 <= p99 <= top


def test_a_run_with_user_stamps_says_so(server: DemoServer) -> None:
    runner = _runner(server, read_stamps="user")
    assert runner["read_stamps"] == "user"
    assert runner["kernel_stamped_reads"] == 0
    assert runner["read_wake_lag_p50_ms"] is runner["read_wake_lag_max_ms"] is None


class _ScriptedSocket:
    """A socket whose recvmsg() answers from a script (its fileno is a real one's)."""

    def __init__(self, real: socket.socket, script: list[tuple[bytes, float | None]]) -> None:
        self.real = real
        self.script = script

    def fileno(self) -> int:
        return self.real.fileno()

    def recvmsg(self, size: int, cmsg: int) -> tuple[bytes, list[object], int, None]:
        data, wall = self.script.pop(0)
        return data, (_timespec(wall) if wall is not None else []), 0, None  # type: ignore[return-value]

    def close(self) -> None:
        self.real.close()


def test_reads_keep_their_order_and_a_read_without_a_kernel_time_keeps_its_own() -> None:
    """Kernel times 0.3 s and 0.4 s ago, then one earlier than the last (a wall-clock
    adjustment between): that read is stamped with the last read's time, not before it;
    a read the kernel did not stamp gets its user-space time (and no wake lag)."""
    a, b = socket.socketpair()
    lags = array("d")
    now = time.time()
    script: list[tuple[bytes, float | None]] = [
        (b"one", now - 0.4),
        (b"two", now - 0.3),
        (b"three", now - 0.35),
        (b"four", None),
    ]

    async def main() -> _Recorder:
        rec = _Recorder()
        sock = KernelStampedSocket(_ScriptedSocket(a, script), rec, time.monotonic, lags)  # type: ignore[arg-type]
        for _ in range(4):
            sock._readable()
        sock.close()
        await asyncio.wait_for(rec.ended.wait(), 5)
        return rec

    try:
        rec = asyncio.run(main())
    finally:
        b.close()
    stamps = [t for _d, t, _u in rec.reads]
    assert [d for d, _t, _u in rec.reads] == [b"one", b"two", b"three", b"four"]
    assert stamps[1] - stamps[0] == pytest.approx(0.1, abs=0.005)
    assert stamps[2] == stamps[1]  # (never before the read before it)
    assert stamps[3] == pytest.approx(rec.reads[3][2], abs=0.005)  # (its own time)
    assert len(lags) == 3  # (the kernel-stamped ones)


@linux_only
def test_the_first_read_of_each_new_connection_is_stamped() -> None:
    """Linux turns stamping on a little after a socket asks (deferred): without the socket
    kept asking (kernel_stamps._keep_stamping), 1 fresh connection in 4 or so reads its first
    bytes unstamped, when connections come and go."""
    from streamscope.core.bench.kernel_stamps import _CMSG_SPACE, _keep_stamping

    asyncio.run(_keep_stamping())
    unstamped = 0
    for _ in range(10):
        time.sleep(0.05)  # (long enough for the kernel to turn stamping off, were none asking)
        with socket.create_server(("127.0.0.1", 0)) as server:
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            client.connect(server.getsockname())
            conn, _ = server.accept()
            conn.sendall(b"x")
            _data, ancdata, _flags, _addr = client.recvmsg(16, _CMSG_SPACE)
            unstamped += not ancdata
            conn.close()
            client.close()
    assert unstamped == 0
