"""A live theme switch leaves every text of the window readable.

Once, after View → Theme: System → Dark, the toolbar's scenario description stayed in the
light palette's placeholder colour (half-transparent black: #111316 on #20242A, 1.2:1): Qt
resolves a style sheet's ``palette(…)`` when it polishes the widget and pins the widget's
palette to it. Here every label that shows text (and the toolbar's buttons and boxes) is
measured after each switch: its foreground from its palette, its background from the pixels
of the window around it."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtCore import QEvent, QRect
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QAbstractButton, QApplication, QComboBox, QLabel, QWidget
from pytestqt.qtbot import QtBot

from streamscope.ui.base.elided_label import ElidedLabel
from streamscope.ui.base.theme import PALETTES, contrast, over, refresh_text_colours
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards

R = QPalette.ColorRole


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.resize(1360, 860)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.theme.set_mode("system")  # (the application palette outlives the window)
    aloop.run_until_complete(win.shutdown())


def _answer(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    """One turn of the built-in demo, to its end."""
    window.model_combo.setCurrentText("demo")
    window.composer.editor.setPlainText("Hi there")
    window.composer._on_submit()

    async def wait() -> None:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        await window.controller.runner.wait()

    aloop.run_until_complete(wait())


def _rendered(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    """Once the answers are rendered again in the new theme's colours (a job on the paint
    clock: until then a card still shows the old code colours around its footer)."""
    cards = answer_cards(window.controller)

    async def wait() -> None:
        for _ in range(500):
            if not any(card.is_rendering() for card in cards):
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())
    assert not any(card.is_rendering() for card in cards)


def _texts(window: MainWindow) -> Iterator[tuple[str, QWidget]]:
    """Every visible, enabled widget of the window that shows text: its labels, and the
    toolbar's buttons and boxes."""
    for widget in window.findChildren(QWidget):
        if not widget.isVisible() or not widget.isEnabled():
            continue
        in_toolbar = window.endpoint_bar.isAncestorOf(widget)
        if isinstance(widget, QLabel | QAbstractButton) and (
            in_toolbar or isinstance(widget, QLabel)
        ):
            text = widget.text()
        elif isinstance(widget, QComboBox) and in_toolbar:
            text = widget.currentText()
        else:
            continue
        if text.strip():
            yield text, widget


def _background(image: QImage, widget: QWidget, window: MainWindow) -> QColor | None:
    """The colour most of the widget's visible pixels have (the text covers less)."""
    shown = widget.visibleRegion().boundingRect()
    area = QRect(widget.mapTo(window, shown.topLeft()), shown.size()) & image.rect()
    if area.width() < 2 or area.height() < 2:
        return None
    crop = image.copy(area).convertToFormat(QImage.Format.Format_RGB32)
    pixels = memoryview(crop.constBits()).cast("I")  # (4 bytes a pixel: no padding)
    value, _count = Counter(pixels).most_common(1)[0]
    return QColor.fromRgb(value)


def _unreadable(window: MainWindow) -> list[str]:
    """The texts under WCAG AA (4.5:1; 3:1 for large text) as they are drawn now."""
    QApplication.processEvents()
    image = window.grab().toImage()
    bad = []
    for text, widget in _texts(window):
        background = _background(image, widget, window)
        if background is None:
            continue
        foreground = over(widget.palette().color(widget.foregroundRole()), background)
        font = widget.font()
        large = font.pointSizeF() >= 18 or (font.bold() and font.pointSizeF() >= 14)
        ratio = contrast(foreground, background)
        if ratio < (3.0 if large else 4.5):
            bad.append(
                f"{type(widget).__name__} {text[:40]!r}: {foreground.name()} on "
                f"{background.name()} ({ratio:.1f}:1)"
            )
    return bad


def test_every_text_reads_after_a_live_switch(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    assert window.theme.mode == "system"  # the offscreen platform's own light palette
    _answer(window, aloop)  # (a turn's cards, footers, inspector header)
    note = window.endpoint_bar.model_note
    assert note.isVisible() and note.text().startswith("A Markdown answer")
    labels = sum(1 for _text, widget in _texts(window) if isinstance(widget, QLabel))
    assert labels >= 12
    for mode, dark in (("dark", True), ("light", False), ("dark", True), ("light", False)):
        window.theme.set_mode(mode)
        _rendered(window, aloop)
        assert QApplication.palette().color(R.Window).name() == PALETTES[dark][R.Window]
        assert _unreadable(window) == [], mode
        # the description is drawn in the placeholder colour of the theme now shown
        shown = note.palette().color(note.foregroundRole()).name()
        assert shown == PALETTES[dark][R.PlaceholderText]


def test_a_label_styled_from_the_palette_follows_a_new_palette(qtbot: QtBot) -> None:
    """The cause, alone: a sheet's ``palette(…)`` is resolved once, when the label is
    polished; :func:`refresh_text_colours` (run on every switch) resolves it again."""
    from streamscope.ui.base.first_paint import build_palette

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    before = app.palette()
    label = ElidedLabel("A Markdown answer")
    qtbot.addWidget(label)
    label.setStyleSheet("color: palette(placeholder-text);")
    label.show()
    try:
        app.setPalette(build_palette(False))
        refresh_text_colours()
        assert label.palette().color(R.WindowText).name() == PALETTES[False][R.PlaceholderText]
        app.setPalette(build_palette(True))
        QApplication.sendPostedEvents(None, QEvent.Type.ApplicationPaletteChange)
        # (what Qt alone does: the light colour stays)
        assert label.palette().color(R.WindowText).name() == PALETTES[False][R.PlaceholderText]
        refresh_text_colours()
        assert label.palette().color(R.WindowText).name() == PALETTES[True][R.PlaceholderText]
    finally:
        app.setPalette(before)
        refresh_text_colours()
