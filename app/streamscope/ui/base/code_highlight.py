"""Code blocks' look: Pygments colours as Qt formats, the lexer for a fence's language, the
theme's darkness and the fixed-pitch font. Pygments is imported on the first code block (or
warmed up in a background thread after the first paint), never at import time."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QColor, QFont, QFontDatabase, QTextCharFormat

from streamscope.ui.base.first_paint import is_dark  # (the theme.s: the code blocks ask it)

if TYPE_CHECKING:
    from pygments.lexer import Lexer

__all__ = ["CodeStyle", "is_dark", "lexer_for", "monospace_family", "warm_up_highlighting"]


def monospace_family() -> str:
    """The system's fixed-pitch font family."""
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()


class CodeStyle:
    """Pygments colours turned into Qt formats (one per token type, cached)."""

    def __init__(self, dark: bool) -> None:
        from pygments.styles import get_style_by_name
        from pygments.token import Token

        self._style: Any = get_style_by_name("github-dark" if dark else "default")
        self.background = QColor(self._style.background_color if dark else "#f6f8fa")
        text = self._style.style_for_token(Token.Text).get("color")
        self.foreground = QColor(f"#{text}") if text else QColor("#e6edf3" if dark else "#1f2328")
        self.muted = QColor("#8b949e" if dark else "#59636e")
        self.link = QColor("#58a6ff" if dark else "#0969da")
        self._family = monospace_family()
        self._formats: dict[Any, QTextCharFormat] = {}

    def base_format(self) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setFontFamilies([self._family])
        fmt.setFontFixedPitch(True)
        fmt.setForeground(self.foreground)
        return fmt

    def format_for(self, ttype: Any) -> QTextCharFormat:
        fmt = self._formats.get(ttype)
        if fmt is None:
            info = self._style.style_for_token(ttype)
            fmt = self.base_format()
            if info.get("color"):
                fmt.setForeground(QColor(f"#{info['color']}"))
            if info.get("bold"):
                fmt.setFontWeight(QFont.Weight.Bold)
            if info.get("italic"):
                fmt.setFontItalic(True)
            self._formats[ttype] = fmt
        return fmt


_warmed = False


def warm_up_highlighting() -> None:
    """Import Pygments (its lexer table, the styles and the Python lexer) in a background
    thread, once: the first code block of an answer then costs no ~25 ms import stall on the
    UI thread. Call it after the window has painted (imports only; no Qt in the thread)."""
    global _warmed
    if _warmed:
        return
    _warmed = True

    def load() -> None:
        from pygments.lexers import get_lexer_by_name
        from pygments.styles import get_style_by_name

        get_lexer_by_name("python")
        get_style_by_name("default")
        get_style_by_name("github-dark")

    threading.Thread(target=load, name="pygments-warm-up", daemon=True).start()


def lexer_for(language: str) -> Lexer:
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    options = {"stripnl": False, "ensurenl": True}
    name = language.strip().lower().lstrip(".")
    if name:
        try:
            return get_lexer_by_name(name, **options)
        except ClassNotFound:
            pass
    return TextLexer(**options)
