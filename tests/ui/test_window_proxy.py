"""The window's turns (read in the stream worker process) with proxies from the environment:
through a real SOCKS5 proxy on loopback, and a proxy setting httpx cannot use."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.main_window import MainWindow
from support.socks5 import Socks5Proxy


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Socks5Proxy]:
    """A SOCKS5 proxy, and no proxy variable but the one each test sets (before the window
    and its worker process start, so both inherit it)."""
    for name in os.environ:
        if name.lower() in ("all_proxy", "http_proxy", "https_proxy", "no_proxy"):
            monkeypatch.delenv(name)
    with Socks5Proxy() as socks:
        yield socks


def open_window(qtbot: QtBot) -> MainWindow:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    return win


def send(window: MainWindow, aloop: qasync.QEventLoop) -> Turn:
    window.model_combo.setCurrentText("demo")
    window.composer.editor.setPlainText("Hello through the proxy")
    window.composer._on_submit()

    async def wait() -> Turn:
        for _ in range(1000):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def test_a_turn_goes_through_the_socks5_proxy(
    qtbot: QtBot, aloop: qasync.QEventLoop, proxy: Socks5Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{proxy.port}")
    window = open_window(qtbot)
    try:
        turn = send(window, aloop)
        assert turn.outcome is Outcome.COMPLETED, turn.reason
        assert window.controller.runner.worker is not None  # read in the worker process
        demo_port = int(window.demo.base_url("openai").rsplit(":", 1)[1].split("/")[0])
        assert [c.port for c in proxy.connections] == [demo_port]
    finally:
        aloop.run_until_complete(window.shutdown())


def test_an_unusable_proxy_setting_ends_the_turn_with_its_reason(
    qtbot: QtBot, aloop: qasync.QEventLoop, proxy: Socks5Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks4://127.0.0.1:{proxy.port}")
    window = open_window(qtbot)
    try:
        turn = send(window, aloop)
        assert turn.outcome is Outcome.ERROR
        expected = f"could not connect: ALL_PROXY=socks4://127.0.0.1:{proxy.port}: proxy scheme"
        assert turn.reason.startswith(expected) and "'socks4'" in turn.reason
        assert "ALL_PROXY=socks4://" in window.status.text()
        assert proxy.connections == []
    finally:
        aloop.run_until_complete(window.shutdown())
