"""The Bench window's per-request table: one row per measured request, in the order they
ended (the model's row is :class:`~streamscope.ui.bench.bench_data.BenchData`'s row), sortable
by any column through a proxy. Double-clicking (or Enter on) a row opens the request at the
frame that defined the column's value (TTFT's column: the TTFT frame; Max gap's: the frame
after the gap; others: the TTFT frame, else the first)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from streamscope.core.bench import definitions as d
from streamscope.core.bench.metrics import RequestMetrics
from streamscope.ui.bench.bench_data import BenchData

__all__ = ["COLUMNS", "RequestsModel", "RequestsTable"]

_Index = QModelIndex | QPersistentModelIndex


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def _outcome(m: RequestMetrics) -> str:
    return m.outcome_key + (" (warm-up)" if m.warmup else "")


# (title, value for sorting/showing, its definition, the metric whose frame a click opens)
COLUMNS: tuple[tuple[str, Callable[[int, RequestMetrics], object], str, str], ...] = (
    ("#", lambda row, m: row + 1, "The order the request ended in.", "ttft"),
    ("Step", lambda row, m: None, "The sweep step.", "ttft"),
    (
        "Outcome",
        lambda row, m: m.outcome_key + (" (warm-up)" if m.warmup else ""),
        d.OUTCOME,
        "e2e_terminal",
    ),
    ("TTFB ms", lambda row, m: _ms(m.ttfb), d.TTFB, "ttfb"),
    ("TTFT ms", lambda row, m: _ms(m.ttft), d.TTFT, "ttft"),
    ("TTFO ms", lambda row, m: _ms(m.ttfo), d.TTFO, "ttfo"),
    ("ITL ms", lambda row, m: _ms(m.itl), d.ITL, "itl"),
    ("Max gap ms", lambda row, m: _ms(m.max_gap), d.MAX_GAP, "max_gap"),
    ("E2E ms", lambda row, m: _ms(m.e2e_terminal), d.E2E_TERMINAL, "e2e_terminal"),
    ("Tokens", lambda row, m: m.output_tokens, d.OUTPUT_TOKENS, "e2e_last_token"),
    ("Source", lambda row, m: m.token_source or "", d.OUTPUT_TOKENS, "e2e_last_token"),
    ("Dispatch lag ms", lambda row, m: _ms(m.dispatch_lag), d.DISPATCH_LAG, "dispatch_lag"),
    ("Worker", lambda row, m: m.worker, "The load worker (closed loop) that sent it.", "ttft"),
    (
        "Reason",
        lambda row, m: m.reason,
        "Why the request ended, as the status bar says.",
        "e2e_terminal",
    ),
)
_STEP = 1
_LEFT = frozenset({1, 2, len(COLUMNS) - 1})
_DISPLAY = Qt.ItemDataRole.DisplayRole.value
_ALIGN = Qt.ItemDataRole.TextAlignmentRole.value
_SORT = Qt.ItemDataRole.UserRole.value
_RIGHT = (Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value


class RequestsModel(QAbstractTableModel):
    """The rows of a :class:`BenchData` (appended as requests end; never re-sorted here)."""

    def __init__(self, data: BenchData, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bench = data
        self._texts: list[tuple[str, ...]] = []  # (each row's cells, formatted once)
        self._count = len(COLUMNS)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._texts)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self._count

    def _format(self, row: int) -> tuple[str, ...]:
        cells = []
        for column in range(self._count):
            v = self.value(row, column)
            cells.append("–" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v))
        return tuple(cells)

    def catch_up(self) -> None:
        """Show the rows the data gained since the last call."""
        shown, total = len(self._texts), len(self.bench.rows)
        if total > shown:
            self.beginInsertRows(QModelIndex(), shown, total - 1)
            self._texts.extend(self._format(row) for row in range(shown, total))
            self.endInsertRows()

    def reset(self) -> None:
        self.beginResetModel()
        self._texts = [self._format(row) for row in range(len(self.bench.rows))]
        self.endResetModel()

    def value(self, row: int, column: int) -> object:
        f = self.bench.rows[row]
        if column == _STEP:
            return self.bench.steps.get(f.step, str(f.step))
        return COLUMNS[column][1](row, f.metrics)

    def data(self, index: _Index, role: int = _DISPLAY) -> object:
        # (called per visible cell and role on every paint: plain ints, cached text)
        if role == _DISPLAY:
            return self._texts[index.row()][index.column()]
        if role == _ALIGN:
            return None if index.column() in _LEFT else _RIGHT
        if role == _SORT:  # (sorting: numbers as numbers, blanks last)
            v = self.value(index.row(), index.column())
            return float("inf") if v is None else v
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> object:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section][2]
        return None


class RequestsTable(QTableView):
    """The table; :attr:`openRequest` (row, metric key) when a row is double-clicked or
    Enter is pressed on it."""

    openRequest = Signal(int, str)

    def __init__(self, data: BenchData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.requests = RequestsModel(data, self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.requests)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()  # (sized once from the titles: contents would be O(rows))
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        em = self.fontMetrics().horizontalAdvance("0")
        wide = {"Outcome": 19, "Source": 9}  # ("completed (warm-up)", "tokenizer")
        for column, (title, *_rest) in enumerate(COLUMNS):
            self.setColumnWidth(column, max(len(title) + 3, wide.get(title, 8)) * em)
        self.activated.connect(self._on_activated)

    def _on_activated(self, index: QModelIndex) -> None:
        source = self.proxy.mapToSource(index)
        self.openRequest.emit(source.row(), COLUMNS[source.column()][3])

    def select_row(self, row: int) -> None:
        """Select (and scroll to) the request of data row ``row``."""
        index = self.proxy.mapFromSource(self.requests.index(row, 0))
        self.setCurrentIndex(index)
        self.scrollTo(index)
