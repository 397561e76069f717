"""One selection, one status: the real window against the built-in demo. Exactly one answer
card is drawn selected — the one whose turn the inspector shows (none while it shows a tapped
exchange) — and the status bar describes that turn, naming it when it is not the latest live
one ("Turn of 14:03:12 — Completed · …", "Tapped #1 POST /v1/chat/completions — …")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import qasync
from PySide6.QtCore import QPoint, Qt
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.status_panel import status_line
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import TapDialog
from support.chat import answer_cards
from support.tap_upstream import FINAL, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path) -> Iterator[MainWindow]:
    store = Store(tmp_path / "streamscope.db")
    win = MainWindow(
        demo_speed=25, store=store, captures=CaptureStore(tmp_path / "captures", index=store)
    )
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    yield win
    win.tap_dock.stop_and_wait()
    aloop.run_until_complete(win.shutdown())
    store.close()


def settle(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    """Wait for the turn streaming (if any), then for the turn the inspector loads."""

    async def wait() -> None:
        deadline = time.monotonic() + 60  # (generous: the machine may be busy)
        while window.controller.busy:
            assert time.monotonic() < deadline, "no answer"
            await asyncio.sleep(0.01)
        await window.controller.runner.wait()
        loading = window.controller.feed.loading
        if loading is not None:
            await loading

    aloop.run_until_complete(wait())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str) -> None:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()
    settle(aloop, window)


def click(qtbot: QtBot, aloop: qasync.QEventLoop, window: MainWindow, card: AssistantCard) -> None:
    """Click the card's footer, as a person would, and wait for its turn to load."""
    qtbot.mouseClick(card.footer, Qt.MouseButton.LeftButton, pos=QPoint(4, 4))
    settle(aloop, window)


def selected(window: MainWindow) -> list[AssistantCard]:
    """Every built answer card drawn selected (shown or kept)."""
    built = window.chat.built_cards()
    return [c for _key, c in built if isinstance(c, AssistantCard) and c.is_selected()]


def clock(card: AssistantCard) -> str:
    assert card.turn_ref is not None and card.turn_ref.started is not None
    return time.strftime("%H:%M:%S", time.localtime(card.turn_ref.started))


def shown_line(window: MainWindow) -> str:
    """The status line of the turn the inspector shows, as its tabs hold it."""
    turn = window.inspector.turn
    assert turn is not None
    return status_line(turn, window.inspector.frames_model.rowCount())


def test_the_status_bar_follows_the_turn_the_inspector_shows(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    status, header = window.status, window.inspector.header
    send(window, aloop, "demo", "First question")
    send(window, aloop, "demo-length", "Second question")
    latest = status.text()
    assert latest.startswith("Completed · stopped at max tokens · length · ")
    first, second = answer_cards(window.controller)
    assert selected(window) == [second]

    click(qtbot, aloop, window, first)  # an older turn: the status bar says which it is
    assert selected(window) == [first]
    assert header.text().endswith(" · demo · ✓ completed")
    assert status.text() == f"Turn of {clock(first)} — {shown_line(window)}"
    assert status.text().startswith(f"Turn of {clock(first)} — Completed · stop · ")
    assert status.glyph.text() == "✓"

    click(qtbot, aloop, window, second)  # the latest turn again: its line, as it went live
    assert selected(window) == [second]
    assert header.text().endswith(" · demo-length · ⚠ stopped at max tokens")
    assert status.text() == shown_line(window)
    assert status.text().startswith("Completed · stopped at max tokens · length · ")
    assert status.glyph.text() == "⚠"


def test_one_replay_card_is_selected_at_a_time(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo", "A question")
    capture = window.controller.last_capture
    assert capture is not None
    replays: list[AssistantCard] = []
    for n in range(3):
        assert window.controller.replay(capture, speed=None, label=f"replay {n}")
        settle(aloop, window)
        built = [c for _key, c in window.chat.built_cards() if isinstance(c, AssistantCard)]
        (replay,) = [c for c in built if c.title.text() == f"replay {n}"]
        replays.append(replay)
        assert selected(window) == [replay]
        assert window.status.text().startswith("Completed · stop · ")
    for card in (replays[0], replays[2], replays[1]):
        click(qtbot, aloop, window, card)
        assert selected(window) == [card]
        feed_ref = window.controller.feed.ref
        assert feed_ref is not None and card.turn_ref is not None
        assert feed_ref.key == card.turn_ref.key


def test_a_tapped_exchange_shown_leaves_no_answer_selected(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo", "A question")
    (card,) = answer_cards(window.controller)
    assert selected(window) == [card]
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), FINAL]
        window.open_tap_dialog()
        dialog = window.tap_dock.dialog
        assert isinstance(dialog, TapDialog)
        dialog.upstream.setEditText(upstream.url)
        dialog.port.setValue(0)
        dialog.start_button.click()
        qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
        server = window.tap.server
        assert server is not None
        httpx.post(server.root_url + CHAT, json=ASK, timeout=10)
        panel = window.tap_panel
        qtbot.waitUntil(
            lambda: len(panel.texts()) == 1 and "completed" in panel.texts()[0], timeout=10_000
        )
        panel.view.clicked.emit(panel.model.index(0, 0))
    tapped = window.tap.exchanges[0]
    assert window.tap.shown is tapped and tapped.turn is not None
    assert selected(window) == []  # the inspector shows no answer of the chat
    assert window.status.text() == (
        f"Tapped #1 POST /v1/chat/completions — {status_line(tapped.turn, 3)}"
    )
    assert window.status.text().startswith(
        "Tapped #1 POST /v1/chat/completions — Completed · stop · "
    )
    # the answer clicked again opens (the inspector showed something else meanwhile)
    click(qtbot, aloop, window, card)
    assert selected(window) == [card]
    assert window.inspector.header.text().startswith("A question · ")
    assert window.status.text() == shown_line(window)
    assert window.status.text().startswith("Completed · stop · ")
