"""Import curl…: paste a curl command line, see what it parses to, open it as a raw request.

Also watches the composer: pasting (or sending) text that starts with ``curl `` offers to
import it instead of sending it as a chat message (:class:`CurlPasteFilter`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.curl import CurlParseError, parse_curl
from streamscope.core.net.raw_request import RawRequestError, raw_from_curl

__all__ = ["CurlImportDialog", "CurlPasteFilter", "looks_like_curl"]


_CURL_START = re.compile(r"\s*(?:head -c \d+ <<'?\w+'? \| )?curl(?:\.exe)?[ \t]")
"""A curl command, or the here-document form Copy as curl writes for a long body."""


def looks_like_curl(text: str) -> bool:
    return _CURL_START.match(text) is not None


class CurlImportDialog(QDialog):
    """``importRequested(str)`` with the command when Import is pressed (it parsed)."""

    importRequested = Signal(str)

    def __init__(self, command: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import curl")
        self.resize(720, 420)
        self.command_edit = QPlainTextEdit(self)
        self.command_edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.command_edit.setPlaceholderText(
            "curl https://api.example.com/v1/chat/completions \\\n"
            "  -H 'Authorization: Bearer sk-…' \\\n"
            '  -d \'{"model": "…", "stream": true, "messages": […]}\''
        )
        self.preview = QLabel(self)
        self.preview.setWordWrap(True)
        self.buttons = QDialogButtonBox(self)
        self.import_button = self.buttons.addButton(
            "Import", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.import_button.clicked.connect(self.do_import)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel(
                "Paste a curl command — a browser's Copy as cURL (bash or cmd) works too. URL, "
                "-X, -H, -b, -d/--data*, --json are read; a key in Authorization / x-api-key / "
                "x-goog-api-key moves to the keyring.",
                self,
            )
        )
        layout.addWidget(self.command_edit, 1)
        layout.addWidget(self.preview)
        layout.addWidget(self.buttons)
        self.command_edit.textChanged.connect(self._on_command_edit_textChanged)
        self.command_edit.setPlainText(command)
        self._on_command_edit_textChanged()

    def _check(self) -> str | None:
        """Why the command cannot be imported, or ``None``."""
        text = self.command_edit.toPlainText()
        if not text.strip():
            return "paste a curl command"
        try:
            raw, _moved = raw_from_curl(parse_curl(text))
        except (CurlParseError, RawRequestError) as exc:
            return str(exc)
        self.preview.setText(f"✓ {raw.method} {raw.url}  ·  {len(raw.headers)} headers")
        return None

    def _on_command_edit_textChanged(self) -> None:
        error = self._check()
        if error is not None:
            self.preview.setText(f"✗ {error}")
        self.import_button.setEnabled(error is None)

    def do_import(self) -> None:
        if self._check() is None:
            self.importRequested.emit(self.command_edit.toPlainText())
            self.accept()


class CurlPasteFilter(QObject):
    """Event filter for the composer's editor: a paste of a curl command, or Enter on a
    message that is one, calls ``offer(text)``; when it returns ``True`` the event is
    consumed (the text is imported instead of pasted / sent)."""

    def __init__(self, editor: QPlainTextEdit, offer: Callable[[str], bool]) -> None:
        super().__init__(editor)
        self._editor = editor
        self._offer = offer
        editor.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.KeyPress or not isinstance(event, QKeyEvent):
            return False
        if event.matches(QKeySequence.StandardKey.Paste):
            text = QGuiApplication.clipboard().text()
            return looks_like_curl(text) and self._offer(text)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            text = self._editor.toPlainText()
            if looks_like_curl(text) and self._offer(text):
                self._editor.clear()
                return True
        return False
