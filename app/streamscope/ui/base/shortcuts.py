"""Every keyboard shortcut of the window, in one table (:data:`SHORTCUTS`).

Actions take their keys from it (:func:`bind`), and Help → Keyboard shortcuts lists it
(:class:`ShortcutsDialog`), so the list and the keys cannot disagree. The Chat menu (send-side
actions: Regenerate, Edit last, Stop) and the Go to entries are built here too
(:func:`add_chat_menu`, :func:`add_go_to_actions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

__all__ = [
    "SHORTCUTS",
    "Shortcut",
    "ShortcutsDialog",
    "bind",
    "native_keys",
    "shortcut",
]


@dataclass(frozen=True)
class Shortcut:
    name: str
    """Names the action (its objectName is ``shortcut_<name>``)."""
    keys: str
    """Portable key text (``Ctrl`` is ⌘ on macOS); shown in the platform's own spelling."""
    text: str
    """What it does, as listed."""
    where: str = "window"
    """``window``: an action, anywhere in the window; ``message box``: keys the message box
    handles itself (no action)."""


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("send", "Return", "Send the message", "message box"),
    Shortcut("newline", "Shift+Return", "New line in the message", "message box"),
    Shortcut("stop", "Esc", "Stop the stream (while editing: cancel the edit)"),
    Shortcut("regenerate", "Ctrl+R", "Regenerate the last answer"),
    Shortcut("edit_last", "Ctrl+E", "Edit the last message"),
    Shortcut("choose_model", "Ctrl+L", "Choose the model (type a name, or Alt+↓ for the list)"),
    Shortcut("new_conversation", "Ctrl+N", "New conversation"),
    Shortcut("go_conversations", "Ctrl+1", "Go to the conversation list"),
    Shortcut("go_message", "Ctrl+2", "Go to the message box"),
    Shortcut("go_inspector", "Ctrl+3", "Go to the inspector"),
    Shortcut("find", "Ctrl+F", "Find in frames"),
    Shortcut("edit_and_resend", "Ctrl+Shift+E", "Edit and resend the last request"),
    Shortcut("import_curl", "Ctrl+Shift+I", "Import a curl command"),
    Shortcut("copy_curl", "Ctrl+Shift+C", "Copy the last request as curl"),
    Shortcut("zoom_in", "Ctrl+=", "Larger text in the chat and the inspector (also Ctrl++)"),
    Shortcut("zoom_out", "Ctrl+-", "Smaller text in the chat and the inspector"),
    Shortcut("zoom_reset", "Ctrl+0", "Text at its normal size"),
    Shortcut("shortcuts", "F1", "Show these keyboard shortcuts"),
    Shortcut("quit", "Ctrl+Q", "Quit"),
)

_BY_NAME = {entry.name: entry for entry in SHORTCUTS}


def shortcut(name: str) -> Shortcut:
    """The table's entry called ``name`` (a ``KeyError`` for a name not in it)."""
    return _BY_NAME[name]


def bind(action: QAction, name: str) -> QAction:
    """Give ``action`` the keys the table has for ``name``, for the whole window."""
    entry = _BY_NAME[name]
    assert entry.where == "window", f"{name} is handled by the {entry.where}"
    action.setObjectName(f"shortcut_{name}")
    action.setShortcut(QKeySequence(entry.keys))
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    return action


def native_keys(entry: Shortcut) -> str:
    """The keys as this platform writes them (``Ctrl+R``, ``⌘R`` …)."""
    return QKeySequence(entry.keys).toString(QKeySequence.SequenceFormat.NativeText)


class ShortcutsDialog(QDialog):
    """Help → Keyboard shortcuts: the table, as it is."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(len(SHORTCUTS), 2, self)
        self.table.setHorizontalHeaderLabels(["Keys", "Does"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        for row, entry in enumerate(SHORTCUTS):
            keys = QTableWidgetItem(native_keys(entry))
            text = entry.text if entry.where == "window" else f"{entry.text} (in the message box)"
            self.table.setItem(row, 0, keys)
            self.table.setItem(row, 1, QTableWidgetItem(text))
        rows = self.table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        note = QLabel("Tab and Shift+Tab move between the controls; Space or Return presses.")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(note)
        layout.addWidget(buttons)
        table_height = rows.defaultSectionSize() * len(SHORTCUTS) + header.sizeHint().height()
        self.table.setMinimumHeight(table_height + 2 * self.table.frameWidth())
        self.resize(520, 0)

    def rows(self) -> list[tuple[str, str]]:
        """What is listed, row by row: (keys, text)."""
        rows = []
        for row in range(self.table.rowCount()):
            keys, text = self.table.item(row, 0), self.table.item(row, 1)
            rows.append((keys.text() if keys else "", text.text() if text else ""))
        return rows
