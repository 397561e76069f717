"""The window's cards, built for the chat's rows on demand and wired to the controller.

:class:`ChatCards` is the chat view's :class:`~streamscope.ui.chat.chat_view.CardFactory` in the
window: it builds a user message's card (its ◀ ▶ versions), an answer's card (a saved answer
shows its turn; its Markdown renders in slices on the paint clock) and wires the same
signals to the controller whenever a card is built — inspect, frame requested, alternative
stepped, version stepped, results submitted — and tells it an answer's card was built (its
verdict may be checked again). :meth:`ChatCards.sync` shows a row's state on
its card (a card built late, or taken back from the kept ones, shows it as it is now).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol

from PySide6.QtWidgets import QWidget

from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.chat_rows import AnswerSlot, CardKey, UserRow
from streamscope.ui.chat.chat_view import BasicCards

__all__ = ["CardHandlers", "ChatCards"]


class CardHandlers(Protocol):
    """What the cards' signals reach (the chat controller)."""

    def inspect(self, slot: AnswerSlot) -> None: ...

    def _on_card_frame_requested(self, slot: AnswerSlot, reason: str) -> None: ...

    def _on_answer_card_alternative_stepped(self, slot: AnswerSlot, step: int) -> None: ...

    def _on_card_results_submitted(
        self, slot: AnswerSlot, results: list[tuple[str, str, str]]
    ) -> None: ...

    def _on_user_card_version_stepped(self, row: UserRow, step: int) -> None: ...

    def _on_answer_card_built(self, slot: AnswerSlot) -> None: ...


class ChatCards(BasicCards):
    """Builds and syncs the window's cards; ``selected()`` is the key of the turn the
    inspector shows (its card is drawn selected)."""

    def __init__(self, handlers: CardHandlers, selected: Callable[[], int | None]) -> None:
        self._handlers = handlers
        self._selected = selected

    def build(self, key: CardKey, parent: QWidget) -> QWidget:
        handlers = self._handlers
        if not isinstance(key, AnswerSlot):
            card = super().build(key, parent)
            if isinstance(key, UserRow):
                card.versionStepped.connect(  # type: ignore[attr-defined]
                    functools.partial(handlers._on_user_card_version_stepped, key)
                )
            return card
        answer = AssistantCard(key.label, parent)
        answer.inspectRequested.connect(functools.partial(handlers.inspect, key))
        answer.frameRequested.connect(functools.partial(handlers._on_card_frame_requested, key))
        answer.alternativeStepped.connect(
            functools.partial(handlers._on_answer_card_alternative_stepped, key)
        )
        answer.resultsSubmitted.connect(functools.partial(handlers._on_card_results_submitted, key))
        answer.reasoning_toggle.toggled.connect(functools.partial(_expanded, key))
        if key.turn is not None:
            answer.show_turn(key.turn)
        self.sync(key, answer)
        handlers._on_answer_card_built(key)  # (its kept verdict may need checking again)
        return answer

    def sync(self, key: CardKey, card: QWidget) -> None:
        if not isinstance(key, AnswerSlot) or not isinstance(card, AssistantCard):
            super().sync(key, card)
            return
        card.turn_ref = key.ref
        if card.title.text() != key.label:
            card.title.setText(key.label)
        card.set_alternatives(key.index, key.count)
        selected = self._selected()
        card.set_selected(key.ref is not None and selected is not None and key.ref.key == selected)
        if key.turn is not None:
            if key.results:
                card.show_results(key.results)
            if key.unanswered or not card.unanswered_label.isHidden():
                card.show_unanswered(key.unanswered, skipped=key.skipped)
        if key.verdict and card.verdict != key.verdict:
            card.show_verdict(key.verdict)
        if key.redacted:
            card.note_redacted()
        if key.reasoning_expanded != card.reasoning_toggle.isChecked():
            card.reasoning_toggle.setChecked(key.reasoning_expanded)


def _expanded(slot: AnswerSlot, checked: bool) -> None:
    slot.reasoning_expanded = checked
