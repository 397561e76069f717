"""The endpoint list dialog: add from a preset, duplicate, edit, delete, choose."""

from __future__ import annotations

import uuid
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.endpoint_store import EndpointSettings
from streamscope.core.net.endpoints import PRESETS, Endpoint, is_secret_header
from streamscope.core.net.secrets import SecretStore, header_account, proxy_account
from streamscope.ui.endpoint.endpoint_probe import ClientFactory, DemoBaseUrl
from streamscope.ui.endpoint.settings_dialog import EndpointDialog

__all__ = ["EndpointsDialog"]


class EndpointsDialog(QDialog):
    """The endpoint list: add (from a preset), duplicate, edit, delete, and pick the active one.

    ``settings()`` is the edited list. Keys of deleted endpoints are forgotten on OK.
    """

    def __init__(
        self,
        settings: EndpointSettings,
        *,
        secrets: SecretStore,
        demo_base_url: DemoBaseUrl | None = None,
        client_factory: ClientFactory | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Endpoints")
        self.setMinimumSize(520, 340)
        self._settings = settings
        self._initial = settings.endpoints
        self._secrets = secrets
        self._demo_base_url = demo_base_url
        self._client_factory = client_factory
        self.list = QListWidget()
        self.list.setSpacing(3)
        self.list.itemDoubleClicked.connect(lambda _item: self._on_edit_clicked())
        add = QPushButton("Add")
        menu = QMenu(add)
        for preset in PRESETS.values():
            action = menu.addAction(preset.label)
            action.triggered.connect(lambda _c=False, k=preset.key: self._on_add(k))
        add.setMenu(menu)
        self.edit_button = QPushButton("Edit…")
        self.duplicate_button = QPushButton("Duplicate")
        self.delete_button = QPushButton("Delete")
        self.use_button = QPushButton("Use this endpoint")
        self.edit_button.clicked.connect(self._on_edit_clicked)
        self.duplicate_button.clicked.connect(self._on_duplicate_clicked)
        self.delete_button.clicked.connect(self._on_delete_clicked)
        self.use_button.clicked.connect(self._on_use_clicked)
        side = QVBoxLayout()
        for button in (add, self.edit_button, self.duplicate_button, self.delete_button):
            side.addWidget(button)
        side.addStretch(1)
        side.addWidget(self.use_button)
        row = QHBoxLayout()
        row.addWidget(self.list, 1)
        row.addLayout(side)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self._refill(settings.selected_id)

    def settings(self) -> EndpointSettings:
        return self._settings

    def _refill(self, current_id: str) -> None:
        self.list.clear()
        for ep in self._settings.endpoints:
            active = " (active)" if ep.id == self._settings.selected_id else ""
            item = QListWidgetItem(f"{ep.name}{active}\n    {ep.dialect} · {ep.model or '—'}")
            item.setData(Qt.ItemDataRole.UserRole, ep.id)
            self.list.addItem(item)
            if ep.id == current_id:
                self.list.setCurrentItem(item)
        self.delete_button.setEnabled(len(self._settings.endpoints) > 1)

    def _current(self) -> Endpoint | None:
        item = self.list.currentItem()
        return None if item is None else self._settings.get(item.data(Qt.ItemDataRole.UserRole))

    def _edit(self, ep: Endpoint) -> Endpoint | None:
        dialog = EndpointDialog(
            ep,
            secrets=self._secrets,
            demo_base_url=self._demo_base_url,
            client_factory=self._client_factory,
            parent=self,
        )
        return dialog.endpoint() if dialog.exec() == QDialog.DialogCode.Accepted else None

    def _on_add(self, preset: str) -> None:
        edited = self._edit(PRESETS[preset].endpoint())
        if edited is not None:
            self._settings = self._settings.with_endpoint(edited)
            self._refill(edited.id)

    def _on_edit_clicked(self) -> None:
        ep = self._current()
        if ep is not None and (edited := self._edit(ep)) is not None:
            self._settings = self._settings.with_endpoint(edited)
            self._refill(edited.id)

    def _on_duplicate_clicked(self) -> None:
        ep = self._current()
        if ep is None:
            return
        copy = replace(ep, id=uuid.uuid4().hex, name=f"{ep.name} (copy)")
        accounts = [(ep.id, copy.id), (proxy_account(ep.id), proxy_account(copy.id))] + [
            (header_account(ep.id, h), header_account(copy.id, h))
            for h in ep.extra_headers
            if is_secret_header(h)
        ]
        for source, target in accounts:
            if secret := self._secrets.get(source):
                self._secrets.set(target, secret)
        self._settings = self._settings.with_endpoint(copy)
        self._refill(copy.id)

    def _on_delete_clicked(self) -> None:
        ep = self._current()
        if ep is not None and len(self._settings.endpoints) > 1:
            self._settings = self._settings.without(ep.id)
            self._refill(self._settings.selected_id)

    def _on_use_clicked(self) -> None:
        ep = self._current()
        if ep is not None:
            self._settings = self._settings.select(ep.id)
            self._refill(ep.id)

    def accept(self) -> None:
        kept = {e.id for e in self._settings.endpoints}
        for ep in self._initial:
            if ep.id not in kept:
                self._secrets.delete_endpoint(ep)
        super().accept()
