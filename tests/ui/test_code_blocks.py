"""Code in answers keeps its lines: a line wider than the chat scrolls sideways instead of
wrapping (prose still wraps), the pane makes room for its sideways bar, and it opens at the
start of the line (where the Copy link is)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from streamscope.ui.chat.chat_view import ChatView, NoticeCard
from streamscope.ui.chat.text_pane import TextPane

LONG_LINE = "    return some_function_with_a_long_name(argument_one, argument_two, argument_three)"
SOURCE = (
    "Some prose that is long enough to wrap around at this width, as prose should do "
    "in a chat column that is only a few hundred pixels wide.\n\n"
    f"```python\ndef f(x):\n{LONG_LINE}\n```\n\nAfter the code."
)


@pytest.fixture
def view(qtbot: QtBot) -> Iterator[ChatView]:
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(420, 600)
    chat.show()
    qtbot.waitExposed(chat)
    yield chat


def notice_pane(view: ChatView, qtbot: QtBot, source: str) -> TextPane:
    view.add_notice(source)
    card = view.cards()[-1]
    assert isinstance(card, NoticeCard)
    qtbot.wait(50)
    return card.pane


def lines_of(pane: TextPane, text: str) -> int:
    block = pane.document().find(text).block()
    layout = block.layout()
    assert layout is not None
    return layout.lineCount()


def test_a_long_code_line_scrolls_sideways_and_prose_wraps(view: ChatView, qtbot: QtBot) -> None:
    pane = notice_pane(view, qtbot, SOURCE)
    assert pane.width() < 420
    assert lines_of(pane, "some_function_with_a_long_name") == 1  # not wrapped
    assert lines_of(pane, "Some prose") > 1  # wrapped
    bar = pane.horizontalScrollBar()
    assert bar.maximum() > 0 and bar.isVisible()
    assert bar.value() == 0  # opens at the start, Copy in view
    document_height = pane.document().documentLayout().documentSize().height()
    assert pane.height() == pane.frameWidth() * 2 + int(-(-document_height // 1)) + (
        bar.sizeHint().height()
    )
    assert pane.codes == [f"def f(x):\n{LONG_LINE}"]


def test_shift_wheel_scrolls_the_code_and_the_wheel_still_scrolls_the_chat(
    view: ChatView, qtbot: QtBot
) -> None:
    pane = notice_pane(view, qtbot, SOURCE)
    bar = pane.horizontalScrollBar()

    def wheel(dx: int, dy: int, modifiers: Qt.KeyboardModifier) -> bool:
        event = QWheelEvent(
            QPointF(5, 5),
            QPointF(pane.viewport().mapToGlobal(QPoint(5, 5))),
            QPoint(0, 0),
            QPoint(dx, dy),
            Qt.MouseButton.NoButton,
            modifiers,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(pane.viewport(), event)
        return event.isAccepted()

    assert not wheel(0, -120, Qt.KeyboardModifier.NoModifier)  # up/down: the chat's
    assert bar.value() == 0
    wheel(-120, 0, Qt.KeyboardModifier.NoModifier)  # a sideways wheel (touchpad)
    assert bar.value() > 0
    bar.setValue(0)
    wheel(0, -120, Qt.KeyboardModifier.ShiftModifier)
    assert bar.value() > 0


def test_code_that_fits_needs_no_bar(view: ChatView, qtbot: QtBot) -> None:
    pane = notice_pane(view, qtbot, "```python\nprint('short')\n```")
    assert pane.horizontalScrollBar().maximum() == 0
    document_height = pane.document().documentLayout().documentSize().height()
    assert pane.height() == pane.frameWidth() * 2 + int(-(-document_height // 1))


def test_widening_the_chat_removes_the_bar(view: ChatView, qtbot: QtBot) -> None:
    pane = notice_pane(view, qtbot, SOURCE)
    tall = pane.height()
    view.resize(1200, 600)
    qtbot.wait(50)
    assert pane.horizontalScrollBar().maximum() == 0
    assert pane.height() < tall
