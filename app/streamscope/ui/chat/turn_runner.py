"""The one QObject that owns a turn's asyncio task and turns core callbacks into Qt signals.

Core observer callbacks arrive per network read (or per worker batch); widgets must not
repaint per read. The runner appends everything to a pending
:class:`~streamscope.core.turn.progress.Progress` batch, sealed every
:data:`~streamscope.ui.base.pacing.MAX_BATCH_FRAMES` frames, and the window's
:class:`~streamscope.ui.base.paint_clock.PaintClock` has it deliver them (see
:mod:`streamscope.ui.base.pacing`). At the end of a turn everything pending is delivered
synchronously, then ``turnFinished`` is emitted, so listeners always see every byte — and
the reducer's last delta — before the outcome.

Each live turn is recorded as a capture (written as it streams, into ``captures`` when the
owner gives the profile's store); ``turnRecorded`` follows once its last line is written.

Signals (coarse, few):
    turnStarted(TurnStart)        the request is about to go out
    responseStarted(int, list)    status and headers
    turnProgressed(ProgressBatch) everything that arrived since the last delivery
    turnFinished(Turn)            the outcome, after the last turnProgressed
    turnRecorded(Capture)         the turn's capture, written (or the one replayed)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from streamscope.core.redact import Scrubber
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.progress import Progress, ProgressEncoder
from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import PaintClock, default_clock
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from streamscope.ui.chat.warm_up import WARM_UP_DELAY_MS, warm_up_network

if TYPE_CHECKING:
    # The network stack (httpx) and the capture store load with the first turn, not with
    # the window: importing this module must stay cheap for a fast first paint.
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture, ReadLog
    from streamscope.core.capture.recorder import CaptureRecorder
    from streamscope.core.net.arrivals import ArrivalSource
    from streamscope.core.net.client import StreamClient, StreamTimeouts, TLSOptions, TurnObserver
    from streamscope.core.net.worker import StreamWorker
    from streamscope.core.turn.pipeline import PipelineUpdate
    from streamscope.core.wire.dialects.base import RequestSpec

_log = logging.getLogger("streamscope")


class _Collector:
    """Core observer (a :class:`~streamscope.core.net.client.TurnObserver`): appends to the
    runner's pending batch (cheap, no Qt calls)."""

    def __init__(self, runner: TurnRunner) -> None:
        self.runner = runner

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self.runner._on_request(spec, body, t)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.runner.responseStarted.emit(status, headers)

    def read(self, data: bytes, t: float) -> None:
        runner = self.runner
        runner._encoder.read(data, t)
        runner._bytes += len(data)
        runner._last_t = t

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        runner = self.runner
        runner._encoder.progressed(update, t)
        runner._after_progress()

    def batch(self, progress: Progress) -> None:
        runner = self.runner
        runner._encoder.absorb(progress)
        runner._bytes += sum(len(data) for data, _t in progress.reads)
        if progress.reads:
            runner._last_t = progress.reads[-1][1]
        runner._after_progress()

    def ended(self, end: StreamEnd) -> None:
        pass

    def finished(self, turn: Turn) -> None:
        self.runner._on_finished(turn)


class TurnRunner(QObject):
    """Runs one turn at a time on the qasync loop; :meth:`stop` cancels it within 0.5 s."""

    turnStarted = Signal(object)
    responseStarted = Signal(int, list)
    turnProgressed = Signal(object)
    turnFinished = Signal(object)
    turnRecorded = Signal(object)

    def __init__(
        self,
        client: StreamClient | None = None,
        parent: QObject | None = None,
        *,
        worker: StreamWorker | None = None,
        clock: PaintClock | None = None,
        warm_up: bool = True,
    ) -> None:
        """``worker``: run live turns in that stream worker process (replays run here);
        without one, or if it cannot start, ``client`` runs them on this thread.
        ``warm_up``: once the window shows, start the worker and load in the background
        what the first send would otherwise do on this thread (not for a runner that only
        replays; see :func:`warm_up_network`, and :attr:`warm_ups` for more)."""
        super().__init__(parent)
        self._client = client
        self._worker = worker
        self.flushes = 0
        self._task: asyncio.Task[Turn] | None = None
        self._encoder = ProgressEncoder()
        self._ready: deque[ProgressBatch] = deque()  # sealed, not yet emitted
        self._bytes = 0
        self._t0 = 0.0
        self._last_t = 0.0
        self._replaying = False
        self._recorded: ReadLog | None = None
        self._timeouts: StreamTimeouts | None = None
        self._arrivals: ArrivalSource | None = None
        self._interval_ms = float(pacing.FLUSH_INTERVAL_MS)
        self.clock = clock if clock is not None else default_clock()
        self.clock.add_source(self._deliver)
        self.last_turn: Turn | None = None
        self.last_capture: Capture | None = None
        """The capture of the last turn (recorded live, or the one replayed), once written."""
        self.last_saved_turn: Turn | None = None
        """The last turn as it is saved and exported (its secrets masked)."""
        self.captures: CaptureStore | None = None
        """Where live turns' captures are written (``None``: kept in memory only)."""
        self.capture_id: str | None = None
        self._capture: Capture | None = None
        self._recorder: CaptureRecorder | None = None
        self._recording: asyncio.Future[Capture] | None = None
        self._closed = False  # (aclose() ran: no warm-up starts the worker again)
        self.warm_ups: list[Callable[[], object]] = []
        """Called (on this thread: quick) when the runner warms up: what else the first
        send needs ready (the built-in demo's modules)."""
        self.warming: threading.Thread | None = None
        """The warm-up's background loading, once started (:func:`warm_up_network`)."""
        # Once the event loop runs (the window has painted), load the HTTP stack's lazy
        # parts in the background, so the first send does not import them on the UI thread.
        if warm_up:
            QTimer.singleShot(0, lambda: QTimer.singleShot(WARM_UP_DELAY_MS, self._warm_up))

    def _warm_up(self) -> None:
        if self._closed:  # (the window closed before its warm-up was due)
            return
        self.warming = warm_up_network(http=self._worker is None)
        for warm in self.warm_ups:
            warm()
        if self._worker is None:
            return
        # The first send should not wait for the worker process to start and import.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # Qt runs without an asyncio loop: the first send starts it
            return
        self._warming = loop.create_task(self._worker.start())
        self._warming.add_done_callback(_consume_result)

    async def warmed(self) -> None:
        """Wait (without blocking the loop) until the warm-up's background loading is done,
        if it runs: the first send waits for it rather than do the same on this thread —
        two threads importing one module wait for each other, and detecting the keyring's
        backend twice is twice the work."""
        while self.warming is not None and self.warming.is_alive():
            await asyncio.sleep(0.01)

    @property
    def worker(self) -> StreamWorker | None:
        """The stream worker live turns run in (``None``: they run on this thread)."""
        return self._worker

    @property
    def client(self) -> StreamClient:
        """The HTTP client, created on first use (the window paints before httpx loads)."""
        if self._client is None:
            from streamscope.core.net.client import StreamClient

            self._client = StreamClient()
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client if one was made, and stop the worker process."""
        self._closed = True
        if self._client is not None:
            await self._client.aclose()
        if self._worker is not None:
            await self._worker.aclose()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(
        self,
        spec: RequestSpec,
        *,
        dialect: str,
        timeouts: StreamTimeouts | None = None,
        tls: TLSOptions | None = None,
        observers: Sequence[TurnObserver] = (),
    ) -> asyncio.Task[Turn]:
        """Start a turn (the previous one must have finished); it is recorded as a capture
        (:attr:`last_capture` once it ended). ``observers`` see the turn too, before the
        runner's own collector."""
        from streamscope.core.capture.recorder import CaptureRecorder
        from streamscope.core.net.options import StreamTimeouts, TLSOptions

        timeouts = timeouts if timeouts is not None else StreamTimeouts()
        tls = tls if tls is not None else TLSOptions()
        capture_id = self.captures.begin() if self.captures is not None else None
        path = self.captures.path(capture_id) if self.captures and capture_id else None
        secrets = (tls.proxy.password,) if tls.proxy.password else ()
        recorder = CaptureRecorder(dialect, path=path, secrets=secrets)
        observer = self._prepare(dialect, (recorder, *observers))
        self._recorder, self.capture_id = recorder, capture_id
        self._timeouts = timeouts
        return self._own(self._run(spec, dialect, timeouts, tls, observer))

    async def _run(
        self,
        spec: RequestSpec,
        dialect: str,
        timeouts: StreamTimeouts,
        tls: TLSOptions,
        observer: TurnObserver,
    ) -> Turn:
        worker = self._worker
        if worker is not None:
            from streamscope.core.net.worker import WorkerUnavailable

            try:
                return await worker.run_turn(
                    spec,
                    dialect=dialect,
                    timeouts=timeouts,
                    tls=tls,
                    observer=observer,
                    arrivals=self._use_arrivals,
                )
            except WorkerUnavailable as exc:
                _log.warning("%s; streaming in the window's process instead", exc)
                self._worker = None
        from streamscope.core.net.arrivals import ArrivalBoard
        from streamscope.core.turn.observer import MultiObserver

        board = ArrivalBoard.private()  # (the reads come here: the same board, unshared)
        self._use_arrivals(board.source(0))
        return await self.client.run_turn(
            spec,
            dialect=dialect,
            timeouts=timeouts,
            tls=tls,
            observer=MultiObserver(board.log(0), observer),
        )

    def _use_arrivals(self, source: ArrivalSource) -> None:
        self._arrivals = source

    def start_replay(
        self, capture: Capture, *, speed: float | None = None, dialect: str | None = None
    ) -> asyncio.Task[Turn]:
        """Replay a capture through the same pipeline and the same signals as a live turn:
        instantly (``speed=None``), at the recorded pace (1.0) or faster."""
        from streamscope.core.capture.replay import replay_capture

        observer = self._prepare(dialect or capture.dialect, ())
        self._replaying = True
        self._recorded = capture.reads
        self._capture = capture

        return self._own(replay_capture(capture, speed=speed, observer=observer, dialect=dialect))

    def _prepare(self, dialect: str, observers: Sequence[TurnObserver]) -> TurnObserver:
        if self.running:
            raise RuntimeError("a turn is already running")
        self._encoder = ProgressEncoder()
        self._ready.clear()
        self._bytes = 0
        self._dialect = dialect
        self._replaying = False
        self._recorded = None
        self._capture = None
        self._recorder = None
        self._timeouts = None
        self._arrivals = None
        self.capture_id = None
        self.last_turn = self.last_saved_turn = None
        self.last_capture = None
        collector: TurnObserver = _Collector(self)  # type: ignore[assignment]
        if not observers:
            return collector
        from streamscope.core.turn.observer import MultiObserver

        return MultiObserver(*observers, collector)

    def _own(self, coro: Coroutine[object, object, Turn]) -> asyncio.Task[Turn]:
        self._task = asyncio.ensure_future(coro)
        self._task.add_done_callback(_consume_result)
        return self._task

    def stop(self) -> None:
        """Cancel the running turn; ``turnFinished`` (cancelled) follows promptly."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> Turn | None:
        """Wait for the current turn to end and its capture to be written; its Turn (or
        ``None`` if none ran)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._recording is not None:
            await asyncio.gather(self._recording, return_exceptions=True)
        return self.last_turn

    # -- called by the collector ------------------------------------------------------------

    def _on_request(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self._t0 = t
        recorder = self._recorder
        scrubber = recorder.scrubber if recorder is not None else Scrubber()
        start = TurnStart(
            spec,
            body,
            self._dialect,
            t,
            self._recorded,
            scrubber,
            self.capture_id,
            self._timeouts,
            self._arrivals,
        )
        self.turnStarted.emit(start)

    def _on_finished(self, turn: Turn) -> None:
        self.flush()
        self._encoder = ProgressEncoder()  # (let go of the turn's reducer)
        recorder = self._recorder
        self.last_turn = turn
        self.last_saved_turn = turn.scrubbed(recorder.scrubber) if recorder else turn
        self.turnFinished.emit(turn)
        if recorder is None:  # a replay: its capture is the one replayed
            self._on_recorded(self._capture)
            return
        self._recording = asyncio.wrap_future(recorder.done)
        self._recording.add_done_callback(self._on_recording_done)

    def _on_recording_done(self, future: asyncio.Future[Capture]) -> None:
        if future.cancelled() or future.exception() is not None:
            _log.error("the turn's capture could not be written: %s", future.exception())
            self._on_recorded(None)
            return
        if self.captures is not None and self.capture_id is not None:
            self.captures.complete(self.capture_id)
        self._on_recorded(future.result())

    def _on_recorded(self, capture: Capture | None) -> None:
        self.last_capture = capture
        if capture is not None:
            self.turnRecorded.emit(capture)

    def _after_progress(self) -> None:
        if self._encoder.pending.frame_count >= pacing.MAX_BATCH_FRAMES:
            self._seal()
            if len(self._ready) > pacing.MAX_BACKLOG:
                # The views fall behind (an instant replay, a very fast link): hand them a
                # batch now. This slows the producer down, so the backlog (and the memory
                # it holds: every frame's bytes and events) stays bounded.
                self._emit(self._ready.popleft())
        self.clock.poke(self._deliver, 0 if self._ready else self._interval_ms)

    def _seal(self, *, final: bool = False) -> None:
        """Close the pending batch (its totals are the turn's so far) and start a new one;
        ``final``: also when only the reducer has news (what finishing changed)."""
        if self._encoder.pending.is_empty() and not final:
            return
        batch = self._encoder.take()
        if batch.is_empty():
            return
        batch.total_bytes = self._bytes
        batch.total_frames = self._encoder.frames
        now = self._last_t if self._replaying else time.monotonic()
        batch.elapsed = now - self._t0
        self._ready.append(batch)

    def _deliver(self, deadline: float) -> float | None:
        """The paint clock's source: emit sealed batches (the pending one too, when no
        sealed one waits) until ``deadline``; the delay wanted until the next delivery."""
        if not self._ready:
            self._seal()
        if not self._ready:
            return None
        started = time.perf_counter()
        self._emit(self._ready.popleft())
        while self._ready and time.perf_counter() < deadline:
            self._emit(self._ready.popleft())  # a backlog: more batches in this loop turn
        if self._ready or self._encoder.pending.frame_count >= pacing.MAX_BATCH_FRAMES:
            return 0  # more is waiting: come back after this loop turn
        # A slow delivery stretches the next interval, so a flood cannot starve the loop.
        spent_ms = (time.perf_counter() - started) * 1000
        self._interval_ms = max(pacing.FLUSH_INTERVAL_MS, min(pacing.MAX_INTERVAL_MS, spent_ms * 2))
        return None if self._encoder.pending.is_empty() else self._interval_ms

    def flush(self) -> None:
        """Emit everything that is pending now, oldest first (also at the end of a turn,
        with the reducer's last delta)."""
        self._seal(final=True)
        while self._ready:
            self._emit(self._ready.popleft())

    def _emit(self, batch: ProgressBatch) -> None:
        self.flushes += 1
        self.turnProgressed.emit(batch)


def _consume_result(task: asyncio.Task[Any]) -> None:
    """Retrieve the task's exception so asyncio never logs 'exception was never retrieved'."""
    if not task.cancelled():
        task.exception()
