"""The first turn after start-up is as light on the window's thread as the tenth (issue 23).

What the first send would otherwise do on the UI thread is done before it, in the background,
once the window shows: the stream worker process is started, the keyring's backend detected,
the modules a send loads (the capture recorder, the verdict's checker, the built-in demo's
server) imported. (The stalls themselves are measured by a profile of the real window; this
checks the property that removes them, which breaks silently when a start moves back onto
Enter.) A fresh interpreter, so that what is imported is the window's doing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import asyncio, json, sys, threading
import qasync
from PySide6.QtWidgets import QApplication

app = QApplication(sys.argv)
from streamscope.ui.base.event_loop import AppLoop
loop = AppLoop(app)
asyncio.set_event_loop(loop)
from streamscope.ui.shell.main_window import MainWindow

window = MainWindow(demo_speed=50)
window.show()


class Imports:
    '''Records the modules the UI thread imports (a finder that finds nothing itself).'''

    def __init__(self):
        self.names = []

    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            self.names.append(name)
        return None


async def main():
    runner = window.controller.runner
    demo = window.demo
    for _ in range(3000):  # (up to 30 s on a busy machine)
        warm = runner.warming is not None and not runner.warming.is_alive()
        warm = warm and demo.warming is not None and not demo.warming.is_alive()
        if warm and runner.worker is not None and runner.worker.running:
            break
        await asyncio.sleep(0.01)
    import keyring.core

    before = {
        "worker": runner.worker.pid if runner.worker is not None else None,
        "demo_running": demo.running,
        "keyring_detected": keyring.core._keyring_backend is not None,
        "modules": sorted(sys.modules),
    }
    imports = Imports()
    first = loop.create_future()
    runner.turnProgressed.connect(lambda _b: first.done() or first.set_result(None))
    sys.meta_path.insert(0, imports)
    window.composer.editor.setPlainText("Hi there")
    window.composer._on_submit()
    await asyncio.wait_for(first, 30)
    sys.meta_path.remove(imports)
    turn = await runner.wait()
    after = {
        "worker": runner.worker.pid if runner.worker is not None else None,
        "imported_on_ui": imports.names,
        "outcome": turn.outcome.value if turn is not None and turn.outcome else None,
    }
    await window.shutdown()
    print(json.dumps({"before": before, "after": after}), flush=True)


loop.run_until_complete(main())
"""


def test_the_first_send_finds_the_worker_started_and_imports_nothing_on_the_ui_thread() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    env.pop("STREAMSCOPE_WORKER", None)  # (the stream worker, as the app runs by default)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    before, after = seen["before"], seen["after"]
    # before Enter: the worker runs, the keyring's backend is known, the modules are in …
    assert isinstance(before["worker"], int)
    assert before["keyring_detected"] is True
    modules = set(before["modules"])
    assert {
        "streamscope.core.capture.recorder",
        "streamscope.core.verdict",
        "streamscope.core.net.secrets",
        "streamscope.demo.server",
        "uvicorn.protocols.http.auto",
        "uvicorn.protocols.websockets.auto",
        "anyio._backends._asyncio",
    } <= modules, sorted({"streamscope.core.capture.recorder", "streamscope.demo.server"} - modules)
    assert "httpx" not in modules  # (the worker reads the stream: not this process)
    assert before["demo_running"] is False  # (imports only: the first send starts it)
    # … so the first send reuses that worker and imports nothing on the UI thread
    assert after["outcome"] == "completed"
    assert after["worker"] == before["worker"]
    assert after["imported_on_ui"] == []
