"""The live turn's clock: it says, every :data:`~streamscope.ui.base.pacing.LIVE_CLOCK_MS`, how
the streaming turn is doing — also when no byte arrives, which is exactly when batches stop
and nothing else would repaint, and also while a backlog of batches keeps the window busy,
which is when the display falls behind.

What it says comes from :class:`~streamscope.core.turn.liveness.LivenessWatch` (core: elapsed,
deltas per second, "no data for 12 s", "keep-alives only for 40 s", the client's timer,
"showing 12 s behind the stream"), fed the same batches as the views and, at each tick, what
the turn's reader has received by then (the stream worker's arrival board: see
:mod:`streamscope.core.net.arrivals`); the views (status bar, answer card, Timeline) only
render the :class:`~streamscope.core.turn.liveness.Liveness` that ``ticked`` carries.

It ticks as a *source* of the window's one paint clock, not as a layout job: a layout job
waits while batch deliveries use up a tick's budget, and a backlog of batches (a display
behind the stream) is exactly when the lag must be said. A tick costs a few setText calls.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.turn.liveness import LivenessWatch
from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import PaintClock, default_clock

if TYPE_CHECKING:
    from streamscope.core.net.arrivals import ArrivalSource
    from streamscope.core.net.options import StreamTimeouts
    from streamscope.core.turn.progress import Progress

__all__ = ["LivenessTicker"]


class LivenessTicker(QObject):
    """``ticked(Liveness)`` while a live turn streams (between :meth:`begin` and :meth:`end`)."""

    ticked = Signal(object)

    def __init__(self, parent: QObject | None = None, *, clock: PaintClock | None = None) -> None:
        super().__init__(parent)
        self.clock = clock if clock is not None else default_clock()
        self.watch: LivenessWatch | None = None
        self.arrivals: ArrivalSource | None = None
        self.ticks = 0
        self.clock.add_source(self._tick)

    def begin(
        self, t0: float, timeouts: StreamTimeouts | None, arrivals: ArrivalSource | None = None
    ) -> None:
        """A live turn's request went out at ``t0`` (``time.monotonic()``); ``arrivals``:
        where to read what its reader has received (``None``: the batches alone)."""
        self.watch = LivenessWatch(
            t0,
            first_byte_timeout=timeouts.first_byte if timeouts is not None else None,
            idle_timeout=timeouts.idle if timeouts is not None else None,
        )
        self.arrivals = arrivals
        self._poke(time.monotonic())

    def add(self, batch: Progress) -> None:
        """A batch the views got."""
        if self.watch is not None:
            self.watch.add(batch)

    def end(self) -> None:
        """The turn ended: no more ticks."""
        self.watch = None
        self.arrivals = None

    def _next(self, now: float) -> float:
        """The next whole step of the turn's clock (so the tenths advance evenly)."""
        assert self.watch is not None
        step = pacing.LIVE_CLOCK_MS / 1000
        done = int((now - self.watch.t0) / step + 1e-6) + 1
        return self.watch.t0 + done * step

    def _poke(self, now: float) -> None:
        self.clock.poke(self._tick, (self._next(now) - now) * 1000)

    def _tick(self, deadline: float) -> float | None:
        """The paint clock's call: say how the turn is doing; the delay (ms) until the next
        step of its clock."""
        watch = self.watch
        if watch is None:
            return None
        if self.arrivals is not None:
            watch.arrived(self.arrivals(watch.shown_bytes))
        now = time.monotonic()
        self.ticks += 1
        self.ticked.emit(watch.at(now))
        if self.watch is None:  # (a listener ended the turn)
            return None
        return (self._next(now) - time.monotonic()) * 1000
