"""The main window: wires the panels together, nothing more.

Conversations (left dock) · chat view + composer (centre) · inspector (right dock) ·
tools (dock, hidden until asked for) · status bar. The endpoint bar on top picks the
endpoint and the model — for the built-in demo, the model menu is the scenario menu.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Only what the frame needs is imported here: the first use of a Qt class builds its Python
# enums (``Qt`` alone takes ~18 ms), so the rest is imported where it is used, after the paint.
from PySide6.QtCore import QByteArray, QSettings, Signal
from PySide6.QtWidgets import QLabel, QMainWindow, QWidget

from streamscope import __version__
from streamscope.core import paths
from streamscope.ui.resources import app_icon

if TYPE_CHECKING:
    # Imported by build(), after the first paint: importing them takes longer than showing
    # a bare window (asyncio, httpx, the database, Pygments …), so the frame paints first.
    import asyncio

    from PySide6.QtCore import Qt
    from PySide6.QtGui import QCloseEvent
    from PySide6.QtWidgets import QDockWidget

    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.net.endpoints import Endpoint, EndpointSettings
    from streamscope.core.net.secrets import SecretStore
    from streamscope.core.store.database import Store
    from streamscope.core.store.session import ChatSession
    from streamscope.ui.power_tools import PowerTools

WELCOME = """\
### Welcome to StreamScope

You are connected to the **Built-in demo** endpoint: a real LLM-style server running on
127.0.0.1 inside the app — no key, no network. Type anything and press **Enter**.

The **model menu** above is its scenario menu: `demo-tools` streams two parallel tool calls,
`demo-reasoning` thinks first, `demo-cut` drops the connection mid-frame, `demo-no-done` ends
without `[DONE]`, `demo-error-429` is rate limited, and more. Watch the **Inspector** on the
right: every raw frame with its timing and bytes, tool-call arguments fragment by fragment, and
the timeline. The status bar says whether the turn **completed**, was **truncated**,
**cancelled**, or ended in an **error** — and why.

Use **Endpoint → Endpoints…** to add OpenAI, Anthropic, Gemini, Ollama or any compatible server.
"""


class MainWindow(QMainWindow):
    closed = Signal()

    def __init__(
        self,
        *,
        demo_speed: float = 1.0,
        store: Store | None = None,
        captures: CaptureStore | None = None,
        deferred: bool = False,
    ) -> None:
        """The whole window; with ``deferred`` only its frame (title, geometry, a "Starting…"
        status), so it can paint at once — then ``build()`` adds the rest."""
        super().__init__()
        self.built = False
        self.setWindowTitle("StreamScope")
        self.setWindowIcon(app_icon())
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
        )
        self._restore_geometry()
        starting = QLabel("Starting StreamScope…", self)
        starting.setStyleSheet(
            "qproperty-alignment: AlignCenter; color: palette(placeholder-text);"
        )
        self.setCentralWidget(starting)
        if not deferred:
            self.build(store=store, captures=captures, demo_speed=demo_speed)

    def build(
        self,
        *,
        store: Store | None = None,
        captures: CaptureStore | None = None,
        demo_speed: float = 1.0,
    ) -> None:
        """Build the panels, the controller, the menus; restore the layout. Once."""
        from concurrent.futures import ThreadPoolExecutor

        from PySide6.QtCore import Qt, QTimer
        from PySide6.QtWidgets import QVBoxLayout

        from streamscope.core.net.endpoints import EndpointStore
        from streamscope.ui.chat_controller import ChatController
        from streamscope.ui.chat_view import ChatView
        from streamscope.ui.composer import Composer
        from streamscope.ui.conversations_panel import ConversationsPanel
        from streamscope.ui.demo_service import DemoService
        from streamscope.ui.inspector.inspector import InspectorPanel
        from streamscope.ui.status_panel import StatusPanel
        from streamscope.ui.tools_panel import ToolsPanel

        assert not self.built, "MainWindow.build() runs once"
        self.store = store
        self.captures = captures
        self._endpoint_store = EndpointStore()
        self.endpoints: EndpointSettings = self._endpoint_store.load()
        self._secrets: SecretStore | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._io = ThreadPoolExecutor(1, thread_name_prefix="capture-io")
        self.opening: asyncio.Task[None] | None = None
        self.demo = DemoService(speed=demo_speed)

        # centre: chat + composer
        self.chat = ChatView(self)
        self.composer = Composer(self)
        centre = QWidget(self)
        layout = QVBoxLayout(centre)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.chat, 1)
        layout.addWidget(self.composer)
        self.setCentralWidget(centre)

        # docks
        self.inspector = InspectorPanel(self)
        self.inspector_dock = self._dock(
            "Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.conversations = ConversationsPanel(store, self)
        self.conversations.newRequested.connect(self._on_new_conversation)
        self.conversations.conversationChosen.connect(self._on_conversation_chosen)
        self.conversations.exportRequested.connect(self._on_export_conversation)
        self.conversations.deleted.connect(self._on_conversation_deleted)
        self.conversations_dock = self._dock(
            "Conversations", self.conversations, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.tools_panel = ToolsPanel(self)
        self.tools_dock = self._dock(
            "Tools", self.tools_panel, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.tools_dock.hide()

        # status bar
        self.status = StatusPanel(self)
        self.statusBar().addWidget(self.status, 1)
        self.tls_label = QLabel("⚠ TLS verification OFF", self)
        self.tls_label.setStyleSheet("color: #cf222e; font-weight: bold;")
        self.statusBar().addPermanentWidget(self.tls_label)
        self.tls_label.hide()

        # controller
        self.controller = ChatController(
            chat=self.chat,
            inspector=self.inspector,
            status=self.status,
            endpoint=self.current_endpoint,
            api_key=self._api_key,
            headers=self._headers,
            tools=self.tools_panel.tools,
            demo=self.demo,
            parent=self,
        )
        self.tools_panel.toolsChanged.connect(self._on_tools_changed)
        self.composer.sendRequested.connect(self.controller.send)
        self.composer.stopRequested.connect(self.controller.stop)
        self.composer.regenerateRequested.connect(self.controller.regenerate)
        self.composer.editLastRequested.connect(self._on_composer_edit_last)
        self.controller.busyChanged.connect(self._on_controller_busy_changed)
        self.controller.historyChanged.connect(self._on_controller_history_changed)

        self._build_toolbar()
        self._build_menus()
        self._restore_layout()
        self._open_session(self._new_session())
        self.composer.editor.setFocus()
        self.status.show_message("Ready")
        self._power_tools: PowerTools | None = None
        self.built = True
        # The Stream menu (power tools) is built right after the first paint.
        QTimer.singleShot(0, self, self._install_power_tools)

    def _install_power_tools(self) -> None:
        _ = self.power_tools

    @property
    def power_tools(self) -> PowerTools:
        """The Stream menu's tools (edit and resend, curl, compare, find …), built lazily."""
        if self._power_tools is None:
            from streamscope.ui.power_tools import install_power_tools

            self._power_tools = install_power_tools(self)
        return self._power_tools

    # -- building ------------------------------------------------------------------------

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        from PySide6.QtWidgets import QDockWidget

        dock = QDockWidget(title, self)
        dock.setObjectName(title.lower().replace(" ", "_") + "_dock")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_toolbar(self) -> None:
        from PySide6.QtCore import QSize, Qt
        from PySide6.QtWidgets import QComboBox, QPushButton, QSizePolicy, QToolBar

        bar = QToolBar("Endpoint", self)
        bar.setObjectName("endpoint_toolbar")
        bar.setMovable(False)
        bar.setIconSize(QSize(16, 16))
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        bar.addWidget(QLabel(" Endpoint ", self))
        self.endpoint_combo = QComboBox(self)
        self.endpoint_combo.setMinimumContentsLength(16)
        bar.addWidget(self.endpoint_combo)
        bar.addWidget(QLabel("  Model ", self))
        self.model_combo = QComboBox(self)
        self.model_combo.setEditable(True)
        self.model_combo.setMinimumContentsLength(22)
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        bar.addWidget(self.model_combo)
        self.model_note = QLabel(self)
        self.model_note.setStyleSheet("color: palette(placeholder-text); padding-left: 8px;")
        bar.addWidget(self.model_note)
        spacer = QWidget(self)
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.alt_label = QLabel(self)
        self.prev_alt = QPushButton("◀", self)
        self.next_alt = QPushButton("▶", self)
        for button in (self.prev_alt, self.next_alt):
            button.setFixedWidth(28)
            button.setToolTip("Switch between regenerated answers")
        self.prev_alt.clicked.connect(lambda: self._on_alternative_step(-1))
        self.next_alt.clicked.connect(lambda: self._on_alternative_step(+1))
        self._alt_actions = [
            bar.addWidget(w) for w in (self.prev_alt, self.alt_label, self.next_alt)
        ]
        settings_button = QPushButton("Endpoint settings…", self)
        settings_button.clicked.connect(self._on_edit_endpoint)
        bar.addWidget(settings_button)
        self._fill_endpoints()
        self.endpoint_combo.currentIndexChanged.connect(self._on_endpoint_chosen)
        self.model_combo.currentTextChanged.connect(self._on_model_changed)
        self._update_alternatives()

    def _build_menus(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QAction, QKeySequence

        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        new_action = QAction("&New conversation", self)
        new_action.setShortcut(QKeySequence.StandardKey.New)
        new_action.triggered.connect(self._on_new_conversation)
        file_menu.addAction(new_action)
        file_menu.addSeparator()
        for text, slot in (
            ("Open capture…", self._on_open_capture),
            ("Save capture of the last turn…", self._on_save_capture),
            ("Export repro bundle of the last turn…", self._on_export_bundle),
        ):
            action = QAction(text, self)
            action.triggered.connect(slot)
            file_menu.addAction(action)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        endpoint_menu = menu.addMenu("&Endpoint")
        edit = QAction("&Edit current endpoint…", self)
        edit.triggered.connect(self._on_edit_endpoint)
        manage = QAction("Endpoints…", self)
        manage.triggered.connect(self._on_manage_endpoints)
        endpoint_menu.addAction(edit)
        endpoint_menu.addAction(manage)
        view = menu.addMenu("&View")
        for dock in (self.conversations_dock, self.inspector_dock, self.tools_dock):
            view.addAction(dock.toggleViewAction())
        stop = QAction("Stop", self)
        stop.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        stop.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        stop.triggered.connect(self.controller.stop)
        self.addAction(stop)
        help_menu = menu.addMenu("&Help")
        logs = QAction("Open &log folder", self)
        logs.triggered.connect(self._on_open_logs)
        help_menu.addAction(logs)
        about = QAction("&About StreamScope", self)
        about.triggered.connect(self._on_about)
        help_menu.addAction(about)

    def _show_welcome(self) -> None:
        self.chat.add_notice(WELCOME)

    # -- endpoints -----------------------------------------------------------------------

    def current_endpoint(self) -> Endpoint:
        ep = self.endpoints.selected
        model = self.model_combo.currentText().strip()
        if model and model != ep.model:
            from dataclasses import replace

            ep = replace(ep, model=model)
        return ep

    def secrets(self) -> SecretStore:
        if self._secrets is None:
            from streamscope.core.net.secrets import SecretStore

            self._secrets = SecretStore()
        return self._secrets

    def _api_key(self, endpoint: Endpoint) -> str | None:
        from streamscope.core.net.secrets import resolve_api_key

        return resolve_api_key(endpoint, self.secrets())

    def _headers(self, endpoint: Endpoint) -> dict[str, str]:
        from streamscope.core.net.secrets import resolve_headers

        return resolve_headers(endpoint, self.secrets())

    def _fill_endpoints(self) -> None:
        self.endpoint_combo.blockSignals(True)
        self.endpoint_combo.clear()
        for ep in self.endpoints.endpoints:
            self.endpoint_combo.addItem(ep.name, ep.id)
        index = self.endpoint_combo.findData(self.endpoints.selected_id)
        self.endpoint_combo.setCurrentIndex(max(0, index))
        self.endpoint_combo.blockSignals(False)
        self._fill_models()

    def _fill_models(self) -> None:
        from PySide6.QtCore import Qt

        ep = self.endpoints.selected
        self.model_combo.blockSignals(True)
        self.model_combo.clear()
        if ep.is_demo:
            from streamscope.demo.scenarios import SCENARIOS

            for name, scenario in SCENARIOS.items():
                self.model_combo.addItem(name)
                self.model_combo.setItemData(
                    self.model_combo.count() - 1, scenario.description, Qt.ItemDataRole.ToolTipRole
                )
        if ep.model and self.model_combo.findText(ep.model) < 0:
            self.model_combo.addItem(ep.model)
        self.model_combo.setCurrentText(ep.model)
        self.model_combo.blockSignals(False)
        self._on_model_changed(self.model_combo.currentText())
        self.tls_label.setVisible(not ep.tls_verify)
        self._update_title()

    def _on_endpoint_chosen(self, index: int) -> None:
        endpoint_id = self.endpoint_combo.itemData(index)
        if endpoint_id:
            self.endpoints = self.endpoints.select(str(endpoint_id))
            self._endpoint_store.save(self.endpoints)
            self._fill_models()

    def _on_model_changed(self, text: str) -> None:
        ep = self.endpoints.selected
        note = ""
        if ep.is_demo:
            from streamscope.demo.scenarios import SCENARIOS

            scenario = SCENARIOS.get(text)
            note = scenario.description if scenario else "unknown scenario"
        self.model_note.setText(note)
        self._update_title()

    def _update_title(self) -> None:
        ep = self.current_endpoint()
        self.setWindowTitle(f"StreamScope — {ep.name} · {ep.model}")

    def _on_edit_endpoint(self) -> None:
        from streamscope.ui.settings_dialog import EndpointDialog

        dialog = EndpointDialog(
            self.current_endpoint(),
            secrets=self.secrets(),
            demo_base_url=self._demo_base_url(),
            parent=self,
        )
        if dialog.exec():
            self.endpoints = self.endpoints.with_endpoint(dialog.endpoint())
            self._endpoint_store.save(self.endpoints)
            self._fill_endpoints()

    def _on_manage_endpoints(self) -> None:
        from streamscope.ui.endpoints_dialog import EndpointsDialog

        dialog = EndpointsDialog(
            self.endpoints, secrets=self.secrets(), demo_base_url=self._demo_base_url(), parent=self
        )
        if dialog.exec():
            self.endpoints = dialog.settings()
            self._endpoint_store.save(self.endpoints)
            self._fill_endpoints()

    def _demo_base_url(self) -> Callable[[str], str] | None:
        return self.demo.base_url if self.demo.running else None

    # -- conversation --------------------------------------------------------------------

    def _open_session(self, session: ChatSession) -> None:
        self.controller.open_session(session)
        self.tools_panel.blockSignals(True)
        self.tools_panel.set_tools(list(session.tools))
        self.tools_panel.set_enabled(bool(session.tools))
        self.tools_panel.blockSignals(False)
        if session.tools:
            self.tools_dock.show()
        if not len(session.history):
            self._show_welcome()
        elif session.has_more:
            self.chat.add_notice("Older messages of this conversation are not shown.")
        self.conversations.set_current(session.conversation_id)
        self._update_alternatives()

    def _new_session(self) -> ChatSession:
        from streamscope.core.store.session import ChatSession

        return ChatSession(self.store, self.captures)

    def _on_tools_changed(self) -> None:
        self.controller.session.set_tools(self.tools_panel.tools())

    def _on_new_conversation(self) -> None:
        if self.controller.busy or not len(self.controller.history):
            return
        self._open_session(self._new_session())

    def _on_conversation_chosen(self, conversation_id: int) -> None:
        from streamscope.core.store.session import ChatSession

        if self.store is None or self.controller.busy:
            return
        try:
            session = ChatSession.open(self.store, self.captures, conversation_id)
        except KeyError:
            self.conversations.refresh()
            return
        self._open_session(session)

    def _on_conversation_deleted(self, conversation_id: int) -> None:
        if self.controller.session.conversation_id == conversation_id and not self.controller.busy:
            self._open_session(self._new_session())

    def _on_export_conversation(self, conversation_id: int, fmt: str) -> None:
        import json

        from streamscope.core.store.export import conversation_to_json, conversation_to_markdown

        if self.store is None:
            return
        from PySide6.QtWidgets import QFileDialog

        suffix = "md" if fmt == "md" else "json"
        path, _ = QFileDialog.getSaveFileName(
            self, "Export conversation", f"conversation-{conversation_id}.{suffix}"
        )
        if not path:
            return
        conv = self.store.load_conversation(conversation_id, limit=None)
        if fmt == "md":
            text = conversation_to_markdown(conv)
        else:
            text = json.dumps(conversation_to_json(conv), ensure_ascii=False, indent=2)
        Path(path).write_text(text, encoding="utf-8")
        self.status.show_message(f"Exported to {path}")

    def _on_composer_edit_last(self) -> None:
        text = self.controller.edit_last()
        if text is not None:
            self.composer.set_text(text)

    def _on_controller_busy_changed(self, busy: bool) -> None:
        self.composer.set_running(busy)
        self.endpoint_combo.setEnabled(not busy)
        self.conversations.setEnabled(not busy)
        if not busy:
            self.composer.set_history(has_answer=self.controller.history.alternatives()[1] > 0)
            self._update_alternatives()

    def _on_controller_history_changed(self) -> None:
        session = self.controller.session
        if session.conversation_id is not None and session.conversation_id not in (
            self.conversations.ids()
        ):
            self.conversations.set_current(session.conversation_id)
        self._update_alternatives()

    # -- captures ------------------------------------------------------------------------

    def _on_open_capture(self) -> None:
        from PySide6.QtWidgets import QFileDialog, QInputDialog

        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open capture",
            "",
            "Captures and bundles (*.sscap *.zip);;All files (*)",
        )
        if not path:
            return
        speeds = {"Instantly": None, "At recorded speed": 1.0, "10× faster": 10.0}
        choice, ok = QInputDialog.getItem(
            self, "Replay", "Replay the capture:", list(speeds), 0, False
        )
        if ok:
            self.open_capture(Path(path), speed=speeds[choice])

    def open_capture(self, path: Path, *, speed: float | None = None) -> bool:
        """Replay a capture or repro bundle through the pipeline into the window."""
        import asyncio

        from PySide6.QtWidgets import QMessageBox

        from streamscope.core.capture.bundle import is_bundle, read_repro_bundle
        from streamscope.core.capture.format import Capture, CaptureError, read_capture

        def load() -> Capture:
            with path.open("rb") as f:
                head = f.read(64)
            if is_bundle(head):
                return read_repro_bundle(path, background=True)
            return read_capture(path, background=True)

        async def open_and_replay() -> None:
            self.status.show_message(f"Opening {path.name}…")
            try:  # a 100 MB capture takes a moment: read it off the UI thread
                capture = await asyncio.get_running_loop().run_in_executor(self._io, load)
            except (OSError, CaptureError, ValueError) as exc:
                self.status.show_message(f"Could not open {path.name}: {exc}")
                QMessageBox.warning(self, "Open capture", f"{path.name}: {exc}")
                return
            self.controller.replay(capture, speed=speed, label=f"replay · {path.name}")

        if self.controller.busy:
            return False
        task = asyncio.ensure_future(open_and_replay())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.opening = task
        return True

    def _on_save_capture(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        from streamscope.core.capture.format import write_capture

        capture = self.controller.last_capture
        if capture is None:
            self.status.show_message("No turn to save yet")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Save capture", "turn.sscap", "StreamScope captures (*.sscap)"
        )
        if path:
            write_capture(Path(path), capture)
            self.status.show_message(f"Capture saved to {path}")

    def _on_export_bundle(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        from streamscope.core.capture.bundle import write_repro_bundle

        capture = self.controller.last_capture
        turn = self.controller.runner.last_turn
        if capture is None or turn is None:
            self.status.show_message("No turn to export yet")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export repro bundle", "streamscope-repro.zip", "Zip files (*.zip)"
        )
        if path:
            write_repro_bundle(Path(path), capture, turn, app_version=__version__)
            self.status.show_message(f"Repro bundle written to {path}")

    def _on_open_logs(self) -> None:
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices

        QDesktopServices.openUrl(QUrl.fromLocalFile(str(paths.log_dir())))

    def _update_alternatives(self) -> None:
        chosen, count = self.controller.history.alternatives()
        visible = count > 1
        for action in self._alt_actions:
            action.setVisible(visible)
        self.alt_label.setText(f" answer {chosen + 1}/{count} ")
        self.prev_alt.setEnabled(chosen > 0)
        self.next_alt.setEnabled(chosen < count - 1)

    def _on_alternative_step(self, step: int) -> None:
        chosen, _count = self.controller.history.alternatives()
        self.controller.choose_alternative(chosen + step)
        self._update_alternatives()

    def _on_about(self) -> None:
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.about(
            self,
            "About StreamScope",
            f"<b>StreamScope {__version__}</b><br>A desktop chat client for LLM endpoints "
            "that shows the stream itself.<br>Data folder: " + str(paths.home()),
        )

    # -- settings and lifetime ---------------------------------------------------------

    def _settings(self) -> QSettings:
        return QSettings(str(paths.config_dir() / "window.ini"), QSettings.Format.IniFormat)

    def _restore_geometry(self) -> None:
        geometry = self._settings().value("geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        else:
            self.resize(1360, 860)

    def _restore_layout(self) -> None:
        from PySide6.QtCore import Qt

        settings = self._settings()
        state = settings.value("state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
        else:
            self.resizeDocks([self.conversations_dock], [200], Qt.Orientation.Horizontal)
            self.resizeDocks([self.inspector_dock], [520], Qt.Orientation.Horizontal)
        tab = settings.value("inspector_tab", 0)
        self.inspector.setCurrentIndex(int(str(tab)) if str(tab).isdigit() else 0)
        frames_split = settings.value("frames_splitter")
        if isinstance(frames_split, QByteArray):
            self.inspector.frames_panel.splitter.restoreState(frames_split)

    def save_settings(self) -> None:
        settings = self._settings()
        settings.setValue("geometry", self.saveGeometry())
        settings.setValue("state", self.saveState())
        settings.setValue("inspector_tab", self.inspector.currentIndex())
        settings.setValue("frames_splitter", self.inspector.frames_panel.splitter.saveState())
        settings.sync()

    def bring_to_front(self) -> None:
        """Another start of the app asked this window to show itself."""
        self.showNormal()
        self.raise_()
        self.activateWindow()

    async def shutdown(self) -> None:
        """Stop a running turn, close the network and the demo server (awaited on exit)."""
        import asyncio

        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.controller.shutdown()
        self._io.shutdown(wait=False)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.built:  # closed while starting: nothing to save or stop yet
            super().closeEvent(event)
            self.closed.emit()
            return
        self.save_settings()
        self.controller.stop()
        super().closeEvent(event)
        self.closed.emit()
