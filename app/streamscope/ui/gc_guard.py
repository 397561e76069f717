"""Run Python's cyclic garbage collector on the Qt thread only.

Python collects reference cycles in whichever thread happens to allocate when a threshold is
crossed — here that can be the demo server's thread or an executor thread. A Qt object caught
in a cycle is then destroyed off its own thread, its timers are never unregistered, and the
next timer event crashes the process (seen as a segfault in
``QTimerInfoList::activateTimers``). So automatic collection is switched off and the same
thresholds are checked from a timer on the Qt thread (pyqtgraph does the same).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class MainThreadCollector(QObject):
    """Disables automatic GC while alive; collects on the Qt thread every ``interval_ms``."""

    def __init__(self, interval_ms: int = 500, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.check)
        self._timer.start(interval_ms)

    def check(self) -> int | None:
        """Collect the generations whose thresholds are exceeded (as Python would)."""
        t0, t1, t2 = gc.get_threshold()
        c0, c1, c2 = gc.get_count()
        generation = None
        if c0 > t0:
            generation = 0
            if c1 > t1:
                generation = 1
                if c2 > t2:
                    generation = 2
        if generation is not None:
            gc.collect(generation)
        return generation

    def stop(self) -> None:
        """Stop the timer, collect once here, and restore automatic collection."""
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
