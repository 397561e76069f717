"""The chat's cards for tests: the view builds cards only near its viewport, so a test that
looks at every answer's card builds each one (a conversation of a few turns: all of them are
near the viewport anyway)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamscope.ui.chat.answer_card import AssistantCard
    from streamscope.ui.chat.card_column import CardColumn
    from streamscope.ui.chat.chat_controller import ChatController


def answer_cards(controller: ChatController) -> list[AssistantCard]:
    """Every answer's card (each alternative), top to bottom: the one its step shows
    scrolled to, the others built hidden."""
    return [controller.answer_card(i) for i in range(len(controller.answers))]


def settled(chat: CardColumn) -> CardColumn:
    """``chat`` with the cards ahead of its viewport built (it builds the ones in view at
    once, the others over the next passes of the event loop)."""
    chat.settle()
    assert not chat.pending()
    return chat
