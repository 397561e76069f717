"""The endpoint dialog's Network tab (extra headers, timeouts, the line cap, TLS, client
certificate, proxy) and what the dialog's tabs share; the Request tab is
:mod:`streamscope.ui.endpoint.endpoint_request_tab`. Each tab loads an :class:`Endpoint` and
gives it back edited."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.endpoints import LINE_CAP_RANGE, Endpoint, is_secret_header
from streamscope.core.net.options import PROXY_MODES, ProxyMode
from streamscope.core.net.secrets import SecretStore, header_account, proxy_account
from streamscope.ui.base.theme import set_text_colour

__all__ = ["BAD", "NOTE", "OK", "PROXY_LABELS", "NetworkTab", "page_form"]

OK = "ok_window"
BAD = "error_window"
NOTE = "cancelled_window"
"""Colour names (streamscope.ui.base.theme.TEXT) of a good / bad / quiet note on a dialog."""

PROXY_LABELS: dict[ProxyMode, str] = {
    "system": "System (OS settings, HTTPS_PROXY / ALL_PROXY / NO_PROXY)",
    "none": "None (direct)",
    "http": "HTTP",
    "https": "HTTPS",
    "socks5": "SOCKS5",
}
PROXY_DEFAULT_PORTS: dict[str, int] = {"http": 8080, "https": 443, "socks5": 1080}


def page_form(page: QWidget) -> QFormLayout:
    """A tab page's layout: a form at the top, free space below it."""
    outer = QVBoxLayout(page)
    form = QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    outer.addLayout(form)
    outer.addStretch(1)
    return form


def _line_cap(old: int, kib: int) -> int:
    """The cap in bytes for ``kib`` shown: the old value when it was not changed (a cap
    that is no whole number of KiB, set in the file, survives the dialog)."""
    return old if old // 1024 == kib else kib * 1024


class NetworkTab(QWidget):
    """Extra headers (secret ones are kept with the key), timeouts, the line cap, TLS
    verification, a CA bundle, a client certificate and key (mutual TLS) and the proxy
    (its password is kept with the key)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = page_form(self)
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
        add.clicked.connect(lambda: self.add_header_row("", ""))
        remove.clicked.connect(self._on_remove_clicked)
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
        set_text_colour(note, NOTE)
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
        self.line_cap_spin = QSpinBox()
        self.line_cap_spin.setRange(LINE_CAP_RANGE[0] // 1024, LINE_CAP_RANGE[1] // 1024)
        self.line_cap_spin.setSuffix(" KiB")
        self.line_cap_spin.setMaximumWidth(150)
        self.line_cap_spin.setToolTip(
            "The longest line (SSE or NDJSON) the stream may send. A longer one ends the turn"
            " as a protocol error; Frames shows its first 4 KB as an “oversized” frame."
        )
        self.tls_check = QCheckBox("Verify TLS certificates")
        self.tls_inline_warning = QLabel("TLS verification is OFF")
        set_text_colour(self.tls_inline_warning, BAD, "font-weight: bold;")
        tls_row = QHBoxLayout()
        tls_row.addWidget(self.tls_check)
        tls_row.addWidget(self.tls_inline_warning)
        tls_row.addStretch(1)
        self.ca_edit = QLineEdit()
        self.ca_edit.setPlaceholderText("optional PEM file for a self-signed server")
        self.cert_edit = QLineEdit()
        self.cert_edit.setPlaceholderText("optional PEM file, for servers that require one")
        self.key_file_edit = QLineEdit()
        self.key_file_edit.setPlaceholderText("PEM key file, unless the certificate file has it")
        ca_row = self._file_row(self.ca_edit, "CA bundle")
        cert_row = self._file_row(self.cert_edit, "Client certificate")
        key_row = self._file_row(self.key_file_edit, "Client key")
        self.tls_check.toggled.connect(self._on_tls_check_toggled)

        self.proxy_combo = QComboBox()
        for mode in PROXY_MODES:
            self.proxy_combo.addItem(PROXY_LABELS[mode], mode)
        self.proxy_host_edit = QLineEdit()
        self.proxy_host_edit.setPlaceholderText("proxy.example.com")
        self.proxy_port_spin = QSpinBox()
        self.proxy_port_spin.setRange(1, 65535)
        self.proxy_port_spin.setValue(8080)
        self.proxy_port_spin.setMaximumWidth(100)
        proxy_where = QHBoxLayout()
        proxy_where.addWidget(self.proxy_host_edit, 1)
        proxy_where.addWidget(QLabel("Port"))
        proxy_where.addWidget(self.proxy_port_spin)
        self.proxy_user_edit = QLineEdit()
        self.proxy_user_edit.setPlaceholderText("optional")
        self.proxy_password_edit = QLineEdit()
        self.proxy_password_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.proxy_password_edit.setPlaceholderText("kept with the key, not in a file")
        proxy_auth = QHBoxLayout()
        proxy_auth.addWidget(self.proxy_user_edit, 1)
        proxy_auth.addWidget(QLabel("Password"))
        proxy_auth.addWidget(self.proxy_password_edit, 1)
        self.no_proxy_edit = QLineEdit()
        self.no_proxy_edit.setPlaceholderText("localhost, 127.0.0.1, .internal.example")
        self.no_proxy_edit.setToolTip(
            "Hosts reached without the proxy, comma-separated: example.com (and its"
            " subdomains), .example.com (only subdomains), an address, host:port, or *"
        )
        self.proxy_note = SteadyNote(list(_PROXY_NOTES.values()), NOTE)
        self._proxy_widgets = (
            self.proxy_host_edit,
            self.proxy_port_spin,
            self.proxy_user_edit,
            self.proxy_password_edit,
            self.no_proxy_edit,
        )
        self._demo = False
        self.proxy_combo.currentIndexChanged.connect(self._on_proxy_mode_changed)

        form.addRow("Extra headers", headers_box)
        form.addRow("Connect timeout", self.connect_spin)
        form.addRow("First byte timeout", self.first_byte_spin)
        form.addRow("Idle timeout", self.idle_spin)
        form.addRow("Line cap", self.line_cap_spin)
        form.addRow("TLS", tls_row)
        form.addRow("CA bundle", ca_row)
        form.addRow("Client certificate", cert_row)
        form.addRow("Client key", key_row)
        form.addRow("Proxy", self.proxy_combo)
        form.addRow("Proxy host", proxy_where)
        form.addRow("Proxy username", proxy_auth)
        form.addRow("No proxy for", self.no_proxy_edit)
        form.addRow("", self.proxy_note)
        self._on_proxy_mode_changed()

    def load(self, ep: Endpoint, secrets: SecretStore) -> None:
        """Show ``ep``'s settings; secret header values come from ``secrets``."""
        self.headers_table.setRowCount(0)
        for name, value in ep.extra_headers.items():
            if is_secret_header(name):
                value = secrets.get(header_account(ep.id, name)) or value
            self.add_header_row(name, value)
        self.connect_spin.setValue(ep.connect_timeout)
        self.first_byte_spin.setValue(ep.first_byte_timeout)
        self.idle_spin.setValue(ep.idle_timeout)
        self.line_cap_spin.setValue(ep.max_line_bytes // 1024)
        self.tls_check.setChecked(ep.tls_verify)
        self.ca_edit.setText(ep.ca_bundle or "")
        self.cert_edit.setText(ep.client_cert or "")
        self.key_file_edit.setText(ep.client_key or "")
        self._on_tls_check_toggled(ep.tls_verify)
        index = self.proxy_combo.findData(ep.proxy_mode)
        self.proxy_combo.setCurrentIndex(max(index, 0))
        self.proxy_host_edit.setText(ep.proxy_host)
        self.proxy_port_spin.setValue(ep.proxy_port or PROXY_DEFAULT_PORTS.get(ep.proxy_mode, 8080))
        self.proxy_user_edit.setText(ep.proxy_username)
        self.proxy_password_edit.setText(secrets.get(proxy_account(ep.id)) or "")
        self.no_proxy_edit.setText(", ".join(ep.no_proxy))
        self.set_demo(ep.is_demo)

    def set_demo(self, demo: bool) -> None:
        """The Built-in demo always goes direct: its proxy fields are disabled."""
        self._demo = demo
        self.proxy_combo.setEnabled(not demo)
        self._on_proxy_mode_changed()

    def proxy_mode(self) -> ProxyMode:
        mode: ProxyMode = self.proxy_combo.currentData()
        return mode

    def proxy_password(self) -> str:
        """The typed proxy password (saved to the secret store on OK, never to a file)."""
        if self.proxy_mode() in ("system", "none") or not self.proxy_user_edit.text().strip():
            return ""
        return self.proxy_password_edit.text()

    def save_secrets(self, ep: Endpoint, secrets: SecretStore) -> None:
        """Keep the proxy password in ``secrets`` (an empty one deletes it)."""
        secrets.set(proxy_account(ep.id), self.proxy_password())

    def problems(self) -> list[str]:
        """What stops OK on this tab (empty when the fields are acceptable)."""
        found: list[str] = []
        if self.proxy_mode() not in ("system", "none") and not self.proxy_host_edit.text().strip():
            found.append("Proxy host is required")
        for host in _hosts(self.no_proxy_edit.text()):
            if "/" in host:
                found.append(f"No proxy for: {host!r} is not a host name")
        if self.key_file_edit.text().strip() and not self.cert_edit.text().strip():
            found.append("Client key needs a client certificate")
        return found

    def headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for row in range(self.headers_table.rowCount()):
            name_item = self.headers_table.item(row, 0)
            value_item = self.headers_table.item(row, 1)
            name = name_item.text().strip() if name_item else ""
            if name:
                headers[name] = value_item.text() if value_item else ""
        return headers

    def edited(self, ep: Endpoint, *, with_secrets: bool) -> Endpoint:
        """``ep`` with this tab's fields; secret header values only ``with_secrets``."""
        headers = self.headers()
        if not with_secrets:
            headers = {k: ("" if is_secret_header(k) else v) for k, v in headers.items()}
        explicit = self.proxy_mode() not in ("system", "none")
        return replace(
            ep,
            extra_headers=headers,
            connect_timeout=self.connect_spin.value(),
            first_byte_timeout=self.first_byte_spin.value(),
            idle_timeout=self.idle_spin.value(),
            max_line_bytes=_line_cap(ep.max_line_bytes, self.line_cap_spin.value()),
            tls_verify=self.tls_check.isChecked(),
            ca_bundle=self.ca_edit.text().strip() or None,
            client_cert=self.cert_edit.text().strip() or None,
            client_key=self.key_file_edit.text().strip() or None,
            proxy_mode=self.proxy_mode(),
            proxy_host=self.proxy_host_edit.text().strip(),
            proxy_port=self.proxy_port_spin.value() if explicit else ep.proxy_port,
            proxy_username=self.proxy_user_edit.text().strip(),
            no_proxy=tuple(_hosts(self.no_proxy_edit.text())),
        )

    def add_header_row(self, name: str, value: str) -> None:
        row = self.headers_table.rowCount()
        self.headers_table.insertRow(row)
        self.headers_table.setItem(row, 0, QTableWidgetItem(name))
        self.headers_table.setItem(row, 1, QTableWidgetItem(value))

    def _on_remove_clicked(self) -> None:
        rows = sorted({i.row() for i in self.headers_table.selectedIndexes()}, reverse=True)
        if not rows and self.headers_table.rowCount():
            rows = [self.headers_table.rowCount() - 1]
        for row in rows:
            self.headers_table.removeRow(row)

    def _on_tls_check_toggled(self, verify: bool) -> None:
        self.tls_inline_warning.setVisible(not verify)

    def _file_row(self, edit: QLineEdit, title: str) -> QHBoxLayout:
        browse = QPushButton("Browse…")
        browse.setAccessibleName(f"Browse for the {title.lower()}")
        browse.clicked.connect(lambda: self._browse(edit, title))
        row = QHBoxLayout()
        row.addWidget(edit, 1)
        row.addWidget(browse)
        return row

    def _browse(self, edit: QLineEdit, title: str) -> None:
        kinds = (
            "Keys (*.pem *.key)" if title == "Client key" else "Certificates (*.pem *.crt *.cer)"
        )
        path, _ = QFileDialog.getOpenFileName(self, title, "", f"{kinds};;All files (*)")
        if path:
            edit.setText(path)

    def _on_proxy_mode_changed(self) -> None:
        mode = self.proxy_mode()
        explicit = mode not in ("system", "none") and not self._demo
        for widget in self._proxy_widgets:
            widget.setEnabled(explicit)
        key = "demo" if self._demo else mode if mode in ("system", "none") else "explicit"
        self.proxy_note.show_text(_PROXY_NOTES[key])


_PROXY_NOTES = {
    "demo": "The Built-in demo runs on this machine and is always reached directly.",
    "system": (
        "Uses the system's proxy settings and the HTTPS_PROXY, HTTP_PROXY, ALL_PROXY"
        " and NO_PROXY environment variables."
    ),
    "none": "Connects directly, whatever the system or the environment says.",
    "explicit": "Every request goes through this proxy, except to the hosts listed.",
}


class SteadyNote(QStackedWidget):
    """A wrapped note saying one of a few texts, always as tall as the tallest of them (a
    stacked layout's height for a width is its tallest page's): picking another proxy type
    moves nothing in the form."""

    def __init__(self, texts: list[str], colour: str) -> None:
        super().__init__()
        self._texts = texts
        for text in texts:
            label = QLabel(text)
            label.setWordWrap(True)
            set_text_colour(label, colour)
            self.addWidget(label)

    def show_text(self, text: str) -> None:
        self.setCurrentIndex(self._texts.index(text))

    def text(self) -> str:
        return self._texts[self.currentIndex()]


def _hosts(text: str) -> list[str]:
    """The entries of a comma- (or whitespace-) separated host list."""
    return [h for h in text.replace(",", " ").split() if h]
