"""The chat: a scrollable column of message cards that follows new text only when the user
is already at the bottom (scrolling up to read stops the following; scrolling back down, or
sending a message, resumes it)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from streamscope.ui.answer_card import AssistantCard
from streamscope.ui.code_highlight import warm_up_highlighting
from streamscope.ui.message_card import NoticeCard, UserCard

BOTTOM_SLACK = 4
"""Pixels from the end that still count as "at the bottom"."""

WARM_UP_DELAY_MS = 250
"""After the event loop starts (the window has painted), Pygments loads in the background."""


class ChatView(QWidget):
    """A scrollable list of message cards."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._follow = True
        self._scroll = QScrollArea(self)
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._scroll.viewport().setBackgroundRole(QPalette.ColorRole.Window)
        self._content = QWidget()
        self._content.setBackgroundRole(QPalette.ColorRole.Window)
        self._cards = QVBoxLayout(self._content)
        self._cards.setContentsMargins(12, 12, 12, 12)
        self._cards.setSpacing(10)
        self._cards.addStretch(1)
        self._scroll.setWidget(self._content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._scroll)
        bar = self._scroll.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrollbar_valueChanged)
        bar.rangeChanged.connect(self._on_scrollbar_rangeChanged)
        QTimer.singleShot(0, lambda: QTimer.singleShot(WARM_UP_DELAY_MS, warm_up_highlighting))

    # -- the API the window uses --------------------------------------------------------

    def clear(self) -> None:
        """Remove every card."""
        while self._cards.count() > 1:
            item = self._cards.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self._follow = True

    def add_user_message(self, text: str) -> UserCard:
        """Add what the user sent (and follow the end again: the user just acted)."""
        card = UserCard(text, self._content)
        self._add(card)
        self.scroll_to_bottom()
        return card

    def begin_assistant_message(self, label: str = "assistant") -> AssistantCard:
        """Add an empty assistant card that the caller streams into."""
        card = AssistantCard(label, self._content)
        self._add(card)
        return card

    def add_notice(self, markdown: str) -> NoticeCard:
        """Add a note from the app, in Markdown (e.g. the welcome text)."""
        card = NoticeCard(markdown, self._content)
        self._add(card)
        return card

    def is_at_bottom(self) -> bool:
        """Whether the end of the chat is in view."""
        bar = self._scroll.verticalScrollBar()
        return bar.value() >= bar.maximum() - BOTTOM_SLACK

    def scroll_to_bottom(self) -> None:
        """Show the end, and keep following it as it grows."""
        self._follow = True
        bar = self._scroll.verticalScrollBar()
        bar.setValue(bar.maximum())

    # -- for tests and the window -------------------------------------------------------

    def cards(self) -> list[QWidget]:
        """The cards, top to bottom."""
        items = (self._cards.itemAt(i) for i in range(self._cards.count()))
        return [w for item in items if item is not None and (w := item.widget()) is not None]

    def scroll_bar_value(self) -> int:
        """The vertical scroll position in pixels."""
        return self._scroll.verticalScrollBar().value()

    def scroll_to(self, value: int) -> None:
        """Scroll to ``value`` pixels (as a user would)."""
        self._scroll.verticalScrollBar().setValue(value)

    # -- following ----------------------------------------------------------------------

    def _add(self, card: QWidget) -> None:
        self._cards.insertWidget(self._cards.count() - 1, card)
        card.show()

    def _on_scrollbar_valueChanged(self, value: int) -> None:
        bar = self._scroll.verticalScrollBar()
        self._follow = value >= bar.maximum() - BOTTOM_SLACK

    def _on_scrollbar_rangeChanged(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self._scroll.verticalScrollBar().setValue(maximum)


__all__ = ["AssistantCard", "ChatView", "NoticeCard", "UserCard"]
