"""The Timeline's silence bar: how long a streaming turn has been silent, on a log scale
that ends where the client gives up (its idle or first-byte timeout), so it grows visibly in
the first seconds and still shows how close the timeout is after minutes.

It renders the :class:`~streamscope.core.turn.liveness.Liveness` the paint clock hands the
Timeline; it computes nothing about the turn itself. While the display lags behind the
stream, the bar says so in its line of words ("showing 12 s behind the stream"; with no
silence, the words alone, without the bar).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from streamscope.core.turn.liveness import Liveness
from streamscope.ui.base.theme import colour

__all__ = ["SilenceBar"]

UNKNOWN_END = 600.0
"""Where the scale ends when the client's timeout is not known (seconds)."""

_TICKS = ((10.0, "10 s"), (60.0, "1 min"), (300.0, "5 min"), (600.0, "10 min"))


class SilenceBar(QWidget):
    """Hidden while the stream moves and the display keeps up; see the module docstring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.live: Liveness | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.fontMetrics().height() * 2 + 16)
        self.hide()

    def sizeHint(self) -> QSize:
        return QSize(360, self.fontMetrics().height() * 2 + 16)

    def show_liveness(self, live: Liveness | None) -> None:
        """Show ``live``'s silence or lag (hide when there is neither)."""
        said = live is not None and (live.silence is not None or live.behind is not None)
        self.live = live if said else None
        words = " · ".join(self.live.words()) if self.live is not None else ""
        if words != self.accessibleName():  # (the painted words, for a screen reader)
            self.setAccessibleName(words)
            self.setToolTip(words)
        self.setVisible(self.live is not None)
        self.update()

    def end(self) -> float:
        """Where the scale ends, in seconds of silence."""
        live = self.live
        if live is None or live.silence is None:
            return UNKNOWN_END
        if live.timeout_in is None:
            return max(UNKNOWN_END, live.silence.seconds)
        return max(1.0, live.silence.seconds + live.timeout_in)

    def fraction(self) -> float:
        """How much of the bar is filled (0 without a silence)."""
        live = self.live
        if live is None or live.silence is None:
            return 0.0
        return min(1.0, math.log1p(live.silence.seconds) / math.log1p(self.end()))

    def paintEvent(self, event: QPaintEvent) -> None:
        live = self.live
        if live is None:
            return
        p = QPainter(self)
        fm = self.fontMetrics()
        pal = self.palette()
        dim = pal.color(QPalette.ColorRole.PlaceholderText)
        line = fm.height()
        p.setPen(colour("silence", pal))  # (amber)
        p.drawText(QRectF(0, 0, self.width(), line), Qt.AlignmentFlag.AlignLeft,
                   " · ".join(live.words()))  # fmt: skip
        if live.silence is None:  # (the display lags; the stream moves: no bar)
            p.end()
            return
        track = QRectF(0, line + 3, self.width() - 1, 8)
        background = QColor(dim)
        background.setAlpha(50)
        p.fillRect(track, background)
        p.fillRect(QRectF(track.left(), track.top(), track.width() * self.fraction(), 8),
                   colour("silence_mark", pal))  # fmt: skip
        end = self.end()
        scale = math.log1p(end)
        p.setPen(dim)
        marks = [(end, "timeout")] if live.timeout_in is not None else []
        marks += [(seconds, label) for seconds, label in _TICKS if seconds < end]
        taken: list[QRectF] = []  # (the timeout's label first: a tick near it gives way)
        for seconds, label in marks:
            x = track.left() + track.width() * math.log1p(seconds) / scale
            w = fm.horizontalAdvance(label) + 1
            box = QRectF(min(max(0.0, x - w / 2), self.width() - w), track.bottom() + 2, w, line)
            if any(box.adjusted(-4, 0, 4, 0).intersects(other) for other in taken):
                continue
            taken.append(box)
            p.fillRect(QRectF(x - 0.5, track.top() - 2, 1, track.height() + 4), dim)
            p.drawText(box, label)
        p.end()
