"""The Frames table: a thin Qt model over the turn's Qt-free
:class:`~streamscope.core.turn.frame_log.FrameLog` (bytes, offsets, times, events).

Batches go into the log as they arrive (:meth:`FramesModel.take`, cheap); the rows are
announced to the views later, all new ones with one ``beginInsertRows``/``endInsertRows``
pair (:meth:`FramesModel.show_new_rows`, when the paint clock gives the table a slot), so
a firehose does not repaint the table per batch. The label and summary of a row are asked
of the log when a view paints it (LRU-cached).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtGui import QColor, QFont, QGuiApplication

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.progress import (
    FLAG_BODY,
    FLAG_DETACHED,
    FLAG_INCOMPLETE,
    FLAG_INVALID_UTF8,
    FLAG_OVERSIZED,
    FrameKind,
    Progress,
)
from streamscope.core.wire.events import StreamEvent
from streamscope.ui.base.code_highlight import is_dark
from streamscope.ui.base.theme import colour, text_fill

__all__ = [
    "COLUMNS",
    "FLAG_BODY",
    "FLAG_DETACHED",
    "FLAG_INCOMPLETE",
    "FLAG_INVALID_UTF8",
    "FLAG_OVERSIZED",
    "FrameKind",
    "FramesModel",
    "frame_notes",
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

_INVALID = -1
_KIND_COLOURS: dict[int, str] = {
    # kind of frame (_INVALID: text that is not valid UTF-8): its colour in theme.TEXT
    FrameKind.COMMENT: "frame_comment",
    FrameKind.TERMINAL: "frame_terminal",
    FrameKind.MALFORMED: "frame_malformed",
    FrameKind.ERROR: "frame_error",
    FrameKind.REASONING: "frame_reasoning",
    _INVALID: "frame_invalid",
}

_GLYPHS = {
    FrameKind.COMMENT: "·",
    FrameKind.TERMINAL: "■",
    FrameKind.MALFORMED: "⚠",
    FrameKind.ERROR: "✖",
}


def frame_notes(kind: int, flags: int) -> list[str]:
    """What a row is, in words (its tooltip, the detail's header): its kind, then its flags."""
    notes = [FrameKind.NAMES[kind]]
    if flags & FLAG_BODY:
        notes.append("the response body: it was no stream (kept up to 1 MiB)")
    if flags & FLAG_OVERSIZED:
        notes.append("a line over the line cap: only these first bytes were kept")
    if flags & FLAG_INVALID_UTF8:
        notes.append("invalid UTF-8 (decoded with U+FFFD)")
    if flags & FLAG_INCOMPLETE:
        notes.append("incomplete: the stream ended inside this frame")
    return notes


class FramesModel(QAbstractTableModel):
    """Rows are the frames of :attr:`log` announced so far; see the module docstring."""

    CACHE_ROWS = 4096

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.log = FrameLog()
        self._rows = 0  # rows announced to the views
        self._cache: OrderedDict[int, tuple[str, str]] = OrderedDict()
        self._bold = QFont()
        self._bold.setBold(True)
        self._italic = QFont()
        self._italic.setItalic(True)
        self._styles: dict[bool, dict[int, tuple[QColor | None, QColor | None]]] = {}

    # -- feeding ------------------------------------------------------------------------

    def clear(self, t0: float = 0.0, recorded: bytearray | None = None) -> None:
        """Forget every frame; times are shown relative to ``t0``. ``recorded``: the reads
        about to arrive, joined (a replayed capture's buffer): kept by reference, never
        modified."""
        self.beginResetModel()
        self.log = FrameLog(t0, recorded)
        self._rows = 0
        self._cache.clear()
        self.endResetModel()

    def adopt(self, log: FrameLog) -> None:
        """Show ``log`` (kept elsewhere while another turn was shown), every row of it."""
        self.beginResetModel()
        self.log = log
        self._rows = len(log)
        self._cache.clear()
        self.endResetModel()

    def take(self, batch: Progress) -> None:
        """Keep a batch in the log (cheap; its rows appear with :meth:`show_new_rows`)."""
        self.log.add(batch)

    def show_new_rows(self) -> int:
        """Announce the rows that arrived since the last call (one insert); how many."""
        first, total = self._rows, len(self.log)
        if total <= first:
            return 0
        self.beginInsertRows(QModelIndex(), first, total - 1)
        self._rows = total
        self.endInsertRows()
        return total - first

    def append(self, batch: Progress) -> None:
        """:meth:`take` and :meth:`show_new_rows` at once."""
        self.take(batch)
        self.show_new_rows()

    @property
    def pending_rows(self) -> int:
        """Rows in the log not announced yet."""
        return len(self.log) - self._rows

    # -- reading (the log's, by row) ------------------------------------------------------

    def frame_bytes(self, row: int) -> bytes:
        """The exact bytes of frame ``row``."""
        return self.log.frame_bytes(row)

    def events(self, row: int) -> list[StreamEvent]:
        """The events frame ``row`` produced."""
        return self.log.events(row)

    def event_and_summary(self, row: int) -> tuple[str, str]:
        """The row's label (event name) and summary (LRU-cached)."""
        cache = self._cache
        hit = cache.get(row)
        if hit is not None:
            cache.move_to_end(row)
            return hit
        value = self.log.label(row), self.log.summary(row)
        cache[row] = value
        if len(cache) > self.CACHE_ROWS:
            cache.popitem(last=False)
        return value

    def filter_text(self, row: int) -> str:
        event, summary = self.event_and_summary(row)
        return f"{event} {summary} {FrameKind.NAMES[self.log.kinds[row]]}"

    def time_ms(self, row: int) -> float:
        return self.log.time(row) * 1000

    def gap_ms(self, row: int) -> float:
        return self.log.gap(row) * 1000

    # -- Qt model -----------------------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self._rows

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
        if not (0 <= row < self._rows):
            return None
        log = self.log
        if role == _DISPLAY:
            return self._display(row, col)
        if role == _FOREGROUND:
            return self._style(row)[0]
        if role == _BACKGROUND:
            return self._style(row)[1]
        if role == _FONT:
            if log.flags[row] & FLAG_INCOMPLETE:
                return self._italic
            return self._bold if log.kinds[row] == FrameKind.TERMINAL else None
        if role == _ALIGNMENT:
            return _RIGHT if col <= COL_BYTES else None
        if role == _TOOLTIP:
            return self._tooltip(row) if col >= COL_EVENT else None
        if role == _KIND:
            return log.kinds[row]
        if role == _FLAGS:
            return log.flags[row]
        return self.filter_text(row)  # FilterTextRole

    def _display(self, row: int, col: int) -> str:
        if col == COL_INDEX:
            return str(row)
        if col == COL_TIME:
            return f"{self.time_ms(row):.1f}"
        if col == COL_GAP:
            return f"{self.gap_ms(row):.1f}"
        if col == COL_BYTES:
            return str(self.log.lengths[row])
        event, summary = self.event_and_summary(row)
        if col == COL_EVENT:
            return f"{self._glyph(row)}{event}"
        return summary

    def _glyph(self, row: int) -> str:
        flags = self.log.flags[row]
        if flags & FLAG_INVALID_UTF8:
            return "� "
        if flags & FLAG_INCOMPLETE:
            return "… "
        glyph = _GLYPHS.get(self.log.kinds[row])
        return f"{glyph} " if glyph else ""

    def _style(self, row: int) -> tuple[QColor | None, QColor | None]:
        palette = QGuiApplication.palette()
        dark = is_dark(palette)
        styles = self._styles.get(dark)
        if styles is None:  # (the theme's colours, once per theme)
            styles = self._styles[dark] = {
                kind: (colour(name, palette), text_fill(name, palette))
                for kind, name in _KIND_COLOURS.items()
            }
        kind = self.log.kinds[row]
        if self.log.flags[row] & FLAG_INVALID_UTF8 and kind < FrameKind.ERROR:
            return styles[_INVALID]
        return styles.get(kind, (None, None))

    def _tooltip(self, row: int) -> str:
        event, summary = self.event_and_summary(row)
        notes = frame_notes(self.log.kinds[row], self.log.flags[row])
        return f"{event}\n{summary}\n[{', '.join(notes)}]"
