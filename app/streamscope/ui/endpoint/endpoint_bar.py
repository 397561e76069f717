"""The endpoint bar on top of the window: the endpoint and the model to talk to (for the
built-in demo, the model menu is the scenario menu), a pager through regenerated answers, and
"Endpoint settings…".

It keeps the endpoint list (saved on every change), opens the endpoint dialogs, and resolves
an endpoint's key and headers from the :class:`SecretStore` (opened on first use). The model
chosen in the bar is the endpoint's model from then on: each endpoint remembers the last one
used, across switches and restarts.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QSizePolicy, QToolBar, QWidget

from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import Endpoint
from streamscope.demo.scenarios import SCENARIOS
from streamscope.ui.base.elided_label import ElidedLabel

if TYPE_CHECKING:
    from collections.abc import Callable

    from streamscope.core.net.options import TLSOptions
    from streamscope.core.net.secrets import SecretStore
    from streamscope.ui.endpoint.demo_service import DemoService

__all__ = ["EndpointBar"]


class EndpointBar(QToolBar):
    endpointChanged = Signal()
    """The current endpoint or its model changed."""
    alternativeStepped = Signal(int)
    """-1 / +1: show the previous / next regenerated answer."""

    def __init__(self, demo: DemoService, parent: QWidget | None = None) -> None:
        super().__init__("Endpoint", parent)
        self._demo = demo
        self._store = EndpointStore()
        self.endpoints: EndpointSettings = self._store.load()
        self._secrets: SecretStore | None = None
        self.setObjectName("endpoint_toolbar")
        self.setMovable(False)
        self.setIconSize(QSize(16, 16))
        self.addWidget(QLabel(" Endpoint ", self))
        self.endpoint_combo = QComboBox(self)
        self.endpoint_combo.setMinimumContentsLength(16)
        self.addWidget(self.endpoint_combo)
        self.addWidget(QLabel("  Model ", self))
        self.model_combo = QComboBox(self)
        self.model_combo.setEditable(True)
        self.model_combo.setMinimumContentsLength(22)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.addWidget(self.model_combo)
        # The scenario's description: cut to the room left ("…", whole in its tooltip), so
        # a long one never pushes "Endpoint settings…" into the toolbar's overflow menu; in
        # the palette's placeholder colour by role, which follows a theme switch (a style
        # sheet's palette(…) is resolved once).
        self.model_note = ElidedLabel("", self)
        self.model_note.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.model_note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.model_note.setContentsMargins(8, 0, 0, 0)
        self.addWidget(self.model_note)
        spacer = QWidget(self)
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.addWidget(spacer)
        self.alt_label = QLabel(self)
        self.prev_alt = QPushButton("◀", self)
        self.next_alt = QPushButton("▶", self)
        for button in (self.prev_alt, self.next_alt):
            button.setFixedWidth(28)
            button.setToolTip("Switch between regenerated answers")
        self.prev_alt.setAccessibleName("Previous answer")
        self.next_alt.setAccessibleName("Next answer")
        self.prev_alt.clicked.connect(lambda: self.alternativeStepped.emit(-1))
        self.next_alt.clicked.connect(lambda: self.alternativeStepped.emit(+1))
        self._alt_actions = [
            self.addWidget(w) for w in (self.prev_alt, self.alt_label, self.next_alt)
        ]
        self.settings_button = QPushButton("Endpoint settings…", self)
        self.settings_button.clicked.connect(self.edit_endpoint)
        self.settings_action = self.addWidget(self.settings_button)
        self.fill_endpoints()
        self.endpoint_combo.currentIndexChanged.connect(
            self._on_endpoint_combo_current_index_changed
        )
        self.model_combo.currentTextChanged.connect(self._on_model_combo_current_text_changed)

    def current_endpoint(self) -> Endpoint:
        """The chosen endpoint, with the model in the model box."""
        return self.endpoints.selected

    def secrets(self) -> SecretStore:
        if self._secrets is None:
            from streamscope.core.net.secrets import SecretStore

            self._secrets = SecretStore()
        return self._secrets

    def api_key(self, endpoint: Endpoint) -> str | None:
        from streamscope.core.net.secrets import resolve_api_key

        return resolve_api_key(endpoint, self.secrets())

    def headers(self, endpoint: Endpoint) -> dict[str, str]:
        from streamscope.core.net.secrets import resolve_headers

        return resolve_headers(endpoint, self.secrets())

    def tls(self, endpoint: Endpoint) -> TLSOptions:
        """The endpoint's proxy and TLS options, its proxy password from the secret store."""
        from streamscope.core.net.secrets import resolve_tls

        return resolve_tls(endpoint, self.secrets())

    def set_endpoints(self, endpoints: EndpointSettings) -> None:
        """Use (and save) this endpoint list."""
        self.endpoints = endpoints
        self._store.save(self.endpoints)
        self.fill_endpoints()

    def fill_endpoints(self) -> None:
        self.endpoint_combo.blockSignals(True)
        self.endpoint_combo.clear()
        for ep in self.endpoints.endpoints:
            self.endpoint_combo.addItem(ep.name, ep.id)
        index = self.endpoint_combo.findData(self.endpoints.selected_id)
        self.endpoint_combo.setCurrentIndex(max(0, index))
        self.endpoint_combo.blockSignals(False)
        self._fill_models()

    def show_alternatives(self, chosen: int, count: int) -> None:
        """The pager for answer ``chosen`` of ``count`` (hidden unless there are two)."""
        for action in self._alt_actions:
            action.setVisible(count > 1)
        self.alt_label.setText(f" answer {chosen + 1}/{count} ")
        self.prev_alt.setEnabled(chosen > 0)
        self.next_alt.setEnabled(chosen < count - 1)

    def edit_endpoint(self) -> None:
        """The endpoint dialog for the current endpoint."""
        from streamscope.ui.endpoint.settings_dialog import EndpointDialog

        dialog = EndpointDialog(
            self.current_endpoint(),
            secrets=self.secrets(),
            demo_base_url=self._demo_base_url(),
            parent=self.window(),
        )
        if dialog.exec():
            self.set_endpoints(self.endpoints.with_endpoint(dialog.endpoint()))

    def manage_endpoints(self) -> None:
        """The endpoint list dialog."""
        from streamscope.ui.endpoint.endpoints_dialog import EndpointsDialog

        dialog = EndpointsDialog(
            self.endpoints,
            secrets=self.secrets(),
            demo_base_url=self._demo_base_url(),
            parent=self.window(),
        )
        if dialog.exec():
            self.set_endpoints(dialog.settings())

    def _demo_base_url(self) -> Callable[[str], str] | None:
        return self._demo.base_url if self._demo.running else None

    def _fill_models(self) -> None:
        ep = self.endpoints.selected
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        if ep.is_demo:
            for name, scenario in SCENARIOS.items():
                self.model_combo.addItem(name)
                self.model_combo.setItemData(
                    self.model_combo.count() - 1, scenario.description, Qt.ItemDataRole.ToolTipRole
                )
        if ep.model and self.model_combo.findText(ep.model) < 0:
            self.model_combo.addItem(ep.model)
        self.model_combo.setCurrentText(ep.model)
        self.model_combo.blockSignals(False)
        self._on_model_combo_current_text_changed(self.model_combo.currentText())

    def _on_endpoint_combo_current_index_changed(self, index: int) -> None:
        endpoint_id = self.endpoint_combo.itemData(index)
        if endpoint_id:
            self.endpoints = self.endpoints.select(str(endpoint_id))
            self._store.save(self.endpoints)
            self._fill_models()

    def _on_model_combo_current_text_changed(self, text: str) -> None:
        ep = self.endpoints.selected
        model = text.strip()
        if model and model != ep.model:  # remembered for this endpoint (a small JSON file)
            ep = replace(ep, model=model)
            self.endpoints = self.endpoints.with_endpoint(ep)
            self._store.save(self.endpoints)
        note = ""
        if ep.is_demo:
            scenario = SCENARIOS.get(text)
            note = scenario.description if scenario else "unknown scenario"
        self.model_note.setText(note)
        self.endpointChanged.emit()
