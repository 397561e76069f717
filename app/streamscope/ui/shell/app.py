"""Start the Qt application on a qasync event loop and show the main window."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from streamscope import APP_ID, __version__

if TYPE_CHECKING:
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.store.database import Store


SWITCH_INTERVAL_S = 0.001
"""The GIL's switch interval while the window runs (see :func:`run_app`)."""


def run_app(argv: list[str] | None = None, *, open_path: Path | None = None) -> int:
    """Open the main window and run until it is closed. Returns the process exit code.

    The window's frame is painted first; only then are asyncio/qasync, the network stack,
    the database and the panels loaded (that takes longer than showing a bare window)."""
    # The window's thread and the background ones (imports, the search, the indexer) share
    # the GIL: each time the window's thread wants it back it may wait a whole switch
    # interval (5 ms by default), and a paint that calls Python a dozen times stalls for tens
    # of milliseconds. 1 ms keeps those waits short; the threads lose a little throughput.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("StreamScope")
    app.setOrganizationName("StreamScope")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName(APP_ID)  # the Wayland app id = the .desktop file's name
    app.setQuitOnLastWindowClosed(False)  # we end the loop ourselves, after a clean shutdown

    from streamscope.ui.shell.single_instance import SingleInstance

    instance = SingleInstance()
    if not instance.acquire(open_path):
        if open_path is not None and instance.delivered:
            print(f"StreamScope is already running for this profile; opened {open_path} there.")
        else:
            print("StreamScope is already running for this profile; brought it to the front.")
        return 0

    from streamscope.ui.base.after_paint import call_after_paint, load_then, paint_now, preload
    from streamscope.ui.base.first_paint import apply_saved_theme
    from streamscope.ui.shell.main_window import AFTER_START_IMPORTS_MS, MainWindow

    apply_saved_theme()  # (the first paint in the chosen theme already)
    window = MainWindow(deferred=True)
    window.show()
    paint_now(window)
    from streamscope.ui.shell.main_window import BUILD_MODULES

    preload(BUILD_MODULES)  # (in a thread: the frame answers meanwhile)

    import asyncio

    from streamscope.ui.base.event_loop import AppLoop

    setup_logging()
    store, captures = open_profile()

    from streamscope.ui.shell.gc_guard import MainThreadCollector

    collector = MainThreadCollector()  # Qt objects must die on the Qt thread
    loop = AppLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()

    def connect() -> None:  # (once built)
        instance.raiseRequested.connect(window.bring_to_front)
        instance.openRequested.connect(lambda path: window.open_capture(Path(path), speed=None))
        # (QtNetwork: once the panels have painted; a second start meanwhile waits for it, ≤ 2 s)
        call_after_paint(
            window,
            lambda: load_then(
                ("PySide6.QtNetwork",),
                instance.listen,
                parent=window,
                delay_ms=AFTER_START_IMPORTS_MS,
            ),
        )
        window.closed.connect(closed.set)
        app.aboutToQuit.connect(closed.set)  # e.g. the display went away
        if not window.isVisible():  # closed while it was starting
            closed.set()
        if open_path is not None:
            QTimer.singleShot(0, window, lambda: window.open_capture(open_path, speed=None))

    async def main() -> None:
        # One run of the loop from the first build step to the shutdown: qasync's
        # run_until_complete ends with a bare processEvents(), where a task's step (a click
        # during start-up, a task begun while building) would run with no running loop.
        for _step in window.building(store=store, captures=captures):
            await asyncio.sleep(0)  # (the loop runs between the steps)
        connect()
        await closed.wait()
        await window.shutdown()

    # Ctrl-C / SIGTERM close the window (which cancels a running turn) instead of killing it.
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: window.close())
    wakeup = QTimer()  # let the interpreter run its signal handlers while Qt waits
    wakeup.start(200)
    wakeup.timeout.connect(lambda: None)
    try:
        with loop:
            loop.run_until_complete(main())
    except RuntimeError:  # the Qt loop was stopped from outside (display lost)
        pass
    finally:
        wakeup.stop()
        collector.stop()
        if store is not None:
            store.close()
        instance.release()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def setup_logging() -> None:
    """A rotating log in the profile's log folder (outcomes and errors; never keys)."""
    import logging
    from logging.handlers import RotatingFileHandler

    from streamscope.core import paths
    from streamscope.core.redact import LOG_FILTER

    folder = paths.log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    handler = RotatingFileHandler(
        folder / "streamscope.log", maxBytes=1 << 20, backupCount=3, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(LOG_FILTER)  # every request's secrets are masked in what is logged
    root = logging.getLogger("streamscope")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    root.info("StreamScope %s starting", __version__)


def open_profile() -> tuple[Store | None, CaptureStore | None]:
    """The conversation database and the capture folder; turns left "streaming" by a crash
    are marked truncated (safe: this process holds the profile's single-instance lock)."""
    import logging

    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.store.database import Store

    log = logging.getLogger("streamscope")
    try:
        store = Store()
    except Exception as exc:  # a broken database must not stop the app from opening
        log.error("could not open the conversation database: %s", exc)
        return None, None
    recovered = store.recover_interrupted()
    if recovered:
        log.info("marked %d interrupted turn(s) as truncated", len(recovered))
    return store, CaptureStore(index=store)
