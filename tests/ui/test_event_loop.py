"""AppLoop: every task step runs with a running loop, also the ones qasync's
run_until_complete() handles in its last pass after the loop has stopped."""

from __future__ import annotations

import asyncio

import qasync
from PySide6.QtWidgets import QApplication

from streamscope.ui.base.event_loop import AppLoop


def _steps_seen(loop: qasync.QEventLoop) -> list[str]:
    """Run a coroutine that, as it ends, leaves a chain of callbacks pending (each one
    schedules the next, as a task's steps do); what each saw."""
    seen: list[str] = []

    def chain(depth: int) -> None:
        try:
            asyncio.get_running_loop()
            seen.append("in loop")
        except RuntimeError:
            seen.append("no loop")
        if depth:
            loop.call_soon(chain, depth - 1)

    async def work() -> int:
        await asyncio.sleep(0.01)
        chain(6)
        return 7

    asyncio.set_event_loop(loop)
    try:
        assert loop.run_until_complete(work()) == 7
        loop.run_until_complete(asyncio.sleep(0.05))  # (the rest of the chain)
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return seen


def test_qasync_alone_runs_a_step_with_no_running_loop(qapp: QApplication) -> None:
    """(What the fix is for: the plain qasync loop of the pinned version.)"""
    assert "no loop" in _steps_seen(qasync.QEventLoop(qapp, already_running=False))


def test_the_app_loop_runs_every_step_inside_it(qapp: QApplication) -> None:
    assert _steps_seen(AppLoop(qapp, already_running=False)) == ["in loop"] * 7
