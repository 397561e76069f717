"""The endpoint dialog's Network tab: proxy and client-certificate fields round-trip, the
proxy password goes to the keyring only, validation, and "Test connection" through a real
proxy on loopback with the typed (not yet saved) password."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import replace

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core import paths
from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import DEMO_ID, PRESETS, new_endpoint
from streamscope.core.net.secrets import SERVICE, SecretStore, proxy_account
from streamscope.demo.server import DemoServer
from streamscope.ui.endpoint.endpoints_dialog import EndpointsDialog
from streamscope.ui.endpoint.settings_dialog import EndpointDialog
from support.http_proxy import HttpProxy
from support.memory_keyring import MemoryKeyring, installed

PASSWORD = "PLANTED-proxy-pw-9"


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with installed(backend):
        yield backend


def make(qtbot: QtBot, endpoint: object) -> EndpointDialog:
    dialog = EndpointDialog(endpoint, secrets=SecretStore())  # type: ignore[arg-type]
    qtbot.addWidget(dialog)
    return dialog


def test_the_network_fields_round_trip(qtbot: QtBot, ring: MemoryKeyring) -> None:
    ep = replace(new_endpoint("custom"), base_url="https://api.example.com/v1")
    dialog = make(qtbot, ep)
    net = dialog.network_tab
    assert net.proxy_mode() == "system"
    assert not net.proxy_host_edit.isEnabled()  # System: nothing to fill in
    net.proxy_combo.setCurrentIndex(net.proxy_combo.findData("socks5"))
    assert net.proxy_host_edit.isEnabled() and net.proxy_password_edit.isEnabled()
    assert net.proxy_password_edit.echoMode() == net.proxy_password_edit.EchoMode.Password
    net.proxy_host_edit.setText(" proxy.corp ")
    net.proxy_port_spin.setValue(1080)
    net.proxy_user_edit.setText("me")
    net.proxy_password_edit.setText(PASSWORD)
    net.no_proxy_edit.setText("localhost, .corp 10.0.0.1")
    net.cert_edit.setText("/home/me/client.pem")
    net.key_file_edit.setText("/home/me/client.key")
    assert dialog.problems() == []
    dialog.accept()
    saved = dialog.endpoint()
    assert (saved.proxy_mode, saved.proxy_host, saved.proxy_port, saved.proxy_username) == (
        "socks5",
        "proxy.corp",
        1080,
        "me",
    )
    assert saved.no_proxy == ("localhost", ".corp", "10.0.0.1")
    assert (saved.client_cert, saved.client_key) == ("/home/me/client.pem", "/home/me/client.key")
    assert ring.items[(SERVICE, proxy_account(ep.id))] == PASSWORD
    store = EndpointStore()
    store.save(EndpointSettings.default().with_endpoint(saved))
    leaks = [
        p for p in paths.home().rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()
    ]
    assert leaks == []

    again = make(qtbot, store.load().get(ep.id))
    net = again.network_tab
    assert net.proxy_combo.currentData() == "socks5"
    assert (net.proxy_host_edit.text(), net.proxy_port_spin.value()) == ("proxy.corp", 1080)
    assert (net.proxy_user_edit.text(), net.proxy_password_edit.text()) == ("me", PASSWORD)
    assert net.no_proxy_edit.text() == "localhost, .corp, 10.0.0.1"
    assert (net.cert_edit.text(), net.key_file_edit.text()) == (
        "/home/me/client.pem",
        "/home/me/client.key",
    )
    assert again.endpoint() == saved

    # back to System: the stored password is forgotten on OK
    net.proxy_combo.setCurrentIndex(net.proxy_combo.findData("system"))
    again.accept()
    assert (SERVICE, proxy_account(ep.id)) not in ring.items
    assert again.endpoint().proxy_mode == "system"


def test_network_problems_block_ok(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, replace(new_endpoint("custom"), base_url="http://127.0.0.1:9/v1"))
    net = dialog.network_tab
    net.proxy_combo.setCurrentIndex(net.proxy_combo.findData("http"))
    net.no_proxy_edit.setText("10.0.0.0/8")
    net.key_file_edit.setText("/k.pem")
    assert dialog.problems() == [
        "Proxy host is required",
        "No proxy for: '10.0.0.0/8' is not a host name",
        "Client key needs a client certificate",
    ]
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    assert not ok.isEnabled()
    net.proxy_host_edit.setText("proxy")
    net.no_proxy_edit.setText("10.0.0.1")
    net.cert_edit.setText("/c.pem")
    assert dialog.problems() == [] and ok.isEnabled()


def test_the_demo_says_it_goes_direct(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, PRESETS["demo"].endpoint(id=DEMO_ID))
    assert dialog.network_tab.proxy_note.text() == (
        "The Built-in demo runs on this machine and is always reached directly."
    )
    assert not dialog.network_tab.proxy_combo.isEnabled()
    assert not dialog.network_tab.proxy_host_edit.isEnabled()


def test_test_connection_goes_through_the_proxy_with_the_typed_password(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in os.environ:
        if name.lower() in ("all_proxy", "http_proxy", "https_proxy", "no_proxy"):
            monkeypatch.delenv(name)
    with DemoServer(speed=500) as demo, HttpProxy(username="me", password=PASSWORD) as proxy:
        ep = replace(new_endpoint("custom"), base_url=demo.base_url("openai"), key_source="none")
        dialog = make(qtbot, ep)
        net = dialog.network_tab
        net.proxy_combo.setCurrentIndex(net.proxy_combo.findData("http"))
        net.proxy_host_edit.setText("127.0.0.1")
        net.proxy_port_spin.setValue(proxy.port)
        net.proxy_user_edit.setText("me")
        net.proxy_password_edit.setText("wrong")

        async def click() -> str:
            dialog.test_button.click()
            await asyncio.sleep(0)
            await asyncio.gather(*dialog.pending())
            return dialog.test_result.text()

        refused = aloop.run_until_complete(click())
        net.proxy_password_edit.setText(PASSWORD)
        connected = aloop.run_until_complete(click())
    assert refused == "✗ HTTP 407 Proxy Authentication Required"
    assert connected.startswith("✓ Connected"), connected
    assert [(r.username, r.relayed) for r in proxy.requests] == [("me", False), ("me", True)]


def test_duplicating_an_endpoint_copies_its_proxy_password(
    qtbot: QtBot, ring: MemoryKeyring
) -> None:
    store = SecretStore()
    work = replace(
        new_endpoint("openai"), name="Work", proxy_mode="http", proxy_host="p", proxy_username="me"
    )
    store.set(proxy_account(work.id), PASSWORD)
    dialog = EndpointsDialog(EndpointSettings.default().with_endpoint(work), secrets=store)
    qtbot.addWidget(dialog)
    dialog.list.setCurrentRow(1)
    dialog.duplicate_button.click()
    copy = dialog.settings().endpoints[-1]
    assert copy.id != work.id and copy.proxy_username == "me"
    assert store.get(proxy_account(copy.id)) == PASSWORD
    dialog.list.setCurrentRow(1)
    dialog.delete_button.click()
    dialog.accept()
    assert store.get(proxy_account(work.id)) is None  # forgotten with the endpoint
    assert store.get(proxy_account(copy.id)) == PASSWORD


def test_picking_a_proxy_type_moves_nothing_in_the_form(qtbot: QtBot, ring: MemoryKeyring) -> None:
    ep = replace(new_endpoint("custom"), base_url="https://api.example.com/v1")
    dialog = make(qtbot, ep)
    dialog.resize(560, 640)
    dialog.show()
    dialog.tabs.setCurrentWidget(dialog.network_tab)
    qtbot.waitExposed(dialog)
    qtbot.wait(50)  # (the first layout settles)
    net = dialog.network_tab
    seen = []
    for mode in ("system", "none", "http", "socks5", "system"):
        net.proxy_combo.setCurrentIndex(net.proxy_combo.findData(mode))
        qtbot.wait(10)  # (the layout settles)
        seen.append((net.proxy_note.text(), net.proxy_note.geometry(), net.sizeHint()))
    texts = [text for text, _, _ in seen]
    assert texts[:3] == [
        "Uses the system's proxy settings and the HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and"
        " NO_PROXY environment variables.",
        "Connects directly, whatever the system or the environment says.",
        "Every request goes through this proxy, except to the hosts listed.",
    ]
    assert len({(g.y(), g.height()) for _, g, _ in seen}) == 1, [(g, h) for _, g, h in seen]
    assert len({hint.height() for _, _, hint in seen}) == 1, seen
    longest = net.proxy_note.widget(1)  # (the system note: two lines at this width)
    assert net.proxy_note.height() >= longest.heightForWidth(net.proxy_note.width())
