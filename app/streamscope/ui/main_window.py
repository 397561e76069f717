"""The main window: wires the panels together (placeholder until the window issue lands)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow, QPlainTextEdit


class MainWindow(QMainWindow):
    closed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle("StreamScope")
        self.resize(1200, 780)
        self.chat = QPlainTextEdit(self)
        self.chat.setReadOnly(True)
        self.chat.setPlaceholderText("No messages yet.")
        self.setCentralWidget(self.chat)
        self.statusBar().showMessage("Ready")

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        self.closed.emit()
