from __future__ import annotations

import qasync
from pytestqt.qtbot import QtBot

from streamscope.ui.shell.main_window import MainWindow


def test_main_window_opens_ready(qtbot: QtBot) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.windowTitle().startswith("StreamScope")
    assert window.status.text() == "Ready"


def test_run_app_drives_the_window_with_a_qasync_loop(qapp: object) -> None:
    """`streamscope` with no arguments: a real window whose loop is asyncio (qasync)."""
    import asyncio

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from streamscope.ui.shell.app import run_app

    seen: dict[str, object] = {}

    def close_when_shown() -> None:
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        shown = [w for w in windows if w.isVisible() and w.built]
        if not shown:
            QTimer.singleShot(20, close_when_shown)
            return

        async def probe() -> None:
            await asyncio.sleep(0.01)
            seen["loop"] = asyncio.get_running_loop()
            shown[0].close()

        seen["task"] = asyncio.ensure_future(probe())

    QTimer.singleShot(0, close_when_shown)
    assert run_app([]) == 0
    import qasync

    assert isinstance(seen.get("loop"), qasync.QEventLoop), seen


def test_every_callback_from_start_up_to_close_runs_inside_the_loop(
    qapp: object, monkeypatch: object
) -> None:
    """A task begun while the window is built (a click during start-up) steps with a running
    loop: qasync's run_until_complete() ends with a bare processEvents() where a pending step
    would raise "no running event loop" (that hung the start-up test on a busy machine)."""
    import asyncio

    import pytest

    from streamscope.ui.shell import main_window
    from streamscope.ui.shell.app import run_app

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    steps: list[str] = []
    original = main_window.MainWindow.building

    def chain(depth: int) -> None:  # a task's steps: each one schedules the next
        try:
            asyncio.get_running_loop()
            steps.append("in loop")
        except RuntimeError:
            steps.append("no loop")
        if depth:
            asyncio.get_event_loop().call_soon(chain, depth - 1)

    def building(self: main_window.MainWindow, **kwargs: object):  # type: ignore[no-untyped-def]
        yield from original(self, **kwargs)  # type: ignore[arg-type]
        chain(6)  # (pending when the build's last step returns)
        asyncio.get_event_loop().call_later(0.3, self.close)

    monkeypatch.setattr(main_window.MainWindow, "building", building)
    assert run_app([]) == 0
    assert steps == ["in loop"] * 7, steps


def test_window_layout_is_remembered_in_the_profile(qtbot: QtBot, aloop: object) -> None:
    """Geometry, dock layout, the inspector's open tab and its splitter come back."""
    from streamscope.core import paths

    first = MainWindow()
    qtbot.addWidget(first)
    first.resize(700, 500)  # (the offscreen screen is small: restoreGeometry clamps to it)
    first.inspector.setCurrentIndex(2)
    first.inspector.frames_panel.splitter.setSizes([300, 100])
    sizes = first.inspector.frames_panel.splitter.sizes()
    first.save_settings()
    assert (paths.config_dir() / "window.ini").exists()

    second = MainWindow()
    qtbot.addWidget(second)
    assert (second.size().width(), second.size().height()) == (700, 500)
    assert second.inspector.currentIndex() == 2
    assert second.inspector.frames_panel.splitter.sizes() == sizes


def test_a_long_scenario_description_leaves_endpoint_settings_on_the_toolbar(
    qtbot: QtBot, aloop: qasync.QEventLoop
) -> None:
    """At 1024 px the longest demo scenario's description pushed "Endpoint settings…" into
    the toolbar's overflow menu: it is cut to the room left instead, whole in its tooltip."""
    from PySide6.QtWidgets import QLabel, QPushButton, QToolButton

    from streamscope.demo.scenarios import SCENARIOS

    window = MainWindow()
    qtbot.addWidget(window)
    window.resize(1024, 700)
    window.show()
    qtbot.waitExposed(window)
    name, longest = max(SCENARIOS.items(), key=lambda item: len(item[1].description))
    window.model_combo.setCurrentText(name)
    qtbot.wait(50)
    bar = window.endpoint_bar
    buttons = [b for b in bar.findChildren(QPushButton) if b.text() == "Endpoint settings…"]
    assert len(buttons) == 1 and buttons[0].isVisible()
    assert buttons[0].geometry().right() <= bar.width()
    extension = bar.findChild(QToolButton, "qt_toolbar_ext_button")
    assert extension is None or not extension.isVisible()  # no overflow menu at all
    assert bar.widgetForAction(bar.settings_action) is buttons[0] is bar.settings_button
    note = bar.model_note
    assert note.text() == longest.description and note.elided()
    assert note.shown_text().endswith("…") and note.toolTip() == longest.description
    assert note.width() >= note.minimumSizeHint().width()
    assert "Model" in [w.text().strip() for w in bar.findChildren(QLabel) if w.isVisible()]
    aloop.run_until_complete(window.shutdown())
