"""The conversation list: search, new, rename, delete (with undo), export.

Backed by the :class:`~streamscope.core.store.database.Store` when there is one; without a store
(tests, a read-only profile) it lists the current in-memory conversation only.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.store.database import Store

UNDO_SECONDS = 15

BUSY_NOTE = "A turn is streaming: stop it (Esc) or let it finish, then open another conversation."


class ConversationsPanel(QWidget):
    conversationChosen = Signal(int)
    newRequested = Signal()
    exportRequested = Signal(int, str)  # id, "md" | "json"
    deleted = Signal(int)

    def __init__(self, store: Store | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget(self)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        # Long titles end in "…" (the whole title is the tooltip); the list never scrolls
        # sideways.
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
        layout.addWidget(self.list, 1)
        row = QHBoxLayout()
        row.addWidget(self.new_button, 1)
        row.addWidget(self.undo_button)
        layout.addLayout(row)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(200)
        self._search_timer.timeout.connect(self.refresh)
        self._undo_timer = QTimer(self)
        self._undo_timer.setSingleShot(True)
        self._undo_timer.timeout.connect(self.undo_button.hide)
        self._deleted: int | None = None
        self._current: int | None = None
        self._busy = False

        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.list.itemActivated.connect(self._on_list_item_activated)
        self.list.itemClicked.connect(self._on_list_item_activated)
        self.list.customContextMenuRequested.connect(self._on_list_context_menu)
        self.new_button.clicked.connect(self._on_new_button_clicked)
        self.undo_button.clicked.connect(self.undo_delete)

    # -- contents ------------------------------------------------------------------------

    def refresh(self, current: int | None = None) -> None:
        """Reload from the store (newest first), keeping ``current`` selected."""
        if current is not None:
            self._current = current
        self.list.clear()
        if self.store is None:
            self.list.addItem(QListWidgetItem("Current conversation (not saved)"))
            return
        search = self.search.text().strip() or None
        for conv in self.store.list_conversations(search, limit=500):
            item = QListWidgetItem(conv.title or "Untitled")
            item.setData(Qt.ItemDataRole.UserRole, conv.id)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(conv.updated))
            where = f"{conv.endpoint_name or ''} · {conv.model or ''}"
            item.setToolTip(f"{conv.title}\n{where}\n{when}")
            self.list.addItem(item)
            if conv.id == self._current:
                self.list.setCurrentItem(item)

    def set_busy(self, busy: bool) -> None:
        """While a turn streams the list stays browsable (scroll, search, tooltips, menus);
        opening another conversation waits for the turn (clicking one says so)."""
        self._busy = busy

    def focus_list(self) -> None:
        """Keyboard focus on the list, at the open conversation (or the first one)."""
        self.list.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)

    def set_current(self, conversation_id: int | None) -> None:
        self._current = conversation_id
        self.refresh()

    def ids(self) -> list[int]:
        return [
            int(self.list.item(i).data(Qt.ItemDataRole.UserRole))
            for i in range(self.list.count())
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) is not None
        ]

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

    def _on_list_item_activated(self, item: QListWidgetItem) -> None:
        conv_id = item.data(Qt.ItemDataRole.UserRole)
        if conv_id is None or int(conv_id) == self._current:
            return
        if self._busy:
            self._select(self._current)  # the chat still shows the streaming conversation
            QToolTip.showText(
                self.list.mapToGlobal(self.list.visualItemRect(item).center()),
                BUSY_NOTE,
                self.list,
            )
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

    def _select(self, conversation_id: int | None) -> None:
        """Select the row of ``conversation_id`` (none: no row), without opening it."""
        self.list.blockSignals(True)
        try:
            self.list.setCurrentRow(-1)
            for i in range(self.list.count()):
                item = self.list.item(i)
                if conversation_id is not None and (
                    item.data(Qt.ItemDataRole.UserRole) == conversation_id
                ):
                    self.list.setCurrentItem(item)
                    break
        finally:
            self.list.blockSignals(False)

    def _on_list_context_menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None or item.data(Qt.ItemDataRole.UserRole) is None:
            return
        conv_id = int(item.data(Qt.ItemDataRole.UserRole))
        menu = QMenu(self)
        rename = menu.addAction("Rename…")
        md = menu.addAction("Export as Markdown…")
        js = menu.addAction("Export as JSON…")
        menu.addSeparator()
        delete = menu.addAction("Delete")
        chosen = menu.exec(self.list.mapToGlobal(pos))
        if chosen is rename:
            title, ok = QInputDialog.getText(self, "Rename", "Title:", text=item.text())
            if ok:
                self.rename(conv_id, title)
        elif chosen is delete:
            self.delete(conv_id)
        elif chosen is md:
            self.exportRequested.emit(conv_id, "md")
        elif chosen is js:
            self.exportRequested.emit(conv_id, "json")
