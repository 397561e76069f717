"""The chat column over many rows, without a window: it builds cards only near its viewport,
its range spans every row, what the user reads stays still when heights above it change,
released cards are kept a while and deleted after, pinned ones never."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from streamscope.ui.chat import card_column
from streamscope.ui.chat.chat_rows import ChatRow, UserRow
from streamscope.ui.chat.chat_view import ChatView, UserCard
from support.chat import settled

ROWS = 500


@pytest.fixture
def view(qtbot: QtBot) -> Iterator[ChatView]:
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(600, 500)
    chat.show()
    qtbot.waitExposed(chat)
    yield chat


def messages(n: int = ROWS) -> list[ChatRow]:
    """``n`` user messages, every tenth long enough to wrap (rows of different heights)."""
    long = "lorem ipsum " * 40
    return [UserRow(text=f"message {i} " + (long if i % 10 == 0 else "")) for i in range(n)]


def shown_texts(chat: ChatView) -> list[str]:
    return [card.text() for card in settled(chat).cards() if isinstance(card, UserCard)]


def in_view(chat: ChatView) -> list[QWidget]:
    height = chat.viewport().height()
    return [c for c in chat.cards() if c.y() + c.height() > 0 and c.y() < height]


def test_hundreds_of_rows_build_a_bounded_number_of_cards(view: ChatView) -> None:
    rows = messages()
    view.set_rows(rows)
    settled(view)
    assert view.is_at_bottom()
    assert shown_texts(view)[-1] == "message 499 "
    # a screen in view and about a screen above it: a few cards, not 500
    assert 3 <= view.built <= 30 and len(view.built_cards()) == view.built
    # the range spans every row: their heights (measured or estimated) and the gaps
    bar = view.verticalScrollBar()
    heights = sum(view.row_height(r) for r in rows)
    gaps = (ROWS - 1) * card_column.SPACING + 2 * card_column.MARGIN
    assert view.content_height() == heights + gaps
    assert bar.maximum() == view.content_height() - view.viewport().height()
    assert heights > ROWS * 40  # (every row is a card of at least one line)

    view.scroll_to(0)
    assert shown_texts(view)[0] == "message 0 " + "lorem ipsum " * 40
    assert in_view(view)[0] is view.cards()[0] and view.cards()[0].y() == card_column.MARGIN
    assert len(view.built_cards()) <= 30 + card_column.KEPT_CARDS  # (the end's, kept a while)


def test_a_jump_builds_the_cards_there_and_shows_the_same_ones_on_coming_back(
    view: ChatView,
) -> None:
    view.set_rows(messages())
    settled(view)
    view.scroll_to(view.verticalScrollBar().maximum() // 2)
    middle = settled(view).cards()
    numbers = [int(t.split()[1]) for t in shown_texts(view)]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # consecutive rows
    assert 150 < numbers[0] < 350 and len(numbers) <= 30
    view.scroll_to(view.verticalScrollBar().maximum())
    assert not set(settled(view).cards()) & set(middle)
    built = view.built
    view.scroll_to(view.verticalScrollBar().maximum() // 2)
    assert settled(view).cards() == middle  # the same cards: kept, not built again
    assert view.built == built


def test_released_cards_beyond_the_kept_ones_are_deleted(
    view: ChatView, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(card_column, "KEPT_CARDS", 0)
    rows = messages()
    view.set_rows(rows)
    settled(view)
    last = view.cards()[-1]
    view.scroll_to(0)
    settled(view)
    assert view.card_of(rows[-1]) is None  # deleted: built again when shown
    view.scroll_to_bottom()
    again = settled(view).cards()[-1]
    assert again is not last and isinstance(again, UserCard) and again.text() == "message 499 "


@pytest.mark.parametrize("where", [0.25, 0.5, 0.9])
def test_what_the_user_reads_stays_still_when_a_card_above_grows(
    view: ChatView, qtbot: QtBot, where: float
) -> None:
    view.set_rows(messages())
    settled(view)
    view.scroll_to(int(view.verticalScrollBar().maximum() * where))
    settled(view)
    anchor = in_view(view)[0]
    above = view.cards()[0]
    assert above is not anchor and above.y() + above.height() <= 0  # (built above the view)
    y, value = anchor.y(), view.scroll_bar_value()
    assert isinstance(above, UserCard)
    above.pane.setPlainText("grown\n" * 30)  # its height changes: a layout request
    qtbot.waitUntil(lambda: view.scroll_bar_value() > value + 300)  # the range grew above
    assert anchor.y() == y  # and what the user reads did not move


def test_following_the_end_keeps_the_end_in_view_as_the_last_card_grows(
    view: ChatView, qtbot: QtBot
) -> None:
    rows = messages(100)
    view.set_rows(rows)
    card = view.begin_assistant_message()
    for i in range(80):
        card.append_text(f"line {i}\n")
    qtbot.waitUntil(lambda: card.height() > 1000)
    qtbot.waitUntil(view.is_at_bottom)
    assert view.cards()[-1] is card


def test_a_pinned_card_is_never_released(
    view: ChatView, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(card_column, "KEPT_CARDS", 0)  # (the others are deleted at once)
    view.set_rows(messages(200))
    card = view.begin_assistant_message()  # (a card built by the caller: kept for good)
    view.scroll_to(0)
    settled(view)
    qtbot.wait(20)  # (a card deleted would be gone by now)
    assert card not in view.cards() and card.isHidden()
    card.append_text("still here")
    view.scroll_to_bottom()
    settled(view)
    assert view.cards()[-1] is card and card.text() == "still here"
