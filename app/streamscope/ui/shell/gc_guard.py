"""Run Python's cyclic garbage collector on the Qt thread only.

Python collects reference cycles in whichever thread happens to allocate when a threshold is
crossed — here that can be the demo server's thread or an executor thread. A Qt object caught
in a cycle is then destroyed off its own thread, its timers are never unregistered, and the
next timer event crashes the process (seen as a segfault in
``QTimerInfoList::activateTimers``). So automatic collection is switched off and the same
thresholds are checked from a timer on the Qt thread (pyqtgraph does the same).

The cost of a collection grows with what it has to look at, so the checks keep it small:

- a young collection looks at every object allocated since the last one. Checked every
  :data:`IDLE_MS` only, a burst of allocations (a search handing over a thousand rows, a
  conversation opening) piles up for half a second and one collection then stalls the window
  for 20 ms or more. So after a check that collected, the next comes :data:`BUSY_MS` later,
  while allocations go on;
- a full collection looks at everything alive. Python makes one only when the objects
  promoted since the last one are a quarter of those that survived it (its rule for long-lived
  objects, which makes a big heap cost no more often than a small one); the checks keep that
  rule, counting the oldest generation when its threshold is crossed.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

__all__ = ["BUSY_MS", "IDLE_MS", "MainThreadCollector"]

IDLE_MS = 500
"""Between checks while nothing needed collecting."""
BUSY_MS = 40
"""Between checks after one that collected (allocations are going on)."""


class MainThreadCollector(QObject):
    """Disables automatic GC while alive; collects on the Qt thread (see the module
    docstring); ``interval_ms``: between checks while nothing needs collecting."""

    def __init__(self, interval_ms: int = IDLE_MS, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._idle_ms = interval_ms
        self._long_lived = len(gc.get_objects(generation=2))  # (as after a full collection)
        self._pending = 0  # promoted into the oldest generation since (young collections)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._timer.start(interval_ms)

    def check(self) -> int | None:
        """Collect the generations whose thresholds are exceeded, as Python would (the
        oldest only once enough has been promoted into it); which one, if any."""
        t0, t1, t2 = gc.get_threshold()
        c0, c1, c2 = gc.get_count()
        generation = None
        if c0 > t0:
            generation = 0
            if c1 > t1:
                generation = 1
                if c2 > t2 and self._pending * 4 > self._long_lived:
                    generation = 2
        if generation == 1:  # (its survivors move to the oldest generation)
            young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
            self._pending += max(0, young - gc.collect(1))
        elif generation is not None:
            gc.collect(generation)
            if generation == 2:
                self._long_lived = len(gc.get_objects(generation=2))
                self._pending = 0
        return generation

    def _on_timer_timeout(self) -> None:
        collected = self.check() is not None
        self._timer.start(min(BUSY_MS, self._idle_ms) if collected else self._idle_ms)

    def stop(self) -> None:
        """Stop the timer, collect once here, and restore automatic collection."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
