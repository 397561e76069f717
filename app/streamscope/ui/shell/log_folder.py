"""Help → Open log folder: the file manager when there is one, else a dialog that shows the
path with a Copy button (a bare X session, a sandbox, a remote desktop …)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

__all__ = ["LogFolderDialog", "open_log_folder"]


class LogFolderDialog(QDialog):
    """Where the logs are, to copy."""

    def __init__(self, folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Log folder")
        self.folder = folder
        note = QLabel("No file manager could be opened. The logs are in this folder:", self)
        note.setWordWrap(True)
        self.path_edit = QLineEdit(str(folder), self)
        self.path_edit.setReadOnly(True)
        self.path_edit.setCursorPosition(0)
        self.copy_button = QPushButton("Copy", self)
        self.copy_button.setToolTip("Copy the folder's path")
        self.copy_button.clicked.connect(self.copy)
        row = QHBoxLayout()
        row.addWidget(self.path_edit, 1)
        row.addWidget(self.copy_button)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(note)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self.resize(max(480, self.path_edit.fontMetrics().horizontalAdvance(str(folder)) + 140), 0)
        self.copy_button.setFocus()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(str(self.folder))
        self.copy_button.setText("Copied")


def open_log_folder(folder: Path, parent: QWidget | None = None) -> LogFolderDialog | None:
    """Open ``folder`` in the file manager (created first: it may not exist yet); when none
    opens, show :class:`LogFolderDialog` and return it."""
    with contextlib.suppress(OSError):  # the dialog still says where they would be
        folder.mkdir(parents=True, exist_ok=True)
    if QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
        return None
    dialog = LogFolderDialog(folder, parent)
    dialog.show()
    return dialog
