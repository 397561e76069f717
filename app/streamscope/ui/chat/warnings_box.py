"""A turn's warnings on its answer card: "▸ show 2 warnings", expanded to one line each. A
malformed frame's warning is a link: clicking it asks for that frame in the Frames table."""

from __future__ import annotations

import html
from collections.abc import Sequence
from urllib.parse import quote, unquote

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QToolButton, QVBoxLayout, QWidget

__all__ = ["MALFORMED", "WarningsBox"]

MALFORMED = "malformed frame: "
"""How the reducer words a malformed frame's warning (``malformed frame: <reason>``)."""
_LINK = "malformed:"


class WarningsBox(QWidget):
    """The toggle and the list (hidden while there is no warning; collapsed at first)."""

    frameRequested = Signal(str)
    """A malformed frame's warning was clicked: its reason (the first frame that says it is
    the one wanted)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.warnings: list[str] = []
        self.toggle = QToolButton(self)
        self.toggle.setCheckable(True)
        self.toggle.setAccessibleName("Warnings")
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.list = QLabel(self)
        self.list.setWordWrap(True)
        self.list.setTextFormat(Qt.TextFormat.RichText)
        self.list.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
            | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.list.linkActivated.connect(self._on_list_linkActivated)
        self.list.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.list)
        self.hide()

    def add(self, warnings: Sequence[str]) -> None:
        """Warnings that arrived while the turn streams (a delta's new ones)."""
        self.set_warnings([*self.warnings, *(w for w in warnings if w not in self.warnings)])

    def set_warnings(self, warnings: Sequence[str]) -> None:
        """Show exactly ``warnings`` (the finished turn's)."""
        if list(warnings) == self.warnings:
            return
        self.warnings = list(warnings)
        items = []
        for text in self.warnings:
            reason = text.removeprefix(MALFORMED)
            if reason != text:
                href = html.escape(_LINK + quote(reason), quote=True)
                items.append(f"⚠ <a href='{href}'>{html.escape(text)}</a>")
            else:
                items.append(f"⚠ {html.escape(text)}")
        self.list.setText("<br>".join(items))
        self.setVisible(bool(self.warnings))
        self._update_label()

    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def _update_label(self) -> None:
        verb = "▾ hide" if self.toggle.isChecked() else "▸ show"
        n = len(self.warnings)
        what = "the warning" if n == 1 else f"{n} warnings"
        self.toggle.setText(f"{verb} {what}")
        self.toggle.setAccessibleName(f"{verb[2:].capitalize()} {what}")  # (not the arrow)

    def _on_toggle_toggled(self, checked: bool) -> None:
        self.list.setVisible(checked)
        self._update_label()

    def _on_list_linkActivated(self, link: str) -> None:
        if link.startswith(_LINK):
            self.frameRequested.emit(unquote(link.removeprefix(_LINK)))
