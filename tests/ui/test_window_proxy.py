"""The window's turns (read in the stream worker process) with proxies: from the environment
through a real SOCKS5 proxy on loopback, an endpoint's own HTTP proxy with its password from
the keyring, a proxy setting httpx cannot use, and the Built-in demo, which always goes direct."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import replace

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.net.endpoints import Endpoint, new_endpoint
from streamscope.core.net.secrets import proxy_account
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.demo.server import DemoServer
from streamscope.ui.shell.main_window import MainWindow
from support.http_proxy import HttpProxy
from support.memory_keyring import MemoryKeyring, installed
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


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=500) as server:
        yield server


def open_window(qtbot: QtBot, endpoint: Endpoint | None = None) -> MainWindow:
    """The window on the Built-in demo, or on ``endpoint``."""
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    if endpoint is not None:
        win.endpoint_bar.set_endpoints(win.endpoints.with_endpoint(endpoint).select(endpoint.id))
        assert win.current_endpoint().id == endpoint.id
    return win


def custom(demo: DemoServer, **fields: object) -> Endpoint:
    """A custom endpoint at the test's own demo server (not the Built-in demo)."""
    ep = replace(new_endpoint("custom"), base_url=demo.base_url("openai"), key_source="none")
    return replace(ep, **fields)  # type: ignore[arg-type]


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


def test_the_builtin_demo_goes_direct_despite_all_proxy(
    qtbot: QtBot, aloop: qasync.QEventLoop, proxy: Socks5Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{proxy.port}")  # and no NO_PROXY
    window = open_window(qtbot)
    try:
        turn = send(window, aloop)
        assert turn.outcome is Outcome.COMPLETED, turn.reason
        assert window.controller.runner.worker is not None  # read in the worker process
        assert proxy.connections == []
    finally:
        aloop.run_until_complete(window.shutdown())


def test_a_turn_goes_through_the_socks5_proxy(
    qtbot: QtBot,
    aloop: qasync.QEventLoop,
    proxy: Socks5Proxy,
    monkeypatch: pytest.MonkeyPatch,
    demo: DemoServer,
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{proxy.port}")
    window = open_window(qtbot, custom(demo))
    try:
        turn = send(window, aloop)
        assert turn.outcome is Outcome.COMPLETED, turn.reason
        assert window.controller.runner.worker is not None  # read in the worker process
        assert [c.port for c in proxy.connections] == [demo.port]
    finally:
        aloop.run_until_complete(window.shutdown())


def test_an_endpoint_proxy_with_its_password_from_the_keyring(
    qtbot: QtBot,
    aloop: qasync.QEventLoop,
    proxy: Socks5Proxy,
    monkeypatch: pytest.MonkeyPatch,
    demo: DemoServer,
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{proxy.port}")  # must be ignored
    with installed(MemoryKeyring()), HttpProxy(username="me", password="Kr-pw-771") as http:
        ep = custom(
            demo,
            proxy_mode="http",
            proxy_host="127.0.0.1",
            proxy_port=http.port,
            proxy_username="me",
        )
        window = open_window(qtbot, ep)
        try:
            window.secrets().set(proxy_account(ep.id), "Kr-wrong-pw-5")
            refused = send(window, aloop)  # the proxy's 407 page echoes the password sent
            assert refused.outcome is Outcome.ERROR
            capture = window.controller.last_capture
            assert capture is not None and capture.end is not None
            assert capture.end.body == b"Proxy authentication failed for me:" + b"*" * 13 + b"\n"
            window.secrets().set(proxy_account(ep.id), "Kr-pw-771")
            turn = send(window, aloop)
            assert turn.outcome is Outcome.COMPLETED, turn.reason
            assert window.controller.runner.worker is not None
            assert [(r.username, r.relayed) for r in http.requests] == [("me", False), ("me", True)]
            assert [r.method for r in http.relayed] == ["POST"]
            assert proxy.connections == []
        finally:
            aloop.run_until_complete(window.shutdown())


def test_an_unusable_proxy_setting_ends_the_turn_with_its_reason(
    qtbot: QtBot,
    aloop: qasync.QEventLoop,
    proxy: Socks5Proxy,
    monkeypatch: pytest.MonkeyPatch,
    demo: DemoServer,
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"socks4://127.0.0.1:{proxy.port}")
    window = open_window(qtbot, custom(demo))
    try:
        turn = send(window, aloop)
        assert turn.outcome is Outcome.ERROR
        expected = f"could not connect: ALL_PROXY=socks4://127.0.0.1:{proxy.port}: proxy scheme"
        assert turn.reason.startswith(expected) and "'socks4'" in turn.reason
        assert "ALL_PROXY=socks4://" in window.status.text()
        assert proxy.connections == []
    finally:
        aloop.run_until_complete(window.shutdown())
