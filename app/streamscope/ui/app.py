"""Start the Qt application on a qasync event loop and show the main window."""

from __future__ import annotations

import asyncio
import sys

from PySide6.QtWidgets import QApplication

from streamscope import __version__


def run_app(argv: list[str] | None = None) -> int:
    """Open the main window and run until it is closed. Returns the process exit code."""
    import qasync

    from streamscope.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("StreamScope")
    app.setOrganizationName("StreamScope")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("streamscope")

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    window = MainWindow()
    window.closed.connect(closed.set)
    window.show()
    with loop:
        loop.run_until_complete(closed.wait())
    return 0
