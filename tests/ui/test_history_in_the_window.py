"""No click destroys history, and the history sent is one providers accept — through the real
window, a real profile and the built-in demo endpoint (which refuses invalid histories with a
400, as OpenAI, Anthropic and Gemini do)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import SKIPPED_RESULT
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.message_card import UserCard
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards, settled


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[tuple[Store, CaptureStore]]:
    store = Store(tmp_path / "streamscope.db")
    yield store, CaptureStore(tmp_path / "captures", index=store)
    store.close()


@pytest.fixture
def window(
    qtbot: QtBot, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> Iterator[MainWindow]:
    store, captures = profile
    win = MainWindow(demo_speed=25, store=store, captures=captures)
    qtbot.addWidget(win)
    win.resize(1360, 860)  # (larger than the offscreen screen, where the default fits)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def wait_turn(window: MainWindow, aloop: qasync.QEventLoop) -> Turn:
    async def wait() -> Turn:
        await asyncio.sleep(0.05)
        for _ in range(500):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str) -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()
    return wait_turn(window, aloop)


def saved(store: Store, conv_id: int) -> list[tuple[str, str, bool]]:
    return [
        (m.role, m.text, m.chosen) for m in store.load_conversation(conv_id, limit=None).messages
    ]


def shown(window: MainWindow) -> list[tuple[str, str]]:
    """The chat as the user sees it: visible cards, who and what."""
    out: list[tuple[str, str]] = []
    for card in settled(window.chat).cards():
        if not card.isVisibleTo(window):
            continue
        if isinstance(card, UserCard):
            out.append(("you", card.text()))
        elif isinstance(card, AssistantCard):
            out.append(("assistant", card.text()[:18]))
    return out


def sent_messages(window: MainWindow) -> list[dict[str, object]]:
    capture = window.controller.last_capture
    assert capture is not None and capture.request is not None
    body = json.loads(capture.request.body)
    return list(body.get("messages") or body.get("contents") or body.get("input"))


def user_cards(window: MainWindow) -> list[UserCard]:
    return [c for c in settled(window.chat).cards() if isinstance(c, UserCard)]


# -- Edit last -----------------------------------------------------------------------------


def test_edit_last_then_switching_away_and_back_loses_nothing(
    window: MainWindow, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> None:
    store, _ = profile
    send(window, aloop, "demo", "First question")
    send(window, aloop, "demo", "Second question")
    window.composer.regenerate_button.click()
    wait_turn(window, aloop)
    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    before = saved(store, conv_id)
    assert [(r, t[:16], c) for r, t, c in before] == [
        ("user", "First question", True),
        ("assistant", "You wrote: “Firs", True),
        ("user", "Second question", True),
        ("assistant", "You wrote: “Seco", False),
        ("assistant", "You wrote: “Seco", True),
    ]

    window.composer.edit_button.click()
    assert window.composer.editor.toPlainText() == "Second question"
    assert window.composer.edit_banner.isVisibleTo(window)
    assert user_cards(window)[-1].title.text() == "you · editing in the box below"
    assert not window.composer.regenerate_button.isEnabled()
    assert saved(store, conv_id) == before  # nothing is removed by starting an edit
    assert len(shown(window)) == 4  # and nothing leaves the chat

    window.switcher.new_conversation()
    assert not window.composer.edit_banner.isVisibleTo(window)
    assert window.composer.editor.toPlainText() == ""  # (what the box held before the edit)
    window.switcher.open_conversation(conv_id)
    assert saved(store, conv_id) == before
    assert shown(window) == [
        ("you", "First question"),
        ("assistant", "You wrote: “First "),
        ("you", "Second question"),
        ("assistant", "You wrote: “Second"),
    ]
    assert window.controller.history.alternatives() == (1, 2)
    assert window.alt_label.text().strip() == "answer 2/2"
    assert window.composer.edit_button.isEnabled()


def test_edit_last_then_switching_away_and_restarting_loses_nothing(
    qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    path = tmp_path / "streamscope.db"
    store = Store(path)
    win = MainWindow(demo_speed=25, store=store, captures=CaptureStore(tmp_path / "c", index=store))
    qtbot.addWidget(win)
    win.show()
    send(win, aloop, "demo", "First question")
    send(win, aloop, "demo", "Second question")
    win.composer.regenerate_button.click()
    wait_turn(win, aloop)
    conv_id = win.controller.session.conversation_id
    assert conv_id is not None
    before = saved(store, conv_id)
    assert len(before) == 5
    captured = [m.turn.capture_id for m in store.load_conversation(conv_id).messages if m.turn]
    assert len(set(captured)) == 3 and None not in captured

    win.composer.edit_button.click()  # edit, leave for another conversation, come back
    win.switcher.new_conversation()
    send(win, aloop, "demo", "Elsewhere")
    other = win.controller.session.conversation_id
    win.switcher.open_conversation(conv_id)
    win.composer.edit_button.click()  # edit again, and quit mid-edit
    win.composer.editor.setPlainText("Second question, half edited")
    win.close()
    aloop.run_until_complete(win.shutdown())
    store.close()

    store = Store(path)  # restart
    try:
        assert saved(store, conv_id) == before
        again = [m.turn.capture_id for m in store.load_conversation(conv_id).messages if m.turn]
        assert again == captured
        assert other is not None
        assert [(r, t[:9]) for r, t, _ in saved(store, other)] == [
            ("user", "Elsewhere"), ("assistant", "You wrote"),
        ]  # fmt: skip
        win = MainWindow(
            demo_speed=25, store=store, captures=CaptureStore(tmp_path / "c", index=store)
        )
        qtbot.addWidget(win)
        win.show()
        win.switcher.open_conversation(conv_id)
        assert not win.controller.history.editing
        assert not win.composer.edit_banner.isVisibleTo(win)
        assert shown(win) == [
            ("you", "First question"),
            ("assistant", "You wrote: “First "),
            ("you", "Second question"),
            ("assistant", "You wrote: “Second"),
        ]
        assert win.alt_label.text().strip() == "answer 2/2"
        win.prev_alt.click()  # Regenerate's first answer is still there
        assert win.alt_label.text().strip() == "answer 1/2"
        first, second = answer_cards(win.controller)[-2:]
        assert first.isVisibleTo(win) and not second.isVisibleTo(win)
        assert win.composer.edit_button.isEnabled()
        aloop.run_until_complete(win.shutdown())
    finally:
        store.close()


def test_escape_anywhere_in_the_window_cancels_the_edit(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo", "Keep me")
    window.composer.editor.setPlainText("my draft")
    window.composer.edit_button.click()
    window.activateWindow()
    window.chat.setFocus()
    qtbot.waitUntil(
        lambda: window.chat.hasFocus() or window.chat.isAncestorOf(QApplication.focusWidget()),
        timeout=2000,
    )
    qtbot.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_Escape)
    assert not window.controller.history.editing
    assert window.composer.editor.toPlainText() == "my draft"
    assert not window.composer.edit_banner.isVisibleTo(window)
    assert window.controller.runner.last_turn is not None  # not a Stop (nothing ran)
    assert [t for _, t in shown(window)] == ["Keep me", "You wrote: “Keep m"]


def test_escape_or_cancel_restores_everything(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo", "Keep me")
    window.composer.editor.setPlainText("a draft I was typing")
    window.composer.edit_button.click()
    assert window.composer.editor.toPlainText() == "Keep me"
    window.composer.editor.setPlainText("Keep me, changed")
    window.composer.editor.setFocus()
    qtbot.keyClick(window.composer.editor, Qt.Key.Key_Escape)
    assert not window.controller.history.editing
    assert not window.composer.edit_banner.isVisibleTo(window)
    assert window.composer.editor.toPlainText() == "a draft I was typing"
    assert user_cards(window)[-1].title.text() == "you"
    assert [t for _, t in shown(window)] == ["Keep me", "You wrote: “Keep m"]
    assert [m.text[:9] for m in window.controller.history.messages()] == ["Keep me", "You wrote"]
    assert window.composer.regenerate_button.isEnabled()
    assert window.composer.edit_button.isEnabled()
    assert window.controller.runner.last_turn is not None  # Esc did not stop or send anything

    window.composer.edit_button.click()
    window.composer.cancel_edit_button.click()
    assert not window.controller.history.editing
    assert window.composer.editor.toPlainText() == "a draft I was typing"
    send(window, aloop, "demo", "Next")  # and the conversation goes on after it
    assert [m.text[:7] for m in window.controller.history.messages()] == [
        "Keep me", "You wro", "Next", "You wro",
    ]  # fmt: skip


def test_a_resent_edit_is_a_branch_and_the_pager_shows_both(
    window: MainWindow, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> None:
    store, _ = profile
    send(window, aloop, "demo", "Question A")
    window.composer.edit_button.click()
    window.composer.editor.setPlainText("Question B")
    window.composer._on_submit()
    turn = wait_turn(window, aloop)
    assert turn.outcome is Outcome.COMPLETED
    assert [m["content"] for m in sent_messages(window)] == ["Question B"]  # A is no context
    assert shown(window) == [("you", "Question B"), ("assistant", "You wrote: “Questi")]
    assert "“Question B”" in window.controller.answer_card(-1).text()
    card = user_cards(window)[0]
    assert card.version_label.text() == "version 2/2" and card.version_label.isVisibleTo(window)
    assert card.prev_version.isEnabled() and not card.next_version.isEnabled()
    assert not window.composer.edit_banner.isVisibleTo(window)
    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    assert [(r, t[:12], c) for r, t, c in saved(store, conv_id)] == [
        ("user", "Question A", False),
        ("assistant", "You wrote: “", True),
        ("user", "Question B", True),
        ("assistant", "You wrote: “", True),
    ]

    card.prev_version.click()  # page back: version 1 with its own answer
    assert shown(window) == [("you", "Question A"), ("assistant", "You wrote: “Questi")]
    assert "“Question A”" in window.controller.answer_card(-1).text()
    first = user_cards(window)[0]
    assert first.version_label.text() == "version 1/2" and not first.prev_version.isEnabled()
    assert [c for _, _, c in saved(store, conv_id)] == [True, True, False, True]

    window.switcher.new_conversation()  # the choice is saved: it opens as left
    window.switcher.open_conversation(conv_id)
    assert shown(window)[0] == ("you", "Question A")
    assert user_cards(window)[0].version_label.text() == "version 1/2"
    user_cards(window)[0].next_version.click()
    assert shown(window)[0] == ("you", "Question B")
    send(window, aloop, "demo", "And then?")  # going on continues version 2
    assert [m["content"] for m in sent_messages(window)][::2] == ["Question B", "And then?"]


# -- tool calls nobody answered ------------------------------------------------------------


SKIPPED_IN = {
    # dialect: how many skipped results the follow-up request carries, read off its body
    "openai": lambda ms: [m["content"] for m in ms if m["role"] == "tool"],
    "anthropic": lambda ms: [
        b["content"] for m in ms if isinstance(m["content"], list) for b in m["content"]
        if b["type"] == "tool_result"
    ],
    "gemini": lambda ms: [
        p["functionResponse"]["response"]["result"] for m in ms for p in m["parts"]
        if "functionResponse" in p
    ],
    "responses": lambda ms: [m["output"] for m in ms if m.get("type") == "function_call_output"],
    "ollama": lambda ms: [m["content"] for m in ms if m["role"] == "tool"],
}  # fmt: skip


@pytest.mark.parametrize("dialect", list(SKIPPED_IN))
def test_a_message_after_unanswered_tool_calls_is_a_valid_request(
    window: MainWindow, aloop: qasync.QEventLoop, dialect: str
) -> None:
    demo = window.endpoints.selected
    assert demo.is_demo
    window.endpoint_bar.set_endpoints(
        window.endpoints.with_endpoint(replace(demo, dialect=dialect))
    )
    window.tools_panel.set_enabled(True)
    window.tools_panel.examples_button.click()
    calls = send(window, aloop, "demo-tools", "weather?")
    assert [c.name for c in calls.tool_calls] == ["get_weather", "get_time"]
    card = window.controller.answer_card(-1)
    assert card.unanswered_label.isVisibleTo(window)
    assert card.unanswered_label.text() == (
        "⚠ 2 tool calls unanswered: send results below, or a new message sends them as"
        " “not run” results (providers refuse a history with unanswered calls)."
    )
    assert card.send_button.isEnabled()

    follow_up = send(window, aloop, "demo", "never mind, say hi")
    # the demo endpoint answers 400 to a history with unanswered calls, as providers do
    assert follow_up.outcome is Outcome.COMPLETED, follow_up.reason
    assert SKIPPED_IN[dialect](sent_messages(window)) == [SKIPPED_RESULT, SKIPPED_RESULT]
    assert card.unanswered_label.text() == (
        "⚠ 2 tool calls unanswered: sent as “not run” results when the conversation went on."
    )
    assert not card.send_button.isEnabled() and card.send_button.text() == "Skipped"

    again = send(window, aloop, "demo", "and once more")  # (and every later request too)
    assert again.outcome is Outcome.COMPLETED, again.reason


def test_a_reopened_conversation_shows_sent_and_skipped_results(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    window.tools_panel.set_enabled(True)
    window.tools_panel.examples_button.click()
    send(window, aloop, "demo-tools", "weather?")
    card = window.controller.answer_card(-1)
    for box, result in zip(card.tool_call_boxes(), ['{"temp_c": 21}', "09:41"], strict=True):
        box.result.setPlainText(result)
    window.model_combo.setCurrentText("demo")
    card.send_button.click()
    wait_turn(window, aloop)
    send(window, aloop, "demo-tools", "and in Bern?")
    send(window, aloop, "demo", "skip that")
    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    window.switcher.new_conversation()
    window.switcher.open_conversation(conv_id)

    answered, _final, skipped, _last = answer_cards(window.controller)
    assert [b.result.toPlainText() for b in answered.tool_call_boxes()] == [
        '{"temp_c": 21}',
        "09:41",
    ]
    assert answered.send_button.text() == "Results sent" and not answered.send_button.isEnabled()
    assert not answered.unanswered_label.isVisibleTo(window)
    assert skipped.send_button.text() == "Skipped" and not skipped.send_button.isEnabled()
    assert skipped.unanswered_label.text().startswith("⚠ 2 tool calls unanswered: sent as")
    follow_up = send(window, aloop, "demo", "still there?")
    assert follow_up.outcome is Outcome.COMPLETED, follow_up.reason
    messages = sent_messages(window)
    assert [m["role"] for m in messages] == [
        "user", "assistant", "tool", "tool", "assistant",  # answered
        "user", "assistant", "tool", "tool",  # skipped
        "user", "assistant", "user",
    ]  # fmt: skip
    assert [m["content"] for m in messages if m["role"] == "tool"] == [
        '{"temp_c": 21}', "09:41", SKIPPED_RESULT, SKIPPED_RESULT,
    ]  # fmt: skip


def test_the_shown_alternative_is_the_one_marked_skipped(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    send(window, aloop, "demo-tools", "weather?")
    window.composer.regenerate_button.click()
    wait_turn(window, aloop)
    window.prev_alt.click()  # back to the first answer's calls
    first, second = answer_cards(window.controller)
    assert first.isVisibleTo(window) and not second.isVisibleTo(window)
    follow_up = send(window, aloop, "demo", "no thanks")
    assert follow_up.outcome is Outcome.COMPLETED, follow_up.reason
    assert first.send_button.text() == "Skipped"
    assert second.send_button.text() == "Send results" and second.send_button.isEnabled()


def test_every_answer_with_alternatives_pages_on_its_own_card(
    window: MainWindow, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> None:
    store, _ = profile
    send(window, aloop, "demo", "Q1")
    window.composer.regenerate_button.click()
    wait_turn(window, aloop)
    first, second = answer_cards(window.controller)
    assert not first.alt_label.isVisibleTo(window)  # (a hidden card)
    assert second.alt_label.text() == "answer 2/2" and second.alt_label.isVisibleTo(window)
    assert second.prev_alt.isEnabled() and not second.next_alt.isEnabled()
    second.prev_alt.click()  # the last answer: its cards stay, the toolbar pager follows
    assert first.isVisibleTo(window) and not second.isVisibleTo(window)
    assert first.alt_label.text() == "answer 1/2" and not first.prev_alt.isEnabled()
    assert window.alt_label.text().strip() == "answer 1/2"
    first.next_alt.click()
    send(window, aloop, "demo", "Q2")  # the conversation goes on after answer 2
    assert [c.alt_label.text() for c in answer_cards(window.controller)] == [
        "answer 1/2", "answer 2/2", "answer 1/1",
    ]  # fmt: skip
    assert not window.alt_label.isVisibleTo(window)  # (the toolbar pages the last answer)

    window.controller.answer_card(1).prev_alt.click()  # an older answer: its branch shows
    assert shown(window) == [("you", "Q1"), ("assistant", "You wrote: “Q1”\n\n#")]
    shown_card = window.controller.answer_card(0)
    assert shown_card.isVisibleTo(window) and shown_card.alt_label.text() == "answer 1/2"
    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    assert [(r, t[:2], c) for r, t, c in saved(store, conv_id)] == [
        ("user", "Q1", True),
        ("assistant", "Yo", True),
        ("assistant", "Yo", False),
        ("user", "Q2", True),
        ("assistant", "Yo", True),
    ]
    window.controller.answer_card(0).next_alt.click()  # and back: Q2 is there again
    assert [t for _, t in shown(window)][::2] == ["Q1", "Q2"]
    assert window.controller.answer_card(1).alt_label.text() == "answer 2/2"


def test_regenerating_after_paging_back_shows_only_the_new_answer(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    send(window, aloop, "demo", "Q1")
    window.composer.regenerate_button.click()
    wait_turn(window, aloop)
    window.prev_alt.click()  # answer 1/2 shown
    window.composer.regenerate_button.click()
    wait_turn(window, aloop)
    cards = answer_cards(window.controller)
    assert [c.isVisibleTo(window) for c in cards] == [False, False, True]
    assert [c.alt_label.text() for c in cards] == ["answer 1/3", "answer 2/3", "answer 3/3"]
    assert window.alt_label.text().strip() == "answer 3/3"
    assert window.controller.history.alternatives() == (2, 3)
