"""The selected frame's exact bytes, as text and as a hex dump, with read boundaries marked,
and under them the events the dialect made of the frame.

Rendered only for the selected frame (and at most :data:`MAX_DETAIL_BYTES` of it). In the
text, line ends are visible (``␍`` for CR, ``␊`` for LF, which also breaks the line) and a
``¦`` marks where a network read started inside the frame — before the character whose
bytes it split, if it split one. In the hex dump the ``¦`` takes the place of the space
before the first byte of each read.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, fields

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QFontMetrics, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.wire.events import StreamEvent
from streamscope.ui.base.elided_label import ElidedLabel
from streamscope.ui.base.theme import colour, monospace_font, text_fill

__all__ = [
    "ARROWS",
    "CONTROL_PICTURES",
    "MARK",
    "MAX_DETAIL_BYTES",
    "FrameDetail",
    "RenderedBytes",
    "describe_event",
    "hex_dump",
    "hex_line_chars",
    "visible_text",
]

MARK = "¦"
MAX_DETAIL_BYTES = 64 * 1024

CONTROL_PICTURES = {"\r": "␍", "\n": "␊\n", "\t": "␉"}
"""How line ends and tabs are made visible, with a font that has the Control Pictures."""
ARROWS = {"\r": "←", "\n": "↵\n", "\t": "→"}
"""The fallback for fonts without them (the CI image's DejaVu has no U+240D)."""


@dataclass(frozen=True, slots=True)
class RenderedBytes:
    """Text plus the (Python string) positions of the read-boundary marks in it."""

    text: str
    marks: tuple[int, ...]


def _visible(chunk: str, glyphs: dict[str, str]) -> str:
    if chunk.isprintable():
        return chunk
    out = []
    for ch in chunk:
        if ch in glyphs:
            out.append(glyphs[ch])
        elif ch < " " or "\x7f" <= ch < "\xa0":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def visible_text(
    data: bytes, boundaries: list[int], glyphs: dict[str, str] = CONTROL_PICTURES
) -> RenderedBytes:
    """``data`` decoded as UTF-8 (invalid bytes as U+FFFD) with visible line ends and a
    mark at each boundary offset (a read that splits a character marks before it)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    parts: list[str] = []
    marks: list[int] = []
    length = 0
    start = 0
    for cut in [*sorted(b for b in boundaries if 0 < b < len(data)), len(data)]:
        text = _visible(decoder.decode(data[start:cut], final=cut == len(data)), glyphs)
        parts.append(text)
        length += len(text)
        if cut < len(data):
            marks.append(length)
            parts.append(MARK)
            length += 1
        start = cut
    return RenderedBytes("".join(parts), tuple(marks))


def hex_line_chars(per_row: int) -> int:
    """How many characters a :func:`hex_dump` line of ``per_row`` bytes takes."""
    return 9 + 3 * per_row + 1 + 3 + per_row + 1


def hex_dump(data: bytes, boundaries: list[int], base: int = 0, per_row: int = 16) -> RenderedBytes:
    """``offset | hex | ascii`` lines of ``per_row`` bytes (an extra space halfway);
    ``base`` is the offset of ``data[0]``."""
    cuts = set(boundaries)
    lines: list[str] = []
    marks: list[int] = []
    pos = 0
    half = per_row // 2
    for row in range(0, len(data), per_row):
        chunk = data[row : row + per_row]
        line = [f"{base + row:08x} "]
        width = len(line[0])
        for i, byte in enumerate(chunk):
            sep = MARK if row + i in cuts else " "
            if sep == MARK:
                marks.append(pos + width)
            extra = " " if i == half else ""
            line.append(f"{extra}{sep}{byte:02x}")
            width += len(extra) + 3
        pad = " " * (3 * (per_row - len(chunk)) + (1 if len(chunk) <= half else 0))
        ascii_part = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        text = "".join(line) + pad + "  |" + ascii_part + "|"
        lines.append(text)
        pos += len(text) + 1
    return RenderedBytes("\n".join(lines), tuple(marks))


def describe_event(event: StreamEvent) -> str:
    """``TextDelta  text='Hel'``: an event's type and fields, on one line."""
    values = ", ".join(
        f"{f.name}={_short(getattr(event, f.name))}" for f in fields(event) if f.name != "raw"
    )
    return f"{type(event).__name__}  {values}"


def _short(value: object, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FrameDetail(QWidget):
    """Header line, then Text | Hex tabs for one frame."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        mono = monospace_font()  # (its size follows the text zoom)
        self.header = ElidedLabel("Select a frame to see its exact bytes.", self)
        self.text_view = QPlainTextEdit(self)
        self.hex_view = QPlainTextEdit(self)
        for view in (self.text_view, self.hex_view):
            view.setReadOnly(True)
            view.setFont(mono)
            view.setUndoRedoEnabled(False)
        self.hex_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.hex_view.viewport().installEventFilter(self)
        self.per_row = 16  # bytes per hex line: 8 when 16 would not fit the pane's width
        self._hex_source: tuple[bytes, list[int], int] | None = None
        metrics = QFontMetrics(mono)
        has_pictures = all(metrics.inFontUcs4(ord(c[0])) for c in CONTROL_PICTURES.values())
        self.glyphs = CONTROL_PICTURES if has_pictures else ARROWS
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.text_view, "Text")
        self.tabs.addTab(self.hex_view, "Hex")
        self.events_label = QLabel("Events", self)
        self.events_view = QPlainTextEdit(self)
        self.events_view.setReadOnly(True)
        self.events_view.setFont(mono)
        self.events_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.events_view.setPlaceholderText("The events the dialect made of this frame")
        self.events_view.setMaximumHeight(QFontMetrics(mono).lineSpacing() * 5 + 12)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.header)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.events_label)
        layout.addWidget(self.events_view)
        self._mark_format = QTextCharFormat()
        self._mark_format.setFontWeight(700)

    def _fitting_per_row(self) -> int:
        """16 bytes a hex line if the line fits the pane (ASCII column included), else 8."""
        # (a hidden tab keeps a stale size: the Text view, in the same place, has the width)
        shown = self.hex_view if self.hex_view.isVisible() else self.text_view
        room = shown.viewport().width() - 2 * self.hex_view.document().documentMargin()
        digit = self.hex_view.fontMetrics().horizontalAdvance("0")
        return 16 if hex_line_chars(16) * digit <= room else 8

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self._hex_source is not None:
            per_row = self._fitting_per_row()
            if per_row != self.per_row:  # (the pane got narrower or wider: lay out again)
                self.per_row = per_row
                self._fill(self.hex_view, hex_dump(*self._hex_source, per_row))
        return False

    def clear(self) -> None:
        self._hex_source = None
        self.header.setText("Select a frame to see its exact bytes.")
        self.text_view.clear()
        self.hex_view.clear()
        self.events_view.clear()

    def show_frame(
        self,
        row: int,
        data: bytes,
        *,
        offset: int | None,
        boundaries: list[tuple[int, float]],
        t_ms: float,
        notes: str = "",
        events: Sequence[StreamEvent] = (),
    ) -> None:
        """Render frame ``row``: ``data`` its bytes, ``boundaries`` the reads that started
        inside it (offset within the frame, time), ``events`` what the dialect made of it."""
        shown = data[:MAX_DETAIL_BYTES]
        cuts = [b for b, _ in boundaries]
        where = f"stream offset {offset:,}" if offset is not None else "not in the read buffer"
        reads = len(boundaries) + 1 if offset is not None else 0
        parts = [f"Frame #{row} · {len(data):,} bytes · {where} · t {t_ms:.1f} ms"]
        if reads:
            parts.append(f"{reads} read{'s' if reads != 1 else ''}")
        if boundaries:
            parts.append(f"{MARK} read starts at +" + ", +".join(str(b) for b in cuts))
        parts.append(self.glyphs["\r"] + " CR " + self.glyphs["\n"][0] + " LF")
        if notes:
            parts.append(notes)
        if len(data) > len(shown):
            parts.append(f"showing the first {len(shown):,} bytes")
        self.header.setText(" · ".join(parts))
        self._fill(self.text_view, visible_text(shown, cuts, self.glyphs))
        self._hex_source = (shown, cuts, offset or 0)
        self.per_row = self._fitting_per_row()
        self._fill(self.hex_view, hex_dump(shown, cuts, offset or 0, self.per_row))
        self.events_label.setText(f"Events ({len(events)})" if events else "Events: none")
        self.events_view.setPlainText("\n".join(describe_event(e) for e in events))

    def _fill(self, view: QPlainTextEdit, rendered: RenderedBytes) -> None:
        view.setPlainText(rendered.text)
        selections = []
        self._mark_format.setForeground(colour("mark", self.palette()))
        self._mark_format.setBackground(text_fill("mark", self.palette()) or QColor())
        for index in rendered.marks:
            # QTextCursor positions count UTF-16 units (an emoji is two).
            pos = len(rendered.text[:index].encode("utf-16-le")) // 2
            sel = QTextEdit.ExtraSelection()
            cursor = QTextCursor(view.document())
            cursor.setPosition(pos)
            cursor.setPosition(pos + 1, QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cursor
            sel.format = self._mark_format
            selections.append(sel)
        view.setExtraSelections(selections)
