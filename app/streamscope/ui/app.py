"""Start the Qt application on a qasync event loop and show the main window."""

from __future__ import annotations

import asyncio
import signal
import sys

from PySide6.QtCore import QTimer
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
    app.setQuitOnLastWindowClosed(False)  # we end the loop ourselves, after a clean shutdown

    from streamscope.ui.gc_guard import MainThreadCollector

    collector = MainThreadCollector()  # Qt objects must die on the Qt thread
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    window = MainWindow()
    window.closed.connect(closed.set)
    app.aboutToQuit.connect(closed.set)  # e.g. the display went away
    window.show()

    # Ctrl-C / SIGTERM close the window (which cancels a running turn) instead of killing it.
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: window.close())
    wakeup = QTimer()  # let the interpreter run its signal handlers while Qt waits
    wakeup.start(200)
    wakeup.timeout.connect(lambda: None)
    try:
        with loop:
            loop.run_until_complete(closed.wait())
            loop.run_until_complete(window.shutdown())
    except RuntimeError:  # the Qt loop was stopped from outside (display lost)
        pass
    finally:
        wakeup.stop()
        collector.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
