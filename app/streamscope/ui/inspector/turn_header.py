"""Which turn the Inspector shows, said above its tabs: a :class:`TurnRef` names a turn (its
conversation, when it started, the model asked, its outcome, where its capture is) and the
:class:`TurnHeader` shows it in one line that never wraps (elided, the whole text in its
tooltip), with a note under it when the turn's bytes cannot be shown and a "Back to live"
button while a live turn streams out of view."""

from __future__ import annotations

import time

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from streamscope.core.turn.outcome import Outcome
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.chat.message_card import limit_badge, outcome_badge, outcome_colour_name
from streamscope.ui.chat.turn_ref import TurnRef

__all__ = ["TurnHeader", "TurnRef", "describe_turn", "turn_clock"]
# (TurnRef is the chat's: the inspector shows the turns a TurnRef names)


def turn_clock(started: float | None, *, now: float | None = None) -> str:
    """``14:03:12`` for a time today, ``2026-11-29 14:03`` before; ``—`` when unknown."""
    if started is None:
        return "—"
    today = time.localtime(time.time() if now is None else now)[:3]
    stamp = time.localtime(started)
    if stamp[:3] == today:
        return time.strftime("%H:%M:%S", stamp)
    return time.strftime("%Y-%m-%d %H:%M", stamp)


def describe_turn(ref: TurnRef) -> list[str]:
    """The header's words: conversation, time, model, outcome (``streaming…`` while it
    streams; ``⚠ stopped at max tokens`` as on its card when the token limit cut it)."""
    if ref.outcome is None:
        badge = "streaming…"
    elif ref.outcome is Outcome.COMPLETED and ref.stopped_at_limit:
        badge = limit_badge()[0]
    else:
        badge = outcome_badge(ref.outcome)
    return [ref.conversation or "Untitled", turn_clock(ref.started), ref.model or "?", badge]


class _TitleLine(QWidget):
    """The header's words on one line: the title (bold) and the facts after it (time, model).
    Asks for its whole width but makes do with a few characters, so it never widens the
    inspector. Short of room, the title is elided first; the facts only once the title is
    down to a few characters."""

    MIN_TITLE = 48
    """Pixels of title kept before the facts are elided too."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._title = ""
        self._meta = ""
        self._bold = QFont(self.font())
        self._bold.setBold(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def set_text(self, title: str, meta: str = "") -> None:
        self._title, self._meta = title, meta
        self.setToolTip(f"{title} {meta}".strip())
        self.updateGeometry()
        self.update()

    def full_text(self) -> str:
        return self._title

    def meta_text(self) -> str:
        return self._meta

    def shown(self, width: int | None = None) -> tuple[str, str]:
        """The title and the facts as drawn at ``width`` (default: the current one)."""
        width = self.width() if width is None else width
        bold, plain = QFontMetrics(self._bold), self.fontMetrics()
        title_w = bold.horizontalAdvance(self._title)
        meta_w = plain.horizontalAdvance(self._meta) + self._gap() if self._meta else 0
        elide = Qt.TextElideMode.ElideRight
        if title_w + meta_w <= width:
            return self._title, self._meta
        if width - meta_w >= self.MIN_TITLE or not self._meta:
            return bold.elidedText(self._title, elide, width - meta_w), self._meta
        room = min(title_w, self.MIN_TITLE)
        title = bold.elidedText(self._title, elide, room)
        return title, plain.elidedText(self._meta, elide, width - room - self._gap())

    def _gap(self) -> int:
        return self.fontMetrics().horizontalAdvance(" ")

    def sizeHint(self) -> QSize:
        title_w = QFontMetrics(self._bold).horizontalAdvance(self._title)
        meta_w = self.fontMetrics().horizontalAdvance(self._meta) + self._gap() if self._meta else 0
        return QSize(title_w + meta_w + 2, self._height())

    def minimumSizeHint(self) -> QSize:
        return QSize(min(self.sizeHint().width(), self.MIN_TITLE), self._height())

    def _height(self) -> int:
        return max(QFontMetrics(self._bold).height(), self.fontMetrics().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        title, meta = self.shown()
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        rect = self.rect()
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.setFont(self._bold)
        painter.drawText(rect, flags, title)
        if meta:
            left = QFontMetrics(self._bold).horizontalAdvance(title) + self._gap()
            painter.setFont(self.font())
            painter.drawText(rect.adjusted(left, 0, 0, 0), flags, meta)
        painter.end()


class TurnHeader(QWidget):
    """See the module docstring. ``backRequested``: "Back to live" was clicked."""

    backRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("TurnHeader")
        self.live_mark = QLabel("● live", self)
        self.title = _TitleLine(self)
        self.badge = QLabel(self)
        self.badge.setTextFormat(Qt.TextFormat.PlainText)
        self.state = QLabel(self)
        self.state.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.back_button = QPushButton("● Back to live", self)
        self.back_button.setToolTip("Show the turn that is streaming now")
        self.back_button.clicked.connect(self.backRequested)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note.setStyleSheet(
            "QLabel { background: rgba(128, 128, 128, 40); border-radius: 3px; padding: 4px; }"
        )
        for widget in (
            self.live_mark,
            self.badge,
            self.state,
            self.back_button,
            self.note,
        ):
            widget.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        row.addWidget(self.live_mark)
        row.addWidget(self.title)
        row.addWidget(self.badge)
        row.addWidget(self.state)
        row.addStretch(1)
        row.addWidget(self.back_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 2)
        layout.setSpacing(3)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.show_nothing("No turn yet")

    def show_turn(self, ref: TurnRef, *, live: bool, state: str = "") -> None:
        """Name ``ref`` (``live``: the turn streaming now); ``state`` e.g. "loading…"."""
        title, *meta, badge = describe_turn(ref)
        self.live_mark.setVisible(live and ref.outcome is None)
        name = None
        if ref.outcome is Outcome.COMPLETED and ref.stopped_at_limit:
            name = limit_badge()[1] + "_window"
        elif ref.outcome is not None:
            name = outcome_colour_name(ref.outcome, on_window=True)
        set_text_colour(self.live_mark, outcome_colour_name(Outcome.ERROR, on_window=True))
        muted = "" if name else "color: palette(placeholder-text); "
        set_text_colour(self.badge, name, muted + "font-weight: 600;")
        self.title.set_text(title, "· " + " · ".join(meta) + " ·")
        self.badge.setText(badge)
        self.badge.show()
        self.set_state(state)

    def show_nothing(self, text: str) -> None:
        """No turn is shown: ``text`` says why (e.g. "No turn in this conversation yet")."""
        self.live_mark.hide()
        self.badge.hide()
        self.title.set_text(text)
        self.set_state("")

    def set_state(self, state: str) -> None:
        self.state.setText(state)
        self.state.setVisible(bool(state))

    def set_note(self, text: str) -> None:
        """A plain sentence under the title (``""``: none), e.g. why there are no frames."""
        self.note.setText(text)
        self.note.setVisible(bool(text))

    def set_live_elsewhere(self, streaming: bool) -> None:
        """Offer "Back to live" (a live turn streams while another turn is shown)."""
        self.back_button.setVisible(streaming)

    def text(self) -> str:
        """The title line as a person reads it (without the state or the note)."""
        title = self.title.full_text()
        if self.badge.isHidden():
            return title
        live = "● live · " if not self.live_mark.isHidden() else ""
        return f"{live}{title} {self.title.meta_text()} {self.badge.text()}"
