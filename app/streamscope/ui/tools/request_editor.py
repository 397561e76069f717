"""Edit and resend: a request (one that was sent, or a raw-mode one) in an editor.

URL, method, the headers as a table and the JSON body (validated as you type), and the
dialect (``auto`` detects it from the frames). Secret header values are shown masked
(``Bearer ***``): the real value is put back at send time from the original request (or
the keyring) unless you type a new one, which is then moved to the keyring. ``Send`` emits
``sendRequested(RawRequest)``; the window's power tools run it as a new turn.
"""

from __future__ import annotations

import orjson
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.raw_request import RawRequest, RawRequestError, is_masked
from streamscope.core.wire.dialects import dialect_names
from streamscope.ui.base.theme import set_text_colour

__all__ = ["EditResendDialog", "body_error"]

METHODS = ("POST", "GET", "PUT", "PATCH", "DELETE")


def body_error(text: str) -> str | None:
    """Why ``text`` is not a JSON object body, or ``None`` when it is one."""
    if not text.strip():
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return f"invalid JSON: {exc}"
    if not isinstance(value, dict):
        return f"the body must be a JSON object, not a {type(value).__name__}"
    return None


class EditResendDialog(QDialog):
    """See the module docstring."""

    sendRequested = Signal(object)

    def __init__(
        self, raw: RawRequest, *, title: str = "Edit and resend", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(820, 640)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        self.method_combo = QComboBox(self)
        self.method_combo.setEditable(True)
        self.method_combo.addItems(METHODS)
        self.method_combo.setCurrentText(raw.method)
        self.url_edit = QLineEdit(raw.url, self)
        self.dialect_combo = QComboBox(self)
        self.dialect_combo.addItems(dialect_names(with_auto=True))
        self.dialect_combo.setCurrentText(raw.dialect)
        self.dialect_combo.setToolTip("auto: the dialect is detected from the response frames")
        line = QHBoxLayout()
        line.addWidget(self.method_combo)
        line.addWidget(self.url_edit, 1)
        form = QFormLayout()
        form.addRow("Request", line)
        form.addRow("Dialect", self.dialect_combo)

        self.headers_table = QTableWidget(0, 2, self)
        self.headers_table.setHorizontalHeaderLabels(["Header", "Value"])
        self.headers_table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.ResizeToContents
        )
        self.headers_table.horizontalHeader().setStretchLastSection(True)
        self.headers_table.verticalHeader().setVisible(False)
        self.headers_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        for name, value in raw.headers:
            self.add_header(name, value)
        add = QPushButton("+ Header", self)
        add.clicked.connect(lambda: self.add_header("", ""))
        remove = QPushButton("− Remove", self)
        remove.clicked.connect(self._on_remove_clicked)
        header_buttons = QHBoxLayout()
        header_buttons.addWidget(add)
        header_buttons.addWidget(remove)
        header_buttons.addStretch(1)
        note = QLabel("Keys are shown as *** and put back when sending; type a new value to "
                      "replace one (it goes to the keyring).", self)  # fmt: skip
        note.setWordWrap(True)
        note.setStyleSheet("color: palette(placeholder-text);")
        headers_box = QWidget(self)
        hb = QVBoxLayout(headers_box)
        hb.setContentsMargins(0, 0, 0, 0)
        hb.addWidget(self.headers_table, 1)
        hb.addLayout(header_buttons)
        hb.addWidget(note)

        self.body_edit = QPlainTextEdit(self)
        self.body_edit.setFont(mono)
        self.body_edit.setPlainText(
            orjson.dumps(raw.body, option=orjson.OPT_INDENT_2).decode() if raw.body else ""
        )
        self.body_status = QLabel(self)
        self.body_edit.textChanged.connect(self._on_body_edit_textChanged)
        body_box = QWidget(self)
        bb = QVBoxLayout(body_box)
        bb.setContentsMargins(0, 0, 0, 0)
        bb.addWidget(QLabel("<b>Body</b> (JSON)", body_box))
        bb.addWidget(self.body_edit, 1)
        bb.addWidget(self.body_status)

        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(headers_box)
        split.addWidget(body_box)
        split.setStretchFactor(1, 2)

        self.buttons = QDialogButtonBox(self)
        self.send_button = self.buttons.addButton("Send", QDialogButtonBox.ButtonRole.AcceptRole)
        self.copy_button = self.buttons.addButton(
            "Copy as curl", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.send_button.clicked.connect(self.send)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        self.buttons.rejected.connect(self.reject)
        self.error_label = QLabel(self)
        set_text_colour(self.error_label, "error_window")
        self.error_label.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(split, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)
        self._on_body_edit_textChanged()

    # -- editing --------------------------------------------------------------------------

    def add_header(self, name: str, value: str) -> None:
        row = self.headers_table.rowCount()
        self.headers_table.insertRow(row)
        self.headers_table.setItem(row, 0, QTableWidgetItem(name))
        item = QTableWidgetItem(value)
        if is_masked(name, value):
            item.setToolTip("Kept in the keyring / the original request; put back when sending")
        self.headers_table.setItem(row, 1, item)

    def set_header(self, name: str, value: str) -> None:
        """Set (or add) header ``name`` (case-insensitive)."""
        for row in range(self.headers_table.rowCount()):
            item = self.headers_table.item(row, 0)
            if item is not None and item.text().strip().lower() == name.lower():
                self.headers_table.setItem(row, 1, QTableWidgetItem(value))
                return
        self.add_header(name, value)

    def headers(self) -> list[tuple[str, str]]:
        out = []
        for row in range(self.headers_table.rowCount()):
            name_item = self.headers_table.item(row, 0)
            value_item = self.headers_table.item(row, 1)
            name = name_item.text().strip() if name_item is not None else ""
            if name:
                out.append((name, value_item.text().strip() if value_item is not None else ""))
        return out

    def _on_remove_clicked(self) -> None:
        rows = sorted({i.row() for i in self.headers_table.selectedIndexes()}, reverse=True)
        for row in rows:
            self.headers_table.removeRow(row)

    def _on_body_edit_textChanged(self) -> None:
        error = body_error(self.body_edit.toPlainText())
        self.body_status.setText(f"✗ {error}" if error else "✓ valid JSON")
        set_text_colour(self.body_status, "error_window" if error else "ok_window")
        self.send_button.setEnabled(error is None)

    # -- result ---------------------------------------------------------------------------

    def request(self) -> RawRequest:
        """The request as edited; ``RawRequestError`` when the body or URL is unusable."""
        text = self.body_edit.toPlainText()
        error = body_error(text)
        if error:
            raise RawRequestError(error)
        url = self.url_edit.text().strip()
        if not url.lower().startswith(("http://", "https://")):
            raise RawRequestError("the URL must start with http:// or https://")
        body = orjson.loads(text) if text.strip() else {}
        method = self.method_combo.currentText().strip().upper() or "POST"
        return RawRequest(
            method, url, tuple(self.headers()), body, self.dialect_combo.currentText()
        )

    def send(self) -> None:
        try:
            raw = self.request()
        except RawRequestError as exc:
            self.error_label.setText(str(exc))
            return
        self.error_label.clear()
        self.sendRequested.emit(raw)
        self.accept()

    def _on_copy_clicked(self) -> None:
        try:
            QGuiApplication.clipboard().setText(self.request().curl())
        except RawRequestError as exc:
            self.error_label.setText(str(exc))
