"""Stream → Bench this endpoint…: opens (and raises) the one Bench window, and opens a
request it points at in the main window's inspector.

pyqtgraph and numpy (~0.9 s to import cold) are imported only when the bench is first asked
for, in a thread (:func:`~streamscope.ui.base.after_paint.load_then`), so the main window
never waits for them — neither at start-up nor when the menu item is chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow

from streamscope.core import paths
from streamscope.core.net.endpoints import Endpoint

if TYPE_CHECKING:
    from streamscope.ui.bench.bench_window import BenchTarget, BenchWindow
    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.status_panel import StatusPanel
    from streamscope.ui.endpoint.demo_service import DemoService
    from streamscope.ui.endpoint.endpoint_bar import EndpointBar
    from streamscope.ui.inspector.inspector import InspectorPanel

__all__ = ["BENCH_MODULES", "BenchOpener"]

BENCH_MODULES = ("numpy", "pyqtgraph", "streamscope.ui.bench.bench_window")


class BenchHost(Protocol):
    """What the bench reaches in the main window."""

    controller: ChatController
    inspector: InspectorPanel
    status: StatusPanel
    demo: DemoService
    endpoint_bar: EndpointBar

    def current_endpoint(self) -> Endpoint: ...

    def open_capture(self, path: Path, *, speed: float | None = None) -> bool: ...


class BenchOpener(QObject):
    """See the module docstring."""

    def __init__(
        self,
        window: QMainWindow,
        *,
        controller: ChatController,
        inspector: InspectorPanel,
        status: StatusPanel,
        demo: DemoService,
        current_endpoint: Callable[[], Endpoint],
        api_key: Callable[[Endpoint], str | None],
        open_capture: Callable[[Path], bool],
    ) -> None:
        super().__init__(window)
        self._window = window
        self._controller = controller
        self._inspector = inspector
        self._status = status
        self._demo = demo
        self._endpoint = current_endpoint
        self._api_key = api_key
        self._open_capture = open_capture
        self.bench_window: BenchWindow | None = None
        self._loading = False
        self._pending_frame: int | None = None
        self.action = QAction("&Bench this endpoint…", window)
        self.action.setToolTip("Load the current endpoint with many requests and plot it")
        self.action.triggered.connect(self.open)

    @classmethod
    def for_window(cls, window: BenchHost) -> BenchOpener:
        assert isinstance(window, QMainWindow)
        return cls(
            window,
            controller=window.controller,
            inspector=window.inspector,
            status=window.status,
            demo=window.demo,
            current_endpoint=window.current_endpoint,
            api_key=window.endpoint_bar.api_key,
            open_capture=lambda path: window.open_capture(path, speed=None),
        )

    def open(self) -> None:
        """Show the Bench window (built once its modules are imported)."""
        if self.bench_window is not None:
            self._raise()
            return
        if self._loading:
            return
        from streamscope.ui.base.after_paint import load_then

        self._loading = True
        self._status.show_message("Opening the bench…")
        load_then(BENCH_MODULES, self._build, parent=self)

    def _build(self) -> None:
        from streamscope.ui.bench.bench_settings import DEMO_BENCH_MODEL
        from streamscope.ui.bench.bench_window import BenchWindow

        self._loading = False
        endpoint = self._endpoint()
        model = DEMO_BENCH_MODEL if endpoint.is_demo else (endpoint.model or "")
        self.bench_window = BenchWindow(
            target=self._target,
            open_at=self.open_at,
            runs_dir=paths.data_dir() / "bench",
            model=model,
        )
        self.bench_window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self._status.show_message("")
        self._raise()

    def _raise(self) -> None:
        assert self.bench_window is not None
        self.bench_window.show()
        self.bench_window.raise_()
        self.bench_window.activateWindow()

    async def _target(self) -> BenchTarget:
        from streamscope.ui.bench.bench_window import BenchTarget

        endpoint = self._endpoint()
        dialect = endpoint.dialect if endpoint.dialect != "auto" else "openai"
        if endpoint.is_demo:
            await self._demo.ensure_started()
            base_url = self._demo.base_url(dialect)
        else:
            base_url = endpoint.base_url
        return BenchTarget(endpoint.name, base_url, dialect, self._api_key(endpoint))

    # -- a request in the inspector ----------------------------------------------------------

    def open_at(self, path: Path, frame: int) -> bool:
        """Replay ``path`` into the main window, then show frame ``frame`` of it in the
        inspector (the Frames tab, selected). ``False`` while a turn streams."""
        if self._controller.busy or not self._open_capture(path):
            self._status.show_message("Stop the turn in progress to open a bench request")
            return False
        if self._pending_frame is None:
            self._controller.busyChanged.connect(self._on_busy_changed)
        self._pending_frame = frame
        self._window.raise_()
        self._window.activateWindow()
        return True

    def _on_busy_changed(self, busy: bool) -> None:
        if busy or self._pending_frame is None:
            return
        self._controller.busyChanged.disconnect(self._on_busy_changed)
        frame, self._pending_frame = self._pending_frame, None
        self._inspector.show_frame(frame)

    def close(self) -> None:
        """The main window closes: stop a run and close the bench window."""
        if self.bench_window is not None:
            self.bench_window.close()  # (stops a run)

    async def shutdown(self) -> None:
        """Wait (up to 5 s, off this thread) for a stopped run to close its load process."""
        window = self.bench_window
        if window is None or window.bench is None:
            return
        import asyncio

        window.bench.stop()
        await asyncio.get_running_loop().run_in_executor(None, window.bench.join, 5.0)
