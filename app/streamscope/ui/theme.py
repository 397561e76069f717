"""Light, dark and the system's theme, and every custom colour of the window.

One table per kind of colour, each with a light and a dark value:

- :data:`TEXT`: colours text is drawn in, each with the background it is drawn on (a palette
  role, and optionally a translucent fill laid over it); a test holds every pair to the WCAG
  AA ratio of 4.5:1 in both themes.
- :data:`MARKS`: non-text marks (timeline bars, chart bars, card edges): 3:1 against the base.
- :data:`FILLS`: translucent backgrounds the palette's own text is drawn on (highlights).

Widgets ask :func:`colour` (or :func:`set_text_colour` for a label) rather than holding a
hex code; :class:`ThemeManager` applies the chosen theme (``system`` follows the OS colour
scheme while running) and the text zoom of the chat and the inspector, both persisted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from PySide6.QtCore import QEvent, QObject, QSettings, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from streamscope.core import paths

if TYPE_CHECKING:
    from collections.abc import Sequence

    from PySide6.QtCore import Qt
    from PySide6.QtGui import QAction, QFont
    from PySide6.QtWidgets import QMenu

# This module is imported before the window's first paint (to paint it in the chosen theme):
# what only the menu, the fonts or the code blocks need is imported where it is used, and so
# is the ``Qt`` namespace (loading its ~100 enums takes ~25 ms; see apply_saved_theme()).

__all__ = [
    "FILLS",
    "MARKS",
    "MODES",
    "PALETTES",
    "TEXT",
    "Swatch",
    "ThemeManager",
    "apply_saved_theme",
    "apply_theme",
    "colour",
    "contrast",
    "is_dark",
    "monospace_font",
    "request_scheme",
    "rgba",
    "save_system_dark",
    "saved_mode",
    "saved_system_dark",
    "set_text_colour",
    "system_scheme_dark",
    "text_fill",
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


class Swatch(NamedTuple):
    """A text colour for each theme and what it is drawn on: the palette role ``on`` with,
    when given, a translucent fill (``#AARRGGBB``) laid over it."""

    light: str
    dark: str
    on: QPalette.ColorRole = _R.Base
    fill_light: str = ""
    fill_dark: str = ""

    def text(self, dark: bool) -> str:
        return self.dark if dark else self.light

    def fill(self, dark: bool) -> str:
        return self.fill_dark if dark else self.fill_light


TEXT: dict[str, Swatch] = {
    # outcomes (chat footers, inspector header, tap list, status bar glyph)
    "ok": Swatch("#1a7f37", "#3fb950"),
    "ok_window": Swatch("#116329", "#3fb950", _R.Window),
    "warning": Swatch("#9a6700", "#d29922"),
    "warning_window": Swatch("#7d4e00", "#d29922", _R.Window),
    "cancelled": Swatch("#59636e", "#9198a1"),
    "cancelled_window": Swatch("#59636e", "#9198a1", _R.Window),
    "error": Swatch("#cf222e", "#f85149"),
    "error_window": Swatch("#c2161f", "#ff7b72", _R.Window),
    # a silence (amber), on the inspector and in the timeline's shaded band
    "silence": Swatch("#9a4f00", "#f0883e", _R.Window),
    "silence_band": Swatch("#8a4600", "#f0883e", _R.Base, "#2de07a1e", "#2de07a1e"),
    # the request editor's / compare view's diff spans
    "diff_removed": Swatch("#82071e", "#ffdcd7", _R.Base, "#ffffebe9", "#ff5d0f12"),
    "diff_added": Swatch("#116329", "#aff5b4", _R.Base, "#ffdafbe1", "#ff033a16"),
    # frames list: kind of frame, on its tinted row
    "frame_comment": Swatch("#59636e", "#9198a1"),
    "frame_terminal": Swatch("#116329", "#56d364", _R.Base, "#281ea046", "#281ea046"),
    "frame_malformed": Swatch("#8a4600", "#f0883e", _R.Base, "#2dff9600", "#2dff9600"),
    "frame_error": Swatch("#a40e26", "#ff7b72", _R.Base, "#32ff3c3c", "#32ff3c3c"),
    "frame_reasoning": Swatch("#6639ba", "#bc8cff"),
    "frame_invalid": Swatch("#953800", "#ffa657", _R.Base, "#37ff6428", "#37ff6428"),
    # the frame detail's marked bytes
    "mark": Swatch("#953800", "#ffa657", _R.Base, "#46ffaa00", "#46ffaa00"),
    # the frames panel's banner (amber box)
    "banner": Swatch("#6f4a00", "#f2cc60", _R.Window, "#3cffaa00", "#3cffaa00"),
}

MARKS: dict[str, tuple[str, str]] = {
    # non-text marks: (light, dark), at least 3:1 against Base
    "timeline_request": ("#6e7781", "#8b949e"),
    "timeline_headers": ("#3b6fc4", "#6e9fe8"),
    "timeline_first_byte": ("#1f7fbf", "#4fb0f0"),
    "timeline_reasoning": ("#7b5cc4", "#a98ae6"),
    "timeline_token": ("#1f8a4c", "#3fb950"),
    "timeline_terminal": ("#176b37", "#56d364"),
    "gap": ("#1f7fbf", "#4fb0f0"),
    "silence_mark": ("#c4620a", "#f0883e"),
}

FILLS: dict[str, tuple[str, str]] = {
    # translucent backgrounds (#AARRGGBB) under the palette's Text: 4.5:1 on them too
    "find_match": ("#5affd600", "#5ad6a000"),
    "compare_diff": ("#32ffaa00", "#46bb8009"),
    "compare_only": ("#287878ff", "#467878ff"),
    "decode_band": ("#2328a05a", "#2328a05a"),
}


def is_dark(palette: QPalette) -> bool:
    """Whether the palette is a dark theme."""
    return palette.color(_R.Window).lightness() < 128


def _app_palette() -> QPalette:
    return QGuiApplication.palette()


def colour(name: str, palette: QPalette | None = None) -> QColor:
    """The colour ``name`` (from :data:`TEXT`, :data:`MARKS` or :data:`FILLS`) for the theme
    of ``palette`` (default: the application's)."""
    dark = is_dark(palette if palette is not None else _app_palette())
    if name in TEXT:
        return QColor(TEXT[name].text(dark))
    if name in MARKS:
        return QColor(MARKS[name][dark])
    return QColor(FILLS[name][dark])


def text_fill(name: str, palette: QPalette | None = None) -> QColor | None:
    """The translucent background of the :data:`TEXT` colour ``name`` (``None``: none)."""
    dark = is_dark(palette if palette is not None else _app_palette())
    fill = TEXT[name].fill(dark)
    return QColor(fill) if fill else None


def rgba(c: QColor | None) -> str:
    """``c`` for a style sheet (``transparent`` for ``None``)."""
    if c is None:
        return "transparent"
    return f"rgba({c.red()}, {c.green()}, {c.blue()}, {c.alpha()})"


def css(name: str, palette: QPalette | None = None) -> str:
    """``color: #rrggbb;`` for a style sheet."""
    return f"color: {colour(name, palette).name()};"


_PROPERTY = "streamscopeTextColour"
_EXTRA = "streamscopeTextStyle"


def set_text_colour(widget: QWidget, name: str | None, extra: str = "") -> None:
    """Draw ``widget``'s text in the colour ``name`` (``None``: the palette's), with ``extra``
    style-sheet declarations; kept when the theme changes."""
    widget.setProperty(_PROPERTY, name or "")
    widget.setProperty(_EXTRA, extra)
    _restyle(widget)


def _restyle(widget: QWidget) -> None:
    name = widget.property(_PROPERTY)
    extra = widget.property(_EXTRA) or ""
    style = (css(name) if name else "") + (f" {extra}" if extra else "")
    if widget.styleSheet() != style.strip():
        widget.setStyleSheet(style.strip())


def refresh_text_colours() -> None:
    """Re-apply :func:`set_text_colour` to every widget that has one (the theme changed)."""
    for widget in QApplication.allWidgets():
        if widget.property(_PROPERTY) is not None:
            _restyle(widget)


def _luminance(c: QColor) -> float:
    def channel(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())


def over(fill: QColor, background: QColor) -> QColor:
    """``fill`` (translucent) composited over the opaque ``background``."""
    a = fill.alphaF()
    return QColor.fromRgbF(
        fill.redF() * a + background.redF() * (1 - a),
        fill.greenF() * a + background.greenF() * (1 - a),
        fill.blueF() * a + background.blueF() * (1 - a),
    )


def contrast(a: QColor, b: QColor) -> float:
    """The WCAG 2 contrast ratio of two opaque colours (1 … 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def build_palette(dark: bool) -> QPalette:
    """The window's palette for a theme (every group; disabled text dimmed)."""
    palette = QPalette()
    for role, value in PALETTES[dark].items():
        palette.setColor(role, QColor(value))
    for role in (_R.WindowText, _R.Text, _R.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(_DISABLED_TEXT[dark]))
    return palette


def monospace_font() -> QFont:
    """The fixed-pitch family, with no size of its own: it follows the text zoom."""
    from PySide6.QtGui import QFont

    from streamscope.ui.code_highlight import monospace_family

    font = QFont()
    font.setFamilies([monospace_family()])
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    return font


def _settings() -> QSettings:
    return QSettings(str(paths.config_dir() / "window.ini"), QSettings.Format.IniFormat)


def saved_mode() -> str:
    """The theme chosen in View → Theme (``system`` until one is)."""
    mode = str(_settings().value("appearance/theme", "system"))
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
    return {"dark": True, "light": False}.get(str(_settings().value(_SCHEME_SEEN, "")))


def save_system_dark(dark: bool | None) -> None:
    """Remember the OS colour scheme for the next start's first paint (if it changed)."""
    value = "" if dark is None else ("dark" if dark else "light")
    settings = _settings()
    if str(settings.value(_SCHEME_SEEN, "")) != value:
        settings.setValue(_SCHEME_SEEN, value)


def apply_saved_theme() -> bool:
    """The theme chosen in View → Theme, before the window's first paint; whether it is dark.

    ``system`` goes by the OS scheme the last run saw: asking the platform now would load the
    whole ``Qt`` namespace before the first paint (~25 ms, a tenth of it). The window's
    :class:`ThemeManager` asks once the frame has painted (a scheme changed since, or a first
    run where the platform's palette does not match it, is put right then)."""
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


ZOOM_STEPS = (70, 80, 90, 100, 110, 125, 150, 175, 200)
"""Text zoom of the chat and the inspector, in percent."""


class ThemeManager(QObject):
    """Applies the theme (``system`` follows the OS colour scheme) and the text zoom; the
    View menu's Theme items and zoom shortcuts are built by :meth:`add_actions`."""

    themeChanged = Signal(bool)
    """The palette was replaced: dark or not."""
    zoomChanged = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        settings = _settings()
        self._mode = saved_mode()
        try:
            zoom = int(str(settings.value("appearance/zoom", 100)))
        except ValueError:
            zoom = 100
        self._zoom = zoom if zoom in ZOOM_STEPS else 100
        self._zoomed: list[tuple[QWidget, float]] = []
        self._mode_actions: dict[str, QAction] = {}
        self.dark = False
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(self._on_color_scheme_changed)
        self.apply()

    # -- theme --------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        """Use ``mode`` (one of :data:`MODES`) now and on the next start."""
        if mode not in MODES:
            raise ValueError(f"unknown theme {mode!r}")
        self._mode = mode
        _settings().setValue("appearance/theme", mode)
        action = self._mode_actions.get(mode)
        if action is not None:
            action.setChecked(True)
        self.apply()

    def system_is_dark(self) -> bool | None:
        """Whether the OS scheme is dark (``None``: not known)."""
        return system_scheme_dark()

    def _on_color_scheme_changed(self, _scheme: Qt.ColorScheme) -> None:
        if self._mode == "system":
            self.apply()

    def apply(self) -> None:
        """Set the application palette for the current mode (and the OS's scheme)."""
        request_scheme(self._mode)  # (first: withdrawing a request changes what the OS says)
        system_dark = self.system_is_dark()
        if self._mode == "system":
            save_system_dark(system_dark)  # (the next start paints its frame by it)
        self._changed(apply_theme(self._mode, system_dark=system_dark))

    def _changed(self, dark: bool) -> None:
        self.dark = dark
        # (Qt posts the change to the widgets: deliver it now, so the switch is whole)
        QApplication.sendPostedEvents(None, QEvent.Type.ApplicationPaletteChange)
        refresh_text_colours()
        self.themeChanged.emit(dark)

    # -- zoom ---------------------------------------------------------------------------

    @property
    def zoom(self) -> int:
        """The text zoom of the chat and the inspector, in percent."""
        return self._zoom

    def zoom_widget(self, widget: QWidget) -> None:
        """Scale ``widget``'s font (and its children's) with the zoom."""
        self._zoomed.append((widget, widget.font().pointSizeF()))
        self._apply_zoom(widget, widget.font().pointSizeF())

    def set_zoom(self, percent: int) -> None:
        percent = min(ZOOM_STEPS, key=lambda step: abs(step - percent))
        if percent == self._zoom:
            return
        self._zoom = percent
        _settings().setValue("appearance/zoom", percent)
        for widget, base in self._zoomed:
            self._apply_zoom(widget, base)
        self.zoomChanged.emit(percent)

    def zoom_in(self) -> None:
        i = ZOOM_STEPS.index(self._zoom)
        self.set_zoom(ZOOM_STEPS[min(i + 1, len(ZOOM_STEPS) - 1)])

    def zoom_out(self) -> None:
        i = ZOOM_STEPS.index(self._zoom)
        self.set_zoom(ZOOM_STEPS[max(i - 1, 0)])

    def _apply_zoom(self, widget: QWidget, base: float) -> None:
        font = widget.font()
        font.setPointSizeF(max(1.0, base * self._zoom / 100))
        widget.setFont(font)

    # -- menu ---------------------------------------------------------------------------

    def add_actions(self, menu: QMenu, window: QWidget, *, zoomed: Sequence[QWidget]) -> None:
        """A Theme submenu and the zoom items (Ctrl+= / Ctrl+- / Ctrl+0, scaling the text of
        ``zoomed``) in ``menu``."""
        from PySide6.QtGui import QAction, QActionGroup, QKeySequence

        for widget in zoomed:
            self.zoom_widget(widget)
        menu.addSeparator()
        themes = menu.addMenu("&Theme")
        group = QActionGroup(themes)
        for mode, text in (("system", "&System"), ("light", "&Light"), ("dark", "&Dark")):
            action = QAction(text, themes)
            action.setCheckable(True)
            action.setChecked(mode == self._mode)
            action.setData(mode)
            action.triggered.connect(lambda _checked=False, m=mode: self.set_mode(m))
            group.addAction(action)
            themes.addAction(action)
            self._mode_actions[mode] = action
        from streamscope.ui import shortcuts

        for name, text, slot in (
            ("zoom_in", "Zoom &in", self.zoom_in),
            ("zoom_out", "Zoom &out", self.zoom_out),
            ("zoom_reset", "&Reset zoom", lambda: self.set_zoom(100)),
        ):
            action = shortcuts.bind(QAction(text, window), name)
            if name == "zoom_in":  # (Ctrl++ too: where + needs no Shift)
                action.setShortcuts([action.shortcut(), QKeySequence("Ctrl++")])
            action.triggered.connect(slot)
            menu.addAction(action)
