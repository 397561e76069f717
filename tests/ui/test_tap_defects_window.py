"""Issue 28 in the window: the Tap dialog says a busy port in plain words (the text the
CLI prints too), not the socket's ``[Errno 98] Address already in use``."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import TapDialog


@pytest.fixture
def window(qtbot: QtBot, aloop: object) -> Iterator[MainWindow]:
    win = MainWindow()
    qtbot.addWidget(win)
    yield win
    win.tap.stop_and_wait()


def test_a_busy_port_is_said_plainly_in_the_tap_dialog(qtbot: QtBot, window: MainWindow) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        window.open_tap_dialog()
        dialog = window.tap_dock.dialog
        assert isinstance(dialog, TapDialog)
        dialog.upstream.setEditText("http://127.0.0.1:9")
        dialog.port.setValue(port)
        dialog.start_button.click()
        said = f"Could not start: port {port} is in use — pick another"
        qtbot.waitUntil(lambda: dialog.message.text() == said, timeout=10_000)
    assert not window.tap.running
    assert dialog.start_button.text() == "Start"
