"""What the window remembers between runs, in ``config_dir()/window.ini``: its geometry, the
layout of its docks and toolbar (by objectName), the inspector's open tab and its frames
splitter. Imported before the first paint (the frame restores its geometry), so QtCore only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings

from streamscope.core import paths

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget, QMainWindow

    from streamscope.ui.inspector.inspector import InspectorPanel

__all__ = ["restore_geometry", "restore_layout", "save"]


def _settings() -> QSettings:
    return QSettings(str(paths.config_dir() / "window.ini"), QSettings.Format.IniFormat)


def restore_geometry(window: QMainWindow) -> None:
    geometry = _settings().value("geometry")
    if isinstance(geometry, QByteArray):
        window.restoreGeometry(geometry)
    else:
        window.resize(1360, 860)


def restore_layout(
    window: QMainWindow,
    inspector: InspectorPanel,
    *,
    conversations_dock: QDockWidget,
    inspector_dock: QDockWidget,
) -> None:
    """The saved layout, or the docks at their default widths the first time."""
    from PySide6.QtCore import Qt

    settings = _settings()
    state = settings.value("state")
    if isinstance(state, QByteArray):
        window.restoreState(state)
    else:
        window.resizeDocks([conversations_dock], [200], Qt.Orientation.Horizontal)
        window.resizeDocks([inspector_dock], [520], Qt.Orientation.Horizontal)
    tab = settings.value("inspector_tab", 0)
    inspector.setCurrentIndex(int(str(tab)) if str(tab).isdigit() else 0)
    frames_split = settings.value("frames_splitter")
    if isinstance(frames_split, QByteArray):
        inspector.frames_panel.splitter.restoreState(frames_split)


def save(window: QMainWindow, inspector: InspectorPanel) -> None:
    settings = _settings()
    settings.setValue("geometry", window.saveGeometry())
    settings.setValue("state", window.saveState())
    settings.setValue("inspector_tab", inspector.currentIndex())
    settings.setValue("frames_splitter", inspector.frames_panel.splitter.saveState())
    settings.sync()
