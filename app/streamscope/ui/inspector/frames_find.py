"""Find in frames (Ctrl+F): search every frame of the turn by event name, text in its data,
or a byte pattern (hex such as ``e2 80`` or plain text as UTF-8); next / previous select
the match in the Frames table, and every matching row is highlighted.

The bar sits in the Frames tab above the table. It searches the frames model (all frames,
whatever the filter shows); when a match is hidden by the filter, the filter is cleared.

It searches as you type, :data:`~streamscope.ui.base.pacing.FIND_DEBOUNCE_MS` after the last key,
a slice at a time as its job on the paint clock (checking a frame means decoding its bytes:
100k frames take a second or more), saying "searching… 40%" with the matches so far; frames
that arrive meanwhile are searched too. Enter while it searches selects the next match as
soon as one is found (or when the search ends, to wrap around).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QKeyEvent, QPainter, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemDelegate,
    QComboBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QWidget,
)

from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import default_clock
from streamscope.ui.base.theme import colour
from streamscope.ui.inspector.frames_model import FramesModel
from streamscope.ui.inspector.frames_panel import FramesPanel

__all__ = ["COUNT_TEXTS", "FindQuery", "FramesFindBar", "find_rows", "parse_bytes_pattern"]

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
        return self.matcher(model)(row)

    def matcher(self, model: FramesModel) -> Callable[[int], bool]:
        """A test of one row, with the needle prepared once (it runs for every frame)."""
        needle = self.text.casefold()
        mode = self.mode
        pattern = parse_bytes_pattern(self.text) if mode in ("any", "bytes") else b""
        log = model.log

        def test(row: int) -> bool:
            if mode in ("any", "event"):
                if needle in log.label(row).casefold():
                    return True
                if mode == "event":
                    return False
            raw = model.frame_bytes(row)
            if mode in ("any", "text"):
                if needle in raw.decode("utf-8", "replace").casefold():
                    return True
                if mode == "text":
                    return needle in model.event_and_summary(row)[1].casefold()
            return pattern in raw

        return test


def find_rows(model: FramesModel, query: FindQuery) -> list[int]:
    """Source rows matching ``query``, in order (none for an empty query). All at once:
    the bar searches a slice at a time instead."""
    if not query.text:
        return []
    test = query.matcher(model)
    return [row for row in range(model.rowCount()) if test(row)]


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


COUNT_TEXTS = ("searching… 100% · 999,999 found", "999,999 of 999,999", "999,999 matches")
"""The longest texts the match count shows (counts up to six digits): it has room for them."""


class _CountLabel(QLabel):
    """The match count and the search's progress, never cut: as wide as the longest of
    :data:`COUNT_TEXTS` in its font (the inspector's text zoom changes it), and as high
    empty as with text (the bar does not jump when a search starts)."""

    def minimumSizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        widest = max(
            max(metrics.horizontalAdvance(text), metrics.boundingRect(text).width())
            for text in COUNT_TEXTS
        )
        width = widest + margins.left() + margins.right() + 2 * self.margin() + 2
        height = max(super().minimumSizeHint().height(), metrics.height())
        return QSize(width, height)

    def sizeHint(self) -> QSize:
        return self.minimumSizeHint()


class FramesFindBar(QWidget):
    """The find bar; see the module docstring.

    One row (query, mode, ▲ ▼, the count, ✕) where the inspector is wide enough; on a
    narrower one the count goes to a second row, so the bar never makes the inspector wider
    than the chat column (opened at 1024 px, it held the inspector at 482 px, the chat at
    374) and the count is never cut."""

    def __init__(self, panel: FramesPanel) -> None:
        super().__init__(panel)
        self.panel = panel
        self.model = panel.model
        self.clock = default_clock()
        self.rows: list[int] = []  # the matches found so far, in order
        self.current = -1
        self._query: FindQuery | None = None  # the query searched (None: not started yet)
        self._test: Callable[[int], bool] | None = None
        self._scanned = 0  # rows checked for ``_query``
        self._pending_step = 0  # Enter pressed while searching: step when a match is known
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
        self.close_button.setToolTip("Close (Esc)")
        self.close_button.setAccessibleName("Close find bar")
        self.count_label = _CountLabel(self)
        self.edit.setMinimumWidth(self.fontMetrics().horizontalAdvance("M") * 12)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setHorizontalSpacing(4)
        self._grid.setVerticalSpacing(2)
        for column, widget in enumerate(self._row_widgets()):
            self._grid.addWidget(widget, 0, column if widget is not self.close_button else 5)
        self._grid.setColumnStretch(0, 1)
        self.one_row: bool | None = None
        """Whether the count is on the first row (``None``: not placed yet)."""
        self._place_count(one_row=False)
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
        self.model.modelReset.connect(self._on_model_modelReset)
        self.model.rowsInserted.connect(self._on_rows_inserted)
        layout_ = panel.layout()
        if layout_ is not None:
            layout_.insertWidget(1, self)  # type: ignore[attr-defined]
        self.hide()

    # -- layout ------------------------------------------------------------------------------

    def _row_widgets(self) -> tuple[QWidget, ...]:
        return (self.edit, self.mode_combo, self.prev_button, self.next_button, self.close_button)

    def row_width(self, *, with_count: bool) -> int:
        """The narrowest the first row can be, with the count in it or without."""
        widgets = [*self._row_widgets(), *([self.count_label] if with_count else [])]
        narrowest = sum(max(w.minimumSizeHint().width(), w.minimumWidth()) for w in widgets)
        return narrowest + self._grid.horizontalSpacing() * (len(widgets) - 1)

    def minimumSizeHint(self) -> QSize:
        """As narrow as the first row without the count (which then has a row of its own)."""
        width = max(self.row_width(with_count=False), self.count_label.minimumSizeHint().width())
        return QSize(width, super().minimumSizeHint().height())

    def _place_count(self, *, one_row: bool) -> None:
        if one_row == self.one_row:
            return
        self.one_row = one_row
        self._grid.removeWidget(self.count_label)
        if one_row:
            self._grid.addWidget(self.count_label, 0, 4)
        else:
            self._grid.addWidget(self.count_label, 1, 0, 1, 6)

    def _fit(self) -> None:
        self._place_count(one_row=self.width() >= self.row_width(with_count=True))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # (the text zoom: once the children have it)
            QTimer.singleShot(0, self, self._fit)

    # -- commands ----------------------------------------------------------------------------

    def open_bar(self) -> None:
        self.panel.view.setItemDelegate(self.delegate)
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()
        if self.edit.text() and self._query is None:
            self._start(debounce=False)

    def close_bar(self) -> None:
        self.hide()
        self.clock.cancel(self._search_job)
        self._query = None
        self._pending_step = 0
        self.delegate.rows = set()
        self.panel.view.setItemDelegate(self._plain_delegate)
        self.panel.view.viewport().update()

    def set_query(self, text: str, mode: Mode = "any") -> None:
        """Search for ``text`` now (no debounce; the first slice at once, the rest on the
        paint clock: see :attr:`searching`)."""
        self.mode_combo.setCurrentIndex(next(i for i, (m, _) in enumerate(MODES) if m == mode))
        self.edit.setText(text)
        self._start(debounce=False)

    def find_next(self) -> int | None:
        """Select the next match; ``None`` while the search has not found it yet (it is
        selected when found) or when nothing matches."""
        return self._step(+1)

    def find_previous(self) -> int | None:
        return self._step(-1)

    @property
    def searching(self) -> bool:
        """Whether a search is waiting for its debounce or has frames left to check."""
        return bool(self.edit.text()) and (
            self._query is None or self._scanned < self.model.rowCount()
        )

    def progress(self) -> float:
        """The share of the frames checked so far."""
        total = self.model.rowCount()
        return min(1.0, self._scanned / total) if total and self._query is not None else 0.0

    # -- searching ----------------------------------------------------------------------------

    def _on_query_changed(self, *_args: object) -> None:
        self._start(debounce=True)

    def _start(self, *, debounce: bool) -> None:
        """Forget the matches and search again from the first frame (after the debounce)."""
        self._query = None
        self._test = None
        self._scanned = 0
        self.rows = []
        self.current = -1
        self.delegate.rows = set()
        self.panel.view.viewport().update()
        self.clock.cancel(self._search_job)
        if not self.edit.text():
            self._pending_step = 0
            self.count_label.clear()
            return
        if self.panel.view.itemDelegate() is not self.delegate and not self.isHidden():
            self.panel.view.setItemDelegate(self.delegate)
        if debounce:
            self._update_label()
            self.clock.wake(self._search_job, time.monotonic() + pacing.FIND_DEBOUNCE_MS / 1000)
        elif self._search_job(time.perf_counter() + pacing.TICK_BUDGET_MS / 1000) is not None:
            self.clock.wake(self._search_job)  # (a small table is searched at once)

    def _on_model_modelReset(self) -> None:
        if self.isHidden():
            self._query = None  # (searched again when the bar opens)
            self.rows = []
            self.current = -1
        else:
            self._start(debounce=False)  # another turn: the same search in its frames

    def _on_rows_inserted(self, *_args: object) -> None:
        if self._query is not None:
            self.clock.wake(self._search_job)  # new frames: search them too

    def _search_job(self, deadline: float) -> float | None:
        """Check frames until ``deadline`` (the paint clock's job); when to run next."""
        if self._query is None:
            mode = self.mode_combo.currentData()
            text = self.edit.text()
            if not text:
                return None
            self._query = FindQuery(text, mode if mode in ("event", "text", "bytes") else "any")
            self._test = self._query.matcher(self.model)
        test = self._test
        assert test is not None
        total = self.model.rowCount()
        row = self._scanned
        found: list[int] = []
        while row < total:
            if test(row):
                found.append(row)
            row += 1
            if not row % 32 and time.perf_counter() > deadline:
                break
        self._scanned = row
        if found:
            self.rows.extend(found)
            self.delegate.rows.update(found)
            self.panel.view.viewport().update()
        if self._pending_step and self._step_ready(self._pending_step):
            step, self._pending_step = self._pending_step, 0
            self._step(step)
        self._update_label()
        return 0.0 if row < total else None

    def _step_ready(self, step: int) -> bool:
        """Whether the match a step selects is known (searching in order: the next one is
        known once found; a previous one or a wrap around only at the end)."""
        if not self.searching:
            return True
        if step < 0 or not self.rows:
            return False
        selected = self.panel.selected_row()
        return selected is None or self.rows[-1] > selected

    def _step(self, step: int) -> int | None:
        if not self.edit.text():
            return None
        if not self._step_ready(step):
            self._pending_step = step
            if self._query is None:  # Enter before the debounce: search now
                self._start(debounce=False)
            return None
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
        found = len(self.rows)
        if self.searching:
            share = f" {self.progress():.0%}" if self._query is not None else ""
            so_far = f" · {found:,} found" if found else ""
            self.count_label.setText(f"searching…{share}{so_far}")
        elif not found:
            self.count_label.setText("no match" if self.edit.text() else "")
        elif self.current >= 0:
            self.count_label.setText(f"{self.current + 1:,} of {found:,}")
        else:
            self.count_label.setText(f"{found:,} match{'es' if found != 1 else ''}")

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
