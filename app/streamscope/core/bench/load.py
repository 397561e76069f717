"""The load models: a closed loop of C workers, or an open loop on a precomputed schedule.

    stats = await run_step(step, requests, on_exchange)

Closed loop (``step.concurrency``): C workers, worker *w* starting ``w * step.stagger``
seconds after the step, each sending its next request as soon as the previous one ended (its
*scheduled* time: the end of the previous one, so dispatch lag is the worker's own delay).
Open loop (``step.rate``): request *i* is scheduled at ``start + offsets[i]``
(:func:`~streamscope.core.bench.schedule.arrival_offsets`) and sent then, or when a slot frees
if ``step.cap`` requests are in flight — the wait shows as dispatch lag, never as a later
schedule.

Warm-up: the first ``step.warmup`` requests are marked ``warmup`` and the run goes straight
on (no draining between them and the measured ones: the load stays at its level).

Connections: each request runs on a connection no other stream uses at the same time — a
worker keeps its own (``pooled``, reused while the server allows it), or opens one per
request (``new``). In the open loop, idle connections wait in a list for the next request.

Reads are stamped by the kernel where it can (``step.read_stamps``, "kernel" by default:
:mod:`~streamscope.core.bench.kernel_stamps`), else in ``data_received``.

The step also measures the runner itself: event-loop lag (a timer every
:data:`LAG_EVERY_S`: how late it fired), the process's CPU time, and with kernel stamps each
read's wake lag (how long after its bytes arrived the process read them).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import h11

from streamscope.core.bench.schedule import Arrival, arrival_offsets
from streamscope.core.bench.transport import Connection, Exchange, ReadStamps, Target, connect

__all__ = ["LAG_EVERY_S", "LoadRequest", "LoadStep", "StepStats", "run_step"]

LAG_EVERY_S = 0.01
WATCH_EVERY_S = 0.05
"""How often the timeouts of the requests in flight are checked."""

ConnectionMode = Literal["pooled", "new"]


@dataclass(frozen=True, slots=True)
class LoadRequest:
    """One request the run sends (a prompt): its URL, headers and body, ready to go."""

    url: str
    headers: dict[str, str] = field(repr=False)
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class LoadStep:
    """One step of a run: a closed loop (``concurrency``) or an open one (``rate``)."""

    concurrency: int | None = None
    rate: float | None = None
    arrival: Arrival = "poisson"
    burstiness: float = 1.0
    seed: int = 0
    cap: int | None = None
    """Open loop: at most this many requests in flight (``None``: no limit)."""
    requests: int | None = None
    """Measured requests (warm-up excluded); or ``duration``."""
    duration: float | None = None
    warmup: int = 0
    connection: ConnectionMode = "pooled"
    stagger: float = 0.01
    """Closed loop: seconds between the workers' first requests."""
    first_byte_timeout: float = 300.0
    idle_timeout: float = 300.0
    read_stamps: ReadStamps = "kernel"
    """Who stamps each read: the kernel where it can (its receive time), or this process."""

    def __post_init__(self) -> None:
        if (self.concurrency is None) == (self.rate is None):
            raise ValueError("a step is a closed loop (concurrency) or an open one (rate)")
        if self.requests is None and self.duration is None:
            raise ValueError("a step needs a number of requests or a duration")

    @property
    def label(self) -> str:
        return f"c={self.concurrency}" if self.concurrency else f"rate={self.rate:g}/s"


@dataclass(slots=True)
class StepStats:
    """What the runner measured of itself during a step."""

    started: float
    ended: float = 0.0
    cpu_s: float = 0.0
    loop_lag: list[float] = field(default_factory=list)
    """Every lag sample (seconds)."""
    sent: int = 0
    wake_lag: array[float] = field(default_factory=lambda: array("d"))
    """Per kernel-stamped read: its user-space time minus its kernel time (seconds); empty
    when no read was stamped by the kernel."""


class _Run:
    def __init__(
        self,
        step: LoadStep,
        requests: Sequence[LoadRequest],
        on_exchange: Callable[[Exchange, int], None],
        clock: Callable[[], float],
    ) -> None:
        self.step = step
        self.requests = requests
        self.targets = [Target.of(r.url) for r in requests]
        self.heads = [_head(t, r) for t, r in zip(self.targets, requests, strict=True)]
        self.on_exchange = on_exchange
        self.clock = clock
        self.next_index = 0
        self.total = None if step.requests is None else step.requests + step.warmup
        self.stop_at: float | None = None
        self.in_flight: dict[int, tuple[Exchange, Connection]] = {}
        self.stats = StepStats(started=clock())

    def take(self) -> int | None:
        """The next request's index, or ``None`` when the step has sent them all."""
        i = self.next_index
        if self.total is not None and i >= self.total:
            return None
        if self.stop_at is not None and self.clock() >= self.stop_at:
            return None
        self.next_index += 1
        return i

    async def send(
        self, index: int, scheduled: float, conn: Connection | None, worker: int | None = None
    ) -> Connection | None:
        """Send request ``index`` (on ``conn`` if it is reusable, else a new connection);
        returns the connection if it can carry another request."""
        k = index % len(self.requests)
        ex = Exchange(index, k, index < self.step.warmup, scheduled, worker=worker)
        if conn is None or not conn.reusable or self.step.connection == "new":
            if conn is not None:
                conn.close()
            try:
                conn = await connect(
                    self.targets[k],
                    self.clock,
                    stamps=self.step.read_stamps,
                    wake_lag=self.stats.wake_lag,
                )
            except (OSError, ssl.SSLError) as exc:
                ex.sent = ex.ended = self.clock()
                ex.end, ex.detail = "connect_error", f"could not connect: {exc}"
                self._done(ex)
                return None
        self.in_flight[index] = (ex, conn)
        self.stats.sent += 1
        try:
            await conn.exchange(ex, self.heads[k])
        except asyncio.CancelledError:
            conn.give_up("cancelled")
            raise
        finally:
            self.in_flight.pop(index, None)
            self._done(ex)
        return conn if conn.reusable and self.step.connection == "pooled" else None

    def _done(self, ex: Exchange) -> None:
        self.on_exchange(ex, self.stats.sent)

    async def watch(self) -> None:
        """End requests whose first byte or next read is later than the step's timeouts."""
        step = self.step
        while True:
            await asyncio.sleep(WATCH_EVERY_S)
            now = self.clock()
            for ex, conn in list(self.in_flight.values()):
                last = ex.last_read
                if last is None and ex.sent is not None:
                    if now - ex.sent > step.first_byte_timeout:
                        conn.give_up("first_byte_timeout", f"{step.first_byte_timeout:g} s")
                elif last is not None and now - last > step.idle_timeout:
                    conn.give_up("idle_timeout", f"{step.idle_timeout:g} s")


def _head(target: Target, request: LoadRequest) -> tuple[h11.Request, bytes]:
    from streamscope.core.bench.transport import request_of

    return request_of(target, request.headers, request.body)


async def _closed(run: _Run, concurrency: int) -> None:
    start = run.clock()

    async def worker(w: int) -> None:
        ready = start + w * run.step.stagger
        await asyncio.sleep(max(0.0, ready - run.clock()))
        conn: Connection | None = None
        while (index := run.take()) is not None:
            conn = await run.send(index, ready, conn, w)
            ready = run.clock()
        if conn is not None:
            conn.close()

    await asyncio.gather(*(worker(w) for w in range(concurrency)))


async def _open(run: _Run, step: LoadStep) -> None:
    assert step.rate is not None
    count = run.total
    limit = None if step.duration is None else step.duration
    offsets = arrival_offsets(
        rate=step.rate,
        arrival=step.arrival,
        burstiness=step.burstiness,
        seed=step.seed,
        count=count,
        duration=limit,
    )
    run.total = len(offsets)
    idle: list[Connection] = []
    slots = asyncio.Semaphore(step.cap) if step.cap else None
    tasks: set[asyncio.Task[None]] = set()

    async def one(index: int, scheduled: float) -> None:
        try:
            conn = await run.send(index, scheduled, idle.pop() if idle else None)
            if conn is not None:
                idle.append(conn)
        finally:
            if slots is not None:
                slots.release()

    start = run.clock() + 0.001
    for offset in offsets:
        scheduled = start + offset
        delay = scheduled - run.clock()
        if delay > 0:
            await asyncio.sleep(delay)
        if slots is not None:
            await slots.acquire()
        index = run.take()
        if index is None:
            break
        task = asyncio.ensure_future(one(index, scheduled))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.gather(*tasks)
    for conn in idle:
        conn.close()


async def _watch_loop(samples: list[float]) -> None:
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + LAG_EVERY_S
        await asyncio.sleep(LAG_EVERY_S)
        samples.append(loop.time() - due)


async def run_step(
    step: LoadStep,
    requests: Sequence[LoadRequest],
    on_exchange: Callable[[Exchange, int], None],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> StepStats:
    """Run one step; ``on_exchange(exchange, sent_so_far)`` gets every request as it ends
    (warm-up included, marked). Cancelling ends the requests in flight as ``cancelled``."""
    if not requests:
        raise ValueError("no requests to send")
    run = _Run(step, requests, on_exchange, clock)
    cpu0 = time.process_time()
    if step.duration is not None:
        run.stop_at = run.stats.started + step.duration
    helpers = [
        asyncio.ensure_future(_watch_loop(run.stats.loop_lag)),
        asyncio.ensure_future(run.watch()),
    ]
    try:
        if step.concurrency is not None:
            await _closed(run, step.concurrency)
        else:
            await _open(run, step)
    finally:
        for task in helpers:
            task.cancel()
        for task in helpers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        run.stats.ended = clock()
        run.stats.cpu_s = time.process_time() - cpu0
    return run.stats
