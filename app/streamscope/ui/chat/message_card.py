"""The small cards of the chat and their parts: the card frame, a user message, a notice,
one tool call's box, and the footer words and colours of an outcome (the assistant's answer
card is :mod:`streamscope.ui.chat.answer_card`)."""

from __future__ import annotations

import html
import json

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent, QPalette, QPen, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.model import LIMIT_WORDS, ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.sizes import plural
from streamscope.ui.base.theme import colour, monospace_font
from streamscope.ui.chat.markdown import MarkdownWriter
from streamscope.ui.chat.text_pane import TextPane

_BADGES: dict[Outcome, tuple[str, str]] = {
    # outcome: (badge, its colour's name in streamscope.ui.base.theme.TEXT)
    Outcome.COMPLETED: ("✓ completed", "ok"),
    Outcome.TRUNCATED: ("⚠ truncated", "warning"),
    Outcome.CANCELLED: ("■ cancelled", "cancelled"),
    Outcome.ERROR: ("✕ error", "error"),
}

_LIMIT_BADGE = (f"⚠ {LIMIT_WORDS}", "warning")
"""A completed turn cut by the token limit: amber, as a truncated one (the answer is whole as
sent, but not what the model would have said)."""


def outcome_colour(outcome: Outcome, palette: QPalette, *, on_window: bool = False) -> QColor:
    """The accent colour of an outcome, readable on the palette's base (or, ``on_window``,
    its window) background."""
    return colour(outcome_colour_name(outcome, on_window=on_window), palette)


def outcome_colour_name(outcome: Outcome, *, on_window: bool = False) -> str:
    """The name in :data:`streamscope.ui.base.theme.TEXT` of an outcome's colour."""
    name = _BADGES[outcome][1]
    return f"{name}_window" if on_window else name


def turn_colour(turn: Turn, palette: QPalette) -> QColor:
    """The accent colour of a finished turn: its outcome's, amber for a length stop."""
    if turn.stopped_at_limit:
        return colour(_LIMIT_BADGE[1], palette)
    return outcome_colour(turn.outcome or Outcome.COMPLETED, palette)


def outcome_badge(outcome: Outcome) -> str:
    """An outcome in words with its glyph: ``✓ completed``, ``✕ error`` …"""
    return _BADGES[outcome][0]


def limit_badge() -> tuple[str, str]:
    """A turn cut by the token limit in words with its glyph, and its colour's name:
    ``⚠ stopped at max tokens`` (the card's, the inspector header's)."""
    return _LIMIT_BADGE


def footer_parts(turn: Turn) -> list[str]:
    """The footer as words: badge, the turn's figures, warnings."""
    if turn.stopped_at_limit:
        badge = _LIMIT_BADGE[0]
    else:
        badge = _BADGES[turn.outcome][0] if turn.outcome is not None else "streaming…"
    parts = [badge]
    parts += turn.figures()
    if turn.warnings:
        parts.append(plural(len(turn.warnings), "warning"))
    return parts


def pretty_arguments(raw: str) -> str:
    """Tool-call arguments as indented JSON, or the raw text while they do not parse."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return json.dumps(value, indent=2, ensure_ascii=False)


def _muted(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorRole.PlaceholderText)


def _blend(a: QColor, b: QColor, t: float) -> QColor:
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
    )


class CardFrame(QFrame):
    """A rounded card painted from the palette, with an optional coloured left edge."""

    def __init__(self, title: str, parent: QWidget | None = None, *, tint: bool = False) -> None:
        super().__init__(parent)
        self._tint = tint
        self._accent: QColor | None = None
        self._selected = False
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(14, 8, 12, 10)
        self.body.setSpacing(4)
        self.header = QHBoxLayout()
        self.header.setSpacing(8)
        self.title = QLabel(title, self)
        font = self.title.font()
        font.setWeight(QFont.Weight.DemiBold)
        self.title.setFont(font)
        self.title.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.header.addWidget(self.title)
        self.header.addStretch(1)
        if title:
            self.body.addLayout(self.header)

    def set_accent(self, colour: QColor | None) -> None:
        """Colour the left edge (``None``: no edge)."""
        self._accent = colour
        self.update()

    def set_selected(self, selected: bool) -> None:
        """Draw the border in the highlight colour (e.g. the turn the inspector shows)."""
        if selected != self._selected:
            self._selected = selected
            self.update()

    def is_selected(self) -> bool:
        return self._selected

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        fill = palette.color(QPalette.ColorRole.Base)
        if self._tint:
            fill = _blend(fill, palette.color(QPalette.ColorRole.Highlight), 0.08)
        border = _blend(fill, palette.color(QPalette.ColorRole.Text), 0.18)
        width = 1.0
        if self._selected:
            border, width = palette.color(QPalette.ColorRole.Highlight), 2.0
            rect = rect.adjusted(0.5, 0.5, -0.5, -0.5)
        painter.setPen(QPen(border, width))
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, 6, 6)
        if self._accent is not None:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self._accent)
            painter.drawRoundedRect(QRectF(rect.left(), rect.top(), 4, rect.height()), 2, 2)


class UserCard(CardFrame):
    """What the user sent, as plain selectable text; with ◀ n/m ▶ in its header when the
    message was edited (each version keeps its own answers)."""

    versionStepped = Signal(int)
    """◀ (-1) or ▶ (+1) was clicked."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__("you", parent, tint=True)
        self.pane = TextPane(self)
        self.pane.setPlainText(text)
        self.body.addWidget(self.pane)
        self._text = text
        self.prev_version = QToolButton(self)
        self.prev_version.setText("◀")
        self.prev_version.setToolTip("The earlier version of this message, with its answers")
        self.prev_version.setAccessibleName("Earlier version")
        self.version_label = QLabel(self)
        self.version_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.next_version = QToolButton(self)
        self.next_version.setText("▶")
        self.next_version.setToolTip("The later version of this message, with its answers")
        self.next_version.setAccessibleName("Later version")
        for widget in (self.prev_version, self.version_label, self.next_version):
            self.header.addWidget(widget)
            widget.hide()
        self.prev_version.clicked.connect(lambda: self.versionStepped.emit(-1))
        self.next_version.clicked.connect(lambda: self.versionStepped.emit(+1))

    def text(self) -> str:
        """The message as sent."""
        return self._text

    def set_versions(self, chosen: int, count: int) -> None:
        """Show "version ``chosen + 1`` of ``count``" with its pager (hidden for one)."""
        for widget in (self.prev_version, self.version_label, self.next_version):
            widget.setVisible(count > 1)
        self.version_label.setText(f"version {chosen + 1}/{count}")
        self.prev_version.setEnabled(chosen > 0)
        self.next_version.setEnabled(chosen < count - 1)

    def set_editing(self, editing: bool) -> None:
        """Mark the message as the one being edited in the box."""
        self.set_accent(self.palette().color(QPalette.ColorRole.Highlight) if editing else None)
        self.title.setText("you · editing in the box below" if editing else "you")


class NoticeCard(CardFrame):
    """A short Markdown note from the app (e.g. the welcome text)."""

    def __init__(self, markdown: str, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.pane = TextPane(self)
        self.body.addWidget(self.pane)
        self.set_accent(self.palette().color(QPalette.ColorRole.Highlight))
        self.set_markdown(markdown)

    def set_markdown(self, markdown: str) -> None:
        """Show ``markdown`` (in place of what the card said)."""
        self.markdown = markdown
        self.pane.document().clear()
        writer = MarkdownWriter(self.palette())
        self.pane.codes = writer.codes
        writer.write_all(QTextCursor(self.pane.document()), markdown)


class ToolCallBox(QFrame):
    """One tool call: name, id, pretty arguments, and a field for the result."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.call: ToolCallState | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(3)
        self.title = QLabel(self)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.arguments = TextPane(self)
        font = monospace_font()  # (its size follows the text zoom)
        self.arguments.setFont(font)
        self.arguments.document().setDefaultFont(font)
        self.result = QPlainTextEdit(self)
        self.result.setTabChangesFocus(True)
        line = self.result.fontMetrics().lineSpacing()
        self.result.setFixedHeight(int(line * 2.6) + 10)
        layout.addWidget(self.title)
        layout.addWidget(self.arguments)
        layout.addWidget(self.result)
        self._shown_args: str | None = None

    def update_call(self, call: ToolCallState) -> None:
        """Show ``call`` (only what changed is redrawn)."""
        self.call = call
        name = html.escape(call.name or "?")
        muted = _muted(self.palette()).name()
        extra = f" · {html.escape(call.id)}" if call.id else ""
        state = ""
        if call.done and call.arguments and not call.arguments_parse():
            state = " · arguments are not valid JSON (shown raw)"
        elif not call.done:
            state = " · arguments streaming…"
        self.title.setText(
            f"<span>⚙ <b>{name}</b></span>"
            f"<span style='color:{muted}'>&nbsp;#{call.index}{extra}{html.escape(state)}</span>"
        )
        if call.arguments != self._shown_args:
            self._shown_args = call.arguments
            self.arguments.setPlainText(pretty_arguments(call.arguments) or "(no arguments)")
        self.result.setPlaceholderText(f"Result of {call.name or 'this call'} — text or JSON")


__all__ = [
    "CardFrame",
    "NoticeCard",
    "ToolCallBox",
    "UserCard",
    "footer_parts",
    "outcome_badge",
    "outcome_colour",
    "outcome_colour_name",
    "pretty_arguments",
    "turn_colour",
]
