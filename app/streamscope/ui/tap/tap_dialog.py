"""Endpoint → Tap another app…: the tap's dialog — upstream (a configured endpoint, the
built-in demo or a URL), port, Start/Stop, and once the tap runs, the base URL to paste and
the SDKs' environment lines. The tap itself is
:class:`~streamscope.ui.tap.tap_panel.TapController`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.net.options import TLSOptions
    from streamscope.ui.endpoint.demo_service import DemoService
    from streamscope.ui.tap.tap_panel import TapController

__all__ = ["DEMO_UPSTREAM", "TapDialog"]

DEMO_UPSTREAM = "Built-in demo"


class TapDialog(QDialog):
    """Endpoint → Tap another app…: upstream (a configured endpoint or a URL), port,
    Start/Stop; once running, the base URL to paste (Copy) and the SDKs' environment lines."""

    def __init__(
        self,
        controller: TapController,
        endpoints: list[Endpoint],
        demo: DemoService | None = None,
        parent: QWidget | None = None,
        *,
        tls_for: Callable[[Endpoint], TLSOptions] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Tap another app")
        self.controller = controller
        self.demo = demo
        self._tls: dict[str, TLSOptions] = {}
        self.upstream = QComboBox(self)
        self.upstream.setEditable(True)
        for ep in endpoints:
            if ep.preset == "demo":
                self.upstream.addItem(DEMO_UPSTREAM)
            elif ep.base_url:
                self.upstream.addItem(f"{ep.base_url}", ep.base_url)
                self._tls[ep.base_url] = tls_for(ep) if tls_for else ep.tls()
        line = self.upstream.lineEdit()
        if line is not None:
            line.setPlaceholderText("https://api.openai.com/v1")
        self.port = QSpinBox(self)
        self.port.setRange(0, 65535)
        self.port.setValue(8700)
        self.port.setSpecialValueText("any free port")
        self.start_button = QPushButton("Start", self)
        self.base_url = QLineEdit(self)
        self.base_url.setReadOnly(True)
        self.copy_button = QPushButton("Copy", self)
        self.env = QPlainTextEdit(self)
        self.env.setReadOnly(True)
        self.env.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.env.setFixedHeight(self.env.fontMetrics().lineSpacing() * 4 + 14)
        self.env.setMinimumWidth(self.env.fontMetrics().horizontalAdvance("x" * 46))
        self.copy_env = QPushButton("Copy lines", self)
        self.message = QLabel(self)
        self.message.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Upstream", self.upstream)
        form.addRow("Port (127.0.0.1)", self.port)
        base_row = QHBoxLayout()
        base_row.addWidget(self.base_url, 1)
        base_row.addWidget(self.copy_button)
        form.addRow("Base URL", base_row)
        env_row = QHBoxLayout()
        env_row.addWidget(self.env, 1)
        env_row.addWidget(self.copy_env, 0, Qt.AlignmentFlag.AlignTop)
        form.addRow("Environment", env_row)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.start_button)
        close = QPushButton("Close", self)
        close.clicked.connect(self.close)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self.start_button.clicked.connect(self._on_start_clicked)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        self.copy_env.clicked.connect(self._on_copy_env_clicked)
        controller.stateChanged.connect(self._show_state)
        self._show_state()

    def chosen_upstream(self) -> str:
        text = self.upstream.currentText().strip()
        if text == DEMO_UPSTREAM and self.demo is not None and self.demo.running:
            return self.demo.base_url("openai").removesuffix("/v1")
        return text

    def _on_start_clicked(self) -> None:
        c = self.controller
        if c.running:
            c.stop()
            return
        demo = self.demo
        if self.upstream.currentText().strip() == DEMO_UPSTREAM and demo and not demo.running:
            import asyncio

            self.message.setText("Starting the built-in demo…")
            task = asyncio.ensure_future(demo.ensure_started())
            task.add_done_callback(lambda _t: self._on_start_clicked())
            return
        upstream = self.chosen_upstream()
        self.message.setText("Starting…")
        self.start_button.setEnabled(False)
        c.start(upstream, self.port.value(), tls=self._tls.get(upstream))

    def _show_state(self) -> None:
        c = self.controller
        self.start_button.setEnabled(True)
        running = c.server is not None
        self.start_button.setText("Stop" if running else "Start")
        self.upstream.setEnabled(not running)
        self.port.setEnabled(not running)
        if c.server is not None:
            self.base_url.setText(c.server.base_url)
            self.env.setPlainText("\n".join(c.server.env_lines()))
            self.message.setText(
                f"Listening on {c.server.root_url}: point a client's base URL here; its "
                "exchanges appear in the Tapped list."
            )
        else:
            self.base_url.clear()
            self.env.clear()
            said = "The tap stopped" if c.died else "Could not start"
            self.message.setText(f"{said}: {c.error}" if c.error else "")
        self.adjustSize()  # (the message may have grown a line)

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.base_url.text())

    def _on_copy_env_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.env.toPlainText())
