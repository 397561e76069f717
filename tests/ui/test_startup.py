"""Start-up order: the window's frame paints before the slow part of start-up is loaded.

(The time itself is a benchmark — ``tests/benchmarks/bench_gui.py --only coldstart`` — this
checks the property that makes it fast, which breaks silently when a module-level import
creeps back in.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

PROBE = r"""
import json, os, sys
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QWidget

from PySide6.QtCore import QTimer
import PySide6.QtCore

seen = {}

def menus(window):
    return [a.text() for a in window.menuBar().actions()]

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
                    # (PySide6 builds the Qt namespace's ~100 enums on its first use: ~25 ms)
                    "qt_namespace": "Qt" in vars(PySide6.QtCore),
                    "menus": menus(window),
                }
            if key == "ready":  # then the Stream menu, built once the panels have painted
                app.removeEventFilter(self)
                QTimer.singleShot(0, lambda: finish(window, 100))
        return False

def finish(window, tries):
    done = "&Stream" in menus(window) and "PySide6.QtNetwork" in sys.modules
    if not done and tries > 0:  # (5 s at most)
        QTimer.singleShot(50, lambda: finish(window, tries - 1))
        return
    seen["later"] = {"modules": sorted(m for m in sys.modules), "menus": menus(window)}
    print(json.dumps(seen), flush=True)
    os._exit(0)

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
        "streamscope.ui.chat.chat_controller",
    } <= (loaded_ready)
    # (the single-instance socket listens once the panels have painted)
    assert "PySide6.QtNetwork" in seen["later"]["modules"]  # type: ignore[operator]
    assert str(ready["title"]).startswith("StreamScope — ")


def test_the_theme_frame_and_panels_paint_before_the_stream_menu_tap_and_verdict_load() -> None:
    """What is not on screen at start-up is built after the whole window has painted: the
    Stream menu (power tools, ~0.1 s), the Tapped dock's list, the Verdict tab's checker and
    the single-instance socket; the frame paints in its theme without the ``Qt`` namespace
    (~25 ms of enums)."""
    seen = run_probe()
    first, ready, later = seen["first"], seen["ready"], seen["later"]
    assert first["qt_namespace"] is False
    assert "streamscope.ui.base.first_paint" in first["modules"]  # (the theme, before the paint)
    # (the colour tables, the theme's menu and the layout's rules load with the panels)
    assert not {"streamscope.ui.base.theme", "streamscope.ui.shell.window_state"} & set(
        first["modules"]
    )  # type: ignore[arg-type]
    lazy = {
        "streamscope.ui.tools.power_tools",
        "streamscope.ui.tap.tap_panel",
        "streamscope.core.verdict",
        "PySide6.QtNetwork",  # (the single-instance socket)
    }
    assert not lazy & set(ready["modules"])  # type: ignore[arg-type]
    assert ready["menus"] == ["&File", "&Chat", "&Endpoint", "&View", "&Help"]
    # … the Stream menu comes by itself once the panels are on screen
    assert later["menus"] == ["&File", "&Chat", "&Endpoint", "&View", "&Stream", "&Help"]
    assert "streamscope.ui.tools.power_tools" in later["modules"]  # type: ignore[operator]
    # The Bench window's plotting (pyqtgraph + numpy, ~0.9 s cold) loads only when it opens.
    plotting = {"numpy", "pyqtgraph", "streamscope.ui.bench.bench_window"}
    assert not plotting & set(later["modules"])  # type: ignore[arg-type]
    assert "streamscope.ui.bench.bench_opener" in later["modules"]  # type: ignore[operator]


BUILD_PROBE = r"""
import json, os, sys, tempfile
os.environ["STREAMSCOPE_HOME"] = tempfile.mkdtemp()
from PySide6.QtWidgets import QApplication
app = QApplication([])
from streamscope.ui.shell.main_window import BUILD_MODULES, MainWindow
import streamscope.ui.shell.app as uiapp
from streamscope.ui.base.after_paint import preload
window = MainWindow(deferred=True)
preload(BUILD_MODULES)
preloaded = set(sys.modules)
import asyncio, qasync
store, captures = uiapp.open_profile()
from streamscope.ui.base.event_loop import AppLoop
loop = AppLoop(app)
asyncio.set_event_loop(loop)
steps = sum(1 for _ in window.building(store=store, captures=captures))
print(json.dumps({"preloaded": sorted(preloaded), "later": sorted(set(sys.modules) - preloaded),
                  "steps": steps, "built": window.built, "updates": window.updatesEnabled()}))
os._exit(0)
"""


def test_the_panels_are_built_in_steps_from_modules_loaded_while_the_frame_shows() -> None:
    """Start-up loads what the panels need in a thread while the frame answers
    (:data:`~streamscope.ui.shell.main_window.BUILD_MODULES`), then builds them in steps with the
    event loop running between: a module the build imports that is not in that list would be
    imported on the UI thread again, a stall of its own."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, "-c", BUILD_PROBE], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["later"] == []
    assert {"asyncio", "qasync", "streamscope.ui.chat.chat_controller", "sqlite3"} <= set(
        seen["preloaded"]
    )
    assert seen["steps"] == 5 and seen["built"] and seen["updates"]


def test_load_then_imports_in_a_thread_and_calls_back_from_the_loop(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first paint, the Stream menu's modules and QtNetwork are imported in a thread
    (a module's import can take ~0.1 s): the caller returns at once, the callback runs on
    this thread once the modules are there, and never for a parent that is gone."""
    import sys
    import threading

    from PySide6.QtWidgets import QWidget

    from streamscope.ui.base.after_paint import load_then

    (tmp_path / "slow_module_a.py").write_text("import time\ntime.sleep(0.2)\n")
    (tmp_path / "slow_module_b.py").write_text("import time\ntime.sleep(0.2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    parent = QWidget()
    calls: list[tuple[bool, bool]] = []

    def called() -> None:
        main = threading.current_thread() is threading.main_thread()
        calls.append((main, "slow_module_a" in sys.modules))

    load_then(("slow_module_a",), called, parent=parent)
    assert calls == []  # (returned at once: the import is still sleeping)
    qtbot.waitUntil(lambda: calls != [], timeout=5000)
    assert calls == [(True, True)]

    gone = QWidget()
    late: list[int] = []
    load_then(("slow_module_b",), lambda: late.append(1), parent=gone)
    gone.deleteLater()
    qtbot.waitUntil(lambda: "slow_module_b" in sys.modules, timeout=5000)
    qtbot.wait(100)
    assert late == []
    parent.deleteLater()
