"""Reading another conversation while a turn streams: the real window on a real profile
against the demo endpoint. The turn streams on into its own conversation (its card, its save
clock, the status bar naming it), nothing of it is painted into the one read, and coming
back shows it live (Stop within 0.5 s); a turn that ends while another conversation is shown
is saved whole."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolTip
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.chat.chat_rows import AnswersRow, UserRow
from streamscope.ui.chat.composer import elsewhere_note
from streamscope.ui.chat.conversations_model import LIVE_MARK, LIVE_TIP
from streamscope.ui.chat.conversations_panel import BUSY_NOTE
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards

READ = "First question about streams"
"""The conversation read meanwhile (one ``demo`` answer)."""
SLOW = "Tell me slowly"
"""The conversation the slow turn streams into."""


@pytest.fixture
def window(
    request: pytest.FixtureRequest, qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path
) -> Iterator[tuple[MainWindow, Store]]:
    """A window on a profile, its demo at the speed the test asks for (by default 4:
    demo-slow sends a delta every 0.5 s / speed)."""
    store = Store(tmp_path / "streamscope.db")
    captures = CaptureStore(tmp_path / "captures", index=store)
    win = MainWindow(demo_speed=getattr(request, "param", 4), store=store, captures=captures)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    qtbot.waitExposed(win)
    yield win, store
    aloop.run_until_complete(win.shutdown())
    store.close()


def wait_until(
    aloop: qasync.QEventLoop, condition: Callable[[], bool], timeout: float = 30
) -> None:
    """Run the loop (the turn runs on it) until ``condition`` holds."""

    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())


def send(window: MainWindow, model: str, text: str) -> None:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()


def click_row(window: MainWindow, conversation_id: int) -> None:
    """Click a conversation in the list, as a person would."""
    panel = window.conversations
    row = panel.ids().index(conversation_id)
    index = panel.model.index(row)
    panel.list.setCurrentIndex(index)
    panel.list.clicked.emit(index)


def stored_answer(store: Store, conversation_id: int) -> tuple[str, Outcome | None]:
    """The last assistant message saved in the conversation: its text and outcome."""
    answers = [m for m in store.load_messages(conversation_id) if m.role == "assistant"]
    last = answers[-1]
    return last.text, last.turn.outcome if last.turn is not None else None


def start_two(window: MainWindow, aloop: qasync.QEventLoop) -> tuple[int, int]:
    """A conversation with one answer (``READ``), then a new one whose ``demo-slow`` turn
    streams (``SLOW``); their ids."""
    controller = window.controller
    send(window, "demo", READ)
    wait_until(aloop, lambda: not controller.busy)
    aloop.run_until_complete(controller.runner.wait())
    read_id = controller.session.conversation_id
    window.switcher.new_conversation()
    send(window, "demo-slow", SLOW)
    wait_until(aloop, lambda: controller._card is not None and len(controller._card.text()) >= 20)
    slow_id = controller.session.conversation_id
    assert read_id is not None and slow_id is not None and read_id != slow_id
    return read_id, slow_id


def live_text(window: MainWindow) -> str:
    card = window.controller._card
    assert card is not None
    return card.text()


@pytest.mark.parametrize("window", [1], indirect=True)  # (streams on long enough, even busy)
def test_another_conversation_reads_while_the_turn_streams_on_and_comes_back_live(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    win, store = window
    controller, chat, panel = win.controller, win.chat, win.conversations
    read_id, slow_id = start_two(win, aloop)
    slow_session = controller.session
    live_card = controller._card
    assert live_card is not None and live_card in chat.cards()
    assert panel.titles()[panel.ids().index(slow_id)] == LIVE_MARK + SLOW  # marked live
    tip = panel.model.index(panel.ids().index(slow_id)).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith(SLOW + "\n") and tip.endswith("\n" + LIVE_TIP)

    click_row(win, read_id)  # mid-stream: it opens, to read
    assert controller.busy and controller.session.conversation_id == read_id
    assert controller.live_elsewhere == slow_id
    rows = chat.rows()
    assert [type(r) for r in rows] == [UserRow, AnswersRow]
    assert isinstance(rows[0], UserRow) and rows[0].text == READ
    (read_card,) = answer_cards(controller)
    assert read_card is not live_card and read_card.text() != ""
    assert live_card not in chat.cards() and not live_card.isVisible()  # not painted here
    assert panel.list.currentIndex().row() == panel.ids().index(read_id)
    assert not win.controller.feed.following_live  # the inspector shows the read one's turn
    assert win.status.text().startswith(f"“{SLOW}” — Streaming · ")
    assert win.composer.elsewhere_label.isVisibleTo(win.composer)
    assert (
        win.composer.elsewhere_label.text()
        == elsewhere_note(SLOW)
        == (
            f"● A turn is streaming in “{SLOW}”: send here once it ends, or ■ Stop it (Esc)."
            f" Open “{SLOW}” in the list to watch it."
        )
    )
    assert not win.composer.send_button.isEnabled()  # one turn at a time
    read_text = read_card.text()

    away_at = len(live_text(win))
    wait_until(aloop, lambda: len(live_text(win)) >= away_at + 10)  # it streams on, unseen
    # … and its save clock saves what arrived while another conversation is shown
    wait_until(aloop, lambda: len(stored_answer(store, slow_id)[0]) >= away_at + 10)
    saved, outcome = stored_answer(store, slow_id)
    assert outcome is None and live_text(win).startswith(saved)  # (partial, as it came)
    assert read_card.text() == read_text  # nothing of it leaks into the one read
    assert [type(r) for r in chat.rows()] == [UserRow, AnswersRow]
    assert live_card not in chat.cards()
    assert win.status.text().startswith(f"“{SLOW}” — Streaming · ")

    click_row(win, slow_id)  # back: the very same conversation, still streaming
    assert controller.session is slow_session and controller.live_elsewhere is None
    assert controller._card is live_card and live_card in chat.cards()
    assert live_card.isVisible()
    assert controller.feed.following_live
    assert win.status.text().startswith("Streaming · ")
    assert not win.composer.elsewhere_label.isVisibleTo(win.composer)
    back_at = len(live_card.text())
    assert back_at >= away_at + 10
    wait_until(aloop, lambda: len(live_card.text()) >= back_at + 5)  # it grows in view
    assert chat.is_at_bottom()  # (followed)

    started = time.monotonic()
    qtbot.mouseClick(win.composer.stop_button, Qt.MouseButton.LeftButton)
    wait_until(aloop, lambda: not controller.busy, timeout=5)
    assert time.monotonic() - started < 0.5
    turn = aloop.run_until_complete(controller.runner.wait())
    assert turn is not None and turn.outcome is Outcome.CANCELLED
    assert stored_answer(store, slow_id) == (turn.text, Outcome.CANCELLED)
    assert panel.titles()[panel.ids().index(slow_id)] == SLOW  # the mark is gone


def test_a_turn_ending_while_another_is_read_is_saved_whole(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    win, store = window
    controller, chat, panel = win.controller, win.chat, win.conversations
    read_id, slow_id = start_two(win, aloop)
    click_row(win, read_id)
    (read_card,) = answer_cards(controller)
    read_text = read_card.text()
    scrolled = chat.scroll_bar_value()

    wait_until(aloop, lambda: not controller.busy, timeout=60)  # it ends, unseen
    turn = aloop.run_until_complete(controller.runner.wait())
    assert turn is not None and turn.outcome is Outcome.COMPLETED and len(turn.text) > 40
    assert stored_answer(store, slow_id) == (turn.text, Outcome.COMPLETED)  # whole
    assert controller.session.conversation_id == read_id  # still reading
    assert read_card.text() == read_text and chat.scroll_bar_value() == scrolled
    assert [type(r) for r in chat.rows()] == [UserRow, AnswersRow]
    assert controller.live_elsewhere is None
    assert win.status.text().startswith(f"“{SLOW}” — Completed · stop · ")
    assert panel.titles()[panel.ids().index(slow_id)] == SLOW  # its row: no longer streaming
    assert not win.composer.elsewhere_label.isVisibleTo(win.composer)
    assert win.composer.send_button.isEnabled()

    click_row(win, slow_id)  # read back from the store: all of it
    assert controller.session.conversation_id == slow_id
    assert controller.session is not None and win.status.text() == "Ready"
    cards = answer_cards(controller)
    assert len(cards) == 1 and cards[0].text() == turn.text


def test_a_new_conversation_waits_for_the_turn(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    win, _store = window
    controller, panel = win.controller, win.conversations
    read_id, slow_id = start_two(win, aloop)
    click_row(win, read_id)
    panel._on_new_button_clicked()  # one turn at a time: a new conversation waits
    assert controller.session.conversation_id == read_id
    assert (
        QToolTip.text()
        == BUSY_NOTE
        == ("A turn is streaming: stop it (Esc) or let it finish, then start a new conversation.")
    )
    win.wiring.stop_or_cancel_edit()  # Esc while reading elsewhere stops the turn
    wait_until(aloop, lambda: not controller.busy, timeout=5)
    aloop.run_until_complete(controller.runner.wait())
    assert controller.session.conversation_id == read_id
    assert panel.titles()[panel.ids().index(slow_id)] == SLOW


def test_a_conversation_without_answers_read_meanwhile_leaves_the_inspector_live_turn(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    """A conversation with no turn to show clears the inspector: the live turn is parked
    there too ("Back to live"), and comes back whole with its conversation."""
    win, store = window
    controller, feed, header = win.controller, win.controller.feed, win.inspector.header
    quiet = store.create_conversation("Nothing answered yet")
    store.add_user_message(quiet, "hello")
    _read_id, slow_id = start_two(win, aloop)
    win.conversations.refresh()
    click_row(win, quiet)
    assert controller.session.conversation_id == quiet
    assert header.text() == "No turn in this conversation yet"
    assert header.back_button.isVisibleTo(header)  # the live turn goes on, parked
    away_at = feed.live_frames()
    wait_until(aloop, lambda: feed.live_frames() >= away_at + 3)

    click_row(win, slow_id)
    assert feed.following_live
    assert win.inspector.frames_model.rowCount() == feed.live_frames() >= away_at + 3
    controller.stop()
    wait_until(aloop, lambda: not controller.busy, timeout=5)
    aloop.run_until_complete(controller.runner.wait())
