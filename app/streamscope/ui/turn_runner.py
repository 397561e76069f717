"""The one QObject that owns a turn's asyncio task and turns core callbacks into Qt signals.

Core observer callbacks arrive per network read; widgets must not repaint per read. The
runner appends everything to a pending :class:`ProgressBatch` and a single-shot timer flushes
it at most ``max_flush_hz`` times a second (the interval stretches when a flush was slow,
as qtconsole does). At the end of a turn the pending batch is flushed synchronously, then
``turnFinished`` is emitted, so listeners always see every byte before the outcome.

Signals (coarse, few):
    turnStarted(TurnStart)        the request is about to go out
    responseStarted(int, list)    status and headers
    turnProgressed(ProgressBatch) everything that arrived since the last flush
    turnFinished(Turn)            the outcome, after the last turnProgressed
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, QTimer, Signal

from streamscope.core.capture import Capture, MultiObserver, replay_capture
from streamscope.core.client import StreamClient, StreamTimeouts, TLSOptions, TurnObserver
from streamscope.core.dialects.base import RequestSpec
from streamscope.core.events import ReasoningDelta, StreamEvent, TextDelta
from streamscope.core.pipeline import ParsedFrame, PipelineUpdate
from streamscope.core.turn import Outcome, Turn


@dataclass(frozen=True, slots=True)
class TurnStart:
    """What was sent (``spec`` is unredacted: redact before showing or saving)."""

    spec: RequestSpec
    body: bytes
    dialect: str
    t0: float


@dataclass(slots=True)
class ProgressBatch:
    """Everything that arrived since the previous flush, in arrival order.

    ``reads``: network reads ``(bytes, t)``; ``frames``: decoded frames with the time of
    the read that completed them; ``events``: stream events with their time; ``text`` and
    ``reasoning``: the appended answer / reasoning text; totals are for the whole turn.
    """

    reads: list[tuple[bytes, float]] = field(default_factory=list)
    frames: list[tuple[ParsedFrame, float]] = field(default_factory=list)
    events: list[tuple[StreamEvent, float]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_channel: str | None = None
    total_bytes: int = 0
    total_frames: int = 0
    elapsed: float = 0.0

    def is_empty(self) -> bool:
        return not (self.reads or self.frames or self.events)


class _Collector(TurnObserver):
    """Core observer: appends to the runner's pending batch (cheap, no Qt calls)."""

    def __init__(self, runner: TurnRunner) -> None:
        self.runner = runner

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self.runner._on_request(spec, body, t)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.runner.responseStarted.emit(status, headers)

    def read(self, data: bytes, t: float) -> None:
        runner = self.runner
        runner._pending.reads.append((data, t))
        runner._bytes += len(data)
        runner._last_t = t

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        runner = self.runner
        batch = runner._pending
        for parsed in update.frames:
            batch.frames.append((parsed, t))
        runner._frames += len(update.frames)
        for event in update.events:
            batch.events.append((event, t))
            match event:
                case TextDelta(text):
                    batch.text.append(text)
                case ReasoningDelta(text, channel):
                    batch.reasoning.append(text)
                    batch.reasoning_channel = batch.reasoning_channel or channel
        runner._schedule()

    def finished(self, turn: Turn) -> None:
        self.runner._on_finished(turn)


class TurnRunner(QObject):
    """Runs one turn at a time on the qasync loop; :meth:`stop` cancels it within 0.5 s."""

    turnStarted = Signal(object)
    responseStarted = Signal(int, list)
    turnProgressed = Signal(object)
    turnFinished = Signal(object)

    def __init__(
        self, client: StreamClient, parent: QObject | None = None, max_flush_hz: float = 60.0
    ) -> None:
        super().__init__(parent)
        self.client = client
        self.min_interval_ms = max(1, int(1000 / max_flush_hz))
        self.flushes = 0
        self._task: asyncio.Task[Turn] | None = None
        self._pending = ProgressBatch()
        self._bytes = 0
        self._frames = 0
        self._t0 = 0.0
        self._last_t = 0.0
        self._replaying = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(self.min_interval_ms)
        self._timer.timeout.connect(self.flush)
        self.last_turn: Turn | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(
        self,
        spec: RequestSpec,
        *,
        dialect: str,
        timeouts: StreamTimeouts = StreamTimeouts(),
        tls: TLSOptions = TLSOptions(),
        observers: Sequence[TurnObserver] = (),
    ) -> asyncio.Task[Turn]:
        """Start a turn (the previous one must have finished). ``observers`` see the turn
        too (a capture recorder, say), before the runner's own collector."""
        observer = self._prepare(dialect, observers)
        return self._own(
            self.client.run_turn(
                spec, dialect=dialect, timeouts=timeouts, tls=tls, observer=observer
            )
        )

    def start_replay(
        self, capture: Capture, *, speed: float | None = None, dialect: str | None = None
    ) -> asyncio.Task[Turn]:
        """Replay a capture through the same pipeline and the same signals as a live turn:
        instantly (``speed=None``), at the recorded pace (1.0) or faster."""
        observer = self._prepare(dialect or capture.dialect, ())
        self._replaying = True

        async def replay() -> Turn:
            try:
                return await replay_capture(
                    capture, speed=speed, observer=observer, dialect=dialect
                )
            except asyncio.CancelledError:
                turn = Turn(outcome=Outcome.CANCELLED, reason="Replay cancelled by you")
                observer.finished(turn)
                raise

        return self._own(replay())

    def _prepare(self, dialect: str, observers: Sequence[TurnObserver]) -> TurnObserver:
        if self.running:
            raise RuntimeError("a turn is already running")
        self._pending = ProgressBatch()
        self._bytes = self._frames = 0
        self._dialect = dialect
        self._replaying = False
        self.last_turn = None
        collector = _Collector(self)
        return MultiObserver(*observers, collector) if observers else collector

    def _own(self, coro: Coroutine[object, object, Turn]) -> asyncio.Task[Turn]:
        self._task = asyncio.ensure_future(coro)
        self._task.add_done_callback(_consume_result)
        return self._task

    def stop(self) -> None:
        """Cancel the running turn; ``turnFinished`` (cancelled) follows promptly."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> Turn | None:
        """Wait for the current turn to end; its Turn (or ``None`` if none ran)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return self.last_turn

    # -- called by the collector ------------------------------------------------------------

    def _on_request(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self._t0 = t
        self.turnStarted.emit(TurnStart(spec, body, self._dialect, t))

    def _schedule(self) -> None:
        if not self._timer.isActive():
            self._timer.start()

    def _on_finished(self, turn: Turn) -> None:
        self._timer.stop()
        self.flush()
        self.last_turn = turn
        self.turnFinished.emit(turn)

    def flush(self) -> None:
        """Emit the pending batch now (also called by the timer)."""
        batch = self._pending
        if batch.is_empty():
            return
        self._pending = ProgressBatch()
        batch.total_bytes = self._bytes
        batch.total_frames = self._frames
        now = self._last_t if self._replaying else time.monotonic()
        batch.elapsed = now - self._t0
        started = time.perf_counter()
        self.flushes += 1
        self.turnProgressed.emit(batch)
        # A slow flush stretches the next interval, so a flood cannot starve the loop.
        spent_ms = (time.perf_counter() - started) * 1000
        self._timer.setInterval(max(self.min_interval_ms, min(250, int(spent_ms * 2))))


def _consume_result(task: asyncio.Task[Turn]) -> None:
    """Retrieve the task's exception so asyncio never logs 'exception was never retrieved'."""
    if not task.cancelled():
        task.exception()
