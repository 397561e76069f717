"""The live turn's clock: a job on the window's one paint clock that says, every
:data:`~streamscope.ui.pacing.LIVE_CLOCK_MS`, how the streaming turn is doing — also when no
byte arrives, which is exactly when batches stop and nothing else would repaint.

What it says comes from :class:`~streamscope.core.turn.liveness.LivenessWatch` (core: elapsed,
deltas per second, "no data for 12 s", "keep-alives only for 40 s", the client's timer),
fed the same batches as the views; the views (status bar, answer card, Timeline) only render
the :class:`~streamscope.core.turn.liveness.Liveness` that ``ticked`` carries.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.turn.liveness import LivenessWatch
from streamscope.ui import pacing
from streamscope.ui.paint_clock import PaintClock, default_clock

if TYPE_CHECKING:
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
        self.ticks = 0

    def begin(self, t0: float, timeouts: StreamTimeouts | None) -> None:
        """A live turn's request went out at ``t0`` (``time.monotonic()``)."""
        self.watch = LivenessWatch(
            t0,
            first_byte_timeout=timeouts.first_byte if timeouts is not None else None,
            idle_timeout=timeouts.idle if timeouts is not None else None,
        )
        self.clock.wake(self._tick, self._next(time.monotonic()))

    def add(self, batch: Progress) -> None:
        """A batch the views got."""
        if self.watch is not None:
            self.watch.add(batch)

    def end(self) -> None:
        """The turn ended: no more ticks."""
        self.watch = None
        self.clock.cancel(self._tick)

    def _next(self, now: float) -> float:
        """The next whole step of the turn's clock (so the tenths advance evenly)."""
        assert self.watch is not None
        step = pacing.LIVE_CLOCK_MS / 1000
        done = int((now - self.watch.t0) / step + 1e-6) + 1
        return self.watch.t0 + done * step

    def _tick(self, deadline: float) -> float | None:
        """The paint clock's job: say how the turn is doing; when to say it again."""
        if self.watch is None:
            return None
        now = time.monotonic()
        self.ticks += 1
        self.ticked.emit(self.watch.at(now))
        return self._next(now) if self.watch is not None else None
