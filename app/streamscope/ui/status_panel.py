"""The status bar's words: live figures while streaming, then the outcome and its reason.

Colour and a glyph differ per outcome, but the text alone says everything (accessibility).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
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
        extras.append(f"{frames} frames")
    if turn.bytes_received:
        extras.append(format_bytes(turn.bytes_received))
    if turn.warnings and turn.outcome is Outcome.COMPLETED:
        n = len(turn.warnings)
        extras.append(f"{n} warning{'s' if n != 1 else ''}")
    return " · ".join([text, *extras])


class StatusPanel(QWidget):
    """Lives in the QStatusBar; ``text()`` is what a person reads."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 0, 4, 0)
        layout.setSpacing(6)
        self.glyph = QLabel(self)
        self.glyph.setMinimumWidth(14)
        self.label = QLabel("Ready", self)
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

    def show_verdict(self, verdict: str) -> None:
        """The Verdict tab's short line beside the outcome ("2 spec errors · buffered by a
        proxy")."""
        self.label.setText(f"{self.label.text()} · {verdict}")
