"""The main window: wires the panels and features together, nothing more.

Endpoint bar (top) · conversations (left dock) · chat view + composer (centre) · inspector
(right dock) · tools (dock, hidden until asked for) · status bar. The features are objects of
their own, given what they use: the endpoint bar
(:mod:`~streamscope.ui.endpoint.endpoint_bar`), which conversation is open
(:mod:`~streamscope.ui.chat.conversation_switcher`), files
(:mod:`~streamscope.ui.shell.file_actions`), the Stream menu
(:mod:`~streamscope.ui.tools.power_tools`); the layout is remembered by
:mod:`~streamscope.ui.shell.window_state`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

# Only what the frame needs is imported here: the first use of a Qt class builds its Python
# enums (``Qt`` alone takes ~18 ms), so the rest is imported where it is used, after the paint.
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QMainWindow, QWidget

from streamscope.ui.base.first_paint import restore_geometry
from streamscope.ui.base.resources import app_icon
from streamscope.ui.shell.file_drop import install_file_drop

if TYPE_CHECKING:
    # Imported by build(), after the first paint: importing them takes longer than showing
    # a bare window (asyncio, httpx, the database, Pygments …), so the frame paints first.
    import asyncio

    from PySide6.QtCore import Qt
    from PySide6.QtGui import QCloseEvent
    from PySide6.QtWidgets import QAbstractButton, QComboBox, QDialog, QDockWidget

    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.net.endpoint_store import EndpointSettings
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.net.secrets import SecretStore
    from streamscope.core.store.database import Store
    from streamscope.ui.bench.bench_opener import BenchOpener
    from streamscope.ui.tap.tap_panel import TapController, TapPanel
    from streamscope.ui.tools.power_tools import PowerTools


BUILD_MODULES = (
    "asyncio",
    "qasync",
    "streamscope.ui.base.event_loop",
    "streamscope.ui.shell.window_state",
    "streamscope.ui.chat.chat_controller",
    "streamscope.ui.chat.chat_view",
    "streamscope.ui.chat.composer",
    "streamscope.ui.chat.conversation_switcher",
    "streamscope.ui.chat.conversations_panel",
    "streamscope.ui.endpoint.demo_service",
    "streamscope.ui.endpoint.endpoint_bar",
    "streamscope.ui.shell.file_actions",
    "streamscope.ui.inspector.inspector",
    "streamscope.ui.inspector.turn_feed",
    "streamscope.ui.shell.window_menus",
    "streamscope.ui.shell.chat_wiring",
    "streamscope.ui.tap.tap_dock",
    "streamscope.ui.chat.status_panel",
    "streamscope.ui.base.theme",
    "streamscope.ui.chat.tools_panel",
    "streamscope.ui.base.focus_ring",
    "streamscope.ui.base.shortcuts",
    "streamscope.core.net.worker",
    "streamscope.core.store.database",
    "streamscope.core.capture.files",
)
"""What :meth:`MainWindow.build` imports (modules and what they import: most of the window),
loaded in a thread while the frame is on screen (:func:`streamscope.ui.shell.app.run_app`): imports
are most of the build's time, and the frame answers meanwhile. A test keeps it whole."""

AFTER_START_IMPORTS_MS = 300
"""What is not needed for the first look (the Stream menu, the single-instance listener) is
imported this long after the panels have painted: importing an extension module holds the GIL
for tens of milliseconds, which would lengthen the window's first paint."""
POWER_TOOLS_MODULES = ("streamscope.ui.tools.power_tools", "streamscope.ui.bench.bench_opener")
"""The Stream menu's tools (compare, curl, the request editor, find in frames): imported in a
thread once the panels have painted, then built (:attr:`MainWindow.power_tools`)."""


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
        self.bench: BenchOpener | None = None
        """Stream → Bench this endpoint… (made with the Stream menu)."""
        self.setWindowTitle("StreamScope")
        self.setWindowIcon(app_icon())
        self._file_drop = install_file_drop(self)  # dropped captures/bundles open
        self.setDockOptions(
            QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks
        )
        restore_geometry(self)
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
        for _step in self.building(store=store, captures=captures, demo_speed=demo_speed):
            pass

    def building(
        self,
        *,
        store: Store | None = None,
        captures: CaptureStore | None = None,
        demo_speed: float = 1.0,
    ) -> Iterator[None]:
        """:meth:`build` in steps (each a few tens of milliseconds once :data:`BUILD_MODULES`
        are imported): the app runs the event loop between them, so the window answers while
        it is built; it paints once, when built."""
        self.setUpdatesEnabled(False)  # (one paint of the whole window, not one a step)
        try:
            yield from self._building(store, captures, demo_speed)
            yield  # (the loop answers between the last step and the window's first paint)
        finally:
            self.setUpdatesEnabled(True)

    def _building(
        self,
        store: Store | None,
        captures: CaptureStore | None,
        demo_speed: float,
    ) -> Iterator[None]:
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QVBoxLayout

        from streamscope.ui.base.theme import ThemeManager, set_text_colour
        from streamscope.ui.chat.chat_controller import ChatController
        from streamscope.ui.chat.chat_view import ChatView
        from streamscope.ui.chat.composer import Composer
        from streamscope.ui.chat.conversation_switcher import ConversationSwitcher
        from streamscope.ui.chat.conversations_panel import ConversationsPanel
        from streamscope.ui.chat.status_panel import StatusPanel
        from streamscope.ui.chat.tools_panel import ToolsPanel
        from streamscope.ui.endpoint.demo_service import DemoService
        from streamscope.ui.endpoint.endpoint_bar import EndpointBar
        from streamscope.ui.inspector.inspector import InspectorPanel
        from streamscope.ui.inspector.turn_feed import InspectorFeed
        from streamscope.ui.shell import window_state
        from streamscope.ui.shell.chat_wiring import ChatWiring
        from streamscope.ui.shell.file_actions import FileActions

        assert not self.built, "MainWindow.build() runs once"
        self.theme = ThemeManager(self)  # the saved theme, before the panels are built
        self.store = store
        self.captures = captures
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
        yield

        # docks
        self.inspector = InspectorPanel(self)
        self.inspector_dock = self._dock(
            "Inspector", self.inspector.container(), Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.conversations = ConversationsPanel(store, self)
        self.conversations_dock = self._dock(
            "Conversations", self.conversations, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.tools_panel = ToolsPanel(self)
        self.tools_dock = self._dock(
            "Tools", self.tools_panel, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.tools_dock.hide()
        yield

        # status bar
        self.status = StatusPanel(self)
        self.statusBar().addWidget(self.status, 1)
        self.tls_label = QLabel("⚠ TLS verification OFF", self)
        set_text_colour(self.tls_label, "error_window", "font-weight: bold;")
        self.statusBar().addPermanentWidget(self.tls_label)
        self.tls_label.hide()

        # endpoint bar, controller, conversations, files
        self.endpoint_bar = EndpointBar(self.demo, self)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.endpoint_bar)
        self.controller = ChatController(
            chat=self.chat,
            viewer=InspectorFeed(self.inspector, captures, self),
            status=self.status,
            endpoint=self.endpoint_bar.current_endpoint,
            api_key=self.endpoint_bar.api_key,
            headers=self.endpoint_bar.headers,
            tls=self.endpoint_bar.tls,
            tools=self.tools_panel.tools,
            demo=self.demo,
            captures=captures,
            parent=self,
        )
        self.switcher = ConversationSwitcher(
            store=store,
            controller=self.controller,
            chat=self.chat,
            conversations=self.conversations,
            tools_panel=self.tools_panel,
            tools_dock=self.tools_dock,
            endpoint=self.endpoint_bar.current_endpoint,
            parent=self,
        )
        self.conversations.newRequested.connect(self.switcher.new_conversation)
        self.conversations.conversationChosen.connect(self.switcher.open_conversation)
        self.conversations.deleted.connect(self.switcher.conversation_deleted)
        self.files = FileActions(self.controller, self.status, store, self)
        self.conversations.exportRequested.connect(self.files.export_conversation)
        self.endpoint_bar.endpointChanged.connect(self.switcher.endpoint_changed)
        self.wiring = ChatWiring(self)
        self._build_tap()
        yield

        from streamscope.ui.shell.window_menus import build_menus

        self.help = build_menus(self, self)
        from streamscope.ui.base.focus_ring import FocusRing

        self.focus_ring = FocusRing(self)  # keyboard focus is always visible
        self.chat_room = window_state.restore_layout(
            self,
            self.inspector,
            chat=self.chat,
            conversations_dock=self.conversations_dock,
            inspector_dock=self.inspector_dock,
        )
        yield
        self.switcher.restore()
        self.composer.editor.setFocus()
        self.status.show_message("Ready")
        self._power_tools: PowerTools | None = None
        self.built = True
        # The Stream menu (power tools, ~0.1 s to import) is built once the panels have painted.
        from streamscope.ui.base.after_paint import call_after_paint, load_then

        # (its modules are imported in a thread first: ~0.1 s that would stall the window)
        call_after_paint(
            self,
            lambda: load_then(
                POWER_TOOLS_MODULES,
                lambda: self.power_tools,
                parent=self,
                delay_ms=AFTER_START_IMPORTS_MS,
            ),
        )

    @property
    def power_tools(self) -> PowerTools:
        """The Stream menu's tools (edit and resend, curl, compare, find …), built lazily."""
        if self._power_tools is None:
            from streamscope.ui.tools.power_tools import PowerTools

            self._power_tools = PowerTools(
                controller=self.controller,
                inspector=self.inspector,
                inspector_dock=self.inspector_dock,
                editor=self.composer.editor,
                status=self.status,
                demo=self.demo,
                secrets=self.endpoint_bar.secrets,
                current_endpoint=self.endpoint_bar.current_endpoint,
                window=self,
            )
            self.menuBar().insertMenu(self.help.menu.menuAction(), self._power_tools.menu)
            from streamscope.ui.bench.bench_opener import BenchOpener

            self.bench = BenchOpener.for_window(self)
            self._power_tools.menu.addSeparator()
            self._power_tools.menu.addAction(self.bench.action)
        return self._power_tools

    # -- kept on the window for scripts and tests ----------------------------------------

    @property
    def endpoint_combo(self) -> QComboBox:
        return self.endpoint_bar.endpoint_combo

    @property
    def model_combo(self) -> QComboBox:
        return self.endpoint_bar.model_combo

    @property
    def alt_label(self) -> QLabel:
        """The pager's label, on the answer shown last (the one it pages)."""
        card = self.controller.shown_answer_card()
        return card.alt_label if card is not None else self.endpoint_bar.alt_label

    @property
    def prev_alt(self) -> QAbstractButton:
        card = self.controller.shown_answer_card()
        return card.prev_alt if card is not None else self.endpoint_bar.prev_alt

    @property
    def endpoints(self) -> EndpointSettings:
        return self.endpoint_bar.endpoints

    def current_endpoint(self) -> Endpoint:
        return self.endpoint_bar.current_endpoint()

    def secrets(self) -> SecretStore:
        return self.endpoint_bar.secrets()

    @property
    def opening(self) -> asyncio.Task[None] | None:
        """The capture being opened by :meth:`open_capture`."""
        return self.files.opening

    def open_capture(self, path: Path, *, speed: float | None = None) -> bool:
        """Replay a capture or repro bundle through the pipeline into the window."""
        return self.files.open_capture(path, speed=speed)

    # -- building ------------------------------------------------------------------------

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        from PySide6.QtWidgets import QDockWidget

        dock = QDockWidget(title, self)
        dock.setObjectName(title.lower().replace(" ", "_") + "_dock")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_tap(self) -> None:
        from streamscope.ui.tap.tap_dock import TapDock

        self.tap_dock = TapDock(
            self,
            inspector=self.inspector,
            beside=self.conversations_dock,
            endpoints=lambda: list(self.endpoint_bar.endpoints.endpoints),
            demo=self.demo,
            tls_for=self.endpoint_bar.tls,
            busy=lambda: self.controller.busy,
            open_capture=self.open_capture,
        )
        self.tapped_dock = self.tap_dock.dock
        self.controller.busyChanged.connect(self.tap_dock.chat_busy)
        self.tap_dock.inspected.connect(self.controller.inspect_elsewhere)

    @property
    def tap(self) -> TapController:
        """The tap and its exchanges (built on first use)."""
        return self.tap_dock.tap

    @property
    def tap_panel(self) -> TapPanel:
        """The Tapped dock's list (built when the dock is first shown)."""
        return self.tap_dock.panel

    def open_tap_dialog(self) -> None:
        """Endpoint → Tap another app…"""
        self.tap_dock.open_dialog()

    def stop_or_cancel_edit(self) -> None:
        """Esc: stop the stream, or — editing, with nothing streaming — cancel the edit."""
        self.wiring.stop_or_cancel_edit()

    def show_shortcuts(self) -> QDialog:
        """Help → Keyboard shortcuts."""
        return self.help.show_shortcuts()

    @property
    def log_folder_dialog(self) -> QDialog | None:
        """Help → Open log folder's dialog, when it had to show one."""
        return self.help.log_folder_dialog

    # -- lifetime ------------------------------------------------------------------------

    def save_settings(self) -> None:
        from streamscope.ui.shell import window_state

        window_state.save(self, self.inspector)

    def bring_to_front(self) -> None:
        """Another start of the app asked this window to show itself."""
        self.showNormal()
        self.raise_()
        self.activateWindow()

    async def shutdown(self) -> None:
        """Stop a running turn, close the network and the demo server (awaited on exit)."""
        if self.built:
            self.conversations.shutdown()  # (the search and indexer threads)
        await self.files.shutdown()
        if self.bench is not None:
            await self.bench.shutdown()
        await self.controller.shutdown()

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.built:  # closed while starting: nothing to save or stop yet
            super().closeEvent(event)
            self.closed.emit()
            return
        self.save_settings()
        self.controller.stop()
        self.tap_dock.stop_and_wait()
        if self.bench is not None:
            self.bench.close()
        super().closeEvent(event)
        self.closed.emit()
