"""The conversation list's rows: a Qt list model over the store, paged as the view scrolls,
or filled by a search running in its own thread.

Browsing, the model holds the first :data:`PAGE` conversations (newest first) and fetches
the next page when the view scrolls to the end (``canFetchMore``/``fetchMore``, keyed on the
last row, so every conversation is reachable and no page costs more than a page). Searching,
a :class:`~streamscope.core.store.search.SearchWorker` runs the query on its own connection;
its batches arrive here through a queued signal, and rows of a search that is no longer the
latest are dropped. Rows are :class:`~streamscope.core.store.records.ConversationSummary`
values; the view asks for the title (display), the title, endpoint · model and date
(tooltip), and the id (``UserRole``). The conversation a turn streams into is marked
(:data:`LIVE_MARK`, and a line in its tooltip) until the turn ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from streamscope.core.store.database import ConversationSummary, Store
from streamscope.core.store.search import SearchWorker, search_cursor

__all__ = ["LIVE_MARK", "LIVE_TIP", "PAGE", "UNSAVED", "ConversationListModel", "tooltip"]

PAGE = 100
"""Rows fetched at a time while browsing."""

UNSAVED = "Current conversation (not saved)"
"""The one row without a store."""

LIVE_MARK = "● "
"""Before the title of the conversation a turn streams into."""
LIVE_TIP = "● A turn is streaming in this conversation."

_Index = QModelIndex | QPersistentModelIndex
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ID = int(Qt.ItemDataRole.UserRole)


def tooltip(conv: ConversationSummary) -> str:
    """Title, endpoint · model, and when it was last updated (local time)."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(conv.updated))
    return f"{conv.title}\n{conv.endpoint_name or ''} · {conv.model or ''}\n{when}"


class _Batches(QObject):
    """Carries a search's batches from the worker's thread to the model's (queued)."""

    arrived = Signal(int, object, bool)

    def hand_on(self, generation: int, rows: Sequence[ConversationSummary], done: bool) -> None:
        """(Called in the worker's thread.) Emit, unless the model is being deleted."""
        with contextlib.suppress(RuntimeError):  # (its C++ object gone before the thread)
            self.arrived.emit(generation, rows, done)


class ConversationListModel(QAbstractListModel):
    """The list's rows (see the module docstring); ``store=None``: one unsaved row."""

    searchFinished = Signal()
    """The search running has delivered its last rows."""
    rowsArrived = Signal()
    """Rows came in (a page, or a search's batch)."""

    def __init__(self, store: Store | None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self._rows: list[ConversationSummary] = []
        self._complete = True  # browsing: no page left to fetch
        self._query: str | None = None
        self._generation = 0
        self._replace = False  # the search's first batch replaces the rows shown
        self._changing = False
        self.searching = False
        """A search runs and has not delivered its last rows yet."""
        self.live: int | None = None
        """The conversation a turn streams into (marked)."""
        self._worker: SearchWorker | None = None
        self._batches = _Batches(self)
        self._batches.arrived.connect(self._on_batches_arrived)

    # -- Qt model ------------------------------------------------------------------------

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid():
            return 0
        return 1 if self.store is None else len(self._rows)

    def data(self, index: _Index, role: int = _DISPLAY) -> Any:
        if not index.isValid() or not 0 <= index.row() < self.rowCount():
            return None
        if self.store is None:
            return UNSAVED if role == _DISPLAY else None
        conv = self._rows[index.row()]
        live = conv.id == self.live
        if role == _DISPLAY:
            return (LIVE_MARK if live else "") + (conv.title or "Untitled")
        if role == _TOOLTIP:
            return tooltip(conv) + (f"\n{LIVE_TIP}" if live else "")
        if role == _ID:
            return conv.id
        return None

    def canFetchMore(self, parent: _Index) -> bool:
        # (not while rows change: whoever listens to the change would fetch the page again)
        return (
            not parent.isValid()
            and self._query is None
            and not self._complete
            and not self._changing
        )

    def fetchMore(self, parent: _Index) -> None:
        if not self.canFetchMore(parent) or self.store is None:
            return
        after = self._rows[-1] if self._rows else None
        page = self.store.list_conversations(limit=PAGE + 1, after=after)  # (+1: is there more?)
        self._complete = len(page) <= PAGE
        page = page[:PAGE]
        if page:
            self._append(page)
            self.rowsArrived.emit()

    # -- what it shows -------------------------------------------------------------------

    def show_all(self, keep: int = 0) -> None:
        """Browse: the newest conversations, at least a page — as many as ``keep`` (the rows
        loaded before a refresh, so the view keeps its place)."""
        self._stop_search()
        count = max(PAGE, keep)
        rows = self.store.list_conversations(limit=count + 1) if self.store is not None else []
        self._complete = len(rows) <= count
        self._reset(rows[:count])
        self.rowsArrived.emit()

    def show_search(self, query: str) -> None:
        """Search ``query`` (off this thread). The rows shown stay until its first batch if
        the query is the one shown; another query empties the list at once."""
        if self.store is None:
            return
        if query != self._query:
            self._reset([])
        self._query = query
        self._complete = True
        self.searching = True
        self._replace = True
        path = self.store.path
        if str(path) == ":memory:":  # (tests: no second connection sees it — search here)
            self._generation += 1
            rows = self.store.list_conversations(query, limit=None)
            self._on_batches_arrived(self._generation, rows, True)
            return
        if self._worker is None:
            self._worker = worker = SearchWorker(
                Path(path), self._batches.hand_on, search=search_cursor
            )
            self.destroyed.connect(lambda *_: worker.close())
        self._generation = self._worker.submit(query)

    def _stop_search(self) -> None:
        self._query = None
        self._generation += 1
        if self._worker is not None:
            self._worker.cancel()
        if self.searching:
            self.searching = False
            self.searchFinished.emit()

    def _on_batches_arrived(
        self, generation: int, rows: Sequence[ConversationSummary], done: bool
    ) -> None:
        if generation != self._generation or self._query is None:
            return  # a search the user has moved on from
        if self._replace:
            self._replace = False
            self._reset(list(rows))
        elif rows:
            self._append(rows)
        self.rowsArrived.emit()
        if done:
            self.searching = False
            self.searchFinished.emit()

    def _reset(self, rows: list[ConversationSummary]) -> None:
        self._changing = True
        try:
            self.beginResetModel()
            self._rows = rows
            self.endResetModel()
        finally:
            self._changing = False

    def _append(self, rows: Sequence[ConversationSummary]) -> None:
        self._changing = True
        try:
            first = len(self._rows)
            self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
            self._rows += rows
            self.endInsertRows()
        finally:
            self._changing = False

    def close(self) -> None:
        """Stop the search thread (at shutdown)."""
        self._generation += 1
        self.searching = False
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    # -- rows ----------------------------------------------------------------------------

    def set_live(self, conversation_id: int | None) -> None:
        """Mark the conversation a turn streams into (``None``: none)."""
        if conversation_id == self.live:
            return
        changed = [self.row_of(self.live), self.row_of(conversation_id)]
        self.live = conversation_id
        for row in changed:
            if row is not None:
                index = self.index(row)
                self.dataChanged.emit(index, index, [_DISPLAY, _TOOLTIP])

    @property
    def query(self) -> str | None:
        """The search shown (``None``: browsing)."""
        return self._query

    def ids(self) -> list[int]:
        """The ids of the rows loaded, top to bottom."""
        return [c.id for c in self._rows]

    def row_of(self, conversation_id: int | None) -> int | None:
        """The row of a loaded conversation (``None``: not loaded, or not listed)."""
        if conversation_id is None:
            return None
        for row, conv in enumerate(self._rows):
            if conv.id == conversation_id:
                return row
        return None
