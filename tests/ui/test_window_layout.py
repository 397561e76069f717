"""The window's layout comes back as it was left, and the chat column keeps room to read.

The frame paints before its panels exist (``MainWindow(deferred=True)`` then ``build()``, as
``run_app`` does); a layout restored into that window once came back with the Conversations
dock ~535 px wide and the message box ~70. The offscreen screen is 800×800 and
``restoreGeometry`` clamps to it, so a second start is resized to the first one's size: the
same screen again."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import qasync
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from streamscope.ui.base.after_paint import paint_now
from streamscope.ui.shell import window_state
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.shell.window_state import (
    CHAT_MIN_WIDTH,
    DEFAULT_CONVERSATIONS_WIDTH,
    DEFAULT_INSPECTOR_WIDTH,
)

Start = Callable[..., MainWindow]


@pytest.fixture
def start(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[Start]:
    """Start the window as the app does (frame first, then the panels), at a given size."""
    windows: list[MainWindow] = []

    def run(width: int = 1360, height: int = 860, *, deferred: bool = True) -> MainWindow:
        window = MainWindow(deferred=deferred)
        qtbot.addWidget(window)
        windows.append(window)
        window.resize(width, height)
        window.show()
        if deferred:
            paint_now(window)
            window.build()
        qtbot.waitExposed(window)
        qtbot.wait(100)  # queued shows, the layout, the chat's room
        return window

    yield run
    for window in windows:
        if window.built:
            aloop.run_until_complete(window.shutdown())


def widths(window: MainWindow) -> tuple[int, int, int]:
    return (
        window.conversations_dock.width(),
        window.inspector_dock.width(),
        window.chat.width(),
    )


def test_start_quit_start_keeps_the_docks_and_the_message_box(start: Start) -> None:
    first = start()
    assert widths(first) == (DEFAULT_CONVERSATIONS_WIDTH, DEFAULT_INSPECTOR_WIDTH, 616)
    first.resizeDocks(
        [first.conversations_dock, first.inspector_dock], [260, 480], Qt.Orientation.Horizontal
    )
    _settle(first)
    before = widths(first)
    box = (first.composer.editor.width(), first.composer.editor.height(), first.composer.height())
    assert before[:2] == (260, 480)
    first.close()  # saves the layout

    second = start()
    after = widths(second)
    again = (
        second.composer.editor.width(),
        second.composer.editor.height(),
        second.composer.height(),
    )
    assert all(abs(a - b) <= 3 for a, b in zip(after, before, strict=True)), (after, before)
    assert all(abs(a - b) <= 3 for a, b in zip(again, box, strict=True)), (again, box)
    assert again[0] > 300  # the message box is a box, not a 70 px sliver


@pytest.mark.parametrize("deferred", [True, False], ids=["frame-first", "built-hidden"])
def test_a_layout_that_squeezes_the_chat_falls_back_to_the_defaults(
    start: Start, deferred: bool
) -> None:
    first = start()
    first.chat_room.enabled = False  # save what the broken restore used to produce
    first.resizeDocks(
        [first.conversations_dock, first.inspector_dock], [535, 535], Qt.Orientation.Horizontal
    )
    _settle(first)
    assert first.chat.width() < CHAT_MIN_WIDTH
    first.close()

    second = start(deferred=deferred)
    assert widths(second) == (DEFAULT_CONVERSATIONS_WIDTH, DEFAULT_INSPECTOR_WIDTH, 616)


def test_a_layout_that_leaves_the_chat_room_is_kept_as_it_was(start: Start) -> None:
    first = start()
    first.resizeDocks(
        [first.conversations_dock, first.inspector_dock], [300, 600], Qt.Orientation.Horizontal
    )
    _settle(first)
    kept = widths(first)
    assert kept[2] >= CHAT_MIN_WIDTH
    first.close()
    assert widths(start(deferred=False)) == kept


def test_at_1024_by_700_the_chat_comes_before_the_inspector(start: Start) -> None:
    window = start(1024, 700)
    conversations, inspector, chat = widths(window)
    assert chat == CHAT_MIN_WIDTH
    assert conversations == DEFAULT_CONVERSATIONS_WIDTH  # the inspector gave way, not the list
    assert inspector < DEFAULT_INSPECTOR_WIDTH


def test_a_narrowed_window_takes_the_width_from_the_inspector_first(start: Start) -> None:
    window = start(1360, 860)
    assert widths(window)[2] == 616
    window.resize(1024, 700)
    _settle(window)
    assert widths(window) == (DEFAULT_CONVERSATIONS_WIDTH, 400, CHAT_MIN_WIDTH)
    window.resize(860, 600)  # the inspector at its minimum … then the list gives way
    _settle(window)
    conversations, inspector, chat = widths(window)
    assert chat == CHAT_MIN_WIDTH
    assert inspector == window.inspector_dock.minimumSizeHint().width()
    assert conversations < DEFAULT_CONVERSATIONS_WIDTH
    window.inspector_dock.close()  # a closed dock gives nothing and takes nothing
    _settle(window)
    assert window.chat.width() > CHAT_MIN_WIDTH


def _settle(window: MainWindow) -> None:
    for _ in range(5):
        QCoreApplication.processEvents()
        QTest.qWait(20)


def test_a_dock_dragged_wider_by_hand_is_the_users_choice(start: Start) -> None:
    from PySide6.QtCore import QPoint

    window = start(1360, 860)
    centre = window.centralWidget()
    assert centre is not None
    at = QPoint(centre.geometry().right() + 3, centre.geometry().center().y())  # the separator
    QTest.mousePress(window, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)
    seen = []
    for dx in range(0, 320, 20):
        QTest.mouseMove(window, QPoint(at.x() - dx, at.y()))
        _settle(window)
        seen.append(window.chat.width())
    assert seen == sorted(seen, reverse=True) and seen[-1] < CHAT_MIN_WIDTH - 50, seen
    QTest.mouseRelease(
        window, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at - QPoint(300, 0)
    )
    QTest.qWait(300)
    _settle(window)
    _, inspector, chat = widths(window)
    assert chat < CHAT_MIN_WIDTH  # not snapped back while (or after) the user drags
    assert inspector > DEFAULT_INSPECTOR_WIDTH + 200


def test_a_window_narrowed_to_1100_leaves_the_inspector_no_wider_than_the_chat(
    start: Start,
) -> None:
    """The inspector gave way only until the chat was :data:`CHAT_MIN_WIDTH` wide: at
    1100 px it kept 476 px beside a 400 px chat. The chat comes first: they share."""
    window = start(1360, 860)
    window.resize(1100, 700)
    _settle(window)
    conversations, inspector, chat = widths(window)
    assert conversations == DEFAULT_CONVERSATIONS_WIDTH
    assert chat >= inspector and chat - inspector <= 1, (inspector, chat)
    assert chat > CHAT_MIN_WIDTH


def test_an_open_find_bar_does_not_widen_the_inspector_over_the_chat(start: Start) -> None:
    """Find in frames opened, then the window narrowed to 1024×700: the find bar held the
    inspector at 482 px and the chat at 374 (the list at its minimum). Its count moves to a
    row of its own instead, whole."""
    window = start(1360, 860)
    bar = window.power_tools.find_in_frames()
    _settle(window)
    window.resize(1024, 700)
    _settle(window)
    conversations, inspector, chat = widths(window)
    assert chat >= inspector, (conversations, inspector, chat)
    assert chat >= CHAT_MIN_WIDTH
    assert conversations == DEFAULT_CONVERSATIONS_WIDTH  # the list did not have to give way
    assert bar.isVisible() and bar.one_row is False
    assert bar.count_label.width() >= bar.count_label.minimumSizeHint().width()
    window.resize(1600, 900)  # room enough: one row again
    window.resizeDocks([window.inspector_dock], [900], Qt.Orientation.Horizontal)
    _settle(window)
    assert bar.width() >= bar.row_width(with_count=True) and bar.one_row is True


def test_the_first_window_fits_the_screen_and_a_saved_one_is_fitted_to_it(qtbot: QtBot) -> None:
    """The first start's window was 1360×860 whatever the screen (wider than a 1280×800
    one); a geometry saved on a larger screen comes back fitted to this one."""
    from streamscope.ui.base.first_paint import DEFAULT_SIZE, FRAME_ROOM

    first = MainWindow(deferred=True)
    qtbot.addWidget(first)
    free = first.screen().availableGeometry()
    assert free.width() < DEFAULT_SIZE[0]  # (the offscreen screen: 800×800)
    assert (first.width(), first.height()) == (
        free.width() - FRAME_ROOM[0],
        free.height() - FRAME_ROOM[1],
    )
    first.show()
    qtbot.waitExposed(first)
    first.resize(1500, 1000)  # (as on a larger screen)
    settings = window_state._settings()
    settings.setValue("geometry", first.saveGeometry())
    settings.sync()
    second = MainWindow(deferred=True)
    qtbot.addWidget(second)
    assert second.width() <= free.width() and second.height() <= free.height()
    assert second.width() > free.width() - FRAME_ROOM[0]  # (a saved one: no room taken)
