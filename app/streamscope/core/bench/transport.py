"""The bench's HTTP/1.1 client: one connection, one exchange at a time, each read stamped
before any parsing — by the kernel, with the moment its bytes reached the socket
(:mod:`~streamscope.core.bench.kernel_stamps`: Linux, plain http), else in ``data_received``,
the first Python code that sees them.

Why not httpx here: a load run must not make its own numbers. A single pooled
``httpx.AsyncClient`` shared by all streams drifts under concurrency (its pool and anyio
layers cost tens of microseconds per read, and every stream waits on them); this is an
``asyncio.Protocol`` with ``h11`` for the framing and nothing else per read. Every worker owns
its connections (:class:`Connection`): none is shared between streams. ``tests/benchmarks/
bench_load.py`` measures it beside a shared-pool httpx client.

Not supported here (use ``streamscope send`` for these): proxies, client certificates,
HTTP/2, compressed bodies (requests say ``Accept-Encoding: identity``).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import urlsplit

import h11

from streamscope.core.bench import kernel_stamps

__all__ = ["Connection", "Exchange", "ReadStamps", "Target", "connect"]

ReadStamps = Literal["kernel", "user"]
"""Who stamps a read: the kernel (its receive time, where it can: see
:mod:`~streamscope.core.bench.kernel_stamps`) or this process (in ``data_received``)."""

MAX_ERROR_BODY = 1 << 20


@dataclass(frozen=True, slots=True)
class Target:
    """Where requests go: scheme, host, port, and the request target (path and query)."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def of(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, parts.hostname, port, path)

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(slots=True)
class Exchange:
    """One request as it went: times are ``time.monotonic()`` (absolute), reads are the
    body bytes each network read carried, with the read's time."""

    index: int
    prompt: int = 0
    warmup: bool = False
    scheduled: float = 0.0
    sent: float | None = None
    headers_at: float | None = None
    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    error_body: bytes = b""
    end: str | None = None
    """``eof``, ``broken``, ``connect_error``, ``first_byte_timeout``, ``idle_timeout`` or
    ``cancelled`` (the :data:`~streamscope.core.turn.outcome.EndKind` a capture keeps)."""
    detail: str = ""
    ended: float | None = None
    worker: int | None = None
    """The closed loop's worker that sent it (``None`` in the open loop)."""

    @property
    def last_read(self) -> float | None:
        return self.reads[-1][0] if self.reads else self.headers_at


class _Wire(Protocol):
    """What a connection writes to: an asyncio transport or a kernel-stamped socket."""

    def write(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection (see the module docstring). :meth:`exchange` sends a request
    and resolves when its response has ended; the connection is reusable afterwards when
    :attr:`reusable`. Fed by an asyncio transport (``data_received``: the read stamped
    there) or by a :class:`~streamscope.core.bench.kernel_stamps.KernelStampedSocket`
    (:meth:`received` with the kernel's time)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._h11 = h11.Connection(h11.CLIENT)
        self._transport: _Wire | None = None
        self._current: Exchange | None = None
        self._done: asyncio.Future[None] | None = None
        self.lost = False

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def attach(self, transport: kernel_stamps.KernelStampedSocket) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self.received(data, self._clock())  # (the read's time: before anything looks at it)

    def received(self, data: bytes, t: float) -> None:
        """``data`` read at ``t`` (the runner's clock)."""
        ex = self._current
        if ex is None:
            return  # (bytes nobody asked for: the next exchange's h11 refuses them)
        conn = self._h11
        try:
            conn.receive_data(data)
            parts: list[bytes] = []
            while True:
                event = conn.next_event()
                kind = type(event)
                if kind is h11.Data:
                    parts.append(bytes(event.data))  # type: ignore[union-attr]
                elif event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                elif kind is h11.Response:
                    ex.headers_at = t
                    ex.status = event.status_code  # type: ignore[union-attr]
                    ex.headers = [
                        (k.decode("latin-1"), v.decode("latin-1"))
                        for k, v in event.headers  # type: ignore[union-attr]
                    ]
                elif kind is h11.EndOfMessage:
                    self._keep(ex, parts, t)
                    parts = []
                    self._finish("eof")
                    return
                elif kind is h11.ConnectionClosed:
                    break
        except h11.RemoteProtocolError as exc:
            self._keep(ex, parts, t)
            self._finish("broken", f"RemoteProtocolError: {exc}")
            self.close()
            return
        self._keep(ex, parts, t)

    def _keep(self, ex: Exchange, parts: list[bytes], t: float) -> None:
        if not parts:
            return
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        if ex.status is not None and ex.status >= 400:
            if len(ex.error_body) < MAX_ERROR_BODY:
                ex.error_body += data[: MAX_ERROR_BODY - len(ex.error_body)]
        else:
            ex.reads.append((t, data))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._current is None:
            return
        try:  # (a body delimited by the connection's end ends cleanly here)
            self._h11.receive_data(b"")
            event = self._h11.next_event()
        except h11.RemoteProtocolError:
            event = None
        if type(event) is h11.EndOfMessage:
            self._finish("eof")
        else:
            self._finish("broken", f"connection closed: {exc}" if exc else "connection closed")

    # -- exchanges ----------------------------------------------------------------------------

    @property
    def reusable(self) -> bool:
        return not self.lost and self._h11.our_state is h11.IDLE

    async def exchange(self, ex: Exchange, request: tuple[h11.Request, bytes]) -> None:
        """Send ``request`` (its head and body) and record the answer in ``ex``."""
        assert self._transport is not None and self._current is None
        conn = self._h11
        if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
            conn.start_next_cycle()
        head, body = request
        data = b"".join(
            conn.send(event) or b"" for event in (head, h11.Data(data=body), h11.EndOfMessage())
        )
        self._current = ex
        self._done = asyncio.get_running_loop().create_future()
        ex.sent = self._clock()
        self._transport.write(data)
        try:
            await self._done
        finally:
            self._current = None
            if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                conn.start_next_cycle()
            elif not self.lost:
                self.close()

    def give_up(self, end: str, detail: str = "") -> None:
        """End the current exchange now (a timeout, a cancel) and close the connection."""
        self._finish(end, detail)
        self.close()

    def _finish(self, end: str, detail: str = "") -> None:
        ex, done = self._current, self._done
        if ex is not None and ex.end is None:
            ex.end, ex.detail, ex.ended = end, detail, self._clock()
        if done is not None and not done.done():
            done.set_result(None)

    def close(self) -> None:
        self.lost = True
        if self._transport is not None:
            self._transport.close()


def request_of(target: Target, headers: dict[str, str], body: bytes) -> tuple[h11.Request, bytes]:
    """An h11 request head for ``target`` with ``headers`` (plus Host, Content-Length and
    ``Accept-Encoding: identity``), and its body."""
    merged = {
        "host": target.authority,
        "accept-encoding": "identity",
        "user-agent": "streamscope-bench",
    }
    merged["content-type"] = "application/json"
    merged.update({k.lower(): v for k, v in headers.items()})
    merged["content-length"] = str(len(body))
    return h11.Request(method="POST", target=target.path, headers=list(merged.items())), body


_TLS: ssl.SSLContext | None = None


async def connect(
    target: Target,
    clock: Callable[[], float] = time.monotonic,
    *,
    stamps: ReadStamps = "user",
    wake_lag: array[float] | None = None,
) -> Connection:
    """A new :class:`Connection` to ``target`` (TLS for https, verified with the system's
    trust store); ``OSError`` or ``ssl.SSLError`` when it cannot be made. ``stamps="kernel"``
    has its reads stamped by the kernel where that can be done (plain http on Linux, the
    monotonic clock; else as ``"user"``), each read's wake lag appended to ``wake_lag``."""
    if (
        stamps == "kernel"
        and target.scheme == "http"
        and clock is time.monotonic
        and kernel_stamps.available()
    ):
        return await kernel_stamps.open_stamped(
            target.host, target.port, lambda: Connection(clock), clock, wake_lag
        )
    global _TLS
    loop = asyncio.get_running_loop()
    tls = None
    if target.scheme == "https":
        tls = _TLS = _TLS or ssl.create_default_context()
    _, protocol = await loop.create_connection(
        lambda: Connection(clock),
        target.host,
        target.port,
        ssl=tls,
        server_hostname=target.host if tls else None,
    )
    return protocol
