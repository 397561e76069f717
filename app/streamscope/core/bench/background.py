"""A bench run beside a window: :func:`~streamscope.core.bench.session.run_bench` in a process
of its own, ``streamscope --bench-session FD``.

The load runs in its own process already (:mod:`.runner_process`). What
:func:`~streamscope.core.bench.session.run_bench` does beside it — replaying each finished
request through the pipeline into a capture and its figures, writing the capture — is
Python-heavy and comes in bursts (a closed loop's requests end together): on a thread of the
window's process it would take the GIL from the window for tens of milliseconds each time
(measured: worst window stall 50–70 ms at c = 16, against 30 ms in a process of its own). So
it runs in a second child, and sends the window only each request's figures.

:class:`BackgroundBench` is the window's handle: a thread reads the child's messages; the
window takes what is new when it paints (:meth:`BackgroundBench.take`) and is told something
is new by ``on_news``, called on that thread at most once until the next :meth:`take`. The
plan, the API key in it included, travels only over the private socket pair.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.session import BenchPlan, Progress, run_bench
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture
from streamscope.core.net.messages import helper_command, pack, receive, receive_blocking

__all__ = ["SESSION_FLAG", "BackgroundBench", "BenchNews", "Finished", "StepProgress"]

SESSION_FLAG = "--bench-session"
SESSION_NICE = 5
"""The measuring process yields the CPU to the window (and to the load process, whose
figures are stamps: not niced)."""


@dataclass(frozen=True, slots=True)
class Finished:
    """One request, measured: its step and its figures (``metrics.capture``: the capture's
    path under the run's folder, when the run writes captures)."""

    step: int
    metrics: RequestMetrics


@dataclass(slots=True)
class StepProgress:
    """Where a step is (:class:`~streamscope.core.bench.session.Progress` without its live
    summary: the window keeps its own figures)."""

    step: int
    label: str
    total: int | None
    done: int = 0
    sent: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def in_flight(self) -> int:
        return max(0, self.sent - self.done)


@dataclass(frozen=True, slots=True)
class BenchNews:
    """What :meth:`BackgroundBench.take` hands over: the requests measured since the last
    take (in the order they ended), the latest progress, and — once the run is over — its
    report or why it ended early."""

    finished: list[Finished]
    progress: StepProgress | None
    done: bool
    report: dict[str, Any] | None
    error: str | None


class BackgroundBench:
    """See the module docstring. One run per instance."""

    def __init__(
        self,
        plan: BenchPlan,
        *,
        out: Path | None,
        on_news: Callable[[], None],
        command: Callable[[int], list[str]] | None = None,
    ) -> None:
        self.plan = plan
        self.out = out
        self._on_news = on_news
        self._command = command or (lambda fd: helper_command(SESSION_FLAG, fd))
        self._lock = threading.Lock()
        self._finished: list[Finished] = []
        self._progress: StepProgress | None = None
        self._done = False
        self._report: dict[str, Any] | None = None
        self._error: str | None = None
        self._told = False
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._read, name="bench-session", daemon=True)

    # -- the window's side ------------------------------------------------------------------

    def start(self) -> None:
        """Start the child and the thread that hears it (the spawn happens on that thread:
        starting a process from a big one takes a moment the window should not wait)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the run: requests in flight end as cancelled; the run ends "stopped"."""
        with self._lock:
            sock = self._sock
            self._error = self._error or "stopped"
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.sendall(pack(("stop",)))

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run to end (its processes gone); ``True`` when it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def take(self) -> BenchNews:
        with self._lock:
            finished, self._finished = self._finished, []
            self._told = False
            p = self._progress
            progress = None if p is None else StepProgress(
                p.step, p.label, p.total, p.done, p.sent, dict(p.outcomes)
            )  # fmt: skip
            return BenchNews(finished, progress, self._done, self._report, self._error)

    # -- the reading thread -----------------------------------------------------------------

    def _tell(self) -> None:
        """Under the lock: note that the window should take, once until it does."""
        if not self._told:
            self._told = True
            self._on_news()

    def _read(self) -> None:
        report: dict[str, Any] | None = None
        failure: str | None = None
        parent, child = socket.socketpair()
        try:
            try:
                self._proc = subprocess.Popen(
                    self._command(child.fileno()),
                    pass_fds=(child.fileno(),),
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            finally:
                child.close()
            with self._lock:
                self._sock = parent
                stopping = self._error == "stopped"
            parent.sendall(pack(("run", self.plan, None if self.out is None else str(self.out))))
            if stopping:
                parent.sendall(pack(("stop",)))
            while (message := receive_blocking(parent)) is not None:
                kind, *args = message
                if kind == "request":
                    with self._lock:
                        self._finished.append(Finished(args[0], args[1]))
                        self._tell()
                elif kind == "progress":
                    with self._lock:
                        self._progress = args[0]
                        self._tell()
                elif kind == "report":
                    report = args[0]
                    break
                elif kind == "failed":
                    failure = args[0]
                    break
            else:
                failure = "the bench's process ended unexpectedly"
        except OSError as exc:
            failure = f"could not start the bench: {exc}"
        finally:
            with self._lock:
                self._sock = None
            parent.close()
            self._reap()
        with self._lock:
            self._done, self._report = True, report
            if failure is not None and self._error != "stopped":
                self._error = failure
            self._told = False
            self._tell()

    def _reap(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the child: streamscope --bench-session FD -------------------------------------------------


async def _session(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    message = await receive(reader)
    if message is None or message[0] != "run":
        return
    plan: BenchPlan = message[1]
    out = None if message[2] is None else Path(message[2])

    def on_request(step: int, _ex: Exchange, _capture: Capture, m: RequestMetrics) -> None:
        writer.write(pack(("request", step, m)))

    def on_progress(p: Progress) -> None:
        outcomes = dict(Counter(p.outcomes))
        writer.write(
            pack(("progress", StepProgress(p.step, p.label, p.total, p.done, p.sent, outcomes)))
        )

    run = asyncio.ensure_future(
        run_bench(plan, out=out, on_progress=on_progress, on_request=on_request)
    )
    listen = asyncio.ensure_future(receive(reader))  # ("stop",), or the parent went away
    await asyncio.wait({run, listen}, return_when=asyncio.FIRST_COMPLETED)
    if not run.done():
        run.cancel()
        await asyncio.wait({run})
        writer.write(pack(("failed", "stopped")))
    elif run.cancelled():
        writer.write(pack(("failed", "stopped")))
    elif (exc := run.exception()) is not None:
        writer.write(pack(("failed", f"{type(exc).__name__}: {exc}")))
    else:
        writer.write(pack(("report", run.result())))
    listen.cancel()
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


def session_main(argv: list[str]) -> int:
    """The child process: run one bench for the parent over the socket ``argv[0]``."""
    sock = socket.socket(fileno=int(argv[0]))
    if hasattr(os, "nice"):  # (measuring can wait for the window; the load process is not niced)
        with contextlib.suppress(OSError):
            os.nice(SESSION_NICE)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_session(sock))
    return 0
