"""The conversation list: search, new, rename, delete (with undo), export.

Backed by the :class:`~streamscope.core.store.database.Store` when there is one; without a store
(tests, a read-only profile) it lists the current in-memory conversation only. The rows are a
:class:`~streamscope.ui.chat.conversations_model.ConversationListModel`: a page at a time while
browsing (every conversation is reachable by scrolling), a search's results as they come
while searching (typing waits :data:`SEARCH_DEBOUNCE_MS`, then the search runs in its own
thread; a newer one replaces it). Results are newest first, like the list, not by relevance:
the list keeps the order the user knows, and the first rows can be shown before the search
has read everything.

The panel also keeps the search index full: a
:class:`~streamscope.core.store.search_index.SearchIndexer` thread starts shortly after the
window (it indexes what an older version saved, then each answer once it has ended) and,
while it backfills, the list says "Indexing history for search… 43 %". Searches are complete
meanwhile: they read what is not indexed yet.
"""

from __future__ import annotations

import contextlib
import time

from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.store.database import Store
from streamscope.core.store.search_index import IndexProgress, SearchIndexer
from streamscope.ui.chat.conversations_model import ConversationListModel

UNDO_SECONDS = 15

BUSY_NOTE = "A turn is streaming: stop it (Esc) or let it finish, then start a new conversation."
"""Said by "+ New conversation" while a turn streams (one turn at a time; any conversation
can be opened to read meanwhile)."""

SEARCH_DEBOUNCE_MS = 200
INDEXER_DELAY_MS = 1500
"""The indexer starts this long after the panel (start-up first)."""
NOTE_AFTER_SECONDS = 0.5
"""The indexing note shows once the backfill has run this long (a small one never shows)."""


def indexing_note(progress: IndexProgress) -> str:
    return f"Indexing history for search… {progress.percent} %"


class _Progress(QObject):
    """Carries the indexer's progress from its thread to the panel's (queued)."""

    reported = Signal(object)

    def hand_on(self, progress: IndexProgress) -> None:
        """(Called in the indexer's thread.) Emit, unless the panel is being deleted."""
        with contextlib.suppress(RuntimeError):  # (its C++ object gone before the thread)
            self.reported.emit(progress)


class ConversationsPanel(QWidget):
    conversationChosen = Signal(int)
    newRequested = Signal()
    exportRequested = Signal(int, str)  # id, "md" | "json" | "har"
    deleted = Signal(int)

    def __init__(self, store: Store | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self.index_note = QLabel(self)
        self.index_note.setStyleSheet("color: palette(placeholder-text);")
        self.index_note.hide()
        self.model = ConversationListModel(store, self)
        self.list = QListView(self)
        self.list.setModel(self.model)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # Long titles end in "…" (the whole title is the tooltip); the list never scrolls
        # sideways; every row is one line (the view lays out none it does not show).
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setWordWrap(False)
        self.list.setUniformItemSizes(True)
        self.new_button = QPushButton("+ New conversation", self)
        self.undo_button = QPushButton("Undo delete", self)
        self.undo_button.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.search)
        layout.addWidget(self.index_note)
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        row.addWidget(self.new_button, 1)
        row.addWidget(self.undo_button)
        layout.addLayout(row)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DEBOUNCE_MS)
        self._search_timer.timeout.connect(self.refresh)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.undo_button.hide)
        self._deleted: int | None = None
        self._current: int | None = None
        self._busy = False
        self._progress = _Progress(self)
        self._progress.reported.connect(self._on_indexer_progress)
        self.indexer: SearchIndexer | None = None
        self._indexing_since: float | None = None
        self._shut = False

        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.list.activated.connect(self._on_list_activated)
        self.list.clicked.connect(self._on_list_activated)
        self.list.customContextMenuRequested.connect(self._on_list_context_menu)
        self.model.rowsArrived.connect(self._on_model_rows_arrived)
        self.new_button.clicked.connect(self._on_new_button_clicked)
        self.undo_button.clicked.connect(self.undo_delete)
        if store is not None and str(store.path) != ":memory:":
            QTimer.singleShot(INDEXER_DELAY_MS, self, self.start_indexer)

    # -- contents ------------------------------------------------------------------------

    def refresh(self, current: int | None = None) -> None:
        """Reload from the store (newest first), keeping ``current`` selected: browsing, the
        rows loaded so far (at once); searching, the search again (its rows as they come)."""
        if current is not None:
            self._current = current
        if self._shut:
            return
        query = self.search.text().strip()
        if self.store is not None and query:
            self.model.show_search(query)
        else:
            keep = len(self.model.ids()) if self.model.query is None else 0
            self.model.show_all(keep)  # (as many rows as before: the view keeps its place)
        self._select(self._current)

    @property
    def searching(self) -> bool:
        """A search runs (its rows are still coming)."""
        return self.model.searching

    def set_busy(self, busy: bool, live: int | None = None) -> None:
        """While a turn streams the list stays usable (scroll, search, open any conversation
        to read, tooltips, menus); its conversation (``live``) is marked, and a new one
        waits for the turn (the button says so)."""
        self._busy = busy
        self.model.set_live(live if busy else None)

    def focus_list(self) -> None:
        """Keyboard focus on the list, at the open conversation (or the first one)."""
        self.list.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if not self.list.currentIndex().isValid() and self.model.rowCount():
            self.list.setCurrentIndex(self.model.index(0))

    def set_current(self, conversation_id: int | None) -> None:
        self._current = conversation_id
        self.refresh()

    def ids(self) -> list[int]:
        """The conversations listed (loaded so far), top to bottom."""
        return self.model.ids()

    def titles(self) -> list[str]:
        """The rows' text, top to bottom."""
        return [self.model.index(r).data() for r in range(self.model.rowCount())]

    # -- the index -----------------------------------------------------------------------

    def start_indexer(self) -> None:
        """Start keeping the search index full (once; a file-backed store only)."""
        if self.indexer is not None or self.store is None or self._shut:
            return
        model = self.model
        self.indexer = indexer = SearchIndexer(
            self.store.path,
            on_progress=self._progress.hand_on,
            busy=lambda: model.searching,  # (a search reading the rest goes first)
        )
        self.destroyed.connect(lambda *_: indexer.stop())
        indexer.start()

    def _on_indexer_progress(self, progress: IndexProgress) -> None:
        self.index_note.setText(indexing_note(progress))
        if progress.finished:
            self._indexing_since = None
            self.index_note.hide()
            return
        now = time.monotonic()
        if self._indexing_since is None:
            self._indexing_since = now
        self.index_note.setVisible(now - self._indexing_since >= NOTE_AFTER_SECONDS)

    def shutdown(self) -> None:
        """Stop the search and indexer threads (each finishes its step first); the panel
        lists nothing more. (Python objects only: the widgets may be gone already.)"""
        self._shut = True
        if self.indexer is not None:
            self.indexer.stop()
        self.model.close()

    # -- actions -------------------------------------------------------------------------

    def rename(self, conversation_id: int, title: str) -> None:
        if self.store is not None and title.strip():
            self.store.rename(conversation_id, title.strip())
            self.refresh()

    def delete(self, conversation_id: int) -> None:
        """Hide the conversation; "Undo delete" brings it back for a while."""
        if self.store is None:
            return
        self.store.delete(conversation_id)
        self._deleted = conversation_id
        self.undo_button.show()
        self._undo_timer.start(UNDO_SECONDS * 1000)
        self.deleted.emit(conversation_id)
        self.refresh()

    def undo_delete(self) -> None:
        if self.store is not None and self._deleted is not None:
            self.store.restore(self._deleted)
            self._current = self._deleted
            self._deleted = None
        self.undo_button.hide()
        self.refresh()

    def _on_list_activated(self, index: QModelIndex) -> None:
        conv_id = index.data(Qt.ItemDataRole.UserRole)
        if conv_id is None or int(conv_id) == self._current:
            return
        self._current = int(conv_id)
        self.conversationChosen.emit(int(conv_id))

    def _on_new_button_clicked(self) -> None:
        if self._busy:
            QToolTip.showText(
                self.new_button.mapToGlobal(self.new_button.rect().center()),
                BUSY_NOTE,
                self.new_button,
            )
            return
        self.newRequested.emit()

    def _on_model_rows_arrived(self) -> None:
        if not self.list.currentIndex().isValid():
            self._select(self._current)  # (the open one may have just arrived)

    def _select(self, conversation_id: int | None) -> None:
        """Select the row of ``conversation_id`` (none: no row), without opening it."""
        row = self.model.row_of(conversation_id)
        selection = self.list.selectionModel()
        if row is None:
            selection.clear()
        else:
            self.list.setCurrentIndex(self.model.index(row))

    def _on_list_context_menu(self, pos: QPoint) -> None:
        index = self.list.indexAt(pos)
        if not index.isValid() or index.data(Qt.ItemDataRole.UserRole) is None:
            return
        conv_id = int(index.data(Qt.ItemDataRole.UserRole))
        menu = QMenu(self)
        rename = menu.addAction("Rename…")
        md = menu.addAction("Export as Markdown…")
        js = menu.addAction("Export as JSON…")
        har = menu.addAction("Export as HAR…")
        menu.addSeparator()
        delete = menu.addAction("Delete")
        chosen = menu.exec(self.list.mapToGlobal(pos))
        if chosen is rename:
            title, ok = QInputDialog.getText(self, "Rename", "Title:", text=index.data())
            if ok:
                self.rename(conv_id, title)
        elif chosen is delete:
            self.delete(conv_id)
        elif chosen is md:
            self.exportRequested.emit(conv_id, "md")
        elif chosen is js:
            self.exportRequested.emit(conv_id, "json")
        elif chosen is har:
            self.exportRequested.emit(conv_id, "har")
