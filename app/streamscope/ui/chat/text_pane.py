"""Plain text in bounded blocks (:class:`PlainAppender`), and the read-only, auto-height
view the chat's cards show text in (:class:`TextPane`)."""

from __future__ import annotations

import bisect
import math

from PySide6.QtCore import QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QGuiApplication,
    QPalette,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QWheelEvent,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QToolTip, QWidget

__all__ = ["LINE_PIECE", "PlainAppender", "TextPane"]

LINE_PIECE = 32_000
"""Streamed text longer than this without a newline is shown in pieces of about this size,
so each append lays out a bounded block (Qt lays out a whole block per insert: ~5 ms for
this size). Not smaller: Qt keeps ~45 bytes of layout per character in blocks of a few
thousand characters but ~10 in blocks this long (measured: a 3 MB line in 2,000-character
blocks holds 137 MB, in 32,000-character blocks 30 MB)."""


class PlainAppender:
    """Appends plain text at the end of a document in bounded blocks.

    A line longer than :data:`LINE_PIECE` is continued in a new block (cut after a space
    when there is one near), which looks like a wrap. The displayed text can then differ
    from the source by those breaks: keep the exact text elsewhere.
    """

    def __init__(self, document: QTextDocument, fmt: QTextCharFormat | None = None) -> None:
        self._cursor = QTextCursor(document)
        self._format = fmt if fmt is not None else QTextCharFormat()
        self._line = 0
        self._size = 0  # characters of text in the document (breaks not counted)
        self._breaks: list[int] = []  # text offsets where a block starts without a newline

    def clear(self) -> None:
        """Empty the document."""
        self._cursor.document().clear()
        self._cursor = QTextCursor(self._cursor.document())
        self._line = 0
        self._size = 0
        self._breaks = []

    def remove_prefix(self, n: int) -> None:
        """Remove the first ``n`` characters of the text (and the breaks among them): what
        was rendered elsewhere leaves, without laying the rest out again."""
        n = min(n, self._size)
        if n <= 0:
            return
        k = bisect.bisect_right(self._breaks, n)
        document = self._cursor.document()
        cursor = QTextCursor(document)
        end = document.characterCount() - 1
        cursor.setPosition(min(n + k, end), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._breaks = [b - n for b in self._breaks[k:]]
        self._size -= n
        if not self._size:
            self._line = 0

    def append(self, text: str) -> None:
        """Append ``text`` at the end (one edit block: the document is laid out once, and
        the cursor's x position is not recomputed after every piece)."""
        cursor = self._cursor
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        try:
            self._append(cursor, text)
        finally:
            cursor.endEditBlock()

    def _append(self, cursor: QTextCursor, text: str) -> None:
        lines = text.split("\n")
        if self._line + len(lines[0]) <= LINE_PIECE and max(map(len, lines)) <= LINE_PIECE:
            cursor.insertText(text, self._format)  # one edit, one layout pass
            self._line = self._line + len(text) if len(lines) == 1 else len(lines[-1])
            self._size += len(text)
            return
        for i, line in enumerate(lines):
            if i:
                cursor.insertBlock()
                self._line = 0
                self._size += 1
            while line:
                room = LINE_PIECE - self._line
                if room <= 0:
                    cursor.insertBlock()
                    self._breaks.append(self._size)
                    self._line, room = 0, LINE_PIECE
                piece = line[:room]
                full = len(line) > room  # this block is full after the piece
                if full:
                    space = piece.rfind(" ", max(0, room - 200))
                    if space > 0:
                        piece = piece[: space + 1]
                cursor.insertText(piece, self._format)
                self._line = LINE_PIECE if full else self._line + len(piece)
                self._size += len(piece)
                line = line[len(piece) :]


class TextPane(QTextBrowser):
    """A read-only text view exactly as tall as its document (the chat scrolls, not it).

    Prose wraps; code (blocks with non-breakable lines) does not: when a line is wider than
    the pane, the pane scrolls sideways (its scroll bar, a sideways wheel or Shift+wheel).
    Text is selectable; ``copy:N`` links copy ``codes[N]`` to the clipboard, other links
    open in the system browser. Images are never loaded.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.codes: list[str] = []
        self._height = -1
        self._held = False
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(8)
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Base, QColor(Qt.GlobalColor.transparent))
        self.setPalette(palette)
        self.viewport().setAutoFillBackground(False)
        document = self.document()
        document.setUndoRedoEnabled(False)
        document.setDocumentMargin(2)
        layout = document.documentLayout()
        layout.documentSizeChanged.connect(self._on_layout_documentSizeChanged)
        document.contentsChange.connect(self._on_document_contentsChange)
        self.anchorClicked.connect(self._on_self_anchorClicked)

    def _on_layout_documentSizeChanged(self, size: QSizeF) -> None:
        height = math.ceil(size.height()) + 2 * self.frameWidth()
        if size.width() > self.viewport().width() + 0.5:  # a code line is wider: room for
            height += self.horizontalScrollBar().sizeHint().height()  # the sideways bar
        if height != self._height:
            self._height = height
            if not self._held:
                self.setFixedHeight(height)

    def hold(self, held: bool) -> None:
        """While held the pane takes no height (its document is laid out at its width all
        the same): text can be written into it out of sight, then shown at once."""
        self._held = held
        self.setFixedHeight(0 if held else max(self._height, 0))

    @property
    def held(self) -> bool:
        return self._held

    def _on_document_contentsChange(self, _position: int, _removed: int, _added: int) -> None:
        # Text written by other cursors drags this view's own cursor to its end, and the
        # view would scroll sideways to show it: keep it at the start (unless selecting).
        cursor = self.textCursor()
        if cursor.position() and not cursor.hasSelection():
            cursor.setPosition(0)
            self.setTextCursor(cursor)

    def _on_self_anchorClicked(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            number = int(url.path()) if url.path().isdigit() else -1
            if 0 <= number < len(self.codes):
                QGuiApplication.clipboard().setText(self.codes[number])
                QToolTip.showText(self.cursor().pos(), "Copied", self)
            return
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)

    def loadResource(self, type: int, name: QUrl | str) -> object:
        return None

    def wheelEvent(self, event: QWheelEvent) -> None:
        """Sideways (or Shift+wheel) scrolls a pane that is wider than it is shown; the rest
        goes to the chat, which scrolls, not the pane."""
        delta = event.angleDelta()
        sideways = abs(delta.x()) > abs(delta.y()) or bool(
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        )
        bar = self.horizontalScrollBar()
        if sideways and bar.maximum() > 0:
            steps = (delta.x() if abs(delta.x()) > abs(delta.y()) else delta.y()) / 120
            bar.setValue(bar.value() - round(steps * 3 * bar.singleStep()))
            event.accept()
            return
        event.ignore()
