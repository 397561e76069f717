"""The real main window against the built-in demo endpoint on a loopback socket."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str = "Hi there") -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()

    async def wait() -> Turn:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def wait_rendered(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    async def wait() -> None:
        card = window.controller.answer_card(-1)
        for _ in range(500):
            if not card.is_rendering():
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())


def test_first_start_shows_welcome_demo_and_frames(window: MainWindow) -> None:
    assert window.current_endpoint().is_demo
    assert window.model_combo.findText("demo-tools") >= 0  # the scenario menu
    assert window.inspector.currentIndex() == 0  # Frames
    assert window.inspector_dock.isVisible()
    assert window.status.text() == "Ready"
    assert window.composer.editor.hasFocus() or window.focusWidget() is window.composer.editor


def test_demo_completes_with_markdown_rendered(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo", "Tell me about streams")
    assert turn.outcome is Outcome.COMPLETED
    worker = window.controller.runner.worker  # it was read and parsed in the worker process
    assert worker is not None and worker.running and worker.pid is not None
    wait_rendered(aloop, window)
    card = window.controller.answer_card(-1)
    assert "Tell me about streams" in card.text()
    html = card.rendered_pane().document().toHtml()
    assert "<table" in html  # the Markdown table was rendered, not shown raw
    assert "| Dialect" not in card.rendered_pane().toPlainText()
    status = window.status.text()
    assert status.startswith("Completed · stop") and "[DONE] received" in status
    assert window.inspector.frames_model.rowCount() == turn.events + 0 or (
        window.inspector.frames_model.rowCount() >= turn.events
    )


def test_demo_tools_show_two_calls_with_valid_json(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo-tools", "Weather and time in Zürich?")
    assert turn.outcome is Outcome.COMPLETED
    panel = window.inspector.toolcalls_panel
    assert panel.call_count() == 2
    names = sorted(c.name or "" for c in turn.tool_calls)
    assert names == ["get_time", "get_weather"]
    for call in turn.tool_calls:
        json.loads(call.arguments)
    card = window.controller.answer_card(-1)
    assert len(card.tool_call_boxes()) == 2
    for box in card.tool_call_boxes():
        assert "streaming" not in box.title.text()  # the turn is over
    assert "tool_calls" in window.status.text()


def test_demo_cut_is_truncated_and_keeps_partial_text(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo-cut")
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.text
    # the bytes of the frame the connection died in are shown, marked incomplete
    from streamscope.core.turn.progress import FLAG_INCOMPLETE

    model = window.inspector.frames_model
    last = model.rowCount() - 1
    assert model.log.flags[last] & FLAG_INCOMPLETE
    assert model.frame_bytes(last).startswith(b"data: ") and not model.frame_bytes(last).endswith(
        b"\n\n"
    )
    card = window.controller.answer_card(-1)
    wait_rendered(aloop, window)
    assert turn.text.strip()[:20] in card.text()
    assert window.status.text().startswith("Truncated · ")
    assert window.status.outcome is Outcome.TRUNCATED


def test_stop_during_demo_slow_is_cancelled_quickly(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    window.demo.speed = 1.0  # a real drip: a delta every ~0.5 s
    window.model_combo.setCurrentText("demo-slow")
    window.composer.editor.setPlainText("slowly please")
    window.composer._on_submit()

    async def scenario() -> float:
        for _ in range(500):
            if window.controller.runner.running:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.8)
        t = time.monotonic()
        window.composer.stop_button.click()
        await window.controller.runner.wait()
        return time.monotonic() - t

    took = aloop.run_until_complete(scenario())
    assert took < 0.5
    turn = window.controller.runner.last_turn
    assert turn is not None and turn.outcome is Outcome.CANCELLED
    assert window.status.text().startswith("Cancelled by you after")
    assert not window.controller.busy
    assert window.composer.send_button.isEnabled()


def test_error_429_shows_the_retry_hint(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    turn = send(window, aloop, "demo-error-429")
    assert turn.outcome is Outcome.ERROR
    text = window.status.text()
    assert text.startswith("Error · 429") and "retry after 20 s" in text


def test_regenerate_keeps_the_earlier_answer(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    send(window, aloop, "demo-length", "first try")
    window.composer.regenerate_button.click()

    async def wait() -> None:
        await asyncio.sleep(0.05)
        await window.controller.runner.wait()
        for _ in range(100):
            if not window.controller.busy:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())
    assert window.controller.history.alternatives() == (1, 2)
    assert window.alt_label.text().strip() == "answer 2/2"
    window.prev_alt.click()
    assert window.controller.history.alternatives() == (0, 2)
    cards = answer_cards(window.controller)
    assert cards[-2].isVisibleTo(window) and not cards[-1].isVisibleTo(window)


def test_closing_mid_stream_cancels_cleanly(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    window.demo.speed = 1.0
    window.model_combo.setCurrentText("demo-slow")
    window.composer.editor.setPlainText("go")
    window.composer._on_submit()

    async def scenario() -> None:
        for _ in range(500):
            if window.controller.runner.running:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)
        window.close()
        await asyncio.wait_for(window.shutdown(), 3)

    aloop.run_until_complete(scenario())
    turn = window.controller.runner.last_turn
    assert turn is not None and turn.outcome is Outcome.CANCELLED
    assert not window.demo.running


def test_the_answer_pager_sits_on_the_card_it_pages(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo", "first")
    first = window.controller.answer_card(-1)
    assert first.pager.isHidden()  # one answer: no pager
    window.composer.regenerate_button.click()

    async def wait() -> None:
        await asyncio.sleep(0.05)
        await window.controller.runner.wait()
        for _ in range(100):
            if not window.controller.busy:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())
    a, b = answer_cards(window.controller)[-2:]
    assert a is first and a.isHidden() and b.isVisibleTo(window)
    assert b.pager.isVisibleTo(window) and b.alt_label.text().strip() == "answer 2/2"
    assert not b.next_alt.isEnabled() and b.prev_alt.isEnabled()
    assert not window.endpoint_bar.alt_label.isVisible()  # (not in the toolbar)
    # the pager is in the card's header, above its text
    assert b.isAncestorOf(b.pager) and b.pager.geometry().bottom() < b.footer.geometry().top()
    qtbot.mouseClick(b.prev_alt, Qt.MouseButton.LeftButton)
    assert window.controller.history.alternatives() == (0, 2)
    assert a.isVisibleTo(window) and not b.isVisibleTo(window)
    assert a.alt_label.text().strip() == "answer 1/2" and not a.prev_alt.isEnabled()
    qtbot.mouseClick(a.next_alt, Qt.MouseButton.LeftButton)
    assert window.controller.history.alternatives() == (1, 2) and b.isVisibleTo(window)
    # a new message: the earlier step keeps its pager (its alternatives stay reachable); the
    # new answer, alone at its step, has none
    send(window, aloop, "demo", "second")
    cards = answer_cards(window.controller)
    assert not b.pager.isHidden() and b.alt_label.text() == "answer 2/2"
    assert cards[-1].pager.isHidden()
