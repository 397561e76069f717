"""The Frames table: one row per decoded frame, stored compactly.

Nothing per frame is kept as a Python object. Every network read is appended to one
``bytearray`` (the reads concatenated *are* the decoded stream, so a frame's
``RawFrame.offset`` indexes it directly) and each frame is five numbers in typed arrays:
offset, length, time, kind and flags — 26 bytes a frame. The event name and the one-line
summary are computed from the frame's bytes when a view (or the filter) asks, with a small
LRU cache; a million frames cost their raw bytes plus ~26 MB. A replay passes the capture's
own buffer to :meth:`FramesModel.clear`: the reads are checked against it, not copied.

A batch of frames is inserted with one ``beginInsertRows``/``endInsertRows`` pair.
"""

from __future__ import annotations

import bisect
import time
from array import array
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QColor, QFont

from streamscope.core.turn.progress import (
    FLAG_DETACHED,
    FLAG_INCOMPLETE,
    FLAG_INVALID_UTF8,
    FrameKind,
    FrameRows,
)
from streamscope.ui.inspector.frame_summary import summarize

__all__ = [
    "COLUMNS",
    "FLAG_DETACHED",
    "FLAG_INCOMPLETE",
    "FLAG_INVALID_UTF8",
    "FrameKind",
    "FramesFilterModel",
    "FramesModel",
]

_Index = QModelIndex | QPersistentModelIndex

COLUMNS = ("#", "t (ms)", "gap (ms)", "bytes", "event", "summary")
COL_INDEX, COL_TIME, COL_GAP, COL_BYTES, COL_EVENT, COL_SUMMARY = range(6)


KindRole = Qt.ItemDataRole.UserRole + 1
FlagsRole = Qt.ItemDataRole.UserRole + 2
FilterTextRole = Qt.ItemDataRole.UserRole + 3

_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_KIND, _FLAGS, _FILTER = int(KindRole), int(FlagsRole), int(FilterTextRole)
_ROLES = frozenset(
    (_DISPLAY, _FOREGROUND, _BACKGROUND, _FONT, _ALIGNMENT, _TOOLTIP, _KIND, _FLAGS, _FILTER)
)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

_GLYPHS = {
    FrameKind.COMMENT: "·",
    FrameKind.TERMINAL: "■",
    FrameKind.MALFORMED: "⚠",
    FrameKind.ERROR: "✖",
}


class FramesModel(QAbstractTableModel):
    """Rows are frames; see the module docstring for the storage."""

    CACHE_ROWS = 4096

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.t0 = 0.0
        self._init_storage()
        self._bold = QFont()
        self._bold.setBold(True)
        self._italic = QFont()
        self._italic.setItalic(True)
        self._colors = {
            FrameKind.COMMENT: (QColor(128, 128, 128), None),
            FrameKind.TERMINAL: (QColor(30, 140, 60), QColor(30, 160, 70, 40)),
            FrameKind.MALFORMED: (QColor(205, 110, 0), QColor(255, 150, 0, 45)),
            FrameKind.ERROR: (QColor(210, 40, 40), QColor(255, 60, 60, 50)),
            FrameKind.REASONING: (QColor(120, 100, 190), None),
        }
        self._invalid_colors = (QColor(215, 75, 20), QColor(255, 100, 40, 55))

    def _init_storage(self) -> None:
        self.stream = bytearray()  # every read, in order (or a replayed capture's buffer)
        self.received = 0  # bytes of ``stream`` that have arrived
        self._shared = False  # ``stream`` belongs to a capture: never modify it
        self.side = bytearray()  # bytes of frames that arrived without their reads
        self.read_offsets = array("q")
        self.read_times = array("d")
        self.offsets = array("q")
        self.lengths = array("q")
        self.times = array("d")
        self.kinds = array("B")
        self.frame_flags = array("B")
        self._cache: OrderedDict[int, tuple[str, str]] = OrderedDict()

    # -- feeding ------------------------------------------------------------------------

    def clear(self, t0: float = 0.0, recorded: bytearray | None = None) -> None:
        """Forget every frame; times are shown relative to ``t0``. ``recorded``: the reads
        about to arrive, joined (a replayed capture's buffer): kept by reference, never
        modified."""
        self.beginResetModel()
        self.t0 = t0
        self._init_storage()
        if recorded is not None:
            self.stream = recorded
            self._shared = True
        self.endResetModel()

    def append_reads(self, reads: Iterable[tuple[bytes, float]]) -> None:
        """Keep network reads (no rows change)."""
        for data, t in reads:
            start = self.received
            if self._shared and not self.stream.startswith(data, start):
                # not the recording after all: from here on, keep a copy of our own
                self.stream = bytearray(self.stream[:start])
                self._shared = False
            if not self._shared:
                self.stream += data
            self.read_offsets.append(start)
            self.read_times.append(t)
            self.received = start + len(data)

    def append_rows(self, rows: FrameRows) -> None:
        """Add a batch of frames as rows (one insert signal for the batch)."""
        n = len(rows)
        if not n:
            return
        first = len(self.offsets)
        self.beginInsertRows(QModelIndex(), first, first + n - 1)
        self.offsets.extend(rows.offsets_after(len(self.side)))
        self.side += rows.detached
        self.lengths.extend(rows.lengths)
        self.times.extend(rows.times)
        self.kinds.extend(rows.kinds)
        self.frame_flags.extend(rows.flags)
        self.endInsertRows()

    # -- reading ------------------------------------------------------------------------

    def frame_bytes(self, row: int) -> bytes:
        """The exact bytes of frame ``row``."""
        buf = self.side if self.frame_flags[row] & FLAG_DETACHED else self.stream
        start = self.offsets[row]
        return bytes(buf[start : start + self.lengths[row]])

    def stream_offset(self, row: int) -> int | None:
        """Frame ``row``'s offset in the received stream (``None`` if not from the reads)."""
        return None if self.frame_flags[row] & FLAG_DETACHED else self.offsets[row]

    def read_boundaries(self, row: int) -> list[tuple[int, float]]:
        """Network reads that started strictly inside frame ``row``: (offset within the
        frame, read time)."""
        start = self.stream_offset(row)
        if start is None:
            return []
        end = start + self.lengths[row]
        lo = bisect.bisect_right(self.read_offsets, start)
        hi = bisect.bisect_left(self.read_offsets, end)
        return [(self.read_offsets[i] - start, self.read_times[i]) for i in range(lo, hi)]

    def reads_spanned(self, row: int) -> int:
        """How many network reads carried bytes of frame ``row``."""
        start = self.stream_offset(row)
        if start is None or not self.read_offsets:
            return 0
        return len(self.read_boundaries(row)) + 1

    def event_and_summary(self, row: int) -> tuple[str, str]:
        """The row's event name and summary (computed from its bytes, LRU-cached)."""
        cache = self._cache
        hit = cache.get(row)
        if hit is not None:
            cache.move_to_end(row)
            return hit
        value = summarize(self.frame_bytes(row), not self.frame_flags[row] & FLAG_INCOMPLETE)
        cache[row] = value
        if len(cache) > self.CACHE_ROWS:
            cache.popitem(last=False)
        return value

    def filter_text(self, row: int) -> str:
        event, summary = self.event_and_summary(row)
        return f"{event} {summary} {FrameKind.NAMES[self.kinds[row]]}"

    def time_ms(self, row: int) -> float:
        return (self.times[row] - self.t0) * 1000

    def gap_ms(self, row: int) -> float:
        prev = self.times[row - 1] if row else self.t0
        return (self.times[row] - prev) * 1000

    # -- Qt model -----------------------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.offsets)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if (
            role == Qt.ItemDataRole.DisplayRole
            and orientation == Qt.Orientation.Horizontal
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # A paint asks ~7 roles of every visible cell: unknown roles leave first, and roles
        # are compared as plain ints (an enum attribute lookup each time costs more).
        role = int(role)
        if role not in _ROLES or not index.isValid():
            return None
        row, col = index.row(), index.column()
        if not (0 <= row < len(self.offsets)):
            return None
        if role == _DISPLAY:
            return self._display(row, col)
        if role == _FOREGROUND:
            return self._style(row)[0]
        if role == _BACKGROUND:
            return self._style(row)[1]
        if role == _FONT:
            if self.frame_flags[row] & FLAG_INCOMPLETE:
                return self._italic
            return self._bold if self.kinds[row] == FrameKind.TERMINAL else None
        if role == _ALIGNMENT:
            return _RIGHT if col <= COL_BYTES else None
        if role == _TOOLTIP:
            return self._tooltip(row) if col >= COL_EVENT else None
        if role == _KIND:
            return self.kinds[row]
        if role == _FLAGS:
            return self.frame_flags[row]
        return self.filter_text(row)  # FilterTextRole

    def _display(self, row: int, col: int) -> str:
        if col == COL_INDEX:
            return str(row)
        if col == COL_TIME:
            return f"{self.time_ms(row):.1f}"
        if col == COL_GAP:
            return f"{self.gap_ms(row):.1f}"
        if col == COL_BYTES:
            return str(self.lengths[row])
        event, summary = self.event_and_summary(row)
        if col == COL_EVENT:
            return f"{self._glyph(row)}{event}"
        return summary

    def _glyph(self, row: int) -> str:
        flags = self.frame_flags[row]
        if flags & FLAG_INVALID_UTF8:
            return "� "
        if flags & FLAG_INCOMPLETE:
            return "… "
        glyph = _GLYPHS.get(self.kinds[row])
        return f"{glyph} " if glyph else ""

    def _style(self, row: int) -> tuple[QColor | None, QColor | None]:
        kind = self.kinds[row]
        if self.frame_flags[row] & FLAG_INVALID_UTF8 and kind < FrameKind.ERROR:
            return self._invalid_colors
        return self._colors.get(kind, (None, None))

    def _tooltip(self, row: int) -> str:
        event, summary = self.event_and_summary(row)
        notes = [FrameKind.NAMES[self.kinds[row]]]
        flags = self.frame_flags[row]
        if flags & FLAG_INVALID_UTF8:
            notes.append("invalid UTF-8 (decoded with U+FFFD)")
        if flags & FLAG_INCOMPLETE:
            notes.append("incomplete: the stream ended inside this frame")
        return f"{event}\n{summary}\n[{', '.join(notes)}]"


class FramesFilterModel(QAbstractTableModel):
    """The frames whose event name, summary or kind contains the filter text.

    A frame's summary is computed from its bytes (~7 µs), so checking a million frames takes
    seconds: the rows are checked a slice of :data:`SLICE_MS` per event-loop turn and the
    matches appear as they are found (``progressChanged`` after each slice); frames that
    arrive meanwhile are checked too. Rows are an array of source rows (8 bytes a match)."""

    SLICE_MS = 8.0
    progressChanged = Signal()

    def __init__(self, source: FramesModel, parent: Any = None) -> None:
        super().__init__(parent)
        self._source = source
        self._needle = ""
        self.rows = array("q")
        self._scanned = 0  # source rows checked so far
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.scan)
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
        return self._scanned < self._source.rowCount()

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
        if self.scanning and not self._timer.isActive():
            self._timer.start()

    def scan(self) -> None:
        """Check the next slice of frames (the timer calls this; so may the view, once, to
        show a small table filtered at once)."""
        source = self._source
        total = source.rowCount()
        start = row = self._scanned
        if not self._needle:
            found = list(range(start, total))
            row = total
        else:
            needle = self._needle
            filter_text = source.filter_text
            deadline = time.perf_counter() + self.SLICE_MS / 1000
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

    def _on_source_rowsInserted(self, _parent: QModelIndex, _first: int, _last: int) -> None:
        self._schedule()

    def _on_source_modelReset(self) -> None:
        self._timer.stop()
        self.beginResetModel()
        self.rows = array("q")
        self._scanned = 0
        self.endResetModel()
        self.progressChanged.emit()

    # -- mapping ------------------------------------------------------------------------

    def mapToSource(self, index: _Index) -> QModelIndex:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return QModelIndex()
        return self._source.index(self.rows[index.row()], index.column())

    def mapFromSource(self, index: _Index) -> QModelIndex:
        """The filtered index of a source index (invalid if it is not shown, or not
        checked yet)."""
        if not index.isValid():
            return QModelIndex()
        i = bisect.bisect_left(self.rows, index.row())
        if i < len(self.rows) and self.rows[i] == index.row():
            return self.index(i, index.column())
        return QModelIndex()

    # -- Qt model -----------------------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        return self._source.headerData(section, orientation, role)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        source = self._source
        return source.data(source.index(self.rows[index.row()], index.column()), role)
