"""The demo endpoint keeps its own time honestly: no Nagle delay on a kept-alive connection,
and pacing on an absolute schedule (relative sleeps drift by their overshoot, every step)."""

from __future__ import annotations

import asyncio
import itertools
import socket
import statistics
import threading
import time

import httpx
from demo_wire_reading import request_for

from streamscope.demo.dialects import demo_dialect
from streamscope.demo.playback import Playback, play
from streamscope.demo.scenarios import SCENARIOS
from streamscope.demo.script import Ask, build_script
from streamscope.demo.server import DemoServer
from streamscope.demo.wire.base import Framing


def test_the_listener_gives_connections_tcp_nodelay() -> None:
    with DemoServer(speed=1000) as srv:
        sock = srv._sock
        assert sock is not None
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY on what it accepts
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def first_byte_ms(client: httpx.Client, url: str, body: object, ports: set[int]) -> float:
    """Milliseconds from sending a request to the first byte of its body (the connection's
    local port goes to ``ports``)."""
    started = time.perf_counter()
    with client.stream("POST", url, json=body) as response:
        chunks = response.iter_raw()
        next(chunks)
        elapsed = (time.perf_counter() - started) * 1000
        ports.add(response.extensions["network_stream"].get_extra_info("client_addr")[1])
        for _ in chunks:
            pass
    return elapsed


def test_ttft_on_a_kept_alive_connection_is_that_of_a_new_one() -> None:
    """Every turn after the first on one connection used to start ~45 ms late (Nagle's
    algorithm meeting the client's delayed ACK): now within a few ms of the first."""
    path, body = request_for("openai", "demo")
    with DemoServer(speed=1000) as srv:
        url = srv.base_url("openai") + path
        with httpx.Client(timeout=5) as warm:  # the server's first request imports things
            first_byte_ms(warm, url, body, set())
        ports: set[int] = set()
        with httpx.Client(timeout=5) as client:
            times = [first_byte_ms(client, url, body, ports) for _ in range(5)]
    assert len(ports) == 1  # one kept-alive connection
    first, later = times[0], times[1:]
    assert statistics.median(later) < first + 20, times  # was ~45 ms more


def yield_times(scenario: str, speed: float) -> list[float]:
    """When the playback loop hands each network write over (monotonic seconds)."""
    ask = Ask(model=scenario, stream=True, last_user="Hi there")
    writer_class = demo_dialect("openai").writer
    steps = build_script(SCENARIOS[scenario], ask, writer_class.interleaves_tool_calls)
    writer = writer_class(ask, Framing())
    playback = Playback(SCENARIOS[scenario], ask, steps, writer, speed, threading.Event())

    async def run() -> list[float]:
        return [time.monotonic() async for _write in play(playback)]

    return asyncio.run(run())


def test_pacing_does_not_drift() -> None:
    """``demo`` at speed 6: a write every 5 ms for ~100 steps. Relative sleeps overshoot
    each step (~0.3-1 ms: timer slack, the loop's turn) and the total drifts by that times
    the steps; an absolute schedule ends on time, whatever each sleep overshoots."""
    times = yield_times("demo", 6.0)
    steps = len(times) - 2  # (the opening write is not paced; the last write is the finish)
    step = SCENARIOS["demo"].delay / 6.0
    assert steps > 90
    # how late each write is against the schedule: bounded (the median of the last ten
    # resists one hiccup of a busy machine), where relative sleeps add up to 50-150 ms
    late = [t - (times[0] + i * step) for i, t in enumerate(times[:-1])]
    assert -0.002 < statistics.median(late[-10:]) < 0.015, late[-10:]
    # and the pace is even: no step much shorter than asked (a late one is caught up on)
    gaps = [b - a for a, b in itertools.pairwise(times[:-1])]
    assert statistics.median(gaps) > step * 0.9
