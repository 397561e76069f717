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

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from streamscope.ui.base.first_paint import (
    MODES,
    PALETTES,
    apply_saved_theme,
    apply_theme,
    build_palette,
    is_dark,
    request_scheme,
    save_system_dark,
    saved_mode,
    saved_system_dark,
    system_scheme_dark,
)
from streamscope.ui.base.first_paint import window_settings as _settings

if TYPE_CHECKING:
    from collections.abc import Sequence

    from PySide6.QtCore import Qt
    from PySide6.QtGui import QAction, QFont
    from PySide6.QtWidgets import QMenu

# The palettes and applying the saved theme before the first paint: ui/base/first_paint.py (small,
# re-exported here). What only the menu or the fonts need is imported where it is used.

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
    "build_palette",
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

_R = QPalette.ColorRole


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


def _restyle(widget: QWidget, *, force: bool = False) -> None:
    name = widget.property(_PROPERTY)
    extra = widget.property(_EXTRA) or ""
    style = (css(name) if name else "") + (f" {extra}" if extra else "")
    if force or widget.styleSheet() != style.strip():
        widget.setStyleSheet(style.strip())


def refresh_text_colours() -> None:
    """Style every widget that has a style sheet again (the theme changed): the colour of
    :func:`set_text_colour` for the new theme, and what any sheet takes from the palette.

    Qt resolves a sheet once, when it polishes the widget, and gives the widget a palette of
    its own from it — every role, from the application palette of that moment. A new
    application palette does not reach that widget: a label styled ``color:
    palette(placeholder-text)`` before a switch from System (light) to Dark kept the light
    palette's half-transparent black on the dark toolbar (#111316 on #20242A). Setting the
    sheet again, even unchanged, resolves it anew."""
    for widget in QApplication.allWidgets():
        if widget.property(_PROPERTY) is not None:
            _restyle(widget, force=True)
        elif widget.styleSheet():
            widget.setStyleSheet(widget.styleSheet())


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


def monospace_font() -> QFont:
    """The fixed-pitch family, with no size of its own: it follows the text zoom."""
    from PySide6.QtGui import QFont

    from streamscope.ui.base.code_highlight import monospace_family

    font = QFont()
    font.setFamilies([monospace_family()])
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    return font


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
        from streamscope.ui.base import shortcuts

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
