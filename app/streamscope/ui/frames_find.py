"""Find in frames (Ctrl+F): search every frame of the turn by event name, text in its data,
or a byte pattern (hex such as ``e2 80`` or plain text as UTF-8); next / previous select
the match in the Frames table, and every matching row is highlighted.

The bar sits in the Frames tab above the table. It searches the frames model (all frames,
whatever the filter shows); when a match is hidden by the filter, the filter is cleared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QGuiApplication, QKeyEvent, QPainter
from PySide6.QtWidgets import (
    QAbstractItemDelegate,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QWidget,
)

from streamscope.ui.inspector.frames_model import FramesModel
from streamscope.ui.inspector.frames_panel import FramesPanel
from streamscope.ui.theme import colour

__all__ = ["FindQuery", "FramesFindBar", "find_rows", "parse_bytes_pattern"]

Mode = Literal["any", "event", "text", "bytes"]
MODES: tuple[tuple[Mode, str], ...] = (
    ("any", "Anything"),
    ("event", "Event name"),
    ("text", "Text in data"),
    ("bytes", "Bytes (hex or text)"),
)
_HEX = re.compile(r"^\s*(?:0x)?[0-9a-fA-F]{2}(?:[\s,]*(?:0x)?[0-9a-fA-F]{2})*\s*$")


def parse_bytes_pattern(text: str) -> bytes:
    """``e2 80 9c`` / ``0xe2,0x80`` / ``e2809c`` as bytes; anything else as UTF-8 text."""
    if _HEX.match(text):
        return bytes.fromhex(re.sub(r"0x|[\s,]", "", text))
    return text.encode("utf-8")


@dataclass(frozen=True, slots=True)
class FindQuery:
    text: str
    mode: Mode = "any"

    def matches(self, model: FramesModel, row: int) -> bool:
        needle = self.text.casefold()
        if self.mode in ("any", "event"):
            event, _summary = model.event_and_summary(row)
            if needle in event.casefold():
                return True
            if self.mode == "event":
                return False
        raw = model.frame_bytes(row)
        if self.mode in ("any", "text"):
            if needle in raw.decode("utf-8", "replace").casefold():
                return True
            if self.mode == "text":
                return needle in model.event_and_summary(row)[1].casefold()
        return parse_bytes_pattern(self.text) in raw


def find_rows(model: FramesModel, query: FindQuery) -> list[int]:
    """Source rows matching ``query``, in order (none for an empty query)."""
    if not query.text:
        return []
    return [row for row in range(model.rowCount()) if query.matches(model, row)]


class _MatchDelegate(QStyledItemDelegate):
    """Paints matching rows with a highlight, then lets the previous delegate paint."""

    def __init__(self, panel: FramesPanel, inner: QAbstractItemDelegate) -> None:
        super().__init__(panel.view)
        self.panel = panel
        self.inner = inner
        self.rows: set[int] = set()

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        if self.rows and self.panel.source_row(index) in self.rows:
            painter.fillRect(option.rect, colour("find_match", option.palette))
        self.inner.paint(painter, option, index)


class FramesFindBar(QWidget):
    """The find bar; see the module docstring."""

    def __init__(self, panel: FramesPanel) -> None:
        super().__init__(panel)
        self.panel = panel
        self.model = panel.model
        self.rows: list[int] = []
        self.current = -1
        self._query: FindQuery | None = None
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find in frames: event, text, or bytes (e2 80 9c)")
        self.edit.setClearButtonEnabled(True)
        self.mode_combo = QComboBox(self)
        for mode, label in MODES:
            self.mode_combo.addItem(label, mode)
        self.prev_button = QToolButton(self)
        self.prev_button.setText("▲")
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        self.prev_button.setAccessibleName("Previous match")
        self.next_button = QToolButton(self)
        self.next_button.setText("▼")
        self.next_button.setToolTip("Next match (Enter)")
        self.next_button.setAccessibleName("Next match")
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Close the find bar (Esc)")
        self.close_button.setAccessibleName("Close find bar")
        self.count_label = QLabel(self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.mode_combo)
        layout.addWidget(self.prev_button)
        layout.addWidget(self.next_button)
        layout.addWidget(self.count_label)
        layout.addWidget(self.close_button)
        # A Python delegate makes every cell paint call into Python: it is installed only
        # while the bar is open, so scrolling 100k+ frames stays in C++ otherwise.
        self._plain_delegate = panel.view.itemDelegate()
        self.delegate = _MatchDelegate(panel, self._plain_delegate)
        self.edit.returnPressed.connect(self._on_edit_returnPressed)
        self.edit.textChanged.connect(self._on_query_changed)
        self.mode_combo.currentIndexChanged.connect(self._on_query_changed)
        self.next_button.clicked.connect(self.find_next)
        self.prev_button.clicked.connect(self.find_previous)
        self.close_button.clicked.connect(self.close_bar)
        self.model.modelReset.connect(self._on_query_changed)
        self.model.rowsInserted.connect(self._on_rows_inserted)
        layout_ = panel.layout()
        if layout_ is not None:
            layout_.insertWidget(1, self)  # type: ignore[attr-defined]
        self.hide()

    # -- commands ----------------------------------------------------------------------------

    def open_bar(self) -> None:
        self.panel.view.setItemDelegate(self.delegate)
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def close_bar(self) -> None:
        self.hide()
        self.delegate.rows = set()
        self.panel.view.setItemDelegate(self._plain_delegate)
        self.panel.view.viewport().update()

    def set_query(self, text: str, mode: Mode = "any") -> None:
        self.mode_combo.setCurrentIndex(next(i for i, (m, _) in enumerate(MODES) if m == mode))
        self.edit.setText(text)
        self._search()

    def find_next(self) -> int | None:
        return self._step(+1)

    def find_previous(self) -> int | None:
        return self._step(-1)

    # -- searching ----------------------------------------------------------------------------

    def _on_query_changed(self, *_args: object) -> None:
        self._query = None
        self.rows = []
        self.current = -1
        self.delegate.rows = set()
        self.count_label.clear()
        self.panel.view.viewport().update()

    def _on_rows_inserted(self, *_args: object) -> None:
        if self._query is not None:
            self._query = None  # search again on the next step (new frames arrived)

    def _search(self) -> None:
        mode = self.mode_combo.currentData()
        query = FindQuery(self.edit.text(), mode if mode in ("event", "text", "bytes") else "any")
        self._query = query
        self.rows = find_rows(self.model, query)
        if self.panel.view.itemDelegate() is not self.delegate:
            self.panel.view.setItemDelegate(self.delegate)
        self.delegate.rows = set(self.rows)
        self.panel.view.viewport().update()
        self._update_label()

    def _step(self, step: int) -> int | None:
        if self._query is None:
            self._search()
        if not self.rows:
            self._update_label()
            return None
        selected = self.panel.selected_row()
        if self.current >= 0 and selected == self.rows[self.current]:
            self.current = (self.current + step) % len(self.rows)
        elif step > 0:
            after = [i for i, r in enumerate(self.rows) if selected is None or r > selected]
            self.current = after[0] if after else 0
        else:
            before = [i for i, r in enumerate(self.rows) if selected is not None and r < selected]
            self.current = before[-1] if before else len(self.rows) - 1
        row = self.rows[self.current]
        if not self.panel.view_index(row).isValid():
            self.panel.filter_edit.clear()
            self.panel.apply_filter()
        self.panel.select_row(row)
        self._update_label()
        return row

    def _update_label(self) -> None:
        if not self.rows:
            self.count_label.setText("no match" if self.edit.text() else "")
            return
        position = f"{self.current + 1} of " if self.current >= 0 else ""
        self.count_label.setText(f"{position}{len(self.rows)}")

    def _on_edit_returnPressed(self) -> None:
        if QGuiApplication.keyboardModifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.find_previous()
        else:
            self.find_next()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)
