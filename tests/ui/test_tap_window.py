"""Endpoint → Tap another app… in the real window: start a tap from the dialog, send through
it from another client, and watch the exchange in the Tapped list and the inspector while it
streams (the same batches and reducer deltas as a chat turn)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import httpx
import pytest
from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from streamscope.demo.server import DemoServer
from streamscope.ui.chat.status_panel import status_line
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import TapDialog
from support.tap_upstream import FINAL, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def window(qtbot: QtBot, aloop: object) -> Iterator[MainWindow]:
    win = MainWindow()
    qtbot.addWidget(win)
    yield win
    win.tap.stop_and_wait()


def _start(qtbot: QtBot, window: MainWindow, upstream: str) -> TapDialog:
    window.open_tap_dialog()
    dialog = window.tap_dock.dialog
    assert isinstance(dialog, TapDialog)
    dialog.upstream.setEditText(upstream)
    dialog.port.setValue(0)
    dialog.start_button.click()
    qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
    return dialog


def test_a_tapped_exchange_shows_live_in_the_list_and_the_inspector(
    qtbot: QtBot, window: MainWindow
) -> None:
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), FINAL]
        upstream.script.gates = [threading.Event()]
        dialog = _start(qtbot, window, upstream.url)
        server = window.tap.server
        assert server is not None
        assert dialog.sdk.currentText() == "OpenAI SDK"
        assert dialog.base_url.text() == server.root_url + "/v1"  # (what the SDK appends to)
        assert dialog.start_button.text() == "Stop"
        assert dialog.env.toPlainText().splitlines()[0] == f"OPENAI_BASE_URL={server.root_url}/v1"
        dialog.copy_button.click()
        assert QGuiApplication.clipboard().text() == server.root_url + "/v1"
        dialog.sdk.setCurrentText("Anthropic SDK")
        dialog.copy_button.click()
        assert QGuiApplication.clipboard().text() == server.root_url
        dialog.sdk.setCurrentText("OpenAI SDK")
        assert window.tapped_dock.isVisibleTo(window)

        got: list[bytes] = []

        def client() -> None:
            with httpx.stream("POST", server.root_url + CHAT, json=ASK, timeout=10) as r:
                got.extend(r.iter_raw())

        sender = threading.Thread(target=client)
        sender.start()
        panel = window.tap_panel
        qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=10_000)
        panel.view.clicked.emit(panel.model.index(0, 0))
        assert window.tap.shown is window.tap.exchanges[0]
        frames = window.inspector.frames_model
        # the first frame is in the inspector while upstream still holds the rest back
        qtbot.waitUntil(lambda: frames.rowCount() == 1, timeout=10_000)
        assert panel.texts()[0].splitlines() == [
            "#1 POST /v1/chat/completions",
            "● streaming · 200 · 123 B",
        ]
        assert "/v1/chat/completions" in window.inspector.request_panel.texts()[0]
        header = window.inspector.header
        assert re.fullmatch(
            r"● live · Tapped #1 POST /v1/chat/completions · \d\d:\d\d:\d\d · m · streaming…",
            header.text(),
        ), header.text()
        assert window.status.text() == "Tapped #1 POST /v1/chat/completions — streaming…"
        upstream.script.gates[0].set()
        sender.join(10)
        qtbot.waitUntil(lambda: "completed" in panel.texts()[0], timeout=10_000)
        assert frames.rowCount() == 3
        assert b"".join(got) == chat_frame("one") + FINAL
        line = panel.texts()[0].splitlines()[1]
        assert line.startswith("✓ completed · 200 · 3 frames · ")
        assert re.fullmatch(
            r"Tapped #1 POST /v1/chat/completions · \d\d:\d\d:\d\d · m · ✓ completed",
            header.text(),
        ), header.text()
        # the status bar describes the turn the inspector shows, named (issue 28: it kept
        # the chat's last words while the inspector showed the tapped exchange)
        tapped = window.tap.exchanges[0].turn
        assert tapped is not None
        assert window.status.text() == (
            f"Tapped #1 POST /v1/chat/completions — {status_line(tapped, 3)}"
        )
        dialog.start_button.click()  # Stop
        qtbot.waitUntil(lambda: dialog.start_button.text() == "Start", timeout=10_000)
        assert not window.tap.running
        # started again, the tap numbers its exchanges from 1: both rows stay apart
        upstream.script.gates = []
        dialog.start_button.click()
        qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
        server = window.tap.server
        assert server is not None
        httpx.post(server.root_url + CHAT, json=ASK, timeout=10)
        qtbot.waitUntil(lambda: len(panel.texts()) == 2 and "completed" in panel.texts()[1])
        assert panel.texts()[0].splitlines()[1].startswith("✓ completed · 200 · 3 frames")
        assert panel.texts()[1].splitlines()[0] == "#1 POST /v1/chat/completions"
        panel.view.clicked.emit(panel.model.index(0, 0))
        assert window.tap.shown is window.tap.exchanges[0]


def test_a_finished_exchange_opens_whole_with_its_tool_calls(
    qtbot: QtBot, window: MainWindow
) -> None:
    with DemoServer(speed=1000) as demo:
        _start(qtbot, window, demo.root_url)
        server = window.tap.server
        assert server is not None
        for model in ("demo-tools", "demo"):
            ask = {**ASK, "model": model}
            httpx.post(server.root_url + CHAT, json=ask, timeout=10)
        panel = window.tap_panel
        qtbot.waitUntil(
            lambda: (
                [t.splitlines()[1].split(" · ")[0] for t in panel.texts()]
                == ["✓ completed", "✓ completed"]
            ),
            timeout=10_000,
        )
        results = [item.result for item in window.tap.exchanges]
        assert [r.dialect for r in results if r] == ["openai", "openai"]
        panel.view.clicked.emit(panel.model.index(0, 0))
        inspector = window.inspector
        qtbot.waitUntil(lambda: inspector.frames_model.rowCount() == results[0].frames)  # type: ignore[union-attr]
        assert inspector.toolcalls_panel.call_count() == 2
        panel.view.clicked.emit(panel.model.index(1, 0))
        assert inspector.frames_model.rowCount() == results[1].frames  # type: ignore[union-attr]
        assert inspector.toolcalls_panel.call_count() == 0


def test_an_endpoint_upstream_brings_its_tls_options(qtbot: QtBot, window: MainWindow) -> None:
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.net.options import TLSOptions

    endpoints = [
        Endpoint(id="demo", name="Built-in demo", preset="demo"),
        Endpoint(id="x", name="Lab", base_url="https://10.0.0.9:8443/v1", tls_verify=False),
        Endpoint(id="y", name="Own CA", base_url="https://lab.test/v1", ca_bundle="/tmp/ca.pem"),
    ]
    dialog = TapDialog(window.tap, endpoints, window.demo, window)
    qtbot.addWidget(dialog)
    items = [dialog.upstream.itemText(i) for i in range(dialog.upstream.count())]
    assert items == ["Built-in demo", "https://10.0.0.9:8443/v1", "https://lab.test/v1"]
    for index, tls in ((1, TLSOptions(verify=False)), (2, TLSOptions(ca_bundle="/tmp/ca.pem"))):
        dialog.upstream.setCurrentIndex(index)
        dialog.port.setValue(0)
        dialog.start_button.click()
        qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
        server = window.tap.server
        assert server is not None and server.tls == tls
        assert dialog.base_url.text() == server.root_url + "/v1"  # upstream's prefix kept
        dialog.start_button.click()
        assert not window.tap.running


def test_the_header_names_the_model_a_tapped_request_asked_for() -> None:
    from streamscope.core.tap.proxy import TapExchange
    from streamscope.ui.tap.tapped import _model_asked

    def asked(path: str, body: bytes) -> str:
        return _model_asked(TapExchange(1, "POST", path, "http://u" + path, {}, body, None, 0.0))

    assert asked(CHAT, b'{"model": "gpt-4o", "stream": true}') == "gpt-4o"
    gemini = "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    assert asked(gemini, b'{"contents": []}') == "gemini-2.0-flash"
    assert asked("/v1/embeddings", b"not json") == ""
    assert asked(CHAT, b'{"model": 7}') == ""
    assert asked(CHAT, b"[1]") == ""


def test_the_tapped_list_is_built_when_its_dock_is_first_shown(
    qtbot: QtBot, window: MainWindow
) -> None:
    """The Tapped dock's list and the tap are not built with the window (cold start): View →
    Tapped shows the dock with its list, and its button opens the tap's dialog."""
    from streamscope.ui.tap.tap_panel import TapPanel

    window.show()
    qtbot.waitExposed(window)
    assert not isinstance(window.tapped_dock.widget(), TapPanel)
    assert window.tap_dock._tap is None
    window.tapped_dock.toggleViewAction().trigger()
    panel = window.tapped_dock.widget()
    assert isinstance(panel, TapPanel)
    assert panel is window.tap_panel and panel.controller is window.tap
    assert panel.isVisible()
    assert panel.state.text() == "Tap not running"
    assert panel.texts() == []
    panel.open_dialog.click()
    dialog = window.tap_dock.dialog
    assert isinstance(dialog, TapDialog)
    assert dialog.isVisible()
    dialog.close()


def test_a_tap_whose_forwarding_process_dies_says_so(qtbot: QtBot, window: MainWindow) -> None:
    import os
    import signal

    with ScriptedUpstream() as upstream:
        dialog = _start(qtbot, window, upstream.url)
        server = window.tap.server
        assert server is not None
        [child] = server.forwarder_pids()
        os.kill(child, signal.SIGKILL)
        qtbot.waitUntil(lambda: not window.tap.running, timeout=10_000)
        why = "the tap's forwarding process ended (exit code -9)"
        assert window.tap_panel.state.text() == f"Tap not running: {why}"
        assert dialog.message.text() == f"The tap stopped: {why}"
        assert dialog.start_button.text() == "Start"
        dialog.start_button.click()  # and it starts again
        qtbot.waitUntil(lambda: window.tap.running, timeout=10_000)
        assert dialog.message.text().startswith("Listening on ")


def test_a_stalled_tapped_exchange_says_so_on_its_row_while_it_streams(
    qtbot: QtBot, window: MainWindow
) -> None:
    """Upstream sends a frame, then keep-alives, then nothing with the connection open: the
    row says it live, by a chat turn's rules (no countdown: the timeouts are the client's),
    and so does the Timeline of the exchange shown; the tap's clock ticks only meanwhile."""
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), b": keep-alive\n\n", b": keep-alive\n\n"]
        upstream.script.gates = [threading.Event(), threading.Event()]
        upstream.script.stall = threading.Event()
        _start(qtbot, window, upstream.url)
        server = window.tap.server
        assert server is not None
        assert window.tap.liveness.ticks == 0

        def client() -> None:
            with httpx.stream("POST", server.root_url + CHAT, json=ASK, timeout=30) as r:
                for _ in r.iter_raw():
                    pass

        sender = threading.Thread(target=client)
        sender.start()
        panel = window.tap_panel
        qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=10_000)
        panel.view.clicked.emit(panel.model.index(0, 0))
        qtbot.waitUntil(lambda: window.inspector.frames_model.rowCount() == 1, timeout=10_000)
        started = window.tap.exchanges[0].exchange.started

        def status() -> str:
            return panel.texts()[0].splitlines()[1]

        assert status() == "● streaming · 200 · 123 B"
        qtbot.waitUntil(lambda: "no data for 2 s" in status(), timeout=10_000)
        assert status() == "● streaming · 200 · 123 B · no data for 2 s"
        bar = window.inspector.timeline_panel.silence_bar
        assert bar.accessibleName() == "no data for 2 s"
        quiet = bar.live.silence if bar.live is not None else None
        assert quiet is not None and 0.0 < quiet.since - started < 1.0 and quiet.seconds >= 2.0
        qtbot.waitUntil(lambda: "no data for 3 s" in status(), timeout=5_000)
        # keep-alives: bytes, no progress
        upstream.script.gates[0].set()
        upstream.script.gates[1].set()
        qtbot.waitUntil(lambda: "keep-alives" in status(), timeout=5_000)
        assert re.fullmatch(r"● streaming · 200 · 151 B · keep-alives only for [3-9] s", status())
        upstream.script.stall.set()
        sender.join(10)
        qtbot.waitUntil(lambda: "streaming" not in status(), timeout=10_000)
        assert status().startswith("⚠ truncated · 200 · 3 frames")
        assert not window.inspector.timeline_panel.silence_bar.isVisibleTo(window.inspector)
        ticks = window.tap.liveness.ticks
        assert ticks >= 30  # (every 0.1 s while it streamed)
        qtbot.wait(300)
        assert window.tap.liveness.ticks == ticks  # (nothing streams: no ticks)
