"""Endpoint settings: ``EndpointDialog`` edits one endpoint (``EndpointsDialog`` the list).

    dlg = EndpointDialog(endpoint, secrets=SecretStore(), demo_base_url=server.base_url)
    if dlg.exec():
        ep = dlg.endpoint()            # never holds a key; the key went to the SecretStore

Here: the dialog and its Connection tab (preset, name, URL, dialect, model). Its key fields are
in :mod:`~streamscope.ui.endpoint.endpoint_key`, the Request and Network tabs in
:mod:`~streamscope.ui.endpoint.endpoint_tabs`; "Fetch models" and "Test connection" run through
:mod:`~streamscope.ui.endpoint.endpoint_probe` without blocking the UI.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.endpoints import PRESETS, Endpoint
from streamscope.core.net.models_api import ModelListError
from streamscope.core.net.options import TLSOptions
from streamscope.core.net.secrets import SecretStore
from streamscope.core.wire.dialects import dialect_names
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.endpoint.endpoint_key import KeyFields
from streamscope.ui.endpoint.endpoint_probe import ClientFactory, DemoBaseUrl, EndpointProbe
from streamscope.ui.endpoint.endpoint_request_tab import RequestTab
from streamscope.ui.endpoint.endpoint_tabs import BAD, NOTE, OK, NetworkTab, page_form

__all__ = ["EndpointDialog", "demo_scenarios"]


def demo_scenarios() -> dict[str, str]:
    """The demo server's scenarios (name -> description), or ``{}`` without the demo package."""
    try:
        from streamscope.demo.scenarios import SCENARIOS
    except ImportError:  # pragma: no cover - the demo ships with the app
        return {}
    return {name: s.description for name, s in SCENARIOS.items()}


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
        self.probe = EndpointProbe(demo_base_url, client_factory)
        self.probe.tls_for = self._tls_for
        self._scenarios = demo_scenarios()
        self.setWindowTitle(f"Endpoint — {self._original.name}")
        self.setMinimumWidth(640)

        self.tabs = QTabWidget(self)
        self.tabs.addTab(self._build_connection_tab(), "Connection")
        self.request_tab = RequestTab()
        self.tabs.addTab(self.request_tab, "Request")
        self.network_tab = NetworkTab()
        self.tabs.addTab(self.network_tab, "Network")

        self.tls_warning = QLabel("⚠ TLS verification is OFF — certificates are not checked")
        set_text_colour(self.tls_warning, BAD, "font-weight: bold;")
        self.test_button = QPushButton("Test connection")
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.test_button.clicked.connect(self._on_test_button_clicked)
        self.network_tab.tls_check.toggled.connect(self._on_tls_check_toggled)

        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop)
        test_row.addWidget(self.test_result, 1)
        self.problem = QLabel()
        set_text_colour(self.problem, BAD)
        self.problem.setWordWrap(True)
        # Always there, a line high at least: a problem coming or going moves nothing above.
        self.problem.setMinimumHeight(self.problem.fontMetrics().lineSpacing())
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
            QTimer.singleShot(0, self, lambda: self.probe.spawn(self._fetch_models()))

    # --- building ----------------------------------------------------------------------------

    def _build_connection_tab(self) -> QWidget:
        page = QWidget()
        form = page_form(page)
        self.preset_combo = QComboBox()
        for preset in PRESETS.values():
            self.preset_combo.addItem(preset.label, preset.key)
        self.preset_note = QLabel()
        set_text_colour(self.preset_note, NOTE)
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

        form.addRow("Preset", self.preset_combo)
        form.addRow("", self.preset_note)
        form.addRow("Name", self.name_edit)
        form.addRow("Base URL", self.base_url_edit)
        form.addRow("Dialect", self.dialect_combo)
        form.addRow("Model", model_row)
        form.addRow("", self.model_note)
        self.key_fields = KeyFields(form, self._secrets, self._is_demo, self)

        self.preset_combo.activated.connect(self._on_preset_activated)
        self.fetch_button.clicked.connect(self._on_fetch_button_clicked)
        self.model_combo.currentTextChanged.connect(self._update_model_note)
        return page

    # --- loading and reading the fields ---------------------------------------------------

    def _load(self, ep: Endpoint) -> None:
        index = self.preset_combo.findData(ep.preset)
        self.preset_combo.setCurrentIndex(index if index >= 0 else self.preset_combo.count() - 1)
        self.name_edit.setText(ep.name)
        self.base_url_edit.setText(ep.base_url)
        self.dialect_combo.setCurrentText(ep.dialect)
        self._set_models([ep.model] if ep.model else [], ep.model)
        self.key_fields.load(ep)
        self.network_tab.load(ep, self._secrets)
        self.request_tab.load(ep)
        self._on_tls_check_toggled(ep.tls_verify)
        self._apply_preset_mode()
        self.key_fields.update_rows()

    def _fields(self, *, with_secrets: bool) -> Endpoint:
        """The endpoint the fields describe; secret header values only ``with_secrets``."""
        ep = replace(
            self._original,
            name=self.name_edit.text().strip() or self.preset_combo.currentText(),
            preset=self.preset_combo.currentData(),
            base_url=self.base_url_edit.text().strip(),
            dialect=self.dialect_combo.currentText(),
            model=self.model_combo.currentText().strip(),
            key_source=self.key_fields.source(),
            api_key_env=self.key_fields.env_edit.text().strip(),
        )
        return self.request_tab.edited(self.network_tab.edited(ep, with_secrets=with_secrets))

    def endpoint(self) -> Endpoint:
        """The edited endpoint. It holds no key and no secret header value."""
        return self._fields(with_secrets=False)

    # --- presets, TLS ----------------------------------------------------------------------

    def _on_preset_activated(self, index: int) -> None:
        preset = PRESETS[self.preset_combo.itemData(index)]
        old_name = self.name_edit.text().strip()
        if not old_name or old_name in {p.label for p in PRESETS.values()}:
            self.name_edit.setText(preset.label)
        self.base_url_edit.setText(preset.base_url)
        self.dialect_combo.setCurrentText(preset.dialect)
        self._set_models([preset.model] if preset.model else [], preset.model)
        self.key_fields.set_source(preset.key_source, preset.api_key_env)
        self.test_result.clear()
        self._apply_preset_mode()
        self.key_fields.update_rows()
        self._validate()
        if self._is_demo() and self.probe.demo_base_url is not None:
            self.probe.spawn(self._fetch_models())

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
        self.key_fields.set_enabled(not demo)
        self.network_tab.set_demo(demo)
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

    def _on_tls_check_toggled(self, verify: bool) -> None:
        self.tls_warning.setVisible(not verify)

    # --- validation ---------------------------------------------------------------------------

    def _wire_validation(self) -> None:
        self.request_tab.extra_body_edit.textChanged.connect(self._validate)
        self.base_url_edit.textChanged.connect(self._validate)
        self.name_edit.textChanged.connect(self._validate)
        self.key_fields.source_combo.currentIndexChanged.connect(self._validate)
        self.key_fields.env_edit.textChanged.connect(self._validate)
        net = self.network_tab
        net.proxy_combo.currentIndexChanged.connect(self._validate)
        net.proxy_host_edit.textChanged.connect(self._validate)
        net.no_proxy_edit.textChanged.connect(self._validate)
        net.cert_edit.textChanged.connect(self._validate)
        net.key_file_edit.textChanged.connect(self._validate)

    def problems(self) -> list[str]:
        """What stops OK (empty when the fields are acceptable)."""
        found: list[str] = []
        if (problem := self.request_tab.extra_body_problem()) is not None:
            found.append(f"Extra body: {problem}")
        url = self.base_url_edit.text().strip()
        if not self._is_demo():
            if not url:
                found.append("Base URL is required")
            elif not url.startswith(("http://", "https://")):
                found.append("Base URL must start with http:// or https://")
        if (problem := self.key_fields.problem()) is not None:
            found.append(problem)
        found.extend(self.network_tab.problems())
        return found

    def _validate(self) -> None:
        found = self.problems()
        self.request_tab.show_extra_body_status()
        self.problem.setText(" · ".join(found))
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(not found)

    # --- fetch models, test connection ---------------------------------------------------

    def pending(self) -> set[asyncio.Task[None]]:
        """The dialog's running tasks (tests await them)."""
        return self.probe.pending()

    def _on_fetch_button_clicked(self) -> None:
        self.probe.spawn(self._fetch_models())

    async def _fetch_models(self) -> None:
        ep = self._fields(with_secrets=True)
        if not self.probe.reachable(ep):
            self._show_model_status("The demo server is not running: showing its built-in list.")
            return
        self.fetch_button.setEnabled(False)
        self.fetch_button.setText("Fetching…")
        try:
            models = await self.probe.models(ep, self.key_fields.typed_key())
        except ModelListError as exc:
            self._show_model_status(str(exc), BAD)
        else:
            current = self.model_combo.currentText()
            self._set_models(models, current or (models[0] if models else ""))
            if not self._is_demo():
                self._show_model_status(f"{len(models)} models from the server.", OK)
        finally:
            self.fetch_button.setEnabled(True)
            self.fetch_button.setText("Fetch models")

    def _show_model_status(self, text: str, style: str | None = None) -> None:
        self.model_note.setText(text)
        set_text_colour(self.model_note, style)
        self.model_note.setVisible(True)

    def _on_test_button_clicked(self) -> None:
        self.probe.spawn(self._test_connection())

    async def _test_connection(self) -> None:
        ep = self._fields(with_secrets=True)
        if not self.probe.reachable(ep):
            self._show_test_result(False, "The demo server is not running.")
            return
        self.test_button.setEnabled(False)
        set_text_colour(self.test_result, None)
        self.test_result.setText("Testing…")
        try:
            ok, message = await self.probe.test(ep, self.key_fields.typed_key())
        finally:
            self.test_button.setEnabled(True)
        self._show_test_result(ok, message)

    def _show_test_result(self, ok: bool, message: str) -> None:
        self.test_result.setText(("✓ " if ok else "✗ ") + message)
        set_text_colour(self.test_result, OK if ok else BAD)

    # --- closing -------------------------------------------------------------------------------

    def accept(self) -> None:
        if self.problems():
            self._validate()
            return
        edited = self._fields(with_secrets=True)
        self.key_fields.save(edited)
        self.network_tab.save_secrets(edited, self._secrets)
        super().accept()

    def _tls_for(self, ep: Endpoint) -> TLSOptions:
        """``ep``'s connection options with the typed proxy password (Test, Fetch)."""
        tls = ep.tls()
        if tls.proxy.explicit and tls.proxy.username:
            proxy = replace(tls.proxy, password=self.network_tab.proxy_password())
            return replace(tls, proxy=proxy)
        return tls

    def done(self, result: int) -> None:
        self.probe.cancel()
        super().done(result)
