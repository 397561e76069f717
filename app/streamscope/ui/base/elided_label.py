"""A one-line label that elides its text to its width ("…") instead of wrapping or
widening the layout, with the whole text in its tooltip when cut."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QFontMetrics, QResizeEvent, Qt, QTextDocument
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

__all__ = ["ElidedLabel"]


class ElidedLabel(QLabel):
    """:meth:`text` is the whole text; what shows is cut to the width. Rich text shows as
    it is while it fits, as elided plain text when it does not."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._plain = ""
        self._rich = False
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def text(self) -> str:
        """The whole text (as set), not the elided one shown."""
        return self._full

    def shown_text(self) -> str:
        """What the label shows now."""
        return super().text()

    def elided(self) -> bool:
        """Whether the text is cut to fit."""
        return super().text() != self._full

    def setText(self, text: str) -> None:
        self._full = text
        self._rich = Qt.mightBeRichText(text)
        if self._rich:
            doc = QTextDocument()
            doc.setHtml(text)
            self._plain = doc.toPlainText()
        else:
            self._plain = text
        self._fit()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(self.fontMetrics().horizontalAdvance("MMMMMM…") + self._edges(), hint.height())

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        advance = self.fontMetrics().horizontalAdvance(self._plain)
        return QSize(advance + 8 + self._edges(), hint.height())

    def _edges(self) -> int:
        """The width around the text: contents margins (a padding) and the margin."""
        margins = self.contentsMargins()
        return margins.left() + margins.right() + 2 * self.margin()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        room = self.contentsRect().width() - 2 * self.margin() - 2
        metrics = self.fontMetrics()
        wide = metrics
        if self._rich:  # (bold parts are wider: measure as if all were bold)
            bold = self.font()
            bold.setBold(True)
            wide = QFontMetrics(bold)
        if wide.horizontalAdvance(self._plain) <= room:
            self.setTextFormat(Qt.TextFormat.RichText if self._rich else Qt.TextFormat.PlainText)
            super().setText(self._full)
            self.setToolTip("")
            return
        self.setTextFormat(Qt.TextFormat.PlainText)
        super().setText(metrics.elidedText(self._plain, Qt.TextElideMode.ElideRight, room))
        self.setToolTip(self._plain)
