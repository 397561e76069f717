"""A new user's whole tool round trip in the real window: ``demo-tools`` calls two tools, the
user types their results and clicks Send results, and the demo answers with a final text."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.turn.outcome import Outcome
from streamscope.ui.shell.main_window import MainWindow


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def wait_for_answers(window: MainWindow, aloop: qasync.QEventLoop, n: int) -> None:
    async def wait() -> None:
        for _ in range(1000):
            answers = window.controller.answers
            if len(answers) >= n and answers[-1].turn is not None and not window.controller.busy:
                return
            await asyncio.sleep(0.01)
        raise AssertionError("no answer")

    aloop.run_until_complete(wait())


def test_sending_tool_results_finishes_the_round_trip(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    window.model_combo.setCurrentText("demo-tools")
    window.composer.editor.setPlainText("Weather and time in Zürich?")
    window.composer._on_submit()
    wait_for_answers(window, aloop, 1)
    card = window.controller.answer_card(-1)
    boxes = card.tool_call_boxes()
    assert [b.call.name for b in boxes if b.call] == ["get_weather", "get_time"]
    boxes[0].result.setPlainText("14 °C, light rain")
    boxes[1].result.setPlainText("15:42")
    card.send_button.click()
    wait_for_answers(window, aloop, 2)
    answer = window.controller.answer_card(-1)
    assert answer is not card
    turn = answer.turn
    assert turn is not None and turn.outcome is Outcome.COMPLETED
    assert turn.finish_reason == "stop" and not turn.tool_calls
    assert answer.text() == (
        "Thanks — 2 tool results arrived:\n\n"
        "- **get_weather**: 14 °C, light rain\n"
        "- **get_time**: 15:42\n"
        "\nThat completes the round trip: tool calls, your results, this answer."
    )
    assert window.status.text().startswith("Completed · stop · ")
