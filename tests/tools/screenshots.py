"""Screenshots of the real window against the built-in demo, for the README and for looking.

    .venv/bin/python tests/tools/screenshots.py [--out DIR] [--scenario demo-tools ...]
    .venv/bin/python tests/tools/screenshots.py --scenario tap   # Tap another app
    .venv/bin/python tests/tools/screenshots.py --scenario tap-faults   # … with faults on cue
    .venv/bin/python tests/tools/screenshots.py --theme dark     # in the dark theme
    .venv/bin/python tests/tools/screenshots.py [--size 1024x700] [--display :93] [--extras]

Starts Xvfb when there is no display (apt-get install xvfb imagemagick fonts-noto-cjk
fonts-noto-color-emoji), opens StreamScope on a throw-away profile, sends one message per
scenario and saves `import -window root` screenshots (one per scenario, plus each inspector
tab for the first one, plus the Request tab for one that ended with an error body), then starts
the window again on that profile and opens its first answer (`old-turn-after-restart`). A
stall (`--scenario demo-stall`) is shot while it is still silent, once it has been silent
10 s, with its Timeline, then stopped. Not part of the test run.
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
from streamscope.ui.shell.app import open_profile
from streamscope.ui.shell.gc_guard import MainThreadCollector
from streamscope.ui.shell.main_window import MainWindow

out, size, extras, scenarios = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
width, height = (int(n) for n in size.split("x"))
SILENT = {"demo-stall": 10}  # shot once the status bar says "no data for 10 s"
app = QApplication(sys.argv[:1])
app.setQuitOnLastWindowClosed(False)
collector = MainThreadCollector()
from streamscope.ui.base.event_loop import AppLoop
loop = AppLoop(app)
asyncio.set_event_loop(loop)
store, captures = open_profile()
window = MainWindow(demo_speed=3.0, store=store, captures=captures)
import os
if os.environ.get("SHOTS_THEME"):
    window.theme.set_mode(os.environ["SHOTS_THEME"])  # (remembered for the restart too)
window.setGeometry(0, 0, width, height)
window.show()

def shot(name):
    # (no app.processEvents() here: called from a task, it would run other tasks inside it)
    subprocess.run(["import", "-window", "root", f"{out}/{name}.png"], check=True)

async def tap_shot(faults=""):
    # Endpoint > Tap another app...: the demo as upstream, other clients through the tap
    import threading
    import httpx
    server = await window.demo.ensure_started()
    window.open_tap_dialog()
    dialog = window.tap_dock.dialog
    dialog.upstream.setEditText(server.root_url)
    dialog.faults.setText(faults)
    dialog.start_button.click()
    while not window.tap.running:
        await asyncio.sleep(0.05)
    base = window.tap.server.root_url
    def client(model):
        ask = {"model": model, "stream": True,
               "messages": [{"role": "user", "content": "What's the weather in Zürich?"}]}
        try:
            with httpx.stream("POST", base + "/v1/chat/completions", json=ask, timeout=60) as r:
                for _ in r.iter_raw():
                    pass
        except httpx.HTTPError:
            pass
    for model in ("demo-tools", "demo-cut", "demo-error-429", "demo-slow"):
        threading.Thread(target=client, args=(model,), daemon=True).start()
        await asyncio.sleep(1.2)
    window.tapped_dock.raise_()
    panel = window.tap_panel
    panel.view.setCurrentIndex(panel.model.index(0, 0))
    window.tap.show(window.tap.exchanges[0])
    dialog.move(window.x() + 330, window.y() + 470)
    await asyncio.sleep(1.0)
    shot("tap-faults" if faults else "tap")
    window.tap.stop_and_wait()

async def main():
    await asyncio.sleep(1.0)
    if scenarios in (["tap"], ["tap-faults"]):
        faults = "cut@frame:20/every=2,http=429:retry-after=1/every=3"
        await tap_shot(faults if scenarios == ["tap-faults"] else "")
        await window.shutdown()
        return
    for i, scenario in enumerate(scenarios):
        if i == 1:
            window.switcher.new_conversation()
        window.model_combo.setCurrentText(scenario)
        window.composer.editor.setPlainText("What's the weather and the time in Zürich?")
        window.composer._on_submit()
        if scenario in SILENT:
            for _ in range(300):
                await asyncio.sleep(0.1)
                if f"no data for {SILENT[scenario]} s" in window.status.text():
                    break
            shot(scenario)
            window.inspector.setCurrentWidget(window.inspector.timeline_panel)
            await asyncio.sleep(0.3)
            shot(f"{scenario}-timeline")
            window.inspector.setCurrentIndex(0)
            window.controller.stop()
            await window.controller.runner.wait()
            continue
        await asyncio.sleep(0.3)
        await window.controller.runner.wait()
        await asyncio.sleep(1.5)
        shot(scenario)
        if window.inspector.frames_model.log.body_row() is not None:  # an error body
            window.inspector.setCurrentIndex(3)  # Request: the body under Response
            await asyncio.sleep(0.5)
            shot(f"{scenario}-response")
            window.inspector.setCurrentIndex(0)
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
        from streamscope.ui.base.shortcuts import shortcut

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
    window.close()
    await restart_and_open_an_old_turn()


async def restart_and_open_an_old_turn():
    # Scene: the app started again on the same profile (the last conversation reopens),
    # its first answer clicked: that turn's frames in the inspector.
    again = MainWindow(demo_speed=3.0, store=store, captures=captures)
    again.setGeometry(0, 0, width, height)
    again.show()
    await asyncio.sleep(1.0)
    if again.controller.answers:  # scrolled up to it and its footer clicked, as a person would
        from PySide6.QtCore import QPoint, Qt
        from PySide6.QtTest import QTest

        card = again.controller.answer_card(0)  # (the chat scrolls to it)
        again.chat.scroll_to(max(0, again.chat.scroll_bar_value() - 60))
        await asyncio.sleep(0.3)
        QTest.mouseClick(card.footer, Qt.MouseButton.LeftButton, pos=QPoint(4, 4))
        if again.controller.feed.loading is not None:
            await again.controller.feed.loading
    await asyncio.sleep(1.0)
    shot("old-turn-after-restart")
    await again.shutdown()

with loop:
    loop.run_until_complete(main())
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="shots")
    parser.add_argument("--scenario", action="append", dest="scenarios")
    parser.add_argument("--size", default="1440x900", help="the window, WxH (1024x700 …)")
    parser.add_argument(
        "--display", default=None, help="the Xvfb display to start (default: a free one)"
    )
    parser.add_argument(
        "--theme", choices=("system", "light", "dark"), default=None, help="View > Theme"
    )
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
        w, h = (max(int(n), m) for n, m in zip(args.size.split("x"), (1440, 900), strict=True))
        screen = f"{w}x{h}x24"
        if args.display:
            env["DISPLAY"] = args.display
            xvfb = subprocess.Popen(
                ["Xvfb", args.display, "-screen", "0", screen, "-nolisten", "tcp"]
            )
            time.sleep(1.0)
        else:
            # -displayfd: Xvfb picks a free display and writes its number (no clash with others).
            xvfb = subprocess.Popen(
                ["Xvfb", "-displayfd", "1", "-screen", "0", screen, "-nolisten", "tcp"],
                stdout=subprocess.PIPE,
                text=True,
            )
            assert xvfb.stdout is not None
            env["DISPLAY"] = f":{xvfb.stdout.readline().strip()}"
    env.pop("QT_QPA_PLATFORM", None)
    if args.theme:
        env["SHOTS_THEME"] = args.theme
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
