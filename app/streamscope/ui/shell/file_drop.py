"""Drag and drop of captures, repro bundles and HAR files onto the window: a capture or bundle
opens as if chosen with File > Open capture (or given on the command line), a HAR file is
imported as with File > Import HAR….

An event filter on the main window, so main_window.py only installs it. A drag is accepted
only when it carries at least one local file with a suffix in :data:`OPENABLE_SUFFIXES` and
the window is built; of several such files the first one opens (the window replays one
capture at a time). The filter also watches the window's QWindow, which a drag reaches before
any of the window's children (a text field such as the composer would otherwise take a
dropped capture as its path's text); other drags (text, other files) reach them as before.
(Not the application's every event: a Python filter there costs ~3 µs an event, thousands
while the window is built, and every event after.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QWindow
from PySide6.QtWidgets import QWidget

OPENABLE_SUFFIXES: tuple[str, ...] = (".sscap", ".zip", ".har")
"""What a drop opens: captures and repro bundles (the suffixes the command line takes) and
HAR files (imported)."""


def openable_paths(mime: QMimeData, suffixes: Sequence[str] = OPENABLE_SUFFIXES) -> list[Path]:
    """The local files in a drag's data whose suffix is one we open, in the dragged order."""
    if not mime.hasUrls():
        return []
    paths = []
    for url in mime.urls():
        if not url.isLocalFile():
            continue
        path = Path(url.toLocalFile())
        if path.name.lower().endswith(tuple(suffixes)):
            paths.append(path)
    return paths


class FileDropFilter(QObject):
    """Accepts drags of openable files on ``widget`` and calls ``open_file`` on a drop."""

    def __init__(
        self,
        widget: QWidget,
        open_file: Callable[[Path], object],
        *,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(widget)
        self._widget = widget
        self._open_file = open_file
        self._ready = ready
        self._handle: QWindow | None = None
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)
        self._watch_handle()

    def _watch_handle(self) -> None:
        """Watch the window's QWindow (it has one once shown): drags over the children."""
        handle = self._widget.windowHandle()
        if handle is not None and handle is not self._handle:
            self._handle = handle
            handle.installEventFilter(self)  # (removed when this filter is deleted)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            if kind == QEvent.Type.Show and watched is self._widget:
                self._watch_handle()
            return False
        if watched is not self._widget:
            # the window's QWindow, before any child (the composer's text field…) gets the
            # drag: only drags we open, the others go on to the widget under the cursor
            assert isinstance(event, QDropEvent)  # (QDragEnterEvent/QDragMoveEvent derive from it)
            if not (self._ready() and openable_paths(event.mimeData())):
                return False
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragEnterEvent | QDragMoveEvent)
            if self._ready() and openable_paths(event.mimeData()):
                event.acceptProposedAction()
                return True
            event.ignore()
            return False
        if kind == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            paths = openable_paths(event.mimeData())
            if not (self._ready() and paths):
                event.ignore()
                return False
            event.acceptProposedAction()
            self._open_file(paths[0])
            return True
        return False


def install_file_drop(window: QWidget) -> FileDropFilter:
    """Make ``window`` (the main window) open dropped captures and bundles, and import
    dropped HAR files."""

    def open_file(path: Path) -> object:
        if path.name.lower().endswith(".har"):
            return window.files.import_har(path)  # type: ignore[attr-defined]
        return window.open_capture(path, speed=None)  # type: ignore[attr-defined]

    return FileDropFilter(window, open_file, ready=lambda: bool(getattr(window, "built", False)))
