"""Endpoint → Tap another app…: the tap's dialog — upstream (a configured endpoint, the
built-in demo or a URL), port, faults on cue (a ``--fault`` spec, checked as it is typed, with
presets), Start/Stop, and once the tap runs, the base URL to paste (for the SDK chosen: the
OpenAI SDK's ends in ``/v1``, the others' are the root) and the SDKs' environment lines.
The tap itself is :class:`~streamscope.ui.tap.tap_panel.TapController`'s.
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
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.faults import FaultSpecError, parse_fault_spec
from streamscope.core.tap.server import SDK_BASE_URLS, sdk_base_urls
from streamscope.ui.base.theme import set_text_colour

if TYPE_CHECKING:
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.net.options import TLSOptions
    from streamscope.ui.endpoint.demo_service import DemoService
    from streamscope.ui.tap.tap_panel import TapController

__all__ = ["DEMO_UPSTREAM", "FAULT_PRESETS", "TapDialog"]

DEMO_UPSTREAM = "Built-in demo"

FAULT_PRESETS: tuple[tuple[str, str], ...] = (
    ("Rate limited once, then the answer", "http=429:retry-after=2/next"),
    ("Server error (500) every time", "http=500"),
    ("Cut inside frame 5", "cut@frame:5"),
    ("No terminal signal ([DONE], message_stop …)", "drop-terminal"),
    ("Silent for 30 s before frame 3", "stall@frame:3=30"),
    ("The provider's error frame at frame 3", "error@frame:3"),
    ("Broken JSON in frame 2", "garble@frame:2"),
    ("Slow: 200 ms more per frame", "slow=200"),
    ("A buffering proxy (everything at the end)", "merge-reads"),
    ("One byte per write", "split-reads"),
    ("Headers 5 s late", "delay-headers=5"),
)
"""The Faults section's presets: (what it does, the spec)."""


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
        self.sdk = QComboBox(self)  # (each SDK wants its own base URL: OpenAI's ends in /v1)
        self.sdk.addItems([who for who, _var in SDK_BASE_URLS])
        self.sdk.setToolTip("The client library the base URL is for")
        self.base_url = QLineEdit(self)
        self.base_url.setReadOnly(True)
        self.copy_button = QPushButton("Copy", self)
        self.env = QPlainTextEdit(self)
        self.env.setReadOnly(True)
        self.env.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.env.setFixedHeight(self.env.fontMetrics().lineSpacing() * 4 + 14)
        self.env.setMinimumWidth(self.env.fontMetrics().horizontalAdvance("x" * 46))
        self.copy_env = QPushButton("Copy lines", self)
        self.faults = QLineEdit(self)
        self.faults.setPlaceholderText("none — e.g. http=429:retry-after=2/next, cut@frame:5")
        self.faults.setToolTip(
            "Faults on cue, comma-separated: each on every request, the first (/next) or every "
            "k-th (/every=K). Frames are numbered from 0 as the Frames tab numbers them."
        )
        self.presets = QToolButton(self)
        self.presets.setText("Presets")
        self.presets.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.presets)
        for label, spec in FAULT_PRESETS:
            action = menu.addAction(f"{label} — {spec}")
            action.triggered.connect(lambda _=False, spec=spec: self.faults.setText(spec))
        self.presets.setMenu(menu)
        self.fault_message = QLabel(self)
        self.fault_message.setWordWrap(True)
        self.fault_message.hide()
        self.message = QLabel(self)
        self.message.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Upstream", self.upstream)
        form.addRow("Port (127.0.0.1)", self.port)
        fault_row = QHBoxLayout()
        fault_row.addWidget(self.faults, 1)
        fault_row.addWidget(self.presets)
        form.addRow("Faults", fault_row)
        form.addRow("", self.fault_message)
        base_row = QHBoxLayout()
        base_row.addWidget(self.sdk)
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
        self.sdk.currentIndexChanged.connect(self._show_base_url)
        self.faults.textChanged.connect(self._check_faults)
        controller.stateChanged.connect(self._show_state)
        self._show_state()

    def chosen_upstream(self) -> str:
        text = self.upstream.currentText().strip()
        if text == DEMO_UPSTREAM and self.demo is not None and self.demo.running:
            return self.demo.base_url("openai").removesuffix("/v1")
        return text

    def fault_spec(self) -> str | None:
        """The Faults box's spec, ``None`` when it is empty; :class:`FaultSpecError` when it
        cannot be used."""
        text = self.faults.text().strip()
        if not text:
            return None
        return str(parse_fault_spec(text))

    def _check_faults(self) -> None:
        """Say at once what is wrong with the spec typed (Start waits until it is right)."""
        try:
            spec = self.fault_spec()
        except FaultSpecError as exc:
            self.fault_message.setText(f"at {exc.token!r}: expected {exc.expected}")
            set_text_colour(self.fault_message, "error_window")
            self.fault_message.show()
            self.start_button.setEnabled(self.controller.running)
            return
        self.fault_message.setText(
            f"{spec}: each tapped exchange's row and inspector header say what the fault "
            "did and how the client reacted."
            if spec is not None
            else ""
        )
        set_text_colour(self.fault_message, None)
        self.fault_message.setVisible(spec is not None)
        self.start_button.setEnabled(True)

    def _on_start_clicked(self) -> None:
        c = self.controller
        if c.running:
            c.stop()
            return
        try:
            faults = self.fault_spec()
        except FaultSpecError:
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
        c.start(upstream, self.port.value(), tls=self._tls.get(upstream), faults=faults)

    def _show_state(self) -> None:
        c = self.controller
        self.start_button.setEnabled(True)
        running = c.server is not None
        self.start_button.setText("Stop" if running else "Start")
        self.upstream.setEnabled(not running)
        self.port.setEnabled(not running)
        self.faults.setEnabled(not running)
        self.presets.setEnabled(not running)
        if not running:
            self._check_faults()
        self._show_base_url()
        if c.server is not None:
            self.env.setPlainText("\n".join(c.server.env_lines()))
            faults = f" Faults on cue: {c.faults}." if c.faults else ""
            self.message.setText(
                f"Listening on {c.server.root_url}: point a client's base URL here; its "
                f"exchanges appear in the Tapped list.{faults}"
            )
        else:
            self.env.clear()
            said = "The tap stopped" if c.died else "Could not start"
            self.message.setText(f"{said}: {c.error}" if c.error else "")
        self.adjustSize()  # (the message may have grown a line)

    def _show_base_url(self) -> None:
        """The running tap's base URL for the SDK chosen (none while it is stopped)."""
        server = self.controller.server
        if server is None:
            self.base_url.clear()
            return
        urls = sdk_base_urls(server.root_url, server.upstream)
        self.base_url.setText(urls[max(self.sdk.currentIndex(), 0)])

    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.base_url.text())

    def _on_copy_env_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.env.toPlainText())
