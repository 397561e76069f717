"""The endpoint dialog's key fields: where the API key comes from (the system keyring, an
environment variable, none), the key itself behind a Show toggle, and a line saying where it
is kept. The key and secret header values go to the :class:`SecretStore` on OK, never into
the :class:`Endpoint`."""

from __future__ import annotations

import os
from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QToolButton

from streamscope.core.net.endpoints import Endpoint, KeySource, is_secret_header
from streamscope.core.net.secrets import SecretStore, header_account
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.endpoint.endpoint_tabs import OK

__all__ = ["KeyFields"]

_WARN = "warning_window"
_KEY_SOURCES: tuple[tuple[KeySource, str], ...] = (
    ("keyring", "Stored key (system keyring)"),
    ("env", "Environment variable"),
    ("none", "None (no key sent)"),
)


class KeyFields(QObject):
    """The key rows at the end of ``form``; ``is_demo`` says whether the Built-in demo (which
    needs no key) is chosen."""

    def __init__(
        self,
        form: QFormLayout,
        secrets: SecretStore,
        is_demo: Callable[[], bool],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._form = form
        self._secrets = secrets
        self._is_demo = is_demo
        self.source_combo = QComboBox()
        for source, label in _KEY_SOURCES:
            self.source_combo.addItem(label, source)
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
        form.addRow("Key source", self.source_combo)
        form.addRow("API key", key_row)
        form.addRow("Variable", self.env_edit)
        form.addRow("", self.key_location)
        self.source_combo.currentIndexChanged.connect(self.update_rows)
        self.env_edit.textChanged.connect(self.update_location)

    def set_source(self, source: KeySource, env: str) -> None:
        self.source_combo.setCurrentIndex(self.source_combo.findData(source))
        self.env_edit.setText(env)

    def load(self, ep: Endpoint) -> None:
        self.set_source(ep.key_source, ep.api_key_env)
        self.key_edit.setText(self._secrets.get(ep.id) or "")

    def source(self) -> KeySource:
        source: KeySource = self.source_combo.currentData()
        return source

    def typed_key(self) -> str | None:
        """The key to use for Fetch / Test with the fields as they are now."""
        source = self.source()
        if source == "keyring":
            return self.key_edit.text().strip() or None
        if source == "env" and (name := self.env_edit.text().strip()):
            return os.environ.get(name, "").strip() or None
        return None

    def problem(self) -> str | None:
        """What stops OK here (``None``: nothing)."""
        if self.source() == "env" and not self.env_edit.text().strip():
            return "Name the environment variable that holds the key"
        return None

    def set_enabled(self, enabled: bool) -> None:
        for widget in (self.source_combo, self.key_edit, self.show_key, self.env_edit):
            widget.setEnabled(enabled)

    def update_rows(self) -> None:
        """Show the rows the key source uses, and where the key is kept."""
        source = self.source()
        self._form.setRowVisible(self.env_edit, source == "env")
        self._form.setRowVisible(self._key_row, source == "keyring")
        self.update_location()

    def update_location(self) -> None:
        source = self.source()
        if self._is_demo():
            text, style = "The built-in demo needs no key.", None
        elif source == "keyring":
            if self._secrets.persistent:
                text = f"Saved in the {self._secrets.location} on OK, never in a file."
                style = None
            else:
                text, style = (self._secrets.message or ""), _WARN
        elif source == "env":
            name = self.env_edit.text().strip()
            if not name:
                text, style = "Name the environment variable that holds the key.", _WARN
            elif os.environ.get(name):
                text, style = f"Read from ${name} when sending (it is set).", OK
            else:
                text, style = f"Read from ${name} when sending — it is not set now.", _WARN
        else:
            text, style = "No key is sent.", None
        self.key_location.setText(text)
        set_text_colour(self.key_location, style)

    def save(self, ep: Endpoint) -> None:
        """Keep the typed key and ``ep``'s secret header values in the secret store."""
        if ep.key_source == "keyring" and not ep.is_demo:
            self._secrets.set(ep.id, self.key_edit.text().strip())
        for name, value in ep.extra_headers.items():
            if is_secret_header(name):
                self._secrets.set(header_account(ep.id, name), value)

    def _on_show_key_toggled(self, shown: bool) -> None:
        mode = QLineEdit.EchoMode.Normal if shown else QLineEdit.EchoMode.Password
        self.key_edit.setEchoMode(mode)
        self.show_key.setText("Hide" if shown else "Show")
