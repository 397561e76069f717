"""The message box and its buttons: Enter sends, Shift+Enter is a newline, Esc stops — or,
while the last message is being edited, cancels the edit (the box gets back what it held)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.wire.context import ContextCut
from streamscope.ui.base.shortcuts import native_keys, shortcut


def _keys(name: str) -> str:
    return native_keys(shortcut(name))


def elsewhere_note(title: str) -> str:
    """What the composer says while a turn streams into another conversation than the one
    shown (one turn at a time)."""
    return (
        f"● A turn is streaming in “{title}”: send here once it ends, or ■ Stop it (Esc)."
        f" Open “{title}” in the list to watch it."
    )


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
    editCancelRequested = Signal()
    """Cancel (or Esc) while editing the last message."""

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

        self.edit_banner = QWidget(self)
        banner = QHBoxLayout(self.edit_banner)
        banner.setContentsMargins(0, 0, 0, 0)
        self.edit_label = QLabel(
            "✎ Editing your last message — Send adds it as a new version; the earlier one keeps"
            " its answers (◀ ▶ on the message). Esc cancels.",
            self.edit_banner,
        )
        self.edit_label.setWordWrap(True)
        self.edit_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.cancel_edit_button = QPushButton("Cancel edit", self.edit_banner)
        self.cancel_edit_button.clicked.connect(self.editCancelRequested)
        banner.addWidget(self.edit_label, 1)
        banner.addWidget(self.cancel_edit_button)
        self.edit_banner.hide()
        self.context_label = QLabel(self)  # see show_context
        self.context_label.setWordWrap(True)
        self.context_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.context_label.hide()
        self.elsewhere_label = QLabel(self)  # see show_elsewhere
        self.elsewhere_label.setWordWrap(True)
        self.elsewhere_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.elsewhere_label.hide()
        self.editing = False
        self._draft = ""
        self._has_answer = False

        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        row = QHBoxLayout()
        row.setSpacing(4)
        row.addWidget(self.regenerate_button)
        row.addWidget(self.edit_button)
        buttons.addLayout(row)
        row_box = QHBoxLayout()
        row_box.addWidget(self.editor, 1)
        row_box.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.edit_banner)
        layout.addWidget(self.context_label)
        layout.addWidget(self.elsewhere_label)
        layout.addLayout(row_box)

        self.editor.submitted.connect(self._on_submit)
        self.editor.escaped.connect(self._on_editor_escaped)
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

    def show_context(self, cut: ContextCut | None) -> None:
        """Say what the next message sends of the conversation when the endpoint's context
        policy limits it ("Next message: sending 201 of 728 messages · 402.3 KB — policy: last
        100 exchanges"); ``None``: the whole conversation goes, nothing to say."""
        text = f"Next message: {cut.words()}" if cut is not None else ""
        self.context_label.setText(text)
        self.context_label.setToolTip(
            "Set in Endpoint settings → Request → Context sent. A cut falls only between"
            " exchanges: what is sent opens with one of your messages."
            if text
            else ""
        )
        self.context_label.setVisible(bool(text))

    def show_elsewhere(self, title: str) -> None:
        """Say that a turn streams into the conversation ``title``, not the one shown
        (``""``: say nothing)."""
        self.elsewhere_label.setText(elsewhere_note(title) if title else "")
        self.elsewhere_label.setVisible(bool(title))

    def set_history(self, *, has_answer: bool) -> None:
        self._has_answer = has_answer
        self.regenerate_button.setEnabled(has_answer and not self.running and not self.editing)
        self.edit_button.setEnabled(has_answer and not self.running and not self.editing)

    def begin_edit(self, text: str) -> None:
        """Put the last message in the box to edit (what the box held comes back after)."""
        if not self.editing:
            self._draft = self.editor.toPlainText()
        self.editing = True
        self.edit_banner.show()
        self.set_history(has_answer=self._has_answer)
        self.set_text(text)

    def end_edit(self) -> None:
        """The edit was sent or cancelled: the box gets back what it held before."""
        if not self.editing:
            return
        self.editing = False
        self.edit_banner.hide()
        self.editor.setPlainText(self._draft)
        self._draft = ""
        self.set_history(has_answer=self._has_answer)

    def _on_editor_escaped(self) -> None:
        if self.editing:
            self.editCancelRequested.emit()
        else:
            self.stopRequested.emit()

    def set_text(self, text: str) -> None:
        self.editor.setPlainText(text)
        self.editor.setFocus()
        cursor = self.editor.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.editor.setTextCursor(cursor)
