"""The endpoint dialog: presets fill fields, TLS-off warning, keys to the keyring only,
Fetch models and Test connection against a tiny server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import qasync
from keyring.backends import null
from pytestqt.qtbot import QtBot

from streamscope.core import paths
from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import PRESETS, Endpoint, new_endpoint
from streamscope.core.net.secrets import MEMORY_ONLY_MESSAGE, SERVICE, SecretStore, header_account
from streamscope.core.wire.context import ContextPolicy
from streamscope.ui.endpoint.endpoints_dialog import EndpointsDialog
from streamscope.ui.endpoint.settings_dialog import EndpointDialog, demo_scenarios
from support.memory_keyring import MemoryKeyring, installed

PLANTED = "sk-PLANTED-123"


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with installed(backend):
        yield backend


class _Handler(BaseHTTPRequestHandler):
    models: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer good":
            self._json(401, {"error": {"message": "Invalid API key", "type": "auth"}})
        elif self.path in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": m} for m in self.models]})
        else:
            self._json(404, {"error": {"message": "not here"}})

    def _json(self, status: int, doc: object) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.models = ["alpha", "beta", "gamma"]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def make(qtbot: QtBot, endpoint: Endpoint | None = None, **kw: object) -> EndpointDialog:
    kw.setdefault("secrets", SecretStore())
    dialog = EndpointDialog(endpoint, **kw)  # type: ignore[arg-type]
    qtbot.addWidget(dialog)
    return dialog


def choose_preset(dialog: EndpointDialog, key: str) -> None:
    index = dialog.preset_combo.findData(key)
    dialog.preset_combo.setCurrentIndex(index)
    dialog.preset_combo.activated.emit(index)


def run(aloop: qasync.QEventLoop, dialog: EndpointDialog, action: object) -> None:
    async def main() -> None:
        action()  # type: ignore[operator]
        while dialog.pending():
            await asyncio.gather(*dialog.pending())

    aloop.run_until_complete(main())


@pytest.mark.parametrize("key", list(PRESETS))
def test_choosing_each_preset_fills_the_fields(qtbot: QtBot, ring: MemoryKeyring, key: str) -> None:
    dialog = make(qtbot, new_endpoint("custom"))
    choose_preset(dialog, key)
    preset = PRESETS[key]
    ep = dialog.endpoint()
    assert (ep.preset, ep.base_url, ep.dialect) == (key, preset.base_url, preset.dialect)
    assert ep.model == preset.model
    assert (ep.key_source, ep.api_key_env) == (preset.key_source, preset.api_key_env)
    assert ep.name == preset.label
    if key == "demo":
        assert dialog.base_url_edit.isReadOnly()
        names = [dialog.model_combo.itemText(i) for i in range(dialog.model_combo.count())]
        assert names == list(demo_scenarios()) and "demo-tools" in names
        assert dialog.model_note.text().startswith("Scenario: ")


def test_preset_keeps_a_name_the_user_typed(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, new_endpoint("custom"))
    dialog.name_edit.setText("My proxy")
    choose_preset(dialog, "litellm")
    assert dialog.endpoint().name == "My proxy"


def test_tls_off_shows_the_red_warning(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, new_endpoint("vllm"))
    dialog.show()
    assert not dialog.tls_warning.isVisible()
    dialog.network_tab.tls_check.setChecked(False)
    assert dialog.tls_warning.isVisible()
    assert dialog.tls_warning.text().startswith("⚠ TLS verification is OFF")
    assert "c2161f" in dialog.tls_warning.styleSheet()
    assert dialog.endpoint().tls_verify is False
    dialog.network_tab.tls_check.setChecked(True)
    assert not dialog.tls_warning.isVisible()


def test_accept_stores_the_key_in_the_keyring_only(qtbot: QtBot, ring: MemoryKeyring) -> None:
    ep = new_endpoint("aggregator")
    dialog = make(qtbot, ep)
    assert dialog.endpoint().key_source == "keyring"
    dialog.key_fields.key_edit.setText(PLANTED)
    dialog.network_tab.add_header_row("x-api-key", f"hdr-{PLANTED}")
    dialog.network_tab.add_header_row("X-Team", "blue")
    dialog.accept()
    assert dialog.result() == EndpointDialog.DialogCode.Accepted
    saved = dialog.endpoint()
    assert ring.items[(SERVICE, ep.id)] == PLANTED
    assert ring.items[(SERVICE, header_account(ep.id, "x-api-key"))] == f"hdr-{PLANTED}"
    assert saved.extra_headers == {"x-api-key": "", "X-Team": "blue"}
    assert PLANTED not in repr(saved)
    store = EndpointStore()
    store.save(EndpointSettings.default().with_endpoint(saved))
    leaks = [p for p in paths.home().rglob("*") if p.is_file() and b"PLANTED" in p.read_bytes()]
    assert leaks == []
    # reopening shows the stored key and header value again
    again = make(qtbot, store.load().get(ep.id))
    assert again.key_fields.key_edit.text() == PLANTED
    assert again.network_tab.headers()["x-api-key"] == f"hdr-{PLANTED}"


def test_key_field_is_a_password_with_show_toggle(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, new_endpoint("custom"))
    assert dialog.key_fields.key_edit.echoMode() == dialog.key_fields.key_edit.EchoMode.Password
    dialog.key_fields.show_key.setChecked(True)
    assert dialog.key_fields.key_edit.echoMode() == dialog.key_fields.key_edit.EchoMode.Normal


def test_memory_only_store_says_so(qtbot: QtBot, tmp_path: Path) -> None:
    store = SecretStore(null.Keyring())
    dialog = make(qtbot, new_endpoint("custom"), secrets=store)
    assert dialog.key_fields.key_location.text() == MEMORY_ONLY_MESSAGE
    dialog.base_url_edit.setText("http://h/v1")
    dialog.key_fields.key_edit.setText(PLANTED)
    dialog.accept()
    assert store.get(dialog.endpoint().id) == PLANTED
    assert not any(b"PLANTED" in p.read_bytes() for p in paths.home().rglob("*") if p.is_file())


def test_env_source_describes_the_variable(
    qtbot: QtBot, ring: MemoryKeyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dialog = make(qtbot, new_endpoint("openai"))
    assert "it is not set" in dialog.key_fields.key_location.text()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    dialog.key_fields.env_edit.setText("OPENAI_API_KEY")
    dialog.key_fields.update_location()
    assert (
        dialog.key_fields.key_location.text()
        == "Read from $OPENAI_API_KEY when sending (it is set)."
    )
    dialog.accept()
    assert ring.items == {}  # nothing stored for an env key


def test_fields_round_trip_and_validation(qtbot: QtBot, ring: MemoryKeyring) -> None:
    ep = replace(
        new_endpoint("openai"),
        system_prompt="Be brief.",
        temperature=0.3,
        max_tokens=256,
        include_usage=False,
        extra_body={"top_p": 0.5},
        connect_timeout=4.0,
        first_byte_timeout=90.0,
        idle_timeout=45.0,
        ca_bundle="/tmp/ca.pem",
        extra_headers={"X-A": "1"},
        context_policy=ContextPolicy("exchanges", 40),
    )
    dialog = make(qtbot, ep)
    assert dialog.endpoint() == ep
    ok = dialog.buttons.button(dialog.buttons.StandardButton.Ok)
    dialog.request_tab.extra_body_edit.setPlainText('{"top_p": }')
    assert not ok.isEnabled()
    assert dialog.request_tab.extra_body_status.text().startswith("✗ line 1, column 11")
    dialog.request_tab.extra_body_edit.setPlainText("[1]")
    assert "must be a JSON object" in dialog.problem.text()
    dialog.request_tab.extra_body_edit.setPlainText('{"seed": 1}')
    assert ok.isEnabled() and dialog.endpoint().extra_body == {"seed": 1}
    dialog.request_tab.temperature_check.setChecked(False)
    dialog.request_tab.max_tokens_check.setChecked(False)
    assert dialog.endpoint().temperature is None and dialog.endpoint().max_tokens is None
    dialog.base_url_edit.setText("ftp://nope")
    assert not ok.isEnabled() and "http://" in dialog.problem.text()


def test_the_context_sent_is_set_per_endpoint(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, replace(new_endpoint("openai"), context_policy=ContextPolicy()))
    box = dialog.request_tab.context_box
    assert box.kind.currentText() == "Whole conversation" and box.number.isHidden()
    box.kind.setCurrentIndex(box.kind.findData("budget"))
    assert not box.number.isHidden() and box.number.suffix() == " KB of text"
    assert dialog.endpoint().context_policy == ContextPolicy("budget", 200 * 1024)
    box.number.setValue(64)
    assert dialog.endpoint().context_policy == ContextPolicy("budget", 64 * 1024)
    box.kind.setCurrentIndex(box.kind.findData("exchanges"))
    assert box.number.suffix() == " exchanges" and box.number.value() == 50
    assert dialog.endpoint().context_policy == ContextPolicy("exchanges", 50)
    box.kind.setCurrentIndex(box.kind.findData("all"))
    assert dialog.endpoint().context_policy == ContextPolicy() and box.number.isHidden()
    box.load(ContextPolicy("budget", 300 * 1024))
    assert (box.kind.currentData(), box.number.value()) == ("budget", 300)


def test_fetch_models_fills_the_combo(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, server: str
) -> None:
    ep = replace(new_endpoint("custom"), base_url=server, model="beta")
    dialog = make(qtbot, ep)
    dialog.key_fields.key_edit.setText("good")
    run(aloop, dialog, dialog.fetch_button.click)
    items = [dialog.model_combo.itemText(i) for i in range(dialog.model_combo.count())]
    assert items == ["alpha", "beta", "gamma"]
    assert dialog.model_combo.currentText() == "beta"
    assert dialog.fetch_button.isEnabled() and dialog.fetch_button.text() == "Fetch models"
    assert "3 models" in dialog.model_note.text()


def test_fetch_models_error_is_shown(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, server: str
) -> None:
    dialog = make(qtbot, replace(new_endpoint("custom"), base_url=server))
    dialog.key_fields.key_edit.setText("bad")
    run(aloop, dialog, dialog.fetch_button.click)
    assert "401 Unauthorized" in dialog.model_note.text()


def test_test_connection_shows_401_inline(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, server: str
) -> None:
    dialog = make(qtbot, replace(new_endpoint("custom"), base_url=server))
    dialog.key_fields.key_edit.setText("wrong")
    run(aloop, dialog, dialog.test_button.click)
    text = dialog.test_result.text()
    assert text.startswith("✗ 401 Unauthorized") and "Invalid API key" in text
    dialog.key_fields.key_edit.setText("good")
    run(aloop, dialog, dialog.test_button.click)
    assert dialog.test_result.text().startswith("✓ Connected · 3 models")


def test_demo_fetches_scenarios_from_the_running_demo_server(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, server: str
) -> None:
    _Handler.models = ["demo", "demo-tools"]
    asked: list[str] = []

    def demo_base_url(dialect: str) -> str:
        asked.append(dialect)
        return server

    dialog = make(qtbot, new_endpoint("custom"), demo_base_url=demo_base_url)
    # the demo needs no key; our stub wants one, so give it through an extra header
    dialog.network_tab.add_header_row("Authorization", "Bearer good")
    run(aloop, dialog, lambda: choose_preset(dialog, "demo"))
    assert asked == ["openai"]
    items = [dialog.model_combo.itemText(i) for i in range(dialog.model_combo.count())]
    assert items == ["demo", "demo-tools"]
    assert dialog.model_note.text().startswith("Scenario: A Markdown answer")


def test_endpoints_dialog_duplicate_delete_select(qtbot: QtBot, ring: MemoryKeyring) -> None:
    store = SecretStore()
    work = replace(new_endpoint("openai"), name="Work", key_source="keyring")
    store.set(work.id, PLANTED)
    settings = EndpointSettings.default().with_endpoint(work)
    dialog = EndpointsDialog(settings, secrets=store)
    qtbot.addWidget(dialog)
    assert dialog.list.count() == 2
    dialog.list.setCurrentRow(1)
    dialog.duplicate_button.click()
    copy = dialog.settings().endpoints[-1]
    assert copy.name == "Work (copy)" and copy.id != work.id
    assert store.get(copy.id) == PLANTED
    dialog.use_button.click()
    assert dialog.settings().selected_id == copy.id
    dialog.list.setCurrentRow(1)
    dialog.delete_button.click()
    assert [e.name for e in dialog.settings().endpoints] == ["Built-in demo", "Work (copy)"]
    dialog.accept()
    assert store.get(work.id) is None  # a deleted endpoint's key is forgotten on OK
    assert store.get(copy.id) == PLANTED


def test_screenshot(qtbot: QtBot, ring: MemoryKeyring) -> None:
    dialog = make(qtbot, replace(new_endpoint("aggregator"), tls_verify=False))
    dialog.resize(700, 560)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert not dialog.grab().isNull()


def test_demo_endpoint_lists_the_servers_scenarios_when_opened(
    qtbot: QtBot, ring: MemoryKeyring, aloop: qasync.QEventLoop, server: str
) -> None:
    _Handler.models = ["demo", "demo-slow"]
    demo = replace(PRESETS["demo"].endpoint(), extra_headers={"Authorization": "Bearer good"})
    dialog = make(qtbot, demo, demo_base_url=lambda dialect: server)

    def items() -> list[str]:
        return [dialog.model_combo.itemText(i) for i in range(dialog.model_combo.count())]

    assert items() == list(demo_scenarios())  # the static list at once

    async def main() -> None:
        for _ in range(200):
            await asyncio.sleep(0.01)
            if items() == ["demo", "demo-slow"] and not dialog.pending():
                return

    aloop.run_until_complete(main())
    assert items() == ["demo", "demo-slow"]
    assert dialog.endpoint().model == "demo"
