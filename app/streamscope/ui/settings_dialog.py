"""Endpoint settings: ``EndpointDialog`` edits one endpoint, ``EndpointsDialog`` the list.

    dlg = EndpointDialog(endpoint, secrets=SecretStore(), demo_base_url=server.base_url)
    if dlg.exec():
        ep = dlg.endpoint()            # never holds a key; the key went to the SecretStore

"Fetch models" and "Test connection" run as asyncio tasks on the running (qasync) loop; the
dialog owns them and cancels them when it closes. Nothing here blocks the UI.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

import httpx
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net import models_api as ep_mod
from streamscope.core.net.endpoints import (
    PRESETS,
    Endpoint,
    KeySource,
    is_secret_header,
)
from streamscope.core.net.models_api import ModelListError, make_http_client
from streamscope.core.net.secrets import SecretStore, header_account
from streamscope.core.wire.dialects import dialect_names

__all__ = ["ClientFactory", "DemoBaseUrl", "EndpointDialog", "demo_scenarios"]

ClientFactory = Callable[[Endpoint], httpx.AsyncClient]
DemoBaseUrl = Callable[[str], str]
"""dialect -> the running demo server's base URL for it (``DemoServer.base_url``)."""

_OK = "color: #1b7f3b;"
_BAD = "color: #c62828;"
_WARN = "color: #b26a00;"
_NOTE = "color: #707070;"
_KEY_SOURCES: tuple[tuple[KeySource, str], ...] = (
    ("keyring", "Stored key (system keyring)"),
    ("env", "Environment variable"),
    ("none", "None (no key sent)"),
)


def demo_scenarios() -> dict[str, str]:
    """The demo server's scenarios (name -> description), or ``{}`` without the demo package."""
    try:
        from streamscope.demo.scenarios import SCENARIOS
    except ImportError:  # pragma: no cover - the demo ships with the app
        return {}
    return {name: s.description for name, s in SCENARIOS.items()}


def _mono() -> Any:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


class EndpointDialog(QDialog):
    """Edit one endpoint. The key is saved to ``secrets`` on accept, never to the Endpoint."""

    def __init__(
        self,
        endpoint: Endpoint | None = None,
        *,
        secrets: SecretStore,
        demo_base_url: DemoBaseUrl | None = None,
        client_factory: ClientFactory | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._original = endpoint or PRESETS["custom"].endpoint()
        self._secrets = secrets
        self._demo_base_url = demo_base_url
        self._client_factory = client_factory or make_http_client
        self._tasks: set[asyncio.Task[None]] = set()
        self._scenarios = demo_scenarios()
        self.setWindowTitle(f"Endpoint — {self._original.name}")
        self.setMinimumWidth(640)

        self.tabs = QTabWidget(self)
        self.tabs.addTab(self._build_connection_tab(), "Connection")
        self.tabs.addTab(self._build_request_tab(), "Request")
        self.tabs.addTab(self._build_network_tab(), "Network")

        self.tls_warning = QLabel("⚠ TLS verification is OFF — certificates are not checked")
        self.tls_warning.setStyleSheet(f"{_BAD} font-weight: bold;")
        self.test_button = QPushButton("Test connection")
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.test_button.clicked.connect(self._on_test_clicked)

        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop)
        test_row.addWidget(self.test_result, 1)
        self.problem = QLabel()
        self.problem.setStyleSheet(_BAD)
        self.problem.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(self.tls_warning)
        layout.addLayout(test_row)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)

        self._load(self._original)
        self._wire_validation()
        self._validate()
        if self._is_demo() and demo_base_url is not None:
            QTimer.singleShot(0, self, lambda: self._spawn(self._fetch_models()))

    # --- building ----------------------------------------------------------------------------

    def _build_connection_tab(self) -> QWidget:
        page, form = _form_page()
        self.preset_combo = QComboBox()
        for preset in PRESETS.values():
            self.preset_combo.addItem(preset.label, preset.key)
        self.preset_note = QLabel()
        self.preset_note.setStyleSheet(_NOTE)
        self.name_edit = QLineEdit()
        self.base_url_edit = QLineEdit()
        self.base_url_edit.setPlaceholderText("https://host/v1 (include the version prefix)")
        self.dialect_combo = QComboBox()
        self.dialect_combo.addItems(dialect_names(with_auto=True))
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.model_combo.setMinimumContentsLength(24)
        self.fetch_button = QPushButton("Fetch models")
        model_row = QHBoxLayout()
        model_row.addWidget(self.model_combo, 1)
        model_row.addWidget(self.fetch_button)
        self.model_note = QLabel()
        self.model_note.setWordWrap(True)

        self.key_source_combo = QComboBox()
        for source, label in _KEY_SOURCES:
            self.key_source_combo.addItem(label, source)
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("paste the API key")
        self.show_key = QToolButton()
        self.show_key.setText("Show")
        self.show_key.setCheckable(True)
        self.show_key.toggled.connect(self._on_show_key_toggled)
        self._key_row = key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.show_key)
        self.env_edit = QLineEdit()
        self.env_edit.setPlaceholderText("OPENAI_API_KEY")
        self.key_location = QLabel()
        self.key_location.setWordWrap(True)

        form.addRow("Preset", self.preset_combo)
        form.addRow("", self.preset_note)
        form.addRow("Name", self.name_edit)
        form.addRow("Base URL", self.base_url_edit)
        form.addRow("Dialect", self.dialect_combo)
        form.addRow("Model", model_row)
        form.addRow("", self.model_note)
        form.addRow("Key source", self.key_source_combo)
        form.addRow("API key", key_row)
        form.addRow("Variable", self.env_edit)
        form.addRow("", self.key_location)
        self._connection_form = form

        self.preset_combo.activated.connect(self._on_preset_activated)
        self.key_source_combo.currentIndexChanged.connect(self._on_key_source_changed)
        self.env_edit.textChanged.connect(self._update_key_location)
        self.fetch_button.clicked.connect(self._on_fetch_clicked)
        self.model_combo.currentTextChanged.connect(self._update_model_note)
        return page

    def _build_request_tab(self) -> QWidget:
        page, form = _form_page()
        self.system_edit = QPlainTextEdit()
        self.system_edit.setPlaceholderText("Optional system prompt")
        self.system_edit.setFixedHeight(90)
        self.temperature_check = QCheckBox("Temperature")
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setRange(0.0, 2.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setDecimals(2)
        self.temperature_spin.setValue(1.0)
        self.temperature_spin.setMaximumWidth(150)
        self.max_tokens_check = QCheckBox("Max tokens")
        self.max_tokens_spin = QSpinBox()
        self.max_tokens_spin.setRange(1, 10_000_000)
        self.max_tokens_spin.setValue(4096)
        self.max_tokens_spin.setMaximumWidth(150)
        self.include_usage_check = QCheckBox(
            "Send stream_options.include_usage (OpenAI chat; some servers reject it)"
        )
        self.extra_body_edit = QPlainTextEdit()
        self.extra_body_edit.setFont(_mono())
        self.extra_body_edit.setPlaceholderText(
            '{"top_p": 0.9}   (merged into the body; null removes)'
        )
        self.extra_body_edit.setFixedHeight(110)
        self.extra_body_status = QLabel()
        extra_box = QVBoxLayout()
        extra_box.addWidget(self.extra_body_edit)
        extra_box.addWidget(self.extra_body_status)
        self.temperature_check.toggled.connect(self.temperature_spin.setEnabled)
        self.max_tokens_check.toggled.connect(self.max_tokens_spin.setEnabled)
        form.addRow("System prompt", self.system_edit)
        form.addRow(self.temperature_check, self.temperature_spin)
        form.addRow(self.max_tokens_check, self.max_tokens_spin)
        form.addRow("", self.include_usage_check)
        form.addRow("Extra body", extra_box)
        return page

    def _build_network_tab(self) -> QWidget:
        page, form = _form_page()
        self.headers_table = QTableWidget(0, 2)
        self.headers_table.setHorizontalHeaderLabels(["Header", "Value"])
        self.headers_table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.ResizeToContents
        )
        self.headers_table.horizontalHeader().setStretchLastSection(True)
        self.headers_table.verticalHeader().setVisible(False)
        self.headers_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.headers_table.setMinimumHeight(110)
        add = QPushButton("Add header")
        remove = QPushButton("Remove")
        add.clicked.connect(lambda: self._add_header_row("", ""))
        remove.clicked.connect(self._on_remove_header_clicked)
        header_buttons = QHBoxLayout()
        header_buttons.addWidget(add)
        header_buttons.addWidget(remove)
        header_buttons.addStretch(1)
        headers_box = QVBoxLayout()
        headers_box.addWidget(self.headers_table)
        headers_box.addLayout(header_buttons)
        note = QLabel(
            "Secret headers (Authorization, x-api-key …) are kept with the key, not in a file."
        )
        note.setWordWrap(True)
        note.setStyleSheet(_NOTE)
        headers_box.addWidget(note)

        def seconds(maximum: float) -> QDoubleSpinBox:
            spin = QDoubleSpinBox()
            spin.setRange(0.5, maximum)
            spin.setDecimals(1)
            spin.setSuffix(" s")
            spin.setMaximumWidth(150)
            return spin

        self.connect_spin = seconds(600)
        self.first_byte_spin = seconds(86_400)
        self.idle_spin = seconds(86_400)
        self.tls_check = QCheckBox("Verify TLS certificates")
        self.tls_inline_warning = QLabel("TLS verification is OFF")
        self.tls_inline_warning.setStyleSheet(f"{_BAD} font-weight: bold;")
        tls_row = QHBoxLayout()
        tls_row.addWidget(self.tls_check)
        tls_row.addWidget(self.tls_inline_warning)
        tls_row.addStretch(1)
        self.ca_edit = QLineEdit()
        self.ca_edit.setPlaceholderText("optional PEM file for a self-signed server")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._on_browse_ca_clicked)
        ca_row = QHBoxLayout()
        ca_row.addWidget(self.ca_edit, 1)
        ca_row.addWidget(browse)
        self.tls_check.toggled.connect(self._on_tls_toggled)

        form.addRow("Extra headers", headers_box)
        form.addRow("Connect timeout", self.connect_spin)
        form.addRow("First byte timeout", self.first_byte_spin)
        form.addRow("Idle timeout", self.idle_spin)
        form.addRow("TLS", tls_row)
        form.addRow("CA bundle", ca_row)
        return page

    # --- loading and reading the fields ---------------------------------------------------

    def _load(self, ep: Endpoint) -> None:
        index = self.preset_combo.findData(ep.preset)
        self.preset_combo.setCurrentIndex(index if index >= 0 else self.preset_combo.count() - 1)
        self.name_edit.setText(ep.name)
        self.base_url_edit.setText(ep.base_url)
        self.dialect_combo.setCurrentText(ep.dialect)
        self._set_models([ep.model] if ep.model else [], ep.model)
        self.key_source_combo.setCurrentIndex(self.key_source_combo.findData(ep.key_source))
        self.env_edit.setText(ep.api_key_env)
        self.key_edit.setText(self._secrets.get(ep.id) or "")
        self.headers_table.setRowCount(0)
        for name, value in ep.extra_headers.items():
            if is_secret_header(name):
                value = self._secrets.get(header_account(ep.id, name)) or value
            self._add_header_row(name, value)
        self.connect_spin.setValue(ep.connect_timeout)
        self.first_byte_spin.setValue(ep.first_byte_timeout)
        self.idle_spin.setValue(ep.idle_timeout)
        self.tls_check.setChecked(ep.tls_verify)
        self.ca_edit.setText(ep.ca_bundle or "")
        self.system_edit.setPlainText(ep.system_prompt)
        self.temperature_check.setChecked(ep.temperature is not None)
        self.temperature_spin.setValue(ep.temperature if ep.temperature is not None else 1.0)
        self.temperature_spin.setEnabled(ep.temperature is not None)
        self.max_tokens_check.setChecked(ep.max_tokens is not None)
        self.max_tokens_spin.setValue(ep.max_tokens or 4096)
        self.max_tokens_spin.setEnabled(ep.max_tokens is not None)
        self.include_usage_check.setChecked(ep.include_usage)
        body = json.dumps(dict(ep.extra_body), indent=2) if ep.extra_body else ""
        self.extra_body_edit.setPlainText(body)
        self._on_tls_toggled(ep.tls_verify)
        self._apply_preset_mode()
        self._on_key_source_changed()

    def _key_source(self) -> KeySource:
        source: KeySource = self.key_source_combo.currentData()
        return source

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for row in range(self.headers_table.rowCount()):
            name_item = self.headers_table.item(row, 0)
            value_item = self.headers_table.item(row, 1)
            name = name_item.text().strip() if name_item else ""
            if name:
                headers[name] = value_item.text() if value_item else ""
        return headers

    def _extra_body(self) -> dict[str, Any]:
        text = self.extra_body_edit.toPlainText().strip()
        if not text:
            return {}
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object")
        return value

    def _fields(self, *, with_secrets: bool) -> Endpoint:
        """The endpoint the fields describe; secret header values only ``with_secrets``."""
        headers = self._headers()
        if not with_secrets:
            headers = {k: ("" if is_secret_header(k) else v) for k, v in headers.items()}
        try:
            extra_body = self._extra_body()
        except ValueError:
            extra_body = dict(self._original.extra_body)
        return replace(
            self._original,
            name=self.name_edit.text().strip() or self.preset_combo.currentText(),
            preset=self.preset_combo.currentData(),
            base_url=self.base_url_edit.text().strip(),
            dialect=self.dialect_combo.currentText(),
            model=self.model_combo.currentText().strip(),
            key_source=self._key_source(),
            api_key_env=self.env_edit.text().strip(),
            extra_headers=headers,
            connect_timeout=self.connect_spin.value(),
            first_byte_timeout=self.first_byte_spin.value(),
            idle_timeout=self.idle_spin.value(),
            tls_verify=self.tls_check.isChecked(),
            ca_bundle=self.ca_edit.text().strip() or None,
            system_prompt=self.system_edit.toPlainText(),
            temperature=self.temperature_spin.value()
            if self.temperature_check.isChecked()
            else None,
            max_tokens=self.max_tokens_spin.value() if self.max_tokens_check.isChecked() else None,
            include_usage=self.include_usage_check.isChecked(),
            extra_body=extra_body,
        )

    def endpoint(self) -> Endpoint:
        """The edited endpoint. It holds no key and no secret header value."""
        return self._fields(with_secrets=False)

    def _typed_key(self) -> str | None:
        """The key to use for Fetch / Test with the fields as they are now."""
        source = self._key_source()
        if source == "keyring":
            return self.key_edit.text().strip() or None
        if source == "env" and (name := self.env_edit.text().strip()):
            return os.environ.get(name, "").strip() or None
        return None

    # --- presets, key source, TLS ---------------------------------------------------------

    def _on_preset_activated(self, index: int) -> None:
        preset = PRESETS[self.preset_combo.itemData(index)]
        old_name = self.name_edit.text().strip()
        if not old_name or old_name in {p.label for p in PRESETS.values()}:
            self.name_edit.setText(preset.label)
        self.base_url_edit.setText(preset.base_url)
        self.dialect_combo.setCurrentText(preset.dialect)
        self._set_models([preset.model] if preset.model else [], preset.model)
        self.key_source_combo.setCurrentIndex(self.key_source_combo.findData(preset.key_source))
        self.env_edit.setText(preset.api_key_env)
        self.test_result.clear()
        self._apply_preset_mode()
        self._on_key_source_changed()
        self._validate()
        if self._is_demo() and self._demo_base_url is not None:
            self._spawn(self._fetch_models())

    def _is_demo(self) -> bool:
        return bool(self.preset_combo.currentData() == "demo")

    def _apply_preset_mode(self) -> None:
        preset = PRESETS.get(self.preset_combo.currentData())
        self.preset_note.setText(preset.note if preset else "")
        self.preset_note.setVisible(bool(preset and preset.note))
        demo = self._is_demo()
        self.base_url_edit.setReadOnly(demo)
        self.base_url_edit.setPlaceholderText(
            "resolved at run time: the embedded server on 127.0.0.1"
            if demo
            else "https://host/v1 (include the version prefix)"
        )
        for widget in (self.key_source_combo, self.key_edit, self.show_key, self.env_edit):
            widget.setEnabled(not demo)
        if demo:
            current = self.model_combo.currentText() or "demo"
            self._set_models(list(self._scenarios), current)
        else:
            self.model_note.clear()
            self.model_note.setVisible(False)

    def _set_models(self, models: list[str], current: str) -> None:
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        for name in models:
            self.model_combo.addItem(name)
            if name in self._scenarios and self._is_demo():
                self.model_combo.setItemData(
                    self.model_combo.count() - 1, self._scenarios[name], Qt.ItemDataRole.ToolTipRole
                )
        self.model_combo.setCurrentText(current)
        self.model_combo.blockSignals(False)
        self._update_model_note()

    def _update_model_note(self) -> None:
        """For the demo: what the chosen scenario does (other endpoints: fetch status)."""
        if not self._is_demo():
            self.model_note.setVisible(bool(self.model_note.text()))
            return
        description = self._scenarios.get(self.model_combo.currentText())
        text = f"Scenario: {description}" if description else "Pick a scenario from the list."
        self._show_model_status(text)

    def _on_key_source_changed(self) -> None:
        source = self._key_source()
        form = self._connection_form
        form.setRowVisible(self.env_edit, source == "env")
        form.setRowVisible(self._key_row, source == "keyring")
        self._update_key_location()

    def _update_key_location(self) -> None:
        source = self._key_source()
        if self._is_demo():
            text, style = "The built-in demo needs no key.", ""
        elif source == "keyring":
            if self._secrets.persistent:
                text = f"Saved in the {self._secrets.location} on OK, never in a file."
                style = ""
            else:
                text, style = (self._secrets.message or ""), _WARN
        elif source == "env":
            name = self.env_edit.text().strip()
            if not name:
                text, style = "Name the environment variable that holds the key.", _WARN
            elif os.environ.get(name):
                text, style = f"Read from ${name} when sending (it is set).", _OK
            else:
                text, style = f"Read from ${name} when sending — it is not set now.", _WARN
        else:
            text, style = "No key is sent.", ""
        self.key_location.setText(text)
        self.key_location.setStyleSheet(style)

    def _on_show_key_toggled(self, shown: bool) -> None:
        mode = QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password
        self.key_edit.setEchoMode(mode)
        self.show_key.setText("Hide" if shown else "Show")

    def _on_tls_toggled(self, verify: bool) -> None:
        self.tls_warning.setVisible(not verify)
        self.tls_inline_warning.setVisible(not verify)

    def _on_browse_ca_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "CA bundle", "", "Certificates (*.pem *.crt *.cer);;All files (*)"
        )
        if path:
            self.ca_edit.setText(path)

    def _add_header_row(self, name: str, value: str) -> None:
        row = self.headers_table.rowCount()
        self.headers_table.insertRow(row)
        self.headers_table.setItem(row, 0, QTableWidgetItem(name))
        self.headers_table.setItem(row, 1, QTableWidgetItem(value))

    def _on_remove_header_clicked(self) -> None:
        rows = sorted({i.row() for i in self.headers_table.selectedIndexes()}, reverse=True)
        if not rows and self.headers_table.rowCount():
            rows = [self.headers_table.rowCount() - 1]
        for row in rows:
            self.headers_table.removeRow(row)

    # --- validation ---------------------------------------------------------------------------

    def _wire_validation(self) -> None:
        self.extra_body_edit.textChanged.connect(self._validate)
        self.base_url_edit.textChanged.connect(self._validate)
        self.name_edit.textChanged.connect(self._validate)
        self.key_source_combo.currentIndexChanged.connect(self._validate)
        self.env_edit.textChanged.connect(self._validate)

    def problems(self) -> list[str]:
        """What stops OK (empty when the fields are acceptable)."""
        found: list[str] = []
        try:
            self._extra_body()
        except ValueError as exc:
            found.append(f"Extra body: {_json_error(exc)}")
        url = self.base_url_edit.text().strip()
        if not self._is_demo():
            if not url:
                found.append("Base URL is required")
            elif not url.startswith(("http://", "https://")):
                found.append("Base URL must start with http:// or https://")
        if self._key_source() == "env" and not self.env_edit.text().strip():
            found.append("Name the environment variable that holds the key")
        return found

    def _validate(self) -> None:
        found = self.problems()
        try:
            self._extra_body()
        except ValueError as exc:
            self.extra_body_status.setText(f"✗ {_json_error(exc)}")
            self.extra_body_status.setStyleSheet(_BAD)
        else:
            text = self.extra_body_edit.toPlainText().strip()
            self.extra_body_status.setText("✓ valid JSON object" if text else "")
            self.extra_body_status.setStyleSheet(_OK)
        self.problem.setText(" · ".join(found))
        self.problem.setVisible(bool(found))
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(not found)

    # --- async: fetch models, test connection --------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the dialog owns (on the qasync loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no qasync loop running (a bare QApplication): nothing to do
            coro.close()
            return
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def pending(self) -> set[asyncio.Task[None]]:
        """The dialog's running tasks (tests await them)."""
        return set(self._tasks)

    def _probe_target(self) -> tuple[Endpoint, str | None] | None:
        ep = self._fields(with_secrets=True)
        if ep.is_demo:
            if self._demo_base_url is None:
                return None
            return ep, self._demo_base_url(ep.dialect if ep.dialect != "auto" else "openai")
        return ep, None

    def _on_fetch_clicked(self) -> None:
        self._spawn(self._fetch_models())

    async def _fetch_models(self) -> None:
        target = self._probe_target()
        if target is None:
            self._show_model_status("The demo server is not running: showing its built-in list.")
            return
        ep, base = target
        self.fetch_button.setEnabled(False)
        self.fetch_button.setText("Fetching…")
        try:
            async with self._client_factory(ep) as client:
                models = await ep_mod.fetch_models(ep, self._typed_key(), client, base_url=base)
        except ModelListError as exc:
            self._show_model_status(str(exc), _BAD)
        else:
            current = self.model_combo.currentText()
            self._set_models(models, current or (models[0] if models else ""))
            if not self._is_demo():
                self._show_model_status(f"{len(models)} models from the server.", _OK)
        finally:
            self.fetch_button.setEnabled(True)
            self.fetch_button.setText("Fetch models")

    def _show_model_status(self, text: str, style: str = "") -> None:
        self.model_note.setText(text)
        self.model_note.setStyleSheet(style)
        self.model_note.setVisible(True)

    def _on_test_clicked(self) -> None:
        self._spawn(self._test_connection())

    async def _test_connection(self) -> None:
        target = self._probe_target()
        if target is None:
            self._show_test_result(False, "The demo server is not running.")
            return
        ep, base = target
        self.test_button.setEnabled(False)
        self.test_result.setStyleSheet("")
        self.test_result.setText("Testing…")
        try:
            async with self._client_factory(ep) as client:
                ok, message = await ep_mod.test_connection(
                    ep, self._typed_key(), client, base_url=base
                )
        finally:
            self.test_button.setEnabled(True)
        self._show_test_result(ok, message)

    def _show_test_result(self, ok: bool, message: str) -> None:
        self.test_result.setText(("✓ " if ok else "✗ ") + message)
        self.test_result.setStyleSheet(_OK if ok else _BAD)

    # --- closing -------------------------------------------------------------------------------

    def accept(self) -> None:
        if self.problems():
            self._validate()
            return
        ep = self._fields(with_secrets=True)
        if ep.key_source == "keyring" and not ep.is_demo:
            self._secrets.set(ep.id, self.key_edit.text().strip())
        for name, value in ep.extra_headers.items():
            if is_secret_header(name):
                self._secrets.set(header_account(ep.id, name), value)
        super().accept()

    def done(self, result: int) -> None:
        for task in self._tasks:
            task.cancel()
        super().done(result)


def _form_page() -> tuple[QWidget, QFormLayout]:
    """A tab page: a form at the top, free space below it."""
    page = QWidget()
    outer = QVBoxLayout(page)
    form = QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    outer.addLayout(form)
    outer.addStretch(1)
    return page, form


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
    return str(exc)
