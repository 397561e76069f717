"""The chat: the column of message cards (:class:`~streamscope.ui.chat.card_column.CardColumn`:
cards are built only near the viewport) that follows new text only when the user is already
at the bottom (scrolling up to read stops the following; scrolling back down, or sending a
message, resumes it).

The window's cards come from the chat controller's factory
(:class:`~streamscope.ui.chat.chat_cards.ChatCards`); a bare view builds user messages and notices
(:class:`BasicCards`), and takes cards its caller builds (:meth:`ChatView.add_user_message`,
:meth:`~ChatView.begin_assistant_message`, :meth:`~ChatView.add_notice`: kept for the
view's life).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from streamscope.ui.base.code_highlight import warm_up_highlighting
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.card_column import CardColumn, CardFactory
from streamscope.ui.chat.chat_rows import CardKey, ChatRow, NoticeRow, UserRow, WidgetRow
from streamscope.ui.chat.message_card import NoticeCard, UserCard

__all__ = [
    "BOTTOM_SLACK",
    "AssistantCard",
    "BasicCards",
    "CardFactory",
    "ChatView",
    "NoticeCard",
    "UserCard",
]

BOTTOM_SLACK = 4
"""Pixels from the end that still count as "at the bottom"."""

WARM_UP_DELAY_MS = 250
"""After the event loop starts (the window has painted), Pygments loads in the background."""


class BasicCards:
    """User messages, notices and cards built by the caller (:class:`WidgetRow`)."""

    def build(self, key: CardKey, parent: QWidget) -> QWidget:
        if isinstance(key, WidgetRow) and key.widget is not None:
            return key.widget
        if isinstance(key, UserRow):
            card: QWidget = UserCard(key.text, parent)
        elif isinstance(key, NoticeRow):
            card = NoticeCard(key.markdown, parent)
        else:
            raise TypeError(f"no card for {key!r}")
        self.sync(key, card)
        return card

    def sync(self, key: CardKey, card: QWidget) -> None:
        if isinstance(key, UserRow) and isinstance(card, UserCard):
            card.set_versions(key.chosen, key.count)
            if card.title.text().startswith("you · editing") != key.editing:
                card.set_editing(key.editing)


class ChatView(CardColumn):
    """A scrollable list of message cards."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self._follow = True
        super().__init__(BasicCards(), parent)
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrollbar_valueChanged)
        bar.rangeChanged.connect(self._on_scrollbar_rangeChanged)
        QTimer.singleShot(0, lambda: QTimer.singleShot(WARM_UP_DELAY_MS, warm_up_highlighting))

    def set_rows(self, rows: Sequence[ChatRow]) -> None:
        """Show ``rows`` (a conversation opened, redrawn) at the end, following it. A live
        answer's card is kept, hidden, when its row is not among them: it is the only copy
        on screen of what arrived (its turn streams on while another conversation is
        read), and shows again, grown, with its rows."""
        keys = {id(key) for row in rows for key in (row, *getattr(row, "slots", ()))}
        live = {
            key: card
            for key, card in self._cards.items()
            if getattr(key, "live", False) and id(key) not in keys
        }
        for key in live:
            del self._cards[key]
        self._follow = True
        super().set_rows(rows)
        self._cards.update(live)  # (pinned while live: never evicted)
        self.scroll_to_bottom()

    def rows(self) -> list[ChatRow]:
        """The rows shown, top to bottom."""
        return list(self._rows)

    # -- following the end ----------------------------------------------------------------

    def is_at_bottom(self) -> bool:
        """Whether the end of the chat is in view."""
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - BOTTOM_SLACK

    def scroll_to_bottom(self) -> None:
        """Show the end, and keep following it as it grows."""
        self._follow = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def scroll_bar_value(self) -> int:
        """The vertical scroll position in pixels."""
        return self.verticalScrollBar().value()

    def scroll_to(self, value: int) -> None:
        """Scroll to ``value`` pixels (as a user would)."""
        self.verticalScrollBar().setValue(value)

    def following(self) -> bool:
        return self._follow

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        # (the scroll bar calls this before its other slots: the following is decided first)
        self._on_scrollbar_valueChanged(self.verticalScrollBar().value())
        super().scrollContentsBy(dx, dy)

    def _on_scrollbar_valueChanged(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._follow = value >= bar.maximum() - BOTTOM_SLACK

    def _on_scrollbar_rangeChanged(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)

    # -- cards built by the caller --------------------------------------------------------

    def add_user_message(self, text: str) -> UserCard:
        """Add what the user sent as a card kept for the view's life (and follow the end
        again: the user just acted)."""
        card = UserCard(text, self.viewport())
        self._add_widget(card)
        self.scroll_to_bottom()
        return card

    def begin_assistant_message(self, label: str = "assistant") -> AssistantCard:
        """Add an empty assistant card that the caller streams into."""
        card = AssistantCard(label, self.viewport())
        self._add_widget(card)
        return card

    def add_notice(self, markdown: str) -> NoticeCard:
        """Add a note from the app, in Markdown (e.g. the welcome text)."""
        card = NoticeCard(markdown, self.viewport())
        self._add_widget(card)
        return card

    def drop_welcome(self) -> None:
        """The conversation's first message is being sent: the welcome (a notice, alone in
        the view) goes, so the exchange starts at the top."""
        rows = self._rows
        if len(rows) == 1 and isinstance(getattr(rows[0], "widget", None), NoticeCard):
            self.set_rows([])

    def _add_widget(self, card: QWidget) -> None:
        card.hide()
        self.append_row(WidgetRow(widget=card), card)
