"""Reads stamped by the kernel: a plain TCP connection whose every read carries the moment
its bytes reached this machine's socket, not the moment the load process got round to them.

Why: on a busy machine the load process is woken some time after a frame has arrived (on
this project's 2-core test machine, ~0.15 ms when idle and 0.3-0.5 ms when 16 streams and a
server share the cores: tests/benchmarks/bench_load.py). A read stamped in ``data_received``
carries that wake-up in every TTFT and gap; the kernel's receive timestamp does not.

How: Linux's ``SO_TIMESTAMPNS`` on the socket, and ``recvmsg()`` instead of ``recv()``: the
kernel hands, with the bytes, the receive time of the last segment they came in
(``CLOCK_REALTIME``). :func:`kernel_time` moves it onto the monotonic clock with the offset
between the two clocks read at that moment (they tick together; only a step of the wall
clock could come in between, and a time it would make implausible is not used). The stamp is
still taken before any parsing; the user-space time of the same read is kept beside it so
how late the process picked each read up is reported too (``read wake lag``).

Only on Linux (the option's number below is Linux's on the architectures listed), plain
``http`` (TLS reads pass through the SSL layer), and the monotonic clock; elsewhere
:mod:`~streamscope.core.bench.transport` stamps reads in ``data_received`` as before.
"""

from __future__ import annotations

import asyncio
import atexit
import platform
import socket
import struct
import sys
import time
from array import array
from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["SO_TIMESTAMPNS", "KernelStampedSocket", "available", "kernel_time", "open_stamped"]

SO_TIMESTAMPNS = 35
"""Linux's ``SO_TIMESTAMPNS`` (= ``SCM_TIMESTAMPNS``) on the architectures in
:data:`_MACHINES` (``asm-generic/socket.h``); the socket module does not name it."""
_MACHINES = frozenset({"x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "riscv64"})
_TIMESPEC = struct.Struct("@ll")  # (struct timespec: time_t and long, native)
_CMSG_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)
READ_SIZE = 256 * 1024
"""The most one read takes (asyncio's selector transports read 256 KiB too)."""
MAX_HELD_S = 60.0
"""A kernel time further than this before the read's own time is taken for a wall-clock
step, not a wait, and not used."""


def available() -> bool:
    """Whether reads can be stamped by the kernel here."""
    return sys.platform.startswith("linux") and platform.machine().lower() in _MACHINES


def kernel_time(ancdata: list[tuple[int, int, bytes]], now: float) -> float | None:
    """The kernel's receive time in ``ancdata`` (``recvmsg``'s) on the monotonic clock, or
    ``None`` when there is none or it is implausible against ``now`` (the monotonic time of
    the read): later than it, or more than :data:`MAX_HELD_S` before it."""
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            offset = time.time_ns() - time.monotonic_ns()
            t: float = (sec * 1_000_000_000 + nsec - offset) / 1e9
            if now - MAX_HELD_S <= t <= now + 1e-6:  # (1 µs: the two clocks read apart)
                return min(t, now)
            return None
    return None


class _Receiver(Protocol):
    """What a :class:`KernelStampedSocket` feeds (the transport's ``Connection``)."""

    def attach(self, transport: KernelStampedSocket) -> None: ...

    def received(self, data: bytes, t: float) -> None: ...

    def connection_lost(self, exc: Exception | None) -> None: ...


R = TypeVar("R", bound=_Receiver)


class KernelStampedSocket:
    """A connected non-blocking TCP socket read with ``recvmsg`` from the event loop's
    selector (``add_reader``), each read handed on as ``received(data, t)`` with its kernel
    time (its user-space time when the kernel gave none). Writes are sent at once, the rest
    (if the socket's buffer is full) when it is writable. The transport a ``Connection``
    uses: ``write`` and ``close``. ``wake_lag`` gets, per read, its user-space time minus
    its kernel time (seconds)."""

    def __init__(
        self,
        sock: socket.socket,
        receiver: _Receiver,
        clock: Callable[[], float],
        wake_lag: array[float] | None = None,
    ) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._receiver = receiver
        self._clock = clock
        self._wake_lag = wake_lag
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()
        self._last = 0.0
        self._closed = False
        self._loop.add_reader(self._fd, self._readable)
        receiver.attach(self)

    def _readable(self) -> None:
        try:
            data, ancdata, _flags, _addr = self._sock.recvmsg(READ_SIZE, _CMSG_SPACE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        now = self._clock()  # (the read's user-space time: before anything looks at its bytes)
        if not data:
            self._lose(None)
            return
        t = kernel_time(ancdata, now)
        if t is None:
            t = now
        elif self._wake_lag is not None:
            self._wake_lag.append(now - t)
        t = self._last = max(t, self._last)  # (reads keep their order)
        self._receiver.received(data, t)

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        if not self._pending:
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._lose(exc)
                return
            if sent == len(data):
                return
            data = data[sent:]
            self._loop.add_writer(self._fd, self._writable)
        self._pending += data

    def _writable(self) -> None:
        try:
            sent = self._sock.send(self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lose(exc)
            return
        del self._pending[:sent]
        if not self._pending:
            self._loop.remove_writer(self._fd)

    def close(self) -> None:
        """Close the socket; the receiver hears ``connection_lost(None)`` soon after (as
        from an asyncio transport)."""
        self._lose(None, soon=True)

    def is_closing(self) -> bool:
        return self._closed

    def _lose(self, exc: Exception | None, soon: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        if self._pending:
            self._loop.remove_writer(self._fd)
            self._pending.clear()
        self._sock.close()
        if soon:
            self._loop.call_soon(self._receiver.connection_lost, exc)
        else:
            self._receiver.connection_lost(exc)


_keeper: socket.socket | None = None


async def _keep_stamping() -> None:
    """Linux turns receive timestamps on for the whole machine while some socket asks for
    them, and does so a little later (a deferred work item): a connection opened then read
    at once may get its first reads unstamped (measured here: 2 reads in 8, on fresh
    connections each closed before the next). So the first call opens a socket that asks for
    them for as long as the process lives, and waits (up to 0.5 s) until a datagram it sends
    itself comes back stamped."""
    global _keeper
    if _keeper is not None:
        return
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    keeper.setblocking(False)
    keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    keeper.bind(("127.0.0.1", 0))
    _keeper = keeper
    atexit.register(keeper.close)
    for _ in range(250):
        try:
            keeper.sendto(b".", keeper.getsockname())
            _data, ancdata, _flags, _addr = keeper.recvmsg(1, _CMSG_SPACE)
        except (BlockingIOError, InterruptedError):
            ancdata = []
        except OSError:  # (then reads are stamped in user space where the kernel gives none)
            return
        if ancdata:
            return
        await asyncio.sleep(0.002)


async def open_stamped(
    host: str,
    port: int,
    receiver: Callable[[], R],
    clock: Callable[[], float],
    wake_lag: array[float] | None = None,
) -> R:
    """Connect to ``host:port`` (each address in turn) with kernel read stamps on; returns
    the receiver, fed by a :class:`KernelStampedSocket`. ``OSError`` if no address
    answers."""
    loop = asyncio.get_running_loop()
    await _keep_stamping()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    error: OSError = OSError(f"no address for {host}:{port}")
    for family, kind, proto, _name, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        protocol = receiver()
        KernelStampedSocket(sock, protocol, clock, wake_lag)
        return protocol
    raise error
