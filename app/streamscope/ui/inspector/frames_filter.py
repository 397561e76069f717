"""The Frames table filtered by text, checked a slice at a time on the paint clock."""

from __future__ import annotations

import bisect
import time
from array import array
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import default_clock
from streamscope.ui.inspector.frames_model import COLUMNS, FramesModel

__all__ = ["FramesFilterModel"]

_Index = QModelIndex | QPersistentModelIndex


class FramesFilterModel(QAbstractTableModel):
    """The frames whose event name, summary or kind contains the filter text.

    A frame's label and summary cost a few µs, so checking a million frames takes seconds: the
    rows are checked in slices, as this model's job on the paint clock (until each tick's
    deadline), and the matches appear as they are found (``progressChanged`` after each
    slice); frames that arrive meanwhile are checked too. Rows are an array of source rows
    (8 bytes a match); with no filter text the model passes the source's rows through
    (nothing is checked or kept)."""

    progressChanged = Signal()

    def __init__(self, source: FramesModel, parent: Any = None) -> None:
        super().__init__(parent)
        self._source = source
        self._needle = ""
        self.rows = array("q")
        self._scanned = 0  # source rows checked so far
        self.clock = default_clock()
        source.rowsAboutToBeInserted.connect(self._on_source_rowsAboutToBeInserted)
        source.rowsInserted.connect(self._on_source_rowsInserted)
        source.modelReset.connect(self._on_source_modelReset)

    def sourceModel(self) -> FramesModel:
        return self._source

    @property
    def needle(self) -> str:
        return self._needle

    @property
    def scanning(self) -> bool:
        """Whether some frames are not checked yet."""
        return bool(self._needle) and self._scanned < self._source.rowCount()

    def progress(self) -> float:
        """The share of the frames checked so far (1.0 when done)."""
        total = self._source.rowCount()
        return self._scanned / total if total else 1.0

    def set_needle(self, text: str) -> None:
        """Filter by ``text`` (case-insensitive; empty: every frame), from the first frame."""
        needle = text.strip().casefold()
        if needle == self._needle:
            return
        self.beginResetModel()
        self._needle = needle
        self.rows = array("q")
        self._scanned = 0
        self.endResetModel()
        self._schedule()

    def _schedule(self) -> None:
        if self.scanning:
            self.clock.wake(self._scan_job)

    def _scan_job(self, deadline: float) -> float | None:
        self.scan(deadline)
        return 0.0 if self.scanning else None

    def scan(self, deadline: float | None = None) -> None:
        """Check the next slice of frames, until ``deadline`` (``perf_counter``; default: a
        tick's budget from now). The paint clock calls this; so may the view, once, to show
        a small table filtered at once."""
        if not self._needle:
            return
        source = self._source
        total = source.rowCount()
        start = row = self._scanned
        needle = self._needle
        filter_text = source.filter_text
        if deadline is None:
            deadline = time.perf_counter() + pacing.TICK_BUDGET_MS / 1000
        found = []
        while row < total:
            if needle in filter_text(row).casefold():
                found.append(row)
            row += 1
            if not row % 64 and time.perf_counter() > deadline:
                break
        self._scanned = row
        if found:
            first = len(self.rows)
            self.beginInsertRows(QModelIndex(), first, first + len(found) - 1)
            self.rows.extend(found)
            self.endInsertRows()
        if row != start:
            self.progressChanged.emit()
        self._schedule()

    def _on_source_rowsAboutToBeInserted(self, _parent: QModelIndex, first: int, last: int) -> None:
        if not self._needle:  # passing rows through
            self.beginInsertRows(QModelIndex(), first, last)

    def _on_source_rowsInserted(self, _parent: QModelIndex, _first: int, _last: int) -> None:
        if not self._needle:
            self.endInsertRows()
        self._schedule()

    def _on_source_modelReset(self) -> None:
        self.clock.cancel(self._scan_job)
        self.beginResetModel()
        self.rows = array("q")
        self._scanned = 0
        self.endResetModel()
        self.progressChanged.emit()

    # -- mapping ------------------------------------------------------------------------

    def _source_row(self, row: int) -> int:
        """The source row of proxy row ``row`` (-1 when there is none)."""
        if not self._needle:
            return row if 0 <= row < self._source.rowCount() else -1
        return self.rows[row] if 0 <= row < len(self.rows) else -1

    def mapToSource(self, index: _Index) -> QModelIndex:
        row = self._source_row(index.row()) if index.isValid() else -1
        return self._source.index(row, index.column()) if row >= 0 else QModelIndex()

    def mapFromSource(self, index: _Index) -> QModelIndex:
        """The filtered index of a source index (invalid if it is not shown, or not
        checked yet)."""
        if not index.isValid():
            return QModelIndex()
        if not self._needle:
            return self.index(index.row(), index.column())
        i = bisect.bisect_left(self.rows, index.row())
        if i < len(self.rows) and self.rows[i] == index.row():
            return self.index(i, index.column())
        return QModelIndex()

    # -- Qt model -----------------------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid():
            return 0
        return len(self.rows) if self._needle else self._source.rowCount()

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        return self._source.headerData(section, orientation, role)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        row = self._source_row(index.row()) if index.isValid() else -1
        if row < 0:
            return None
        return self._source.data(self._source.index(row, index.column()), role)
