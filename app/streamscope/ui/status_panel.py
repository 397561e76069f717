"""The status bar's words: live figures while streaming, then the outcome and its reason.

Colour and a glyph differ per outcome, but the text alone says everything (accessibility).
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, format_bytes
from streamscope.ui.turn_runner import ProgressBatch

GLYPHS = {
    Outcome.COMPLETED: ("✓", "#1a7f37"),
    Outcome.TRUNCATED: ("⚠", "#b35900"),
    Outcome.CANCELLED: ("■", "#6e7781"),
    Outcome.ERROR: ("✕", "#cf222e"),
}


def status_line(turn: Turn, frames: int | None = None) -> str:
    """`Completed · stop · 412 tokens · TTFT 0.31 s · 58 tok/s` and the like, plus the frame
    count and size the inspector shows."""
    text = turn.summary()
    extras = []
    if turn.outcome is Outcome.COMPLETED and turn.terminal_signal:
        extras.append(f"{turn.terminal_signal} received")
    if frames:
        extras.append(f"{frames} frame{'s' if frames != 1 else ''}")
    if turn.bytes_received:
        extras.append(format_bytes(turn.bytes_received))
    if turn.warnings and turn.outcome is Outcome.COMPLETED:
        n = len(turn.warnings)
        extras.append(f"{n} warning{'s' if n != 1 else ''}")
    return " · ".join([text, *extras])


class ElidedLabel(QLabel):
    """A one-line label that shows as much of its text as fits, ending in "…" when cut,
    with the whole text in its tooltip (a long error reason must not widen the window).
    :meth:`text` is the whole text."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._tip = ""
        self.setText(text)

    def text(self) -> str:  # the whole text, not the elided one shown
        return self._full

    def setText(self, text: str) -> None:
        self._full = text
        self._elide()

    def setToolTip(self, tip: str) -> None:
        """A tooltip under the whole text (when the text is elided)."""
        self._tip = tip
        self._elide()

    def shown_text(self) -> str:
        """What the label shows (elided to its width)."""
        return super().text()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(
            min(hint.width(), self.fontMetrics().horizontalAdvance("x" * 20)), hint.height()
        )

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = self.contentsRect().width()
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width)
        super().setText(shown)
        tips = [self._full] if shown != self._full else []
        if self._tip:
            tips.append(self._tip)
        super().setToolTip("\n".join(tips))


class StatusPanel(QWidget):
    """Lives in the QStatusBar; ``text()`` is what a person reads."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(6)
        self.glyph = QLabel(self)
        self.glyph.setMinimumWidth(14)
        self.label = ElidedLabel("Ready", self)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.glyph)
        layout.addWidget(self.label, 1)
        self.outcome: Outcome | None = None
        self._deltas = 0

    def text(self) -> str:
        return self.label.text()

    def show_message(self, text: str) -> None:
        self.outcome = None
        self.glyph.setText("")
        self.label.setStyleSheet("")
        self.label.setToolTip("")
        self.label.setText(text)

    def show_started(self, what: str) -> None:
        self._deltas = 0
        self.show_message(f"Sending to {what}…")
        self.glyph.setText("●")

    def show_progress(self, batch: ProgressBatch) -> None:
        """Live figures: elapsed, bytes, frames, and progress events (the reducer's count of
        text, reasoning and argument fragments) per second."""
        deltas = batch.delta.progress if batch.delta is not None else self._deltas
        self._deltas = deltas
        rate = deltas / batch.elapsed if batch.elapsed > 0 else 0.0
        self.glyph.setText("●")
        self.label.setText(
            f"Streaming · {batch.elapsed:.1f} s · {format_bytes(batch.total_bytes)}"
            f" · {batch.total_frames} frames · {rate:.0f} deltas/s"
        )

    def show_turn(self, turn: Turn, frames: int | None = None) -> None:
        assert turn.outcome is not None
        self.outcome = turn.outcome
        glyph, colour = GLYPHS[turn.outcome]
        self.glyph.setText(glyph)
        self.glyph.setStyleSheet(f"color: {colour}; font-weight: bold;")
        self.label.setText(status_line(turn, frames))
        self.label.setToolTip("\n".join(turn.warnings))
