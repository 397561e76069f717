"""The conversation list as a model over the store: pages as it scrolls (every conversation
reachable, the first page only at start), searches in their own thread with rows as they
come and stale ones dropped, the index's progress while it backfills, and the panel's own
behaviour (keyboard, context menu, selection) on the model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import QApplication, QInputDialog, QMenu
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from streamscope.core.store.database import Store
from streamscope.core.store.search_index import IndexProgress, index_progress
from streamscope.ui.chat import conversations_model, conversations_panel
from streamscope.ui.chat.conversations_model import PAGE, ConversationListModel
from streamscope.ui.chat.conversations_panel import ConversationsPanel
from support.search_corpus import CORPUS, build_v4, drain, oracle


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def many(path: Path, count: int) -> Store:
    """A store with ``count`` conversations, ``Chat 0`` the oldest; every tenth holds
    "needle"."""
    store = Store(path, clock=Clock())
    for n in range(count):
        conv = store.create_conversation(f"Chat {n}", endpoint_name="Demo", model="demo")
        if n % 10 == 0:
            store.add_user_message(conv, f"a needle in {n}")
    drain(store._db)
    return store


@pytest.fixture
def thousand(tmp_path: Path) -> Iterator[Store]:
    store = many(tmp_path / "streamscope.db", 1000)
    yield store
    store.close()


@pytest.fixture
def panel(qtbot: QtBot, thousand: Store) -> Iterator[ConversationsPanel]:
    widget = ConversationsPanel(thousand)
    qtbot.addWidget(widget)
    widget.resize(300, 400)
    widget.show()
    qtbot.waitExposed(widget)
    yield widget
    widget.shutdown()


def test_the_model_passes_qtmodeltester_searching(
    qtmodeltester: ModelTester, qtbot: QtBot, tmp_path: Path
) -> None:
    """(The Python tester fetches more itself inside a reset's signal, then blames the model
    for inserting during the reset: it watches once every page is in; the C++ tester below
    watches the paging.)"""
    store = many(tmp_path / "s.db", 250)
    model = ConversationListModel(store)
    try:
        model.show_all()
        while model.canFetchMore(model.index(-1)):
            model.fetchMore(model.index(-1))
        assert model.rowCount() == 250
        qtmodeltester.check(model, force_py=True)  # type: ignore[no-untyped-call]
        model.show_search("needle")
        with qtbot.waitSignal(model.searchFinished, timeout=10_000):
            pass
        assert model.ids() == oracle(store._db, "needle") and len(model.ids()) == 25
        model.show_search("Chat 1")  # another query: emptied at once, then filled
        assert model.rowCount() == 0 and model.searching
        qtbot.waitUntil(lambda: not model.searching, timeout=10_000)
        assert model.ids() == oracle(store._db, "Chat 1") and len(model.ids()) == 111
        model.show_search("Chat 1")  # the same one again: its rows stay until the new ones
        assert model.rowCount() == 111 and model.searching
        qtbot.waitUntil(lambda: not model.searching, timeout=10_000)
        assert model.ids() == oracle(store._db, "Chat 1")
    finally:
        model.close()
        store.close()


def test_the_cpp_model_tester_reports_nothing(
    qtmodeltester: ModelTester, qtlog: object, qtbot: QtBot, tmp_path: Path
) -> None:
    store = many(tmp_path / "s.db", 250)
    model = ConversationListModel(store)
    try:
        qtmodeltester.check(model)  # type: ignore[no-untyped-call]
        model.show_all()
        model.fetchMore(model.index(-1))
        assert model.rowCount() == 2 * PAGE
        model.show_all(keep=2 * PAGE)
        model.fetchMore(model.index(-1))
        assert model.rowCount() == 250 and not model.canFetchMore(model.index(-1))
        model.show_search("Chat 1")
        qtbot.waitUntil(lambda: not model.searching, timeout=10_000)
        assert model.ids() == oracle(store._db, "Chat 1")
        model.show_all()
        assert model.rowCount() == PAGE
        failures = [r.message for r in qtlog.records if "FAIL" in r.message]  # type: ignore[attr-defined]
        assert failures == []
    finally:
        model.close()
        store.close()


def test_every_conversation_is_reachable_by_scrolling(
    panel: ConversationsPanel, thousand: Store, qtbot: QtBot
) -> None:
    panel.refresh()
    assert panel.model.rowCount() == PAGE  # the first page only, at start
    assert panel.titles()[:2] == ["Chat 999", "Chat 998"]
    bar = panel.list.verticalScrollBar()
    for _ in range(50):  # scroll to the end, again and again, as a user would
        bar.setValue(bar.maximum())
        QApplication.processEvents()
        if panel.model.rowCount() == 1000:
            break
    assert panel.model.rowCount() == 1000
    assert panel.titles() == [f"Chat {n}" for n in range(999, -1, -1)]  # each once, in order
    assert not panel.model.canFetchMore(panel.model.index(-1))
    last = panel.model.index(999)
    assert last.data(Qt.ItemDataRole.ToolTipRole).startswith("Chat 0\nDemo · demo\n")
    chosen: list[int] = []
    panel.conversationChosen.connect(chosen.append)
    panel.list.clicked.emit(last)  # the 1,000th opens
    assert chosen == [last.data(Qt.ItemDataRole.UserRole)] == [1]
    bar.setValue(bar.maximum())
    panel.refresh()  # a refresh keeps what was loaded, and the open one in view
    assert panel.model.rowCount() == 1000 and bar.value() == bar.maximum()
    assert panel.list.currentIndex().row() == 999
    panel.set_current(None)
    bar.setValue(bar.maximum() // 2)
    qtbot.wait(50)
    top = panel.list.indexAt(QPoint(5, 5)).row()
    panel.refresh()  # … and the place, when none is open
    qtbot.wait(50)
    assert panel.model.rowCount() == 1000 and panel.list.indexAt(QPoint(5, 5)).row() == top
    assert 450 < top < 550


def test_the_search_runs_off_the_ui_thread_and_stale_results_are_dropped(
    panel: ConversationsPanel, thousand: Store, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    hold = threading.Event()
    real = conversations_model.search_cursor

    def search(db: object, query: str) -> object:
        threads.append(threading.current_thread().name)
        if query == "Chat 5":
            hold.wait(10)  # (the user types on meanwhile)
        return real(db, query)  # type: ignore[arg-type]

    monkeypatch.setattr(conversations_model, "search_cursor", search)
    panel.model.close()  # (a new worker, with the search above)
    panel.set_current(991)  # ("Chat 990": a needle; the selection follows it into results)
    panel.search.setText("Chat 5")
    assert not panel.searching  # the debounce first …
    qtbot.waitUntil(lambda: panel.searching, timeout=2000)  # … then the search
    stale = panel.model._generation
    panel.search.setText("needle")
    hold.set()
    qtbot.waitUntil(lambda: panel.model.query == "needle" and not panel.searching, timeout=10_000)
    assert panel.ids() == oracle(thousand._db, "needle")
    assert panel.list.currentIndex().data(Qt.ItemDataRole.UserRole) == 991
    assert threads and threading.main_thread().name not in threads
    assert set(threads) == {"conversation-search"}
    summary = thousand.conversation(6)
    assert summary is not None
    panel.model._batches.arrived.emit(stale, [summary], True)  # a late batch of "Chat 5"
    QApplication.processEvents()
    assert panel.ids() == oracle(thousand._db, "needle")  # dropped


def test_the_list_says_how_far_the_index_is_and_searches_meanwhile(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_v4(tmp_path / "old.db")
    store = Store(tmp_path / "old.db")
    panel = ConversationsPanel(store)
    qtbot.addWidget(panel)
    panel.show()
    try:
        panel._on_indexer_progress(IndexProgress(0.0, False, 0))
        assert not panel.index_note.isVisible()  # (not for a moment's work)
        monkeypatch.setattr(conversations_panel, "NOTE_AFTER_SECONDS", 0.0)
        panel._on_indexer_progress(IndexProgress(0.436, False, 0))
        assert panel.index_note.isVisible()
        assert panel.index_note.text() == "Indexing history for search… 43 %"
        panel.search.setText("ZÜRICH")
        panel.refresh()
        qtbot.waitUntil(lambda: not panel.searching, timeout=10_000)
        assert panel.ids() == [5]  # found before anything is indexed
        panel.start_indexer()
        qtbot.waitUntil(lambda: not panel.index_note.isVisible(), timeout=20_000)
        assert panel.index_note.text() == "Indexing history for search… 100 %"
        assert index_progress(store._db).backfilled
        panel.refresh()
        qtbot.waitUntil(lambda: not panel.searching, timeout=10_000)
        assert panel.ids() == [5]
        assert panel.titles() == [CORPUS[4][0]]
    finally:
        panel.shutdown()
        store.close()
    assert panel.indexer is not None and not panel.indexer.running


def test_enter_opens_the_row_and_the_selection_follows_the_open_one(
    panel: ConversationsPanel, qtbot: QtBot
) -> None:
    panel.set_current(995)  # ("Chat 994": "Chat n" is conversation n + 1)
    assert panel.list.currentIndex().row() == 5
    chosen: list[int] = []
    panel.conversationChosen.connect(chosen.append)
    panel.focus_list()
    qtbot.keyClick(panel.list, Qt.Key.Key_Down)
    qtbot.keyClick(panel.list, Qt.Key.Key_Return)
    assert chosen == [994]  # the row below
    panel.set_current(None)
    assert not panel.list.selectionModel().hasSelection()
    panel.set_current(10)  # not loaded (page 10): nothing selected, nothing loaded for it
    assert not panel.list.selectionModel().hasSelection() and panel.model.rowCount() == PAGE


def test_the_context_menu_renames_exports_and_deletes(
    panel: ConversationsPanel, thousand: Store, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    panel.refresh()
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("  Renamed  ", True))
    exports: list[tuple[int, str]] = []
    panel.exportRequested.connect(lambda i, kind: exports.append((i, kind)))

    def menu_on_row(row: int, pick: str) -> list[str]:
        """Right-click ``row``, choose ``pick`` in the menu; returns the menu's items."""
        seen: list[str] = []

        def choose() -> None:
            menu = QApplication.activePopupWidget()
            assert isinstance(menu, QMenu)
            seen.extend(a.text() for a in menu.actions())
            menu.setActiveAction(next(a for a in menu.actions() if a.text() == pick))
            qtbot.keyClick(menu, Qt.Key.Key_Return)

        QTimer.singleShot(50, choose)
        where = panel.list.visualRect(panel.model.index(row)).center()
        panel.list.customContextMenuRequested.emit(where)
        return seen

    items = menu_on_row(1, "Rename…")
    assert items == [
        "Rename…", "Export as Markdown…", "Export as JSON…", "Export as HAR…", "", "Delete"
    ]  # fmt: skip
    assert panel.titles()[0] == "Renamed"  # (renaming makes it the newest)
    renamed = thousand.conversation(999)
    assert renamed is not None and renamed.title == "Renamed"
    menu_on_row(0, "Export as JSON…")
    menu_on_row(0, "Export as HAR…")
    assert exports == [(999, "json"), (999, "har")]
    menu_on_row(0, "Delete")
    assert 999 not in panel.ids() and panel.undo_button.isVisibleTo(panel)
    panel.undo_delete()
    assert panel.ids()[0] == 999 and panel.list.currentIndex().row() == 0
