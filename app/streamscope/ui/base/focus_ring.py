"""A ring in the highlight colour around whatever control has the keyboard focus, whatever
the platform's style draws (Fusion's focus is a faint tint, and a default button looks
focused already): keyboard users always see where they are."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QApplication, QFocusFrame, QMainWindow, QWidget

__all__ = ["RING_WIDTH", "FocusRing"]

RING_WIDTH = 2


class _Ring(QFocusFrame):
    """The ring itself: Qt keeps it around its widget (it lives in the widget's parent)."""

    def paintEvent(self, event: QPaintEvent) -> None:
        if self.widget() is None:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), RING_WIDTH))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        half = RING_WIDTH / 2
        painter.drawRoundedRect(self.rect().toRectF().adjusted(half, half, -half, -half), 3, 3)


class FocusRing(QObject):
    """Puts the ring around the focused control of ``window`` (none when the focus is
    elsewhere). The ring moves into the focused widget's parent, so it may be deleted with
    it (a card of a closed conversation): then a new one is made."""

    # (class defaults: Python may clear a collected window's objects before Qt's last call)
    _ring: _Ring | None = None
    _window: QMainWindow | None = None

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self._window = window
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        app.focusChanged.connect(self._on_app_focusChanged)
        self._on_app_focusChanged(None, QApplication.focusWidget())

    def ring(self) -> _Ring | None:
        """The ring, if it exists (for tests)."""
        ring = self._ring
        return ring if ring is not None and shiboken6.isValid(ring) else None

    def _on_app_focusChanged(self, _old: QWidget | None, new: QWidget | None) -> None:
        window = self._window
        if window is None or not shiboken6.isValid(window):
            return
        ring = self.ring()
        if new is None or new.isWindow() or new.window() is not window:
            if ring is not None:
                ring.hide()  # (it keeps following its last widget, unseen)
            return
        if ring is None:
            ring = self._ring = _Ring(window)
            ring.setObjectName("focus_ring")
        ring.setWidget(new)
        ring.show()
        ring.raise_()
