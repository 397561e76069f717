"""A bench run beside a window: :func:`~streamscope.core.bench.session.run_bench` on a thread
of its own, with its own asyncio loop.

The load itself runs in its own process (:mod:`.runner_process`); what is left in the
calling process — turning each finished request into a capture and its figures — must not
run on the window's event loop either, or a burst of finished requests would hold the UI.
:class:`BackgroundBench` runs it on a thread; the window takes what is new when it paints
(:meth:`BackgroundBench.take`), and is told that something is new by ``on_news``, called on
the bench's thread at most once until the next :meth:`take` (so a window that paints at
4 Hz is woken at most 4 times a second, however fast requests end).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.session import BenchPlan, Progress, run_bench
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture

__all__ = ["BackgroundBench", "BenchNews", "Finished"]


@dataclass(frozen=True, slots=True)
class Finished:
    """One request, measured: its step and its figures (``metrics.capture``: the capture's
    path, when the run writes captures)."""

    step: int
    metrics: RequestMetrics


@dataclass(frozen=True, slots=True)
class BenchNews:
    """What :meth:`BackgroundBench.take` hands over: the requests measured since the last
    take (in the order they ended), the latest progress, and — once the run is over — its
    report or why it failed."""

    finished: list[Finished]
    progress: Progress | None
    done: bool
    report: dict[str, Any] | None
    error: str | None


class BackgroundBench:
    """See the module docstring. One run per instance."""

    def __init__(self, plan: BenchPlan, *, out: Path | None, on_news: Callable[[], None]) -> None:
        self.plan = plan
        self.out = out
        self._on_news = on_news
        self._lock = threading.Lock()
        self._finished: list[Finished] = []
        self._progress: Progress | None = None
        self._done = False
        self._report: dict[str, Any] | None = None
        self._error: str | None = None
        self._told = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[dict[str, Any]] | None = None
        self._stop_asked = False
        self._thread = threading.Thread(target=self._main, name="bench-session", daemon=True)

    # -- the window's side ------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the run: requests in flight end as cancelled; the report covers what ended."""
        with self._lock:
            self._stop_asked = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # (the loop closed meanwhile)
                loop.call_soon_threadsafe(task.cancel)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run's thread; ``True`` when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def take(self) -> BenchNews:
        with self._lock:
            finished, self._finished = self._finished, []
            self._told = False
            progress = None if self._progress is None else replace(self._progress)
            if progress is not None:
                progress.outcomes = self._progress.outcomes.copy()  # type: ignore[union-attr]
            return BenchNews(finished, progress, self._done, self._report, self._error)

    # -- the bench's thread -----------------------------------------------------------------

    def _tell(self) -> None:
        """Under the lock: note that the window should take, once until it does."""
        if self._told:
            return
        self._told = True
        self._on_news()

    def _on_request(self, step: int, _ex: Exchange, _cap: Capture, m: RequestMetrics) -> None:
        with self._lock:
            self._finished.append(Finished(step, m))
            self._tell()

    def _on_progress(self, progress: Progress) -> None:
        with self._lock:
            self._progress = progress
            self._tell()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        report: dict[str, Any] | None = None
        error: str | None = None
        try:
            task = loop.create_task(
                run_bench(
                    self.plan,
                    out=self.out,
                    on_progress=self._on_progress,
                    on_request=self._on_request,
                )
            )
            with self._lock:
                self._loop, self._task = loop, task
                if self._stop_asked:
                    task.cancel()
            try:
                report = loop.run_until_complete(task)
            except asyncio.CancelledError:
                error = "stopped"
            except Exception as exc:  # (the window shows it; the thread must end cleanly)
                error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._loop = None
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        with self._lock:
            self._done, self._report, self._error = True, report, error
            self._told = False
            self._tell()
