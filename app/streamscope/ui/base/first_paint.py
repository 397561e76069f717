"""What the window's frame needs before its first paint: its geometry and the palette of the
chosen theme (View → Theme), both from ``window.ini``.

Imported before the first paint, so it is small and loads only QtCore/QtGui classes the frame
needs anyway: not the ``Qt`` namespace (its ~100 enums take ~25 ms to load; only a chosen
Light/Dark theme, told to Qt, loads it here). :mod:`~streamscope.ui.base.theme` re-exports the
theme's part; :mod:`~streamscope.ui.shell.window_state` the geometry's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from streamscope.core import paths

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

__all__ = [
    "MODES",
    "PALETTES",
    "apply_saved_theme",
    "apply_theme",
    "build_palette",
    "is_dark",
    "request_scheme",
    "restore_geometry",
    "save_system_dark",
    "saved_mode",
    "saved_system_dark",
    "system_scheme_dark",
    "window_settings",
]

MODES = ("system", "light", "dark")
"""The themes the View menu offers; ``system`` (the default) follows the OS."""

_R = QPalette.ColorRole

PALETTES: dict[bool, dict[QPalette.ColorRole, str]] = {
    # dark?: role -> colour (used whenever the OS palette does not match the chosen theme)
    False: {
        _R.Window: "#f6f8fa",
        _R.WindowText: "#1f2328",
        _R.Base: "#ffffff",
        _R.AlternateBase: "#f0f2f5",
        _R.Text: "#1f2328",
        _R.PlaceholderText: "#59636e",
        _R.Button: "#eef1f4",
        _R.ButtonText: "#1f2328",
        _R.BrightText: "#ffffff",
        _R.Highlight: "#0969da",
        _R.HighlightedText: "#ffffff",
        _R.ToolTipBase: "#ffffff",
        _R.ToolTipText: "#1f2328",
        _R.Link: "#0969da",
        _R.LinkVisited: "#8250df",
        _R.Light: "#ffffff",
        _R.Midlight: "#e6e9ed",
        _R.Mid: "#c8ced5",
        _R.Dark: "#8c959f",
        _R.Shadow: "#57606a",
    },
    True: {
        _R.Window: "#1f2329",
        _R.WindowText: "#e6edf3",
        _R.Base: "#161b22",
        _R.AlternateBase: "#1c2128",
        _R.Text: "#e6edf3",
        _R.PlaceholderText: "#9198a1",
        _R.Button: "#2a3038",
        _R.ButtonText: "#e6edf3",
        _R.BrightText: "#ffffff",
        _R.Highlight: "#1f6feb",
        _R.HighlightedText: "#ffffff",
        _R.ToolTipBase: "#2a3038",
        _R.ToolTipText: "#e6edf3",
        _R.Link: "#58a6ff",
        _R.LinkVisited: "#bc8cff",
        _R.Light: "#3d444d",
        _R.Midlight: "#30363d",
        _R.Mid: "#262c34",
        _R.Dark: "#0d1117",
        _R.Shadow: "#010409",
    },
}

_DISABLED_TEXT = {False: "#8c959f", True: "#6e7681"}


def is_dark(palette: QPalette) -> bool:
    """Whether the palette is a dark theme."""
    return palette.color(_R.Window).lightness() < 128


def build_palette(dark: bool) -> QPalette:
    """The window's palette for a theme (every group; disabled text dimmed)."""
    palette = QPalette()
    for role, value in PALETTES[dark].items():
        palette.setColor(role, QColor(value))
    for role in (_R.WindowText, _R.Text, _R.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(_DISABLED_TEXT[dark]))
    return palette


def window_settings() -> QSettings:
    """``config_dir()/window.ini``: what the window remembers between runs."""
    return QSettings(str(paths.config_dir() / "window.ini"), QSettings.Format.IniFormat)


DEFAULT_SIZE = (1360, 860)
"""The window's size the first time, where the screen has room for it."""
FRAME_ROOM = (16, 48)
"""Left of the screen's free area for the window's frame (its title bar, its borders: not
known before the window is shown)."""


def restore_geometry(window: QMainWindow) -> None:
    """The window's size and place as it was left (:data:`DEFAULT_SIZE` the first time),
    never larger than the free area of its screen (the default was wider than a 1280×800
    screen; a size saved on a larger screen would be too)."""
    geometry = window_settings().value("geometry")
    room = (0, 0)  # (a saved geometry is the frame's: Qt fits the frame to the screen)
    if isinstance(geometry, QByteArray) and window.restoreGeometry(geometry):
        if window.isMaximized() or window.isFullScreen():
            return  # (the screen's size whatever it is)
        width, height = window.width(), window.height()
    else:
        (width, height), room = DEFAULT_SIZE, FRAME_ROOM
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        free = screen.availableGeometry()
        width = min(width, free.width() - room[0])
        height = min(height, free.height() - room[1])
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)


def saved_mode() -> str:
    """The theme chosen in View → Theme (``system`` until one is)."""
    mode = str(window_settings().value("appearance/theme", "system"))
    return mode if mode in MODES else "system"


def request_scheme(mode: str) -> None:
    """Tell Qt the scheme chosen (Qt 6.8+), so what the platform draws itself (title bars,
    native dialogs) follows; ``system`` withdraws the request (the OS's scheme again)."""
    from PySide6.QtCore import Qt

    schemes = {"light": Qt.ColorScheme.Light, "dark": Qt.ColorScheme.Dark}
    hints = QGuiApplication.styleHints()
    if hasattr(hints, "setColorScheme"):
        hints.setColorScheme(schemes.get(mode, Qt.ColorScheme.Unknown))


_SCHEME_SEEN = "appearance/system_scheme"
"""The OS colour scheme the last run saw (``dark``, ``light``; absent: not known)."""


def saved_system_dark() -> bool | None:
    """Whether the OS colour scheme was dark when last asked (``None``: not known)."""
    return {"dark": True, "light": False}.get(str(window_settings().value(_SCHEME_SEEN, "")))


def save_system_dark(dark: bool | None) -> None:
    """Remember the OS colour scheme for the next start's first paint (if it changed)."""
    value = "" if dark is None else ("dark" if dark else "light")
    settings = window_settings()
    if str(settings.value(_SCHEME_SEEN, "")) != value:
        settings.setValue(_SCHEME_SEEN, value)


def apply_saved_theme() -> bool:
    """The theme chosen in View → Theme, before the window's first paint; whether it is dark.

    ``system`` goes by the OS scheme the last run saw: asking the platform now would load the
    whole ``Qt`` namespace before the first paint (~25 ms, a tenth of it). The window's
    :class:`~streamscope.ui.base.theme.ThemeManager` asks once the frame has painted (a scheme
    changed since, or a first run where the platform's palette does not match it, is put
    right then)."""
    mode = saved_mode()
    if mode == "system":  # (nothing was requested yet: nothing to withdraw)
        return apply_theme(mode, system_dark=saved_system_dark())
    request_scheme(mode)
    return apply_theme(mode)


def system_scheme_dark() -> bool | None:
    """Whether the OS colour scheme is dark (``None``: the platform does not say)."""
    from PySide6.QtCore import Qt

    scheme = QGuiApplication.styleHints().colorScheme()
    return None if scheme == Qt.ColorScheme.Unknown else scheme == Qt.ColorScheme.Dark


def apply_theme(mode: str, *, system_dark: bool | None = None) -> bool:
    """Give the application the palette of ``mode``; whether it is dark. ``system`` keeps
    the platform's own palette when it matches the OS scheme (``system_dark``; ``None``: not
    known, the platform's palette as it is), else uses the table's."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return mode == "dark" or (mode == "system" and bool(system_dark))
    if mode == "system":
        app.setPalette(QPalette())  # the platform's own palette, when it fits the scheme
        native_dark = is_dark(app.palette())
        if system_dark is None or native_dark == system_dark:
            return native_dark
    dark = mode == "dark" or (mode == "system" and bool(system_dark))
    palette = build_palette(dark)
    if app.palette() != palette:
        app.setPalette(palette)
    return dark
