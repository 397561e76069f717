"""The keyboard (one table of shortcuts, listed as it is), Help → Open log folder without a
file manager, and the conversation list while a turn streams."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QToolTip
from pytestqt.qtbot import QtBot

from streamscope.core import paths
from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.ui.base.shortcuts import SHORTCUTS, ShortcutsDialog, shortcut
from streamscope.ui.chat.conversations_model import LIVE_MARK
from streamscope.ui.chat.conversations_panel import BUSY_NOTE
from streamscope.ui.shell import log_folder
from streamscope.ui.shell.main_window import MainWindow


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.resize(780, 700)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is win)
    yield win
    aloop.run_until_complete(win.shutdown())


def keyed_actions(window: MainWindow) -> dict[str, QAction]:
    actions = [a for a in window.findChildren(QAction) if not a.shortcut().isEmpty()]
    named = {a.objectName(): a for a in actions}
    assert len(named) == len(actions), [a.text() for a in actions]  # one action per name
    return named


def test_the_table_is_the_keys_and_the_help_lists_the_table(window: MainWindow) -> None:
    assert window.power_tools.menu  # the Stream menu (built after the first paint) has keys
    in_window = [e for e in SHORTCUTS if e.where == "window"]
    actions = keyed_actions(window)
    assert sorted(actions) == sorted(f"shortcut_{e.name}" for e in in_window)
    for entry in in_window:
        assert actions[f"shortcut_{entry.name}"].shortcut() == QKeySequence(entry.keys), entry
    keys = [QKeySequence(e.keys) for e in SHORTCUTS]
    assert len(set(k.toString() for k in keys)) == len(keys)  # no key does two things
    assert shortcut("choose_model").keys == "Ctrl+L"
    assert shortcut("regenerate").keys == "Ctrl+R"

    dialog = window.show_shortcuts()
    assert isinstance(dialog, ShortcutsDialog) and dialog.isVisible()
    rows = dialog.rows()
    assert len(rows) == len(SHORTCUTS)
    assert rows[4] == ("Ctrl+E", "Edit the last message")
    assert rows[0] == ("Return", "Send the message (in the message box)")
    assert [text.removesuffix(" (in the message box)") for _, text in rows] == [
        e.text for e in SHORTCUTS
    ]
    help_menu = {a.text(): a for a in window.help.menu.actions()}
    assert help_menu["&Keyboard shortcuts"].shortcut() == QKeySequence("F1")
    assert window.show_shortcuts() is dialog  # asked again: the same one, raised


def test_the_keys_do_what_the_list_says(window: MainWindow, qtbot: QtBot) -> None:
    def press(name: str) -> None:
        sequence = QKeySequence(shortcut(name).keys)
        qtbot.keySequence(QApplication.focusWidget() or window, sequence)

    press("choose_model")
    combo = window.model_combo
    line = combo.lineEdit()
    assert line is not None
    assert QApplication.focusWidget() in (combo, line)
    assert line.selectedText() == combo.currentText() == "demo"
    press("go_conversations")
    assert QApplication.focusWidget() is window.conversations.list
    assert window.conversations.list.hasFocus()
    press("go_inspector")
    focused = QApplication.focusWidget()
    assert focused is not None and window.inspector.isAncestorOf(focused)
    press("go_message")
    assert QApplication.focusWidget() is window.composer.editor

    regenerated: list[bool] = []
    edited: list[bool] = []
    window.composer.regenerateRequested.connect(lambda: regenerated.append(True))
    window.composer.editLastRequested.connect(lambda: edited.append(True))
    press("regenerate")
    press("edit_last")
    assert (regenerated, edited) == ([], [])  # nothing to regenerate: the buttons are off
    window.composer.set_history(has_answer=True)
    press("regenerate")
    press("edit_last")
    assert (regenerated, edited) == ([True], [True])


def test_the_chat_menu_shows_what_a_click_would_do(window: MainWindow) -> None:
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Chat" and a.menu())
    actions = {a.objectName(): a for a in menu.actions() if a.objectName()}
    assert list(actions) == ["shortcut_regenerate", "shortcut_edit_last", "shortcut_stop"]
    menu.aboutToShow.emit()
    assert [a.isEnabled() for a in actions.values()] == [False, False, False]
    menu.aboutToHide.emit()  # keys work again (a disabled action would eat them)
    assert [a.isEnabled() for a in actions.values()] == [True, True, True]


def open_logs(window: MainWindow) -> None:
    action = next(a for a in window.help.menu.actions() if a.text() == "Open &log folder")
    action.trigger()


def test_no_file_manager_shows_the_log_folder_with_copy(
    window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []

    def fail(url: QUrl) -> bool:
        opened.append(url.toLocalFile())
        return False

    monkeypatch.setattr(log_folder.QDesktopServices, "openUrl", fail)
    QGuiApplication.clipboard().setText("something else")
    open_logs(window)
    folder = str(paths.log_dir())
    assert opened == [folder]
    assert Path(folder).is_dir()  # made first: a file manager opens an existing folder
    dialog = window.log_folder_dialog
    assert dialog is not None and dialog.isVisible()
    assert isinstance(dialog, log_folder.LogFolderDialog)
    assert dialog.path_edit.text() == folder and dialog.path_edit.isReadOnly()
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == folder
    assert dialog.copy_button.text() == "Copied"


def test_a_file_manager_that_opens_needs_no_dialog(
    window: MainWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(
        log_folder.QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or True
    )
    open_logs(window)
    assert opened == [str(paths.log_dir())]
    assert window.log_folder_dialog is None


LONG = "A conversation about " + "very long titles that go on " * 12 + "and end here"


@pytest.fixture
def profile_window(
    qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path
) -> Iterator[tuple[MainWindow, Store]]:
    store = Store(tmp_path / "streamscope.db")
    older = store.create_conversation(LONG)
    short = store.create_conversation("Short one")
    for conv in (older, short):  # (not empty: the window reopens the most recent at start)
        store.add_user_message(conv, "hello")
    assert older
    win = MainWindow(demo_speed=1, store=store, captures=CaptureStore(tmp_path / "c", index=store))
    qtbot.addWidget(win)
    win.resize(1024, 700)
    win.show()
    qtbot.waitExposed(win)
    yield win, store
    aloop.run_until_complete(win.shutdown())
    store.close()


def test_the_list_is_browsable_while_a_turn_streams(
    profile_window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    window, _ = profile_window
    panel = window.conversations
    window.switcher.new_conversation()  # (the window reopened the last one at start)
    window.model_combo.setCurrentText("demo-slow")
    window.composer.editor.setPlainText("take your time")
    window.composer._on_submit()

    async def streaming() -> None:  # (the turn runs on the asyncio loop: run it)
        for _ in range(500):
            if window.controller.busy and len(panel.ids()) == 3 and window.chat.cards():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not streaming and listed: {panel.ids()}")

    aloop.run_until_complete(streaming())  # listed as its first turn starts
    current = window.controller.session.conversation_id
    assert current is not None
    row = panel.ids().index(current)
    assert panel.list.currentIndex().row() == row

    assert panel.isEnabled() and panel.list.isEnabled() and panel.search.isEnabled()
    other = panel.model.index(panel.titles().index(LONG))
    assert other.data() == LONG
    assert other.data(Qt.ItemDataRole.ToolTipRole).startswith(LONG + "\n")
    assert panel.titles()[row] == LIVE_MARK + "take your time"  # the streaming one, marked
    other_id = other.data(Qt.ItemDataRole.UserRole)
    panel.list.setCurrentIndex(other)  # a click on an older one, mid-stream: it opens
    panel.list.clicked.emit(other)
    assert window.controller.session.conversation_id == other_id
    assert window.controller.busy and window.controller.live_elsewhere == current
    assert panel.list.currentIndex().row() == panel.ids().index(other_id)
    window.conversations.new_button.click()  # a new one waits for the turn
    assert QToolTip.text() == BUSY_NOTE
    assert window.controller.session.conversation_id == other_id
    panel.list.verticalScrollBar().setValue(0)  # scrolling and searching still work
    panel.search.setText("Short")
    panel.refresh()

    async def searched() -> None:  # (the search's rows come from its thread, queued)
        for _ in range(500):
            if not panel.searching:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(searched())  # (on the asyncio loop: the turn runs on it)
    assert panel.titles() == ["Short one"]
    panel.search.setText("")
    panel.refresh()

    window.controller.stop()

    async def finish() -> None:
        await window.controller.runner.wait()
        for _ in range(500):  # (the list hears the turn's end from the controller's signal)
            if not panel._busy:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(finish())
    assert not window.controller.busy
    older = panel.model.index(panel.titles().index(LONG))
    older_id = older.data(Qt.ItemDataRole.UserRole)
    panel.list.setCurrentIndex(older)
    panel.list.clicked.emit(older)  # after the turn: it opens

    async def opened() -> None:  # (on a busy machine, the stopped turn's last signals queue)
        for _ in range(500):
            if window.controller.session.conversation_id == older_id:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(opened())
    seen = (panel._current, panel._busy, window.controller.busy, panel.ids())  # (if it fails)
    assert window.controller.session.conversation_id == older_id, seen


def test_long_titles_are_elided_not_scrolled(
    profile_window: tuple[MainWindow, Store], qtbot: QtBot
) -> None:
    window, _ = profile_window
    lst = window.conversations.list
    qtbot.wait(50)
    index = window.conversations.model.index(window.conversations.titles().index(LONG))
    assert lst.fontMetrics().horizontalAdvance(LONG) > lst.viewport().width()  # it is long
    assert not lst.horizontalScrollBar().isVisible()
    assert lst.horizontalScrollBar().maximum() == 0
    # what is painted ends in "…" within the row
    shown = lst.fontMetrics().elidedText(LONG, lst.textElideMode(), lst.viewport().width() - 8)
    assert shown.endswith("…") and len(shown) < len(LONG)
    assert index.data(Qt.ItemDataRole.ToolTipRole).split("\n")[0] == LONG


def test_the_keyboard_focus_is_ringed(window: MainWindow, qtbot: QtBot) -> None:
    from streamscope.ui.base.focus_ring import RING_WIDTH

    editor = window.composer.editor
    editor.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is editor)
    ring = window.focus_ring.ring()
    assert ring is not None and ring.isVisible() and ring.widget() is editor

    qtbot.keyClick(editor, Qt.Key.Key_Tab)  # to the Send button, a default button
    send = window.composer.send_button
    assert QApplication.focusWidget() is send
    ring = window.focus_ring.ring()
    assert ring is not None and ring.isVisible() and ring.widget() is send
    around = ring.geometry()
    inner = send.geometry()
    assert around.contains(inner) and around.width() >= inner.width() + RING_WIDTH
    image = ring.grab().toImage()
    highlight = ring.palette().color(ring.palette().ColorRole.Highlight)
    edge = image.pixelColor(image.width() // 2, 1)
    assert (edge.red(), edge.green(), edge.blue()) == (
        highlight.red(),
        highlight.green(),
        highlight.blue(),
    )

    window.conversations.focus_list()  # Ctrl+1's target: the list, ringed too
    ring = window.focus_ring.ring()
    assert ring is not None and ring.widget() is window.conversations.list
