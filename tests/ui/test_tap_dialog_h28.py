"""Issue 28 in the window's tap (N5, N7, N17): the Tap dialog gives the base URL each SDK
wants (the OpenAI SDK's ends in /v1 for the path-less built-in demo, and works as copied);
the Tapped dock lists the earlier tapped exchanges, by day, after a restart (from their
captures); the dock is wide enough for its rows and both tabs' titles."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import httpx
import openai
import pytest
import qasync
from PySide6.QtWidgets import QTabBar
from pytestqt.qtbot import QtBot

from streamscope.core.paths import capture_dir
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tap.tap_dialog import DEMO_UPSTREAM, TapDialog
from streamscope.ui.tap.tapped_history import PATH_ROLE
from support.tap_upstream import FINAL, ScriptedUpstream, chat_frame

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
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


def test_the_demo_base_url_is_the_one_each_sdk_wants(
    qtbot: QtBot, window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    aloop.run_until_complete(window.demo.ensure_started())
    dialog = _start(qtbot, window, DEMO_UPSTREAM)
    assert window.tap.upstream == window.demo.base_url("openai").removesuffix("/v1")  # path-less
    server = window.tap.server
    assert server is not None
    root = server.root_url
    shown = {}
    for i in range(dialog.sdk.count()):
        dialog.sdk.setCurrentIndex(i)
        shown[dialog.sdk.currentText()] = dialog.base_url.text()
    assert shown == {
        "OpenAI SDK": root + "/v1",
        "Anthropic SDK": root,
        "Google GenAI SDK": root,
        "Ollama": root,
    }
    assert dialog.env.toPlainText().splitlines() == [
        f"OPENAI_BASE_URL={root}/v1",
        f"ANTHROPIC_BASE_URL={root}",
        f"GOOGLE_GEMINI_BASE_URL={root}",
        f"OLLAMA_HOST={root}",
    ]
    dialog.sdk.setCurrentText("OpenAI SDK")
    said: list[str] = []

    def client() -> None:  # the OpenAI SDK, given the base URL as copied: no 404
        with openai.OpenAI(base_url=dialog.base_url.text(), api_key="sk-x", max_retries=0) as c:
            reply = c.chat.completions.create(
                model="demo", messages=[{"role": "user", "content": "hi"}]
            )
            said.append(reply.choices[0].message.content or "")

    sender = threading.Thread(target=client)
    sender.start()
    qtbot.waitUntil(lambda: not sender.is_alive(), timeout=20_000)
    assert said and said[0]
    # the dock's line says the OpenAI SDK's too
    assert window.tap_panel.state.text().splitlines()[1] == f"OpenAI SDK base URL: {root}/v1"


def _tap_twice(qtbot: QtBot, window: MainWindow) -> list[Path]:
    """Two exchanges through a tap from the window; their captures' paths."""
    with ScriptedUpstream() as upstream:
        upstream.script.reads = [chat_frame("one"), FINAL]
        _start(qtbot, window, upstream.url)
        server = window.tap.server
        assert server is not None
        for path in ("/v1/chat/completions", "/v1/chat/completions?x=1"):
            httpx.post(server.root_url + path, json=ASK, timeout=10)
        qtbot.waitUntil(
            lambda: len([i for i in window.tap.exchanges if i.result is not None]) == 2,
            timeout=10_000,
        )
        window.tap.stop_and_wait()
    return sorted(capture_dir().glob("*-tap-*.sscap"))


def test_earlier_tapped_exchanges_are_listed_by_day_after_a_restart(
    qtbot: QtBot, window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    first, second = _tap_twice(qtbot, window)
    # the first one, a day earlier (a capture's id starts with its time in nanoseconds)
    nanos = int(first.name.partition("-")[0]) - 86_400 * 10**9
    earlier = first.with_name(f"{nanos:020d}-{first.name.partition('-')[2]}")
    first.rename(earlier)
    chat_capture = capture_dir() / "01000000000000000000-abcdef.sscap"  # (a chat turn's)
    chat_capture.write_bytes(second.read_bytes())

    again = MainWindow()
    qtbot.addWidget(again)
    again.open_tap_dialog()
    history = again.tap_panel.history
    assert history is not None
    assert again.tap_panel.texts() == []  # (this window's own: none yet)
    when = [datetime.fromtimestamp(int(p.name.partition("-")[0]) / 1e9) for p in (second, earlier)]
    days = ["Today", "Yesterday"] if when[0].date() == date.today() else None
    if days is None:  # (the day turned while the test ran)
        days = [f"{d:%a} {d.day} {d:%b %Y}" for d in (when[0].date(), when[1].date())]
    assert history.rows() == [
        (days[0], [f"{when[0]:%H:%M:%S} POST /v1/chat/completions?x=1\n✓ completed · 200"]),
        (days[1], [f"{when[1]:%H:%M:%S} POST /v1/chat/completions\n✓ completed · 200"]),
    ]
    assert history.title.text() == (
        "Earlier: 2 tapped exchanges, kept as captures — choose one to open it"
    )
    assert history.open_folder.toolTip() == str(capture_dir())
    # choosing one replays its capture in the window
    index = history.model.index(0, 0, history.model.index(1, 0))
    assert index.data(PATH_ROLE) == str(earlier)
    history.view.clicked.emit(index)
    assert again.opening is not None

    async def replayed() -> object:
        assert again.opening is not None
        await again.opening
        return await again.controller.runner.wait()

    turn = aloop.run_until_complete(replayed())
    assert turn is not None and turn.text == "one"
    again.tap.stop_and_wait()


def test_without_earlier_ones_the_dock_says_where_they_will_go(
    qtbot: QtBot, window: MainWindow
) -> None:
    window.open_tap_dialog()
    history = window.tap_panel.history
    assert history is not None
    assert history.rows() == []
    assert history.title.text() == (
        "Earlier: no tapped exchanges kept yet (their captures go to the folder)"
    )
    assert history.open_folder.text() == "Open folder"
    assert not history.view.isVisibleTo(window)


def test_the_tapped_dock_is_wide_enough_for_its_rows_and_tab_titles(
    qtbot: QtBot, window: MainWindow
) -> None:
    window.resize(1024, 700)
    window.show()
    qtbot.waitExposed(window)
    central = window.centralWidget()
    qtbot.waitUntil(lambda: central.width() > 0)
    chat = central.width()
    window.open_tap_dialog()
    assert window.tap_dock.dialog is not None
    window.tap_dock.dialog.hide()
    panel = window.tap_panel
    fm = panel.fontMetrics()
    row = "✓ completed · 200 · 12 frames · 1.2 KB · 0.85 s"
    qtbot.waitUntil(lambda: panel.width() >= fm.horizontalAdvance(row) + 20)
    assert central.width() >= chat  # (the inspector gave way, not the chat)
    bars = [
        bar
        for bar in window.findChildren(QTabBar)
        if "Tapped" in [bar.tabText(i) for i in range(bar.count())]
    ]
    assert len(bars) == 1
    bar = bars[0]
    assert [bar.tabText(i) for i in range(bar.count())] == ["Conversations", "Tapped"]
    for i in range(bar.count()):  # (a tab narrower than it asks for has its title cut)
        assert bar.tabRect(i).width() >= bar.tabSizeHint(i).width(), bar.tabText(i)
    # and the dock cannot be made narrower than both titles (dragged, or a small window)
    assert panel.minimumWidth() >= sum(bar.tabSizeHint(i).width() for i in range(bar.count()))


def test_a_day_title_reads_today_yesterday_or_the_date() -> None:
    from streamscope.ui.tap.tapped_history import day_title

    today = date(2026, 12, 2)
    assert day_title(today, today) == "Today"
    assert day_title(today - timedelta(days=1), today) == "Yesterday"
    assert day_title(date(2026, 11, 30), today) == "Mon 30 Nov 2026"


def test_a_past_row_says_when_what_and_how_it_ended() -> None:
    from streamscope.core.tap.history import PastExchange
    from streamscope.ui.tap.tapped_history import past_label

    at = datetime(2026, 12, 1, 14, 3, 12)
    ok = PastExchange(Path("a"), at, "POST", "/v1/chat/completions", 200, "completed", "stop")
    assert past_label(ok) == "14:03:12 POST /v1/chat/completions\n✓ completed · 200"
    refused = "Connection refused by 127.0.0.1:9 — is the server running?"
    bad = PastExchange(Path("b"), at, "GET", "/v1/models", 502, "error", refused)
    assert past_label(bad) == f"14:03:12 GET /v1/models\n✕ error · 502 · {refused}"
    open_ = PastExchange(Path("c"), at, "POST", "/v1/chat/completions", 200, None, "")
    assert past_label(open_) == (
        "14:03:12 POST /v1/chat/completions\n? no end recorded (the tap stopped while it streamed)"
    )


def test_a_tapped_dock_restored_narrow_is_widened_once(qtbot: QtBot, window: MainWindow) -> None:
    from PySide6.QtCore import Qt

    window.resize(1024, 700)
    window.show()
    qtbot.waitExposed(window)
    window.open_tap_dialog()
    assert window.tap_dock.dialog is not None
    window.tap_dock.dialog.hide()
    panel = window.tap_panel
    wide = panel.sizeHint().width()
    qtbot.waitUntil(lambda: panel.width() >= wide)
    window.resizeDocks([window.tapped_dock], [190], Qt.Orientation.Horizontal)
    qtbot.waitUntil(lambda: panel.width() < wide)  # (the user's width stays this session)
    window.close()  # (the layout is saved: the dock narrow, Tapped in front)

    again = MainWindow()
    qtbot.addWidget(again)
    again.resize(1024, 700)
    again.show()
    qtbot.waitExposed(again)
    qtbot.waitUntil(lambda: again.tapped_dock.isVisible(), timeout=5_000)
    qtbot.waitUntil(lambda: again.tap_panel.width() >= wide, timeout=5_000)
    again.tap.stop_and_wait()


def test_an_unreachable_upstream_is_said_in_the_chats_words_in_the_window(
    qtbot: QtBot, window: MainWindow
) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]  # (closed below: nobody listens there)
    _start(qtbot, window, f"http://127.0.0.1:{port}")
    server = window.tap.server
    assert server is not None
    answer = httpx.post(server.root_url + "/v1/chat/completions", json=ASK, timeout=10)
    said = f"Connection refused by 127.0.0.1:{port} — is the server running?"
    assert (answer.status_code, answer.text) == (502, f"streamscope tap: {said}\n")
    qtbot.waitUntil(
        lambda: bool(window.tap.exchanges) and window.tap.exchanges[0].result is not None
    )
    result = window.tap.exchanges[0].result
    assert result is not None and (result.outcome, result.reason) == ("error", said)
