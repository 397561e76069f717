"""Drag and drop of captures and repro bundles onto the window: the dropped file opens as if
chosen with File > Open capture (or given on the command line).

An event filter on the main window, so main_window.py only installs it. A drag is accepted
only when it carries at least one local file with a suffix in :data:`OPENABLE_SUFFIXES` and
the window is built; of several such files the first one opens (the window replays one
capture at a time). The filter also watches the window's children through the application
(a text field such as the composer would otherwise take a dropped capture as its path's
text); other drags (text, other files) reach them as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QWidget

OPENABLE_SUFFIXES: tuple[str, ...] = (".sscap", ".zip")
"""What a drop opens: captures and repro bundles (the same suffixes the command line takes)."""


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
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)
        app = QApplication.instance()
        if app is not None:  # drags over child widgets (removed when this filter is deleted)
            app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            return False
        if watched is not self._widget:
            # a child of our window (the composer's text field...): only drags we open
            assert isinstance(event, QDropEvent)  # (QDragEnterEvent/QDragMoveEvent derive from it)
            inside = isinstance(watched, QWidget) and watched.window() is self._widget
            if not (inside and self._ready() and openable_paths(event.mimeData())):
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
    """Make ``window`` (the main window) open dropped captures and bundles."""
    return FileDropFilter(
        window,
        lambda path: window.open_capture(path, speed=None),  # type: ignore[attr-defined]
        ready=lambda: bool(getattr(window, "built", False)),
    )
