"""Screenshots of the real window against the built-in demo, for the README and for looking.

    .venv/bin/python tests/tools/screenshots.py [--out DIR] [--scenario demo-tools ...]
        [--size 1024x700] [--display :93] [--extras]

Starts Xvfb when there is no display (apt-get install xvfb imagemagick fonts-noto-cjk
fonts-noto-color-emoji), opens StreamScope on a throw-away profile, sends one message per
scenario and saves `import -window root` screenshots (one per scenario, plus each inspector
tab for the first one). Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DRIVER = r"""
import asyncio, subprocess, sys
from PySide6.QtWidgets import QApplication
import qasync
from streamscope.ui.app import open_profile
from streamscope.ui.gc_guard import MainThreadCollector
from streamscope.ui.main_window import MainWindow

out, size, extras, scenarios = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
width, height = (int(n) for n in size.split("x"))
app = QApplication(sys.argv[:1])
app.setQuitOnLastWindowClosed(False)
collector = MainThreadCollector()
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
store, captures = open_profile()
window = MainWindow(demo_speed=3.0, store=store, captures=captures)
window.setGeometry(0, 0, width, height)
window.show()

def shot(name):
    app.processEvents()
    subprocess.run(["import", "-window", "root", f"{out}/{name}.png"], check=True)

async def main():
    await asyncio.sleep(1.0)
    for i, scenario in enumerate(scenarios):
        if i == 1:
            window.switcher.new_conversation()
        window.model_combo.setCurrentText(scenario)
        window.composer.editor.setPlainText("What's the weather and the time in Zürich?")
        window.composer._on_submit()
        await asyncio.sleep(0.3)
        await window.controller.runner.wait()
        await asyncio.sleep(1.5)
        shot(scenario)
        if i == 0:
            for tab in range(1, window.inspector.count()):
                window.inspector.setCurrentIndex(tab)
                await asyncio.sleep(0.5)
                shot(f"{scenario}-{window.inspector.tabText(tab).lower().replace(' ', '-')}")
            window.inspector.setCurrentIndex(0)
    if extras:  # keyboard focus, the shortcuts list, a code line wider than the chat
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QKeySequence
        from PySide6.QtTest import QTest
        from streamscope.ui.shortcuts import shortcut

        window.activateWindow()
        await asyncio.sleep(0.5)
        for name in ("go_conversations", "choose_model", "go_message"):
            QTest.keySequence(window, QKeySequence(shortcut(name).keys))
            await asyncio.sleep(0.3)
            shot(f"focus-{name}")
        for _ in range(2):  # Tab from the message box: Send, then Stop / Regenerate
            QTest.keyClick(app.focusWidget(), Qt.Key.Key_Tab)
        await asyncio.sleep(0.3)
        shot("focus-tab-from-message")
        window.chat.add_notice(
            "A long line of code:\n\n```python\nresult = client.chat.completions.create("
            "model='gpt-4o', messages=messages, stream=True, tools=tools, temperature=0.2)\n```"
        )
        await asyncio.sleep(0.5)
        window.chat.scroll_to_bottom()
        await asyncio.sleep(0.3)
        shot("code-line")
        dialog = window.show_shortcuts()
        await asyncio.sleep(0.5)
        shot("shortcuts")
        dialog.close()
    await window.shutdown()

with loop:
    loop.run_until_complete(main())
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="shots")
    parser.add_argument("--scenario", action="append", dest="scenarios")
    parser.add_argument("--size", default="1440x900", help="the window, WxH (1024x700 …)")
    parser.add_argument("--display", default=":93", help="the Xvfb display to start")
    parser.add_argument(
        "--extras", action="store_true", help="also: keyboard focus, shortcuts, a long code line"
    )
    args = parser.parse_args()
    scenarios = args.scenarios or ["demo-tools", "demo", "demo-cut", "demo-error-429"]
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for tool in ("Xvfb", "import"):
        if shutil.which(tool) is None and (tool == "import" or not os.environ.get("DISPLAY")):
            print(f"missing {tool}: apt-get install xvfb imagemagick", file=sys.stderr)
            return 1
    env = dict(os.environ, STREAMSCOPE_HOME=tempfile.mkdtemp(prefix="streamscope-shots-"))
    xvfb = None
    if not os.environ.get("DISPLAY"):
        env["DISPLAY"] = args.display
        w, h = (max(int(n), m) for n, m in zip(args.size.split("x"), (1440, 900), strict=True))
        screen = f"{w}x{h}x24"
        xvfb = subprocess.Popen(["Xvfb", args.display, "-screen", "0", screen, "-nolisten", "tcp"])
        time.sleep(1.0)
    env.pop("QT_QPA_PLATFORM", None)
    try:
        subprocess.run(
            [sys.executable, "-c", DRIVER, str(out), args.size, str(int(args.extras)), *scenarios],
            env=env,
            check=True,
            timeout=300,
        )
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(5)
    for png in sorted(out.glob("*.png")):
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
