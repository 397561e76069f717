"""The one clock that paints (see :mod:`streamscope.ui.base.pacing` for how its constants
interact).

One single-shot ``QTimer`` for the whole window, in the spirit of qtconsole's pending-buffer
flush. *Sources* (the turn runner) deliver batches when it fires; *jobs* (a view's
``layout(deadline)``) get the rest of the tick's budget. A job returns when it wants to run
next (a ``time.monotonic()`` time, ``0`` for "as soon as possible") or ``None`` when it has
nothing left to do; anything can :meth:`PaintClock.wake` a job. Jobs are held by weak
reference: a view that is gone is forgotten.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QObject, QTimer
from PySide6.QtWidgets import QWidget
from shiboken6 import isValid

from streamscope.ui.base import pacing

__all__ = ["Deliver", "Job", "PaintClock", "default_clock"]

_log = logging.getLogger("streamscope.ui")

Deliver = Callable[[float], float | None]
"""A source: deliver within the deadline (``perf_counter`` time); return the delay (ms) it
wants until the next delivery, or ``None`` when nothing is pending."""

Job = Callable[[float], float | None]
"""A view's layout work: run until the deadline (``perf_counter`` time); return when to run
next (``monotonic`` time) or ``None``."""


class PaintClock(QObject):
    """See the module docstring."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._armed_at: float | None = None  # monotonic time the timer will fire
        self._sources: dict[weakref.WeakMethod[Deliver], float | None] = {}  # -> when due
        self._jobs: dict[weakref.WeakMethod[Job], float] = {}
        self._widgets: dict[weakref.WeakMethod[Job], weakref.ref[QWidget]] = {}
        self._last_paint: dict[int, float] = {}
        self.ticks = 0

    # -- registering ------------------------------------------------------------------------

    def add_source(self, deliver: Deliver) -> None:
        """Register a source of batches (it calls :meth:`poke` when it has some)."""
        self._sources[weakref.WeakMethod(deliver)] = None

    def poke(self, deliver: Deliver, delay_ms: float = pacing.FLUSH_INTERVAL_MS) -> None:
        """``deliver``'s source has something pending: deliver within ``delay_ms`` (or
        earlier, if it was due earlier)."""
        key = weakref.WeakMethod(deliver)
        due = time.monotonic() + delay_ms / 1000
        known = self._sources.get(key)
        self._sources[key] = due if known is None else min(known, due)
        self._arm(self._sources[key])  # type: ignore[arg-type]

    def wake(self, job: Job, at: float | None = None, *, widget: QWidget | None = None) -> None:
        """Run ``job`` at ``at`` (``monotonic``; now when ``None``), or earlier if it was due
        earlier. ``widget``: while the job runs tick after tick, that widget repaints at most
        every :data:`~streamscope.ui.base.pacing.WORK_PAINT_MS`."""
        key = weakref.WeakMethod(job)
        due = time.monotonic() if at is None else at
        self._jobs[key] = min(due, self._jobs.get(key, due))
        if widget is not None:
            self._widgets[key] = weakref.ref(widget)
        self._arm(self._jobs[key])

    def cancel(self, job: Job) -> None:
        """Forget a job (its widget paints again)."""
        key = weakref.WeakMethod(job)
        self._jobs.pop(key, None)
        self._release(key)

    def pending(self, job: Job) -> bool:
        """Whether ``job`` is waiting to run."""
        return weakref.WeakMethod(job) in self._jobs

    # -- ticking ---------------------------------------------------------------------------

    def _arm(self, due: float) -> None:
        if self._armed_at is not None and self._armed_at <= due and self._timer.isActive():
            return
        self._armed_at = due
        self._timer.start(max(0, int((due - time.monotonic()) * 1000 + 0.999)))

    def _on_timer_timeout(self) -> None:
        self._armed_at = None
        self.tick()

    def tick(self) -> None:
        """Deliver, then lay out (normally the timer calls this)."""
        self.ticks += 1
        started = time.perf_counter()
        next_due: list[float] = []
        now = time.monotonic()
        for ref, due in list(self._sources.items()):
            deliver = ref()
            if deliver is None:
                del self._sources[ref]
                continue
            if due is None or due > now:  # (a source delivers on its own interval)
                if due is not None:
                    next_due.append(due)
                continue
            delay = deliver(started + pacing.FLUSH_BUDGET_MS / 1000)
            self._sources[ref] = None if delay is None else time.monotonic() + delay / 1000
            if delay is not None:
                next_due.append(time.monotonic() + delay / 1000)
        deadline = started + pacing.TICK_BUDGET_MS / 1000  # (delivery included: I/O waits)
        now = time.monotonic()
        for key, due in sorted(self._jobs.items(), key=lambda item: item[1]):
            if due > now or time.perf_counter() >= deadline:
                break
            job = key()
            del self._jobs[key]
            owner = getattr(job, "__self__", None)
            if job is None or (isinstance(owner, QObject) and not isValid(owner)):
                self._release(key)  # the view is gone
                continue
            try:
                again = job(deadline)
            except Exception:  # a broken view must not stop the clock for the others
                _log.exception("a view's layout job failed; it is dropped")
                self._release(key)
                continue
            if again is None:
                self._release(key)
                continue
            self._jobs[key] = min(again, self._jobs.get(key, again))
            self._pace_paint(key, working=again <= time.monotonic())
        if self._jobs:
            next_due.append(min(self._jobs.values()))
        if next_due:
            self._arm(min(next_due))

    # -- paints of working views -----------------------------------------------------------

    def _pace_paint(self, key: weakref.WeakMethod[Job], *, working: bool) -> None:
        ref = self._widgets.get(key)
        widget = ref() if ref is not None else None
        if widget is None:
            return
        if not working:
            self._release(key)
            return
        now = time.monotonic()
        last = self._last_paint.get(id(widget), 0.0)
        if (now - last) * 1000 >= pacing.WORK_PAINT_MS:
            self._last_paint[id(widget)] = now
            _enable_updates(widget, True)
        else:
            _enable_updates(widget, False)

    def _release(self, key: weakref.WeakMethod[Job]) -> None:
        ref = self._widgets.pop(key, None)
        widget = ref() if ref is not None else None
        if widget is not None:
            self._last_paint.pop(id(widget), None)
            _enable_updates(widget, True)


def _enable_updates(widget: QWidget, enabled: bool) -> None:
    if isValid(widget) and widget.updatesEnabled() != enabled:
        widget.setUpdatesEnabled(enabled)


_CLOCK: dict[int, PaintClock] = {}


def default_clock() -> PaintClock:
    """The application's paint clock (one per ``QCoreApplication``)."""
    app = QCoreApplication.instance()
    key = id(app)
    clock = _CLOCK.get(key)
    if clock is None:
        clock = _CLOCK[key] = PaintClock(app)
        clock.destroyed.connect(lambda *_: _CLOCK.pop(key, None))
    return clock
