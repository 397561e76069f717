"""The Tapped dock beside Conversations, and the tap behind it: its controller, its list and
its dialog, each built on first use (the dock first shown, a tap first opened), not with the
window."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

if TYPE_CHECKING:
    from pathlib import Path

    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.net.options import TLSOptions
    from streamscope.ui.endpoint.demo_service import DemoService
    from streamscope.ui.inspector.inspector import InspectorPanel
    from streamscope.ui.tap.tap_dialog import TapDialog
    from streamscope.ui.tap.tap_panel import TapController, TapPanel
    from streamscope.ui.tap.tapped import TappedExchange

__all__ = ["CHAT_KEEPS", "TapDock"]

CHAT_KEEPS = 480
"""The chat column's width (px) the Tapped dock never takes when it widens itself."""


class TapDock(QObject):
    """The dock (:attr:`dock`, hidden until a tap is opened, then a tab beside ``beside``),
    :attr:`tap`, :attr:`panel` and :attr:`dialog` (see the module docstring).
    ``inspected(ref, turn, frames)``: the inspector shows a tapped exchange now (``turn``:
    its end, once it has ended)."""

    inspected = Signal(object, object, int)

    def __init__(
        self,
        window: QMainWindow,
        *,
        inspector: InspectorPanel,
        beside: QDockWidget,
        endpoints: Callable[[], list[Endpoint]],
        demo: DemoService,
        tls_for: Callable[[Endpoint], TLSOptions],
        busy: Callable[[], bool],
        open_capture: Callable[[Path], object] | None = None,
    ) -> None:
        """``open_capture``: opens an earlier tapped exchange's capture (the window's)."""
        super().__init__(window)
        self._window = window
        self._inspector = inspector
        self._beside = beside
        self._endpoints = endpoints
        self._demo = demo
        self._tls_for = tls_for
        self._busy = busy
        self._open_capture = open_capture
        self._widened = False
        self._tap: TapController | None = None
        self._panel: TapPanel | None = None
        self.dialog: TapDialog | None = None
        """The tap's dialog, once opened."""
        self.dock = QDockWidget("Tapped", window)
        self.dock.setObjectName("tapped_dock")
        self.dock.setWidget(QWidget(window))
        window.addDockWidget(window.dockWidgetArea(beside), self.dock)
        # Hidden until a tap is opened, then a tab beside Conversations (a tab group from the
        # start would be sized by Qt as one, squeezing Conversations to its minimum width).
        self.dock.hide()
        self.dock.visibilityChanged.connect(self._on_dock_visibility_changed)

    @property
    def started(self) -> bool:
        """Whether the tap's controller has been built."""
        return self._tap is not None

    @property
    def tap(self) -> TapController:
        """The tap (started from its dialog) and its exchanges; built on first use."""
        if self._tap is None:
            from streamscope.ui.tap.tap_panel import TapController

            self._tap = TapController(self._inspector, busy=self._busy, parent=self._window)
            self._tap.exchangeShown.connect(self._on_tap_exchange_shown)
        return self._tap

    def _on_tap_exchange_shown(self, item: TappedExchange) -> None:
        frames = item.result.frames if item.result is not None else 0
        self.inspected.emit(item.ref(), item.turn, frames)

    @property
    def panel(self) -> TapPanel:
        """The Tapped dock's list; built when the dock is first shown."""
        if self._panel is None:
            from streamscope.core.paths import capture_dir
            from streamscope.ui.tap.tap_panel import TapPanel

            panel = self._panel = TapPanel(
                self.tap, self._window, folder=capture_dir(), open_capture=self._open_capture
            )
            panel.open_dialog.clicked.connect(self.open_dialog)
            placeholder = self.dock.widget()
            self.dock.setWidget(panel)
            if placeholder is not None:
                placeholder.deleteLater()
        return self._panel

    def _on_dock_visibility_changed(self, visible: bool) -> None:
        if visible and self._panel is None:
            self.panel  # noqa: B018 (built as it is shown)
        if visible:
            self._widen_once()

    def open_dialog(self) -> None:
        """Endpoint → Tap another app…: the tap's dialog (one, not modal)."""
        from streamscope.ui.tap.tap_dialog import TapDialog

        self.panel  # noqa: B018 (the Tapped list, shown below, lists what the tap takes)
        if self.dialog is None:
            self.dialog = TapDialog(
                self.tap, self._endpoints(), self._demo, self._window, tls_for=self._tls_for
            )
        self.dialog.show()
        self.dialog.raise_()
        window = self._window
        if self.dock.isHidden() and not window.tabifiedDockWidgets(self.dock):
            window.tabifyDockWidget(self._beside, self.dock)
        self.dock.show()
        self.dock.raise_()
        self._widen_once()

    def _widen_once(self) -> None:
        """Widen the dock (:meth:`_widen`) the first time this window shows it — opened, or
        restored as the last session left it, maybe in a smaller window — once it has its
        place in the layout; later, the width the user gives it stays."""
        if not self._widened:
            self._widened = True
            QTimer.singleShot(0, self, self._widen)  # (not after the window has gone)

    def _widen(self, tries: int = 20) -> None:
        """Conversations' column may be narrower than a tapped row: widen it to the row's
        width, taking the room from the chat only past :data:`CHAT_KEEPS` px (the chat has
        priority), the rest from the widest dock on the other side (the inspector)."""
        window, central = self._window, self._window.centralWidget()
        if not (window.isVisible() and self.dock.isVisible()):  # (restored before shown)
            if tries:
                QTimer.singleShot(100, self, lambda: self._widen(tries - 1))
            return
        have = self.dock.width()
        need = self.panel.sizeHint().width() - have
        if need <= 0 or central is None:
            return
        rest = need - min(need, max(0, central.width() - CHAT_KEEPS))
        docks, sizes = [self.dock], [have + need]
        sides = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
        mine = window.dockWidgetArea(self.dock)
        others = [
            d
            for d in window.findChildren(QDockWidget)
            if d.isVisible()
            and window.dockWidgetArea(d) in sides
            and window.dockWidgetArea(d) != mine
        ]
        if rest > 0 and others:
            widest = max(others, key=lambda d: d.width())
            docks.append(widest)
            sizes.append(widest.width() - rest)
        window.resizeDocks(docks, sizes, Qt.Orientation.Horizontal)

    def chat_busy(self, busy: bool) -> None:
        """A chat turn started (it streams into the inspector now)."""
        if busy and self._tap is not None:
            self._tap.release_inspector()

    def stop_and_wait(self) -> None:
        """The window closes: stop the tap, if one was built."""
        if self._tap is not None:
            self._tap.stop_and_wait()
