"""Start-up's timing helpers: paint a window now, do something once it has painted, import
modules in a thread while the event loop answers."""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer
from PySide6.QtWidgets import QWidget

__all__ = ["call_after_paint", "load_then", "paint_now", "preload"]


def _import_in_thread(modules: Sequence[str], name: str) -> threading.Thread:
    """A started thread importing ``modules``; an import that fails is left for its user to
    raise, where it is needed."""

    def load() -> None:
        for module in modules:
            with contextlib.suppress(Exception):  # (raised again where it is used)
                importlib.import_module(module)

    thread = threading.Thread(target=load, name=name, daemon=True)
    thread.start()
    return thread


def preload(modules: Sequence[str], poll_ms: int = 5) -> None:
    """Import ``modules`` in a thread while Qt's event loop runs here (the window repaints and
    answers); returns once they are imported. An import that fails is left for its user to
    raise, where it is needed."""
    thread = _import_in_thread(modules, "preload")
    loop = QEventLoop()
    timer = QTimer()

    def check() -> None:
        if not thread.is_alive():
            loop.quit()

    timer.timeout.connect(check)
    timer.start(poll_ms)
    if thread.is_alive():
        loop.exec()
    timer.stop()
    thread.join()


def load_then(
    modules: Sequence[str],
    callback: Callable[[], object],
    *,
    parent: QObject,
    delay_ms: int = 0,
    poll_ms: int = 5,
) -> None:
    """Import ``modules`` in a thread (``delay_ms`` from now), then call ``callback`` from the
    event loop (no nested loop: the caller returns at once). A failed import is left for
    ``callback`` to raise. Nothing is called once ``parent`` is gone."""
    if delay_ms > 0:
        QTimer.singleShot(
            delay_ms, parent, lambda: load_then(modules, callback, parent=parent, poll_ms=poll_ms)
        )
        return
    thread = _import_in_thread(modules, "load-then")
    timer = QTimer(parent)

    def check() -> None:
        if not thread.is_alive():
            timer.stop()
            timer.deleteLater()
            callback()

    timer.timeout.connect(check)
    timer.start(poll_ms)


class _PaintWaiter(QObject):
    """Ends a local event loop once the watched window has painted."""

    def __init__(self, loop: QEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self.painted = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self.painted:
            self.painted = True
            self._loop.quit()  # returns once this paint (and its flush) is done
        return False


def paint_now(window: QWidget, timeout_ms: int = 1000) -> bool:
    """Run Qt's event loop until ``window`` has painted once (or ``timeout_ms`` passed), so
    it is on screen before the slow part of start-up. True if it painted."""
    loop = QEventLoop()
    waiter = _PaintWaiter(loop)
    window.installEventFilter(waiter)
    QTimer.singleShot(timeout_ms, loop, loop.quit)
    loop.exec()
    window.removeEventFilter(waiter)
    return waiter.painted


class _AfterPaint(QObject):
    """Calls ``callback`` (from the event loop) once the watched window has painted, or once
    ``timeout_ms`` have passed without a paint (a window minimized or not on screen)."""

    def __init__(self, window: QWidget, callback: Callable[[], object], timeout_ms: int) -> None:
        super().__init__(window)
        self._window = window
        self._callback: Callable[[], object] | None = callback
        window.installEventFilter(self)
        QTimer.singleShot(timeout_ms, self, self._call)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self._window.removeEventFilter(self)
            QTimer.singleShot(0, self, self._call)  # (after this paint and its flush)
        return False

    def _call(self) -> None:
        if self._callback is None:
            return  # (painted, then the timeout too)
        callback, self._callback = self._callback, None
        self._window.removeEventFilter(self)
        callback()
        self.deleteLater()


def call_after_paint(
    window: QWidget, callback: Callable[[], object], timeout_ms: int = 1000
) -> None:
    """Call ``callback`` once ``window`` has painted (what it shows is on screen first): at
    once, from the event loop, for a window that is not shown."""
    if window.isVisible():
        _AfterPaint(window, callback, timeout_ms)
    else:
        QTimer.singleShot(0, window, callback)
