"""Accessibility: every glyph-only button is named for a screen reader; the timeline and gaps
charts have a text alternative kept in step with what they draw."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtWidgets import QAbstractButton, QLineEdit
from pytestqt.qtbot import QtBot

from streamscope.ui.inspector.timeline_panel import LABELS
from streamscope.ui.shell.main_window import MainWindow

LETTER = re.compile(r"[^\W\d_]")


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def _answer(window: MainWindow, aloop: qasync.QEventLoop, model: str) -> None:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText("Hi there")
    window.composer._on_submit()

    async def wait() -> None:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        await window.controller.runner.wait()

    aloop.run_until_complete(wait())


def _qt_own(button: QAbstractButton) -> bool:
    """Buttons Qt makes inside its own widgets (a line edit's clear button, a table's corner,
    the tool/menu bar's overflow): Qt's accessibility describes them, not us."""
    return button.objectName().startswith("qt_") or isinstance(button.parent(), QLineEdit)


def test_every_glyph_button_has_an_accessible_name(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    assert window.power_tools is not None  # (the Stream menu and find bar, built lazily)
    _answer(window, aloop, "demo-tools")  # cards with their pagers and tool boxes
    buttons = window.findChildren(QAbstractButton)
    glyph_only = [b for b in buttons if not LETTER.search(b.text()) and not _qt_own(b)]
    unnamed = [(b.text(), type(b).__name__, type(b.parent()).__name__) for b in glyph_only
               if not b.accessibleName().strip()]  # fmt: skip
    assert unnamed == []
    names = {b.text(): set() for b in glyph_only}
    for b in glyph_only:
        names[b.text()].add(b.accessibleName())
    # the ones the window has today, by name (a pager or the find bar losing its name fails)
    assert {"Previous answer", "Earlier version"} <= names["◀"]
    assert {"Next answer", "Later version"} <= names["▶"]
    assert names["▲"] == {"Previous match"} and names["▼"] == {"Next match"}
    assert names["✕"] == {"Close find bar"}


def test_the_timeline_and_gaps_charts_describe_themselves(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    timeline = window.inspector.timeline_panel
    waterfall, chart = timeline.waterfall, timeline.chart
    assert waterfall.accessibleName() == "Timeline"
    assert chart.accessibleName() == "Inter-arrival gaps"
    _answer(window, aloop, "demo")
    words = waterfall.accessibleDescription()
    assert words == waterfall.describe()
    parts = words.split("; ")
    assert [re.sub(r" (—|[\d.]+ ms)$", "", p) for p in parts] == list(LABELS.values())
    assert parts[0] == "request sent 0.0 ms"
    m = timeline.milestones
    assert m.end is not None and m.request_sent is not None
    assert parts[-1] == f"end {(m.end - m.request_sent) * 1000:.1f} ms"
    series = timeline.series
    first = chart.accessibleDescription()
    assert first == (
        f"inter-arrival gaps · {len(series.gaps):,} frames · max {series.peak * 1000:.1f} ms · "
        f"mean {series.mean() * 1000:.2f} ms · log scale"
    )
    assert len(series.gaps) > 10
    assert series.peak == pytest.approx(max(series.gaps))
    # kept in step: the next turn's figures, even with the Timeline tab not shown
    frames = len(series.gaps)
    _answer(window, aloop, "demo-tools")
    assert chart.accessibleDescription() == chart.describe()
    assert f"· {len(series.gaps):,} frames ·" in chart.accessibleDescription()
    assert len(series.gaps) != frames
    assert waterfall.accessibleDescription() == waterfall.describe()
