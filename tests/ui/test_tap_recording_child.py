"""Issue 26: the window's tap records in a child process, like the stream worker — the window
only hears what it shows — and a recording process that dies is said in the window."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pytestqt.qtbot import QtBot

from streamscope.core.tap.recording import TapProcess
from streamscope.core.tap.server import RECORDING_NICE
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import TapDialog
from support.tap_upstream import FINAL, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


@pytest.fixture
def window(qtbot: QtBot, aloop: object) -> Iterator[MainWindow]:
    win = MainWindow()
    qtbot.addWidget(win)
    yield win
    win.tap.stop_and_wait()


def _start(qtbot: QtBot, window: MainWindow, upstream: str) -> tuple[TapDialog, TapProcess]:
    window.open_tap_dialog()
    dialog = window.tap_dock.dialog
    assert isinstance(dialog, TapDialog)
    dialog.upstream.setEditText(upstream)
    dialog.port.setValue(0)
    dialog.start_button.click()
    qtbot.waitUntil(lambda: window.tap.running, timeout=20_000)
    server = window.tap.server
    assert isinstance(server, TapProcess)
    return dialog, server


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def test_the_window_s_tap_records_in_a_niced_child_process(
    qtbot: QtBot, window: MainWindow
) -> None:
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), FINAL]
        _dialog, server = _start(qtbot, window, upstream.url)
        recorder = server.pid
        assert recorder is not None and recorder != os.getpid()
        [forwarder] = server.forwarder_pids()
        # the window starts the recording process, which starts the forwarding one
        assert _parent(recorder) == os.getpid()
        assert _parent(forwarder) == recorder
        # the recording is niced, as streamscope tap's; the forwarding is not
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, recorder) == min(19, ours + RECORDING_NICE)
        assert os.getpriority(os.PRIO_PROCESS, forwarder) == ours
        # no thread of the window records
        names = {t.name for t in threading.enumerate()}
        assert "streamscope-tap" not in names
        assert "tap-recording" in names  # (it only hears the child)

        httpx.post(server.root_url + CHAT, json=ASK, timeout=10)
        panel = window.tap_panel
        qtbot.waitUntil(lambda: "completed" in "".join(panel.texts()), timeout=10_000)
        [item] = window.tap.exchanges
        assert item.result is not None and item.result.frames == 3
        assert item.result.exchange is item.exchange  # (the object the list was given)
        capture = item.exchange.capture
        assert capture is not None and capture.exists()  # written by the child
        assert item.result.turn.text == "one"


def test_a_tap_whose_recording_process_dies_says_so(qtbot: QtBot, window: MainWindow) -> None:
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), FINAL]
        upstream.script.gates = [threading.Event()]
        dialog, server = _start(qtbot, window, upstream.url)
        recorder = server.pid
        assert recorder is not None
        [forwarder] = server.forwarder_pids()
        errors: list[BaseException] = []

        def client() -> None:
            try:
                with httpx.stream("POST", server.root_url + CHAT, json=ASK, timeout=10) as r:
                    for _ in r.iter_raw():
                        pass
            except httpx.HTTPError as exc:
                errors.append(exc)

        sender = threading.Thread(target=client)
        sender.start()
        panel = window.tap_panel
        qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=10_000)
        panel.view.clicked.emit(panel.model.index(0, 0))
        qtbot.waitUntil(lambda: window.inspector.frames_model.rowCount() == 1, timeout=10_000)
        assert panel.texts()[0].splitlines()[1] == "● streaming · 200 · 123 B"

        os.kill(recorder, signal.SIGKILL)
        qtbot.waitUntil(lambda: not window.tap.running, timeout=10_000)
        why = "the tap's recording process ended (exit code -9)"
        assert window.tap_panel.state.text() == f"Tap not running: {why}"
        assert dialog.message.text() == f"The tap stopped: {why}"
        assert dialog.start_button.text() == "Start"
        # the exchange it had open ends, with what the window got of it
        line = panel.texts()[0].splitlines()[1]
        assert line.startswith("✕ error · 200 · 1 frame · 123 B · "), line
        result = window.tap.exchanges[0].result
        assert result is not None and result.reason == why
        assert result.turn.text == "one"
        # the forwarding process goes with it: its client is cut off, its port closed
        sender.join(10)
        assert not sender.is_alive() and len(errors) == 1
        qtbot.waitUntil(lambda: _gone(forwarder), timeout=10_000)
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.root_url + CHAT, timeout=5)
        upstream.script.gates[0].set()
        dialog.start_button.click()  # and it starts again
        qtbot.waitUntil(lambda: window.tap.running, timeout=20_000)
        assert dialog.message.text().startswith("Listening on ")
