"""Start-up order: the window's frame paints before the slow part of start-up is loaded.

(The time itself is a benchmark — ``tests/benchmarks/bench_gui.py --only coldstart`` — this
checks the property that makes it fast, which breaks silently when a module-level import
creeps back in.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, os, sys
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

seen = {}

class Probe(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
            window = obj.window()
            key = "ready" if getattr(window, "built", False) else "first"
            if key not in seen:
                seen[key] = {
                    "window": type(window).__name__,
                    "title": window.windowTitle(),
                    "modules": sorted(m for m in sys.modules),
                }
            if key == "ready":
                print(json.dumps(seen), flush=True)
                os._exit(0)
        return False

app = QApplication(sys.argv)
probe = Probe()
app.installEventFilter(probe)
from streamscope.cli import main
main([])
"""

SLOW = (
    "asyncio",
    "qasync",
    "httpx",
    "sqlite3",
    "keyring",
    "pygments",
    "uvicorn",
    "PySide6.QtNetwork",
)


def run_probe() -> dict[str, dict[str, object]]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_the_frame_paints_before_the_network_stack_database_and_panels_load() -> None:
    seen = run_probe()
    first, ready = seen["first"], seen["ready"]
    assert first["window"] == ready["window"] == "MainWindow"
    assert first["title"] == "StreamScope"
    loaded_first = set(first["modules"])  # type: ignore[arg-type]
    assert not loaded_first & set(SLOW), sorted(loaded_first & set(SLOW))
    assert not {m for m in loaded_first if m.startswith("streamscope.core.wire.dialects")}
    # … and the whole window, once painted, has all of them (the probe is not vacuous)
    loaded_ready = set(ready["modules"])  # type: ignore[arg-type]
    assert {
        "asyncio",
        "qasync",
        "sqlite3",
        "PySide6.QtNetwork",
        "streamscope.ui.chat_controller",
    } <= (loaded_ready)
    assert str(ready["title"]).startswith("StreamScope — ")
