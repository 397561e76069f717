"""The Tap dialog's Faults section in the real window: a spec is checked as it is typed (a bad
one says what is wrong and holds Start back), a preset fills it, the running tap serves it —
and the tapped exchange's row and inspector header say the fault and how the client reacted."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pytest
from pytestqt.qtbot import QtBot

from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import FAULT_PRESETS, TapDialog
from support.tap_upstream import FINAL, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def window(qtbot: QtBot, aloop: object) -> Iterator[MainWindow]:
    win = MainWindow()
    qtbot.addWidget(win)
    yield win
    win.tap.stop_and_wait()


def _dialog(window: MainWindow) -> TapDialog:
    window.open_tap_dialog()
    dialog = window.tap_dock.dialog
    assert isinstance(dialog, TapDialog)
    return dialog


def test_a_bad_spec_says_what_is_wrong_and_holds_start_back(
    qtbot: QtBot, window: MainWindow
) -> None:
    dialog = _dialog(window)
    dialog.faults.setText("cut@frame:2,stal@frame:1=2")
    assert not dialog.start_button.isEnabled()
    assert dialog.fault_message.isVisibleTo(dialog)
    assert dialog.fault_message.text() == ("at 'stal@': expected cut@, stall@, error@ or garble@")
    dialog.faults.setText("")
    assert dialog.start_button.isEnabled() and not dialog.fault_message.isVisibleTo(dialog)
    menu = dialog.presets.menu()
    assert menu is not None and len(menu.actions()) == len(FAULT_PRESETS)
    menu.actions()[2].trigger()
    assert dialog.faults.text() == FAULT_PRESETS[2][1] == "cut@frame:5"
    assert dialog.start_button.isEnabled()


def test_the_row_and_the_header_say_the_fault_and_how_the_client_reacted(
    qtbot: QtBot, window: MainWindow
) -> None:
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), chat_frame("two"), FINAL]
        dialog = _dialog(window)
        dialog.upstream.setEditText(upstream.url)
        dialog.port.setValue(0)
        dialog.faults.setText("cut@frame:1")
        dialog.start_button.click()
        qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
        server = window.tap.server
        assert server is not None
        assert not dialog.faults.isEnabled()
        assert dialog.message.text().endswith("Faults on cue: cut@frame:1.")

        failed: list[str] = []

        def client() -> None:
            try:
                httpx.post(server.root_url + CHAT, json=ASK, timeout=10)
            except httpx.HTTPError as exc:
                failed.append(type(exc).__name__)

        sender = threading.Thread(target=client)
        sender.start()
        panel = window.tap_panel
        qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=10_000)
        qtbot.waitUntil(lambda: "truncated" in panel.texts()[0], timeout=10_000)
        sender.join(10)
        assert failed == ["RemoteProtocolError"]
        lines = panel.texts()[0].splitlines()
        assert lines[2] == "⚡ cut@frame:1 → read to the end and did not retry"
        assert panel.model.item(0).toolTip() == panel.texts()[0]
        panel.view.clicked.emit(panel.model.index(0, 0))
        assert window.inspector.header.note.text() == (
            "cut@frame:1 → read to the end and did not retry"
        )
