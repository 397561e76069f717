"""A conversation of hundreds of exchanges in the real window (the big profile's 727-message
one, tests/support/big_profile.py, small build): it opens whole, loaded off the UI thread,
with a few cards built; what a card shows comes from its row, so a card built late — or
built again after it was deleted — shows the state the user gave it: the inspected turn
selected, an alternative paged to, the message being edited, results sent, the theme; the
live answer streams on while the user reads far above it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.store.database import Store
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.base.theme import TEXT
from streamscope.ui.chat import card_column
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.chat_rows import AnswerSlot
from streamscope.ui.chat.chat_view import ChatView
from streamscope.ui.chat.message_card import NoticeCard, UserCard
from streamscope.ui.shell.main_window import MainWindow
from support.big_profile import LONG_MESSAGES, ProfileFacts, cached_profile
from support.chat import settled

Profile = tuple[Store, CaptureStore, ProfileFacts]


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[Profile]:
    facts = cached_profile(tmp_path / "data", small=True)
    store = Store(Path(facts.path))
    yield store, CaptureStore(tmp_path / "captures", index=store), facts
    store.close()


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop, profile: Profile) -> Iterator[MainWindow]:
    store, captures, facts = profile
    win = MainWindow(demo_speed=25, store=store, captures=captures)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    qtbot.waitExposed(win)
    open_long(win, aloop, facts)
    yield win
    win.theme.set_mode("system")  # (the application palette outlives the window)
    aloop.run_until_complete(win.shutdown())


def open_long(window: MainWindow, aloop: qasync.QEventLoop, facts: ProfileFacts) -> None:
    window.switcher.open_conversation(facts.long_id)
    loading = window.switcher.loading
    assert loading is not None  # (727 messages: read on the switcher's thread)
    aloop.run_until_complete(loading)
    assert window.controller.session.conversation_id == facts.long_id
    if window.controller.feed.loading is not None:
        aloop.run_until_complete(window.controller.feed.loading)
    settled(window.chat)


def wait_until(
    aloop: qasync.QEventLoop, condition: Callable[[], bool], timeout: float = 60
) -> None:
    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())


def wait_turn(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    wait_until(aloop, lambda: not window.controller.busy)
    aloop.run_until_complete(window.controller.runner.wait())


def far_answer(window: MainWindow, predicate: Callable[[AnswerSlot], bool]) -> AnswerSlot:
    """An answer near the top (its card not built) that ``predicate`` picks."""
    chat = window.chat
    slot = next(s for s in window.controller.answers[:60] if predicate(s))
    assert chat.card_of(slot) is None
    return slot


@pytest.fixture
def nothing_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A card that leaves the margin is deleted (built again when shown)."""
    monkeypatch.setattr(card_column, "KEPT_CARDS", 0)


def to_top_and_back(window: MainWindow, qtbot: QtBot) -> None:
    chat = window.chat
    chat.scroll_to(0)
    settled(chat)
    qtbot.wait(20)  # (cards deleted are gone)
    chat.scroll_to_bottom()
    settled(chat)


# -- opening --------------------------------------------------------------------------------


def test_the_long_conversation_opens_whole_with_few_cards_built(
    window: MainWindow, profile: Profile
) -> None:
    store, _, facts = profile
    chat, controller = window.chat, window.controller
    assert len(controller.session.loaded_messages) == LONG_MESSAGES == facts.long_messages
    entries = controller.history.path_entries()
    shown = [e for e in entries if e.kind != "tool"]  # (a result shows on its call's card)
    assert chat.row_count() == len(shown) == 642  # every message of the path is a row
    assert not [c for c in chat.cards() if isinstance(c, NoticeCard)]  # ("not shown": gone)
    assert chat.is_at_bottom() and chat.built <= 30
    last = chat.cards()[-1]
    assert isinstance(last, AssistantCard) and last.text() == entries[-1].turn.text

    chat.scroll_to(0)  # the range covers the whole conversation: its first message is there
    first = settled(chat).cards()[0]
    messages = store.load_conversation(facts.long_id, limit=None).messages
    assert isinstance(first, UserCard) and first.text() == messages[0].text
    assert first.y() == card_column.MARGIN
    assert chat.built <= 60 and len(chat.built_cards()) <= 30 + card_column.KEPT_CARDS


def answers(chat: ChatView) -> list[AssistantCard]:
    return [c for c in chat.cards() if isinstance(c, AssistantCard)]


@pytest.mark.parametrize("where", [0.1, 0.5, 0.8])
def test_a_jump_keeps_what_the_user_reads_still_as_the_cards_around_it_render(
    window: MainWindow, aloop: qasync.QEventLoop, where: float
) -> None:
    chat = window.chat
    chat.scroll_to(int(chat.verticalScrollBar().maximum() * where))
    cards = settled(chat).cards()
    top = [c for c in cards if c.y() <= 0][-1]
    # (its top just above the view, whatever its height: the rows a screen above it are built)
    chat.scroll_to(chat.scroll_bar_value() + top.y() + 10)
    cards = settled(chat).cards()
    height = chat.viewport().height()
    anchor = [c for c in cards if c.y() <= 0][-1]  # (its row is at the top of the view)
    assert cards.index(anchor) > 0  # (cards built above it, estimated until then)
    y, value = anchor.y(), chat.scroll_bar_value()
    assert any(c.is_rendering() for c in answers(chat))  # (in slices: heights change)
    wait_until(aloop, lambda: not any(c.is_rendering() for c in answers(settled(chat))))
    assert anchor.y() == y  # what the user reads did not move
    assert chat.scroll_bar_value() != value  # (the heights above it did change)
    assert anchor in chat.cards() and anchor.y() < height


# -- state kept in the rows -------------------------------------------------------------------


def test_a_card_built_after_the_selection_shows_it(
    window: MainWindow, aloop: qasync.QEventLoop, nothing_kept: None
) -> None:
    controller = window.controller
    last = controller.answer_card(-1)
    assert last.is_selected()  # (its turn is the one the inspector shows)
    slot = far_answer(window, lambda s: bool(s.turn and s.turn.text))
    controller.inspect(slot)
    if controller.feed.loading is not None:
        aloop.run_until_complete(controller.feed.loading)
    assert not last.is_selected()
    card = controller.answer_card(slot)  # built now, scrolled to
    assert card.is_selected() and card.turn_ref == slot.ref
    assert window.inspector.header.text().endswith(" · demo · ✓ completed")
    window.chat.scroll_to_bottom()
    again = settled(window.chat).cards()[-1]
    assert isinstance(again, AssistantCard) and again is not last  # (built again)
    assert not again.is_selected()


def test_results_a_card_got_show_when_it_is_built_late(window: MainWindow) -> None:
    slot = far_answer(window, lambda s: bool(s.turn and s.turn.tool_calls and s.results))
    card = window.controller.answer_card(slot)
    boxes = card.tool_call_boxes()
    assert [b.result.toPlainText() for b in boxes] == ['{"temp_c": 4, "sky": "☁️"}']
    assert boxes[0].result.isReadOnly()
    assert card.send_button.text() == "Results sent" and not card.send_button.isEnabled()
    assert not card.unanswered_label.isVisibleTo(card)


def test_paging_the_alternatives_of_an_answer_built_late(window: MainWindow) -> None:
    controller, chat = window.controller, window.chat
    rows = chat.row_count()
    slot = far_answer(window, lambda s: s.count == 2 and s.index == 1)
    step = slot.row
    assert step is not None and step.shown is slot
    card = controller.answer_card(slot)
    assert card.alt_label.text() == "answer 2/2" and card.pager.isVisibleTo(card)
    card.prev_alt.click()  # the earlier answer: nothing followed it, the path ends there
    assert controller.history.path_entries()[-1].answers == tuple(s.turn for s in step.slots)
    assert chat.row_count() == step.index + 1 < rows
    first = controller.answer_card(step.slots[0])
    assert first.isVisibleTo(window) and first.alt_label.text() == "answer 1/2"
    assert not first.prev_alt.isEnabled() and first.next_alt.isEnabled()
    first.next_alt.click()  # and back: the whole conversation again
    assert chat.row_count() == rows
    assert controller.answer_card(slot) is card  # (kept: the same card)
    assert card.alt_label.text() == "answer 2/2"


def test_edit_last_marks_a_card_built_after_the_edit_began(
    window: MainWindow, qtbot: QtBot, profile: Profile, nothing_kept: None
) -> None:
    store, _, facts = profile
    chat = window.chat
    chat.scroll_to(0)
    settled(chat)
    qtbot.wait(20)  # (the end's cards are deleted)
    last_prompt = [m.text for m in store.load_conversation(facts.long_id).messages][-2]
    row = window.controller.rows.last_user
    assert row is not None and chat.card_of(row) is None
    window.composer.edit_button.click()
    assert window.composer.editor.toPlainText() == last_prompt
    chat.scroll_to_bottom()
    card = chat.card_for(row)  # (scrolled up to, above the last answer: built now)
    assert isinstance(card, UserCard) and card.text() == last_prompt
    assert card.title.text() == "you · editing in the box below"
    window.composer.cancel_edit_button.click()
    assert card.title.text() == "you"


def test_a_card_built_after_a_theme_switch_has_the_new_colours(window: MainWindow) -> None:
    last = window.controller.answer_card(-1)
    assert last.footer.text().startswith(f"<span style='color:{TEXT['ok'].light};")
    window.theme.set_mode("dark")
    assert last.footer.text().startswith(f"<span style='color:{TEXT['ok'].dark};")
    slot = far_answer(window, lambda s: bool(s.turn and s.turn.text))
    card = window.controller.answer_card(slot)  # built in the dark theme
    assert card.footer.text().startswith(f"<span style='color:{TEXT['ok'].dark};")


# -- turns at the end of a long conversation ---------------------------------------------------


def test_tool_results_sent_at_the_end_of_a_long_conversation(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot, nothing_kept: None
) -> None:
    controller, chat = window.controller, window.chat
    window.model_combo.setCurrentText("demo-tools")
    window.composer.editor.setPlainText("Weather and time in Zürich?")
    window.composer._on_submit()
    wait_turn(window, aloop)
    slot = controller.answers[-1]
    card = controller.answer_card(-1)
    assert [c.name for c in card.calls] == ["get_weather", "get_time"] and slot.pinned
    to_top_and_back(window, qtbot)  # (waiting for results: kept while the user reads)
    assert chat.card_of(slot) is card
    for box, text in zip(card.tool_call_boxes(), ["14 °C", "15:42"], strict=True):
        box.result.setPlainText(text)
    path = len(controller.history.path())
    card.send_button.click()
    wait_turn(window, aloop)
    answer = controller.answers[-1].turn
    assert answer is not None and answer.outcome is Outcome.COMPLETED, answer and answer.reason
    assert "2 tool results arrived" in answer.text
    capture = controller.last_capture
    assert capture is not None and capture.request is not None
    sent = json.loads(capture.request.body)["messages"]
    assert [m["content"] for m in sent[-2:]] == ["14 °C", "15:42"]
    assert len(sent) == path + 2  # (the whole conversation went, and the two results)

    to_top_and_back(window, qtbot)  # its card was deleted: built again from its row
    again = controller.answer_card(slot)
    assert again is not card
    assert [b.result.toPlainText() for b in again.tool_call_boxes()] == ["14 °C", "15:42"]
    assert again.send_button.text() == "Results sent" and not again.send_button.isEnabled()


def _slow_capture(deltas: list[str], seconds: float) -> Capture:
    """An OpenAI chat stream read over ``seconds`` (a read per delta)."""
    reads = ReadLog()
    step = seconds / len(deltas)
    for i, text in enumerate(deltas):
        chunk = {"object": "chat.completion.chunk", "choices": [{"delta": {"content": text}}]}
        reads.append(0.01 + i * step, b"data: " + json.dumps(chunk).encode() + b"\n\n")
    reads.append(0.02 + seconds, b"data: [DONE]\n\n")
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", None, response, reads, CaptureEnd("eof", elapsed=seconds))


def test_the_live_answer_streams_on_while_the_user_reads_far_above(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot, nothing_kept: None
) -> None:
    chat, controller = window.chat, window.controller
    deltas = [f"word{i} " + ("\n\n" if i % 20 == 19 else "") for i in range(400)]
    assert controller.replay(_slow_capture(deltas, 4.0), speed=1.0, label="replay")
    card = chat.cards()[-1]  # (the replay's card, at the end)
    assert isinstance(card, AssistantCard) and card.turn is None
    appended: list[str] = []
    append = card._tail_appender.append
    card._tail_appender.append = lambda text: (appended.append(text), append(text))[1]  # type: ignore[method-assign]
    wait_until(aloop, lambda: len(card.text()) > 100)
    chat.scroll_to(0)  # the user reads the beginning meanwhile
    settled(chat)
    assert card not in chat.cards() and card.isHidden()
    at_top = len(card.text())
    wait_until(aloop, lambda: len(card.text()) > at_top + 100 or not controller.busy)
    assert len(card.text()) > at_top and card.isHidden()  # it streams on, unseen
    assert chat.scroll_bar_value() == 0  # (and the view stays where the user is)
    chat.scroll_to_bottom()
    assert settled(chat).cards()[-1] is card  # the same card: never released
    wait_turn(window, aloop)
    wait_until(aloop, lambda: not card.is_rendering())
    assert card.text() == "".join(deltas)  # whole, as it came
    # appended piece by piece as it streamed, in order, never the whole text again
    text, at = card.text(), 0
    assert len(appended) > 3 and sum(map(len, appended)) <= len(text)
    for piece in appended:
        at = text.index(piece, at) + len(piece)
    assert card.rendered_pane().toPlainText().startswith("word0 word1")
    assert chat.is_at_bottom() and chat.cards()[-1] is card


def test_a_later_choice_wins_over_a_long_conversation_still_loading(
    qtbot: QtBot, aloop: qasync.QEventLoop, profile: Profile
) -> None:
    store, captures, facts = profile
    window = MainWindow(demo_speed=25, store=store, captures=captures)
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.controller.session.conversation_id == facts.latest_id  # (at once: short)
        window.switcher.open_conversation(facts.long_id)
        loading = window.switcher.loading
        assert loading is not None and not loading.done()
        assert window.controller.session.conversation_id == facts.latest_id  # (meanwhile)
        window.switcher.new_conversation()  # the user goes on before it is loaded
        assert window.switcher.loading is None
        aloop.run_until_complete(asyncio.sleep(0.5))  # (the thread's read ends meanwhile)
        assert loading.cancelled()
        assert window.controller.session.conversation_id is None
        assert [type(c) for c in settled(window.chat).cards()] == [NoticeCard]  # the welcome
    finally:
        aloop.run_until_complete(window.shutdown())
