"""The "⚑ N spec errors" mark stays with its answer: the real window on a real profile against
the demo endpoint — a turn whose stream breaks the rules is marked live, and again after a
restart or when its conversation is reopened (from what was saved, not checked again); a mark
made by other rules, or never made, is made again from the turn's capture off the UI thread,
only for the answers whose cards are built."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store, StoredTurn
from streamscope.core.verdict.catalog import rules_digest
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.chat_rows import AnswerSlot
from streamscope.ui.inspector.turn_feed import InspectorFeed
from streamscope.ui.shell.main_window import MainWindow

Profile = tuple[Store, CaptureStore]
OpenWindow = Callable[[], MainWindow]

BAD = "1 spec error"
"""What the Verdict tab says of ``demo-bad-json``'s answer: one frame's data is not JSON
(``stream.malformed-frame``)."""


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[Profile]:
    store = Store(tmp_path / "streamscope.db")
    yield store, CaptureStore(tmp_path / "captures", index=store)
    store.close()


@pytest.fixture
def open_window(qtbot: QtBot, aloop: qasync.QEventLoop, profile: Profile) -> Iterator[OpenWindow]:
    """Open a window on the profile (again: a restart); each is shut down at the end."""
    store, captures = profile
    windows: list[MainWindow] = []

    def open_one() -> MainWindow:
        win = MainWindow(demo_speed=25, store=store, captures=captures)
        qtbot.addWidget(win)
        win.resize(1200, 800)
        win.show()
        windows.append(win)
        settle(aloop, win)
        return win

    yield open_one
    for win in windows:
        aloop.run_until_complete(win.shutdown())


def settle(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    """Wait for the inspector's turn and for the answers' kept verdicts (checked again if
    need be)."""
    feed = window.controller.feed
    assert isinstance(feed, InspectorFeed)
    loading = feed.loading
    if loading is not None:
        aloop.run_until_complete(loading)
    aloop.run_until_complete(window.controller.verdicts.settled())


def send(
    qtbot: QtBot, window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str
) -> AnswerSlot:
    """Send ``text`` to ``model``; the answer's slot once its turn is checked."""
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()

    async def wait() -> None:
        deadline = time.monotonic() + 60  # (generous: the machine may be busy)
        while window.controller.busy:
            assert time.monotonic() < deadline, "no answer"
            await asyncio.sleep(0.01)
        assert await window.controller.runner.wait() is not None

    aloop.run_until_complete(wait())
    slot = window.controller.answers[-1]
    panel = window.inspector.verdict_panel
    qtbot.waitUntil(lambda: panel.finished, timeout=10_000)  # (checked on the paint clock)
    return slot


def close(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    aloop.run_until_complete(window.shutdown())
    window.close()


def saved(store: Store, conv_id: int) -> list[StoredTurn]:
    turns = [m.turn for m in store.load_conversation(conv_id, limit=None).messages]
    return [t for t in turns if t is not None]


def mark(card: AssistantCard) -> bool:
    return f"⚑ {BAD}" in card.footer.text()


def test_the_mark_comes_back_after_a_restart_and_a_reopen(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot, profile: Profile
) -> None:
    store, _ = profile
    first = open_window()
    bad = send(qtbot, first, aloop, "demo-bad-json", "Hello there")
    clean = send(qtbot, first, aloop, "demo", "And now?")
    assert (bad.verdict, clean.verdict) == (BAD, "")
    assert mark(first.controller.answer_card(bad))
    conv_id = first.controller.session.conversation_id
    assert conv_id is not None
    turns = saved(store, conv_id)
    assert [(t.verdict, t.verdict_rules) for t in turns] == [
        (BAD, rules_digest()),
        ("", rules_digest()),
    ]
    close(aloop, first)

    second = open_window()  # the restart: the conversation opens with its marks
    assert second.controller.session.conversation_id == conv_id
    assert [s.verdict for s in second.controller.answers] == [BAD, ""]
    card = second.controller.answer_card(0)
    assert mark(card) and card.verdict == BAD
    assert not mark(second.controller.answer_card(1))
    assert second.controller.verdicts.checked == 0  # (kept under these rules: not checked again)

    second.switcher.new_conversation()  # another conversation, then this one again
    assert second.controller.answers == []
    second.switcher.open_conversation(conv_id)
    settle(aloop, second)
    assert [s.verdict for s in second.controller.answers] == [BAD, ""]
    assert mark(second.controller.answer_card(0))
    assert second.controller.verdicts.checked == 0


def test_a_mark_made_by_other_rules_or_never_made_is_made_again_from_the_capture(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot, profile: Profile
) -> None:
    store, _ = profile
    first = open_window()
    bad = send(qtbot, first, aloop, "demo-bad-json", "Hello there")
    clean = send(qtbot, first, aloop, "demo", "And now?")
    conv_id = first.controller.session.conversation_id
    assert conv_id is not None and bad.message_id is not None and clean.message_id is not None
    close(aloop, first)
    # as an older build (or other rules) left them: the bad one says nothing under rules
    # that are not these, the clean one was never checked
    store.save_verdict(bad.message_id, "", "older rules")
    store._db.execute(
        "UPDATE turns SET verdict = NULL, verdict_rules = NULL WHERE message_id = ?",
        (clean.message_id,),
    )
    assert [t.kept_verdict(rules_digest()) for t in saved(store, conv_id)] == [None, None]

    second = open_window()  # checked again from their captures, off the UI thread
    assert second.controller.verdicts.checked == 2
    assert [s.verdict for s in second.controller.answers] == [BAD, ""]
    assert mark(second.controller.answer_card(0))
    turns = saved(store, conv_id)
    assert [(t.verdict, t.verdict_rules) for t in turns] == [
        (BAD, rules_digest()),
        ("", rules_digest()),
    ]
    close(aloop, second)

    third = open_window()  # kept now: shown, not checked again
    assert third.controller.verdicts.checked == 0
    assert [s.verdict for s in third.controller.answers] == [BAD, ""]


def test_only_the_answers_whose_cards_are_built_are_checked_again(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot, profile: Profile
) -> None:
    """A regenerated answer not shown has no card: it is checked when it is paged to."""
    store, _ = profile
    first = open_window()
    bad = send(qtbot, first, aloop, "demo-bad-json", "Hello there")
    first.model_combo.setCurrentText("demo")
    first.controller.regenerate()
    aloop.run_until_complete(first.controller.runner.wait())
    qtbot.waitUntil(lambda: not first.controller.busy, timeout=10_000)
    conv_id = first.controller.session.conversation_id
    assert conv_id is not None and bad.message_id is not None
    close(aloop, first)
    store._db.execute("UPDATE turns SET verdict = NULL, verdict_rules = NULL")

    second = open_window()
    controller = second.controller
    shown, hidden = controller.rows.steps[-1].shown, controller.rows.steps[-1].slots[0]
    assert hidden.message_id == bad.message_id and shown is not hidden
    assert controller.chat.card_of(hidden) is None
    assert controller.verdicts.checked == 1  # the answer shown (clean) only
    assert [t.verdict for t in saved(store, conv_id)] == [None, ""]
    assert hidden.verdict == ""

    controller.choose_alternative(0)  # paged to: its card is built, then it is checked
    settle(aloop, second)
    assert controller.verdicts.checked == 2
    assert hidden.verdict == BAD
    assert mark(controller.answer_card(hidden))
    assert [t.verdict for t in saved(store, conv_id)] == [BAD, ""]
