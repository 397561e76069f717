"""UI fixtures: a qasync event loop per test (pytest-qt has no asyncio integration)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest
import qasync
from PySide6.QtWidgets import QApplication

from streamscope.ui.base.event_loop import AppLoop


@pytest.fixture
def aloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A qasync loop driving the Qt event loop; closed at the end of the test."""
    qapp.setQuitOnLastWindowClosed(False)  # as the app does: closing must not stop the loop
    loop = AppLoop(qapp, already_running=False)
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def _collect_garbage_on_the_qt_thread() -> Iterator[None]:
    """No automatic GC during a UI test (it could run in a server thread and destroy Qt
    objects there; see streamscope.ui.shell.gc_guard); collect here, on the Qt thread, after it."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.enable()
