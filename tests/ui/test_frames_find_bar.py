"""The find bar's count is never cut: it has room for its longest text, in one row with the
query where the inspector is wide, on a row of its own where it is not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtGui import QFontMetrics
from pytestqt.qtbot import QtBot

from streamscope.ui.inspector.frames_find import COUNT_TEXTS, FramesFindBar
from streamscope.ui.inspector.frames_panel import FramesPanel


@pytest.fixture
def bar(qtbot: QtBot) -> Iterator[FramesFindBar]:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    find = FramesFindBar(panel)
    find.open_bar()
    qtbot.waitExposed(panel)
    yield find
    find.close_bar()


def _fits(bar: FramesFindBar, text: str) -> bool:
    label = bar.count_label
    return QFontMetrics(label.font()).horizontalAdvance(text) <= label.contentsRect().width()


def test_the_count_has_room_for_its_longest_text(bar: FramesFindBar, qtbot: QtBot) -> None:
    assert COUNT_TEXTS == (
        "searching… 100% · 999,999 found",
        "999,999 of 999,999",
        "999,999 matches",
    )
    label = bar.count_label
    metrics = QFontMetrics(label.font())
    for text in (*COUNT_TEXTS, "12,345 of 67,890"):
        assert label.minimumSizeHint().width() >= metrics.horizontalAdvance(text), text
        assert label.sizeHint().width() >= metrics.horizontalAdvance(text), text
    # what the bar writes, with large counts, fits the label as laid out
    bar.edit.setText("x")
    bar._query = None  # (the debounce: "searching…" with the count so far)
    bar.rows = list(range(67_890))
    bar._update_label()
    assert label.text() == "searching… · 67,890 found" and _fits(bar, label.text())
    bar.clock.cancel(bar._search_job)
    bar.set_query("x")  # (an empty model: searched at once)
    bar.rows, bar.current = list(range(67_890)), 12_344
    bar._update_label()
    assert label.text() == "12,345 of 67,890" and _fits(bar, label.text())
    assert bar.one_row is True  # (900 px: one row)
    for text in COUNT_TEXTS:
        assert _fits(bar, text), text


def test_a_narrow_inspector_puts_the_count_on_a_row_of_its_own(
    bar: FramesFindBar, qtbot: QtBot
) -> None:
    panel = bar.panel
    one_row = bar.row_width(with_count=True)
    assert bar.minimumSizeHint().width() == bar.row_width(with_count=False) < one_row
    panel.resize(bar.minimumSizeHint().width() + 20, 500)
    qtbot.waitUntil(lambda: bar.width() < one_row)
    qtbot.wait(20)
    assert bar.one_row is False
    assert bar.count_label.geometry().top() > bar.edit.geometry().bottom()  # below the query
    for text in COUNT_TEXTS:
        assert _fits(bar, text), text
    panel.resize(900, 500)
    qtbot.waitUntil(lambda: bar.one_row is True)
    qtbot.wait(20)  # (the grid lays out again)
    assert bar.count_label.geometry().top() < bar.edit.geometry().bottom()  # beside it


def test_a_larger_text_zoom_makes_room_for_the_larger_text(
    bar: FramesFindBar, qtbot: QtBot
) -> None:
    before = bar.count_label.minimumSizeHint().width()
    font = bar.panel.font()
    font.setPointSizeF(font.pointSizeF() * 1.5)
    bar.panel.setFont(font)  # (the text zoom scales the inspector's font)
    qtbot.wait(20)
    assert bar.count_label.minimumSizeHint().width() > before * 1.3
    for text in COUNT_TEXTS:
        assert _fits(bar, text), text
