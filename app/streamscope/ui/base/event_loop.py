"""The asyncio loop that drives Qt's (qasync), with one fix.

qasync's ``run_until_complete()`` ends with a last ``processEvents()`` after the loop has
stopped running. A task whose step is due then (a turn, a replay, a click's coroutine) runs
with no running loop, and its next ``await asyncio.sleep()`` raises "no running event loop":
the task dies and whatever waits for it waits for ever (it hung the start-up test on a busy
machine). :class:`AppLoop` does the same last pass with itself as the running loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import qasync
from PySide6.QtCore import QCoreApplication, QEventLoop

__all__ = ["AppLoop"]

T = TypeVar("T")


class AppLoop(qasync.QEventLoop):  # type: ignore[misc]  # (qasync has no type hints)
    """A ``qasync.QEventLoop`` whose ``run_until_complete()`` never runs a step outside it."""

    def run_until_complete(self, future: Awaitable[T]) -> T:
        if self.is_running():
            raise RuntimeError("Event loop already running")
        task: asyncio.Future[Any] = asyncio.ensure_future(future, loop=self)

        def stop(_done: object) -> None:
            self.stop()

        task.add_done_callback(stop)
        try:
            self.run_forever()
        finally:
            task.remove_done_callback(stop)
        # (qasync's last pass over what is pending, with this loop as the running one)
        asyncio.events._set_running_loop(self)
        try:
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents)
        finally:
            asyncio.events._set_running_loop(None)
        if not task.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        result: T = task.result()
        return result
