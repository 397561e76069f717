from __future__ import annotations

from pytestqt.qtbot import QtBot

from streamscope.ui.main_window import MainWindow


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

    from streamscope.ui.app import run_app

    seen: dict[str, object] = {}

    def close_when_shown() -> None:
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        shown = [w for w in windows if w.isVisible()]
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
