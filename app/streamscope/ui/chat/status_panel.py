"""The status bar's words: live figures while streaming, then the outcome and its reason.

While a live turn streams, the figures move on the paint clock's beat even when no byte
arrives (:meth:`StatusPanel.show_liveness`): the elapsed time, the deltas of the last
seconds, a silence ("no data for 12 s · idle timeout in 4 min 48 s"), and how far the
display is behind the stream when it lags ("showing 12 s behind the stream").

Colour and a glyph differ per outcome, but the text alone says everything (accessibility).
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from streamscope.core.turn.liveness import Liveness
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, format_bytes
from streamscope.core.wire.sizes import plural
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.chat.turn_start import ProgressBatch

GLYPHS = {
    # outcome: (glyph, its colour's name in streamscope.ui.base.theme.TEXT)
    Outcome.COMPLETED: ("✓", "ok_window"),
    Outcome.TRUNCATED: ("⚠", "silence"),
    Outcome.CANCELLED: ("■", "cancelled_window"),
    Outcome.ERROR: ("✕", "error_window"),
}

LIMIT_GLYPH = ("⚠", "silence")
"""A completed turn cut by the token limit: amber, not the plain green of a whole answer."""

SILENT_COLOUR = "silence"
"""The streaming glyph's colour while the stream is silent (not while only the display
lags: the stream is fine)."""


def status_line(turn: Turn, frames: int | None = None) -> str:
    """`Completed · stop · 412 tokens · TTFT 0.31 s · 58 tok/s` and the like, plus the frame
    count and size the inspector shows."""
    text = turn.summary()  # ("Completed · stopped at max tokens · length · …" at the limit)
    extras = []
    if turn.outcome is Outcome.COMPLETED and turn.terminal_signal:
        extras.append(f"{turn.terminal_signal} received")
    if frames:
        extras.append(plural(frames, "frame"))
    if turn.bytes_received:
        extras.append(format_bytes(turn.bytes_received))
    if turn.warnings and turn.outcome is Outcome.COMPLETED:
        extras.append(plural(len(turn.warnings), "warning"))
    return " · ".join([text, *extras])


def conversation_prefix(title: str) -> str:
    """What the status bar's line begins with while the live turn's conversation is not the
    one shown: ``“Plan the trip” — ``."""
    return f"“{title}” — " if title else ""


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
        self._what = ""
        self._streaming = False
        self._batch: ProgressBatch | None = None  # the last one (its totals)
        self._live: Liveness | None = None
        self._silent: bool | None = None
        self._where = ""  # names the live turn's conversation while another one is shown

    def text(self) -> str:
        return self.label.text()

    def show_message(self, text: str) -> None:
        self.outcome = None
        self._streaming = False
        self._where = ""
        self.glyph.setText("")
        self.glyph.setStyleSheet("")
        self.label.setStyleSheet("")
        self.label.setToolTip("")
        self.label.setText(text)

    def show_started(self, what: str) -> None:
        self.show_message(f"Sending to {what}…")
        self._deltas = 0
        self._what = what
        self._streaming = True
        self._batch = self._live = None
        self._silent = None
        self.glyph.setText("●")

    def show_progress(self, batch: ProgressBatch) -> None:
        """Live figures: elapsed, bytes, frames, and progress events (the reducer's count of
        text, reasoning and argument fragments) per second."""
        if batch.delta is not None:
            self._deltas = batch.delta.progress
        self._batch = batch
        self._render(batch.elapsed)

    def set_conversation(self, title: str) -> None:
        """While another conversation is shown, the live turn's figures (and its outcome)
        begin with the title of the conversation it streams into (``""``: it is shown)."""
        self._where = conversation_prefix(title)
        if self._streaming:
            live, batch = self._live, self._batch
            self._render(live.elapsed if live else batch.elapsed if batch else 0.0)

    def show_liveness(self, live: Liveness) -> None:
        """The live turn's clock ticked: elapsed, the recent rate, a silence, the lag."""
        if not self._streaming:
            return
        self._live = live
        self._render(live.elapsed)

    def _render(self, elapsed: float) -> None:
        batch, live = self._batch, self._live
        # (a replay has no liveness: the whole turn's average)
        average = self._deltas / elapsed if elapsed > 0 else 0.0
        rate = live.rate if live is not None else average
        if batch is None:
            parts = [f"Sending to {self._what}…", f"{elapsed:.1f} s"]
        else:
            parts = [
                "Streaming",
                f"{elapsed:.1f} s",
                format_bytes(batch.total_bytes),
                plural(batch.total_frames, "frame"),
                f"{rate:.0f} deltas/s",
            ]
        words = live.words() if live is not None else []
        self.label.setText(self._where + " · ".join(parts + words))
        silent = live is not None and live.silence is not None
        if silent != self._silent:
            self._silent = silent
            self.glyph.setText("●")
            set_text_colour(self.glyph, SILENT_COLOUR if silent else None)

    def show_turn(self, turn: Turn, frames: int | None = None, *, which: str = "") -> None:
        """A finished turn's outcome and figures; ``which`` names the turn when it is not
        the latest one (the inspector shows an older one): "Turn of 14:03:12 — Completed · …"."""
        assert turn.outcome is not None
        self._streaming = False
        self.outcome = turn.outcome
        glyph, colour = LIMIT_GLYPH if turn.stopped_at_limit else GLYPHS[turn.outcome]
        self.glyph.setText(glyph)
        set_text_colour(self.glyph, colour, "font-weight: bold;")
        line = status_line(turn, frames)
        self.label.setText(f"{which} — {line}" if which else self._where + line)
        self.label.setToolTip("\n".join(turn.warnings))

    def show_verdict(self, verdict: str) -> None:
        """The Verdict tab's short line beside the outcome ("2 spec errors · buffered by a
        proxy")."""
        self.label.setText(f"{self.label.text()} · {verdict}")
