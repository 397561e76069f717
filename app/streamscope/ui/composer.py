"""The message box and its buttons: Enter sends, Shift+Enter is a newline, Esc stops."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from streamscope.ui.shortcuts import native_keys, shortcut


def _keys(name: str) -> str:
    return native_keys(shortcut(name))


class _Editor(QPlainTextEdit):
    submitted = Signal()
    escaped = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            self.submitted.emit()
            return
        if key == Qt.Key.Key_Escape:
            self.escaped.emit()
            return
        super().keyPressEvent(event)


class Composer(QWidget):
    sendRequested = Signal(str)
    stopRequested = Signal()
    regenerateRequested = Signal()
    editLastRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = _Editor(self)
        self.editor.setPlaceholderText("Message…  (Enter sends, Shift+Enter for a new line)")
        self.editor.setTabChangesFocus(True)
        self.editor.setFixedHeight(self.editor.fontMetrics().lineSpacing() * 4 + 16)
        self.send_button = QPushButton("Send ⏎", self)
        self.send_button.setDefault(True)
        self.stop_button = QPushButton("■ Stop", self)
        self.stop_button.setToolTip(f"Stop the stream ({_keys('stop')})")
        self.regenerate_button = QPushButton("↻ Regenerate", self)
        self.regenerate_button.setToolTip(
            f"Send the last message again; keeps this answer ({_keys('regenerate')})"
        )
        self.edit_button = QPushButton("✎ Edit last", self)
        self.edit_button.setToolTip(
            f"Put the last message back in the box to edit and resend ({_keys('edit_last')})"
        )

        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        row = QHBoxLayout()
        row.setSpacing(4)
        row.addWidget(self.regenerate_button)
        row.addWidget(self.edit_button)
        buttons.addLayout(row)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.editor, 1)
        layout.addLayout(buttons)

        self.editor.submitted.connect(self._on_submit)
        self.editor.escaped.connect(self.stopRequested)
        self.send_button.clicked.connect(self._on_submit)
        self.stop_button.clicked.connect(self.stopRequested)
        self.regenerate_button.clicked.connect(self.regenerateRequested)
        self.edit_button.clicked.connect(self.editLastRequested)
        self.set_running(False)
        self.set_history(has_answer=False)

    def _on_submit(self) -> None:
        if self.running:
            return
        text = self.editor.toPlainText().strip()
        if not text:
            return
        self.editor.clear()
        self.sendRequested.emit(text)

    def set_running(self, running: bool) -> None:
        self.running = running
        self.send_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        if running:
            self.regenerate_button.setEnabled(False)
            self.edit_button.setEnabled(False)

    def set_history(self, *, has_answer: bool) -> None:
        self.regenerate_button.setEnabled(has_answer and not self.running)
        self.edit_button.setEnabled(has_answer and not self.running)

    def set_text(self, text: str) -> None:
        self.editor.setPlainText(text)
        self.editor.setFocus()
        cursor = self.editor.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.editor.setTextCursor(cursor)
