"""History at the size of a year of use: start-up, switching, scrolling, search, memory, and a
firehose on a busy machine — the real window on the profile of tests/support/big_profile.py
(~1,000 conversations, ~70k messages, ~134 MB of text, built through the store).

    .venv/bin/python tests/benchmarks/bench_history.py [--quick] [--only NAME ...]

(``tests/benchmarks/run_all.py`` runs it with the others and prints one table.) Each case runs
in a fresh subprocess on its own copy of the profile (built once and cached in the temporary
folder: ~30 s the first time). Stalls are the lateness of a 5 ms repeating timer, as in
``bench_gui.py``. Everything listens on 127.0.0.1; every subprocess has a timeout.

1. **Start-up** — process start to a *usable* window (built, the most recent conversation's
   cards on screen, the conversation list filled) under a private Xvfb, with the big profile
   and with an empty one, alternated, best of N; the worst stall from the first paint until a
   second after the window is usable.
2. **Switch** — the window open on the big profile (offscreen), then the 300-exchange
   conversation is chosen in the list: time to its first cards, worst stall, and when the
   window is quiet again (the end of the last stall over 16 ms, within 3 s). RSS after it
   settles, against the empty profile's window.
3. **Scroll** — the long conversation from its top to its bottom with wheel events at 100
   steps a second: the worst stall.
4. **Search** — queries typed into the conversation list's search box: time from the search
   starting (the debounce firing) to the first results, the worst stall meanwhile.
5. **Busy firehose** — 100k deltas into the window while another process burns a core: the
   status bar never says "no data" while reads arrive; whether it said the window lagged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))  # tests/: support.big_profile

from bench_gui import (  # noqa: E402
    FirehoseServer,
    Row,
    StallProbe,
    _qt_app,
    check,
    info,
    print_table,
    xvfb,
)

CASE_TIMEOUT = 400.0
QUIET_STALL_MS = 16.0
"""A stall longer than one frame at 60 Hz: the window is "quiet" once none follows."""
WHEEL_STEPS_PER_S = 100
SCROLL_LIMIT_S = 150.0
"""Scrolling gives up after this long (it reports how far it got)."""
SEARCHES = ("needle", "uniq523", "latency server", "ключ", "流式")


# -- what the bench reads from the window (one place to follow the window's code) ---------


def chat_has_cards(window: Any) -> bool:
    return bool(window.chat.cards())


def list_rows(window: Any) -> int:
    return len(window.conversations.ids())


def list_model(window: Any) -> Any:
    """The conversation list's item model (its ``rowsInserted`` says results arrived)."""
    return window.conversations.list.model()


def search_debounce_s(window: Any) -> float:
    """How long the search box waits after the last key before searching."""
    return float(window.conversations._search_timer.interval()) / 1000


def open_from_list(window: Any, conversation_id: int) -> None:
    """As a click on the conversation's row does."""
    window.conversations.conversationChosen.emit(conversation_id)


def chat_scroll_bar(window: Any) -> Any:
    return window.chat.verticalScrollBar()


def chat_viewport(window: Any) -> Any:
    return window.chat.viewport()


# -- cases ----------------------------------------------------------------------------------


def _profile(home: str, *, empty: bool) -> dict[str, Any]:
    from support.big_profile import cached_profile

    os.environ["STREAMSCOPE_HOME"] = home
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if empty:
        return {}
    return cached_profile(home).__dict__


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _open_window() -> tuple[Any, Any, Any, Any]:
    _app, collector, loop = _qt_app()
    from streamscope.ui.shell.app import open_profile
    from streamscope.ui.shell.main_window import MainWindow

    db, captures = open_profile()
    window = MainWindow(store=db, captures=captures)
    window.resize(1360, 860)
    window.show()
    return window, db, collector, loop


def case_switch(home: str, empty: str) -> dict[str, Any]:
    facts = _profile(home, empty=empty == "1")
    window, db, collector, loop = _open_window()
    probe = StallProbe()
    out: dict[str, Any] = {}

    async def run() -> None:
        await asyncio.sleep(2.0)  # start-up settles
        if not facts:
            out["rss_mb"] = rss_mb()
            return
        long_id = facts["long_id"]
        probe.start()
        t0 = time.perf_counter()
        first: float | None = None
        open_from_list(window, long_id)
        while time.perf_counter() - t0 < 3.0:
            if (
                first is None
                and window.controller.session.conversation_id == long_id
                and (chat_has_cards(window))
            ):
                first = time.perf_counter() - t0
            await asyncio.sleep(0.002)
        stalls = probe.stop()
        out.update(stalls)
        out["first_cards_s"] = first
        out["quiet_s"] = _quiet_after(probe, t0)
        out["rss_mb"] = rss_mb()
        # Scroll it from the top to the bottom with the wheel, 100 steps a second.
        out.update(await _scroll(window))
        await window.shutdown()

    loop.run_until_complete(run())
    db.close()
    collector.stop()
    return out


def _quiet_after(probe: StallProbe, t0: float) -> float:
    """Seconds from ``t0`` to the end of the last stall longer than a frame."""
    quiet = 0.0
    for at, late in probe.ticks:
        if late > QUIET_STALL_MS:
            quiet = max(quiet, at - t0)
    return quiet


async def _scroll(window: Any) -> dict[str, Any]:
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    bar = chat_scroll_bar(window)
    bar.setValue(0)
    await asyncio.sleep(1.0)  # the top's cards built and settled
    viewport = chat_viewport(window)
    probe = StallProbe()
    probe.start()
    t0 = time.perf_counter()
    steps = 0
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    while time.perf_counter() - t0 < SCROLL_LIMIT_S:
        if bar.value() >= bar.maximum() and steps > 10:
            break
        event = QWheelEvent(
            centre,
            QPointF(viewport.mapToGlobal(centre.toPoint())),
            QPoint(0, 0),
            QPoint(0, -120),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.postEvent(viewport, event)
        steps += 1
        await asyncio.sleep(1 / WHEEL_STEPS_PER_S)
    elapsed = time.perf_counter() - t0
    stalls = probe.stop()
    return {
        "scroll_steps": steps,
        "scroll_s": elapsed,
        "scroll_reached_bottom": bar.value() >= bar.maximum(),
        "scroll_stall_max_ms": stalls["stall_max_ms"],
        "scroll_stall_p99_ms": stalls["stall_p99_ms"],
    }


def case_search(home: str) -> dict[str, Any]:
    _profile(home, empty=False)
    window, db, collector, loop = _open_window()
    out: dict[str, Any] = {"searches": []}
    panel = window.conversations

    async def run() -> None:
        await asyncio.sleep(2.0)
        for query in SEARCHES:
            probe = StallProbe()
            inserted: list[float] = []
            model = list_model(window)

            def shown(*_args: object, i: list[float] = inserted, m: Any = model) -> None:
                if m.rowCount():  # (results arrive as a reset, then as inserted rows)
                    i.append(time.perf_counter())

            model.rowsInserted.connect(shown)
            model.modelReset.connect(shown)
            debounce = search_debounce_s(window)
            probe.start()
            t0 = time.perf_counter()
            panel.search.setText(query)
            while time.perf_counter() - t0 < debounce + 3.0:
                if inserted and time.perf_counter() - inserted[0] > 1.0:
                    break
                await asyncio.sleep(0.002)
            stalls = probe.stop()
            model.rowsInserted.disconnect(shown)
            model.modelReset.disconnect(shown)
            # (a coarse timer may fire up to 5 % early: never below 0)
            first = max(0.0, inserted[0] - t0 - debounce) if inserted else None
            out["searches"].append(
                {
                    "query": query,
                    "first_s": first,
                    "rows": list_rows(window),
                    "stall_max_ms": stalls["stall_max_ms"],
                }
            )
            panel.search.clear()
            await asyncio.sleep(1.0)
        await window.shutdown()

    loop.run_until_complete(run())
    db.close()
    collector.stop()
    return out


def case_busy_firehose(home: str, base_url: str, n: str) -> dict[str, Any]:
    _profile(home, empty=True)
    from streamscope.core.net.endpoint_store import EndpointStore
    from streamscope.core.net.endpoints import Endpoint

    store = EndpointStore()
    ep = Endpoint(id="bench", name="bench", base_url=base_url, model="bench", idle_timeout=60)
    store.save(store.load().with_endpoint(ep).select("bench"))
    window, db, collector, loop = _open_window()
    window.inspector.setCurrentIndex(0)
    out: dict[str, Any] = {}
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])

    async def run() -> None:
        await asyncio.sleep(1.0)
        status = window.status
        texts: list[str] = []
        finished: asyncio.Future[float] = loop.create_future()
        runner = window.controller.runner
        runner.turnFinished.connect(lambda _t: finished.done() or finished.set_result(0.0))
        window.composer.editor.setPlainText("go")
        window.composer._on_submit()
        while not finished.done():
            text = status.text()
            if not texts or texts[-1] != text:
                texts.append(text)
            await asyncio.sleep(0.02)
        turn = runner.last_turn
        assert turn is not None and turn.outcome is not None
        out["outcome"] = turn.outcome.value
        out["no_data_shown"] = [t for t in texts if "no data" in t]
        out["behind_shown"] = [t for t in texts if "behind the stream" in t]
        await window.shutdown()

    try:
        loop.run_until_complete(run())
    finally:
        burner.kill()
        burner.wait()
    db.close()
    collector.stop()
    return out


# -- start-up under Xvfb --------------------------------------------------------------------

_STARTUP = """
import json, os, sys, time
T0 = float(sys.argv[1])
from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication(sys.argv[:1])
expected = json.loads(sys.argv[2])
late, last = [], [time.perf_counter()]
def tick():
    now = time.perf_counter()
    late.append((time.time(), max(0.0, (now - last[0] - 0.005) * 1000)))
    last[0] = now
probe = QTimer()
probe.setTimerType(Qt.TimerType.PreciseTimer)
probe.setInterval(5)
probe.timeout.connect(tick)
probe.start()
state = {"first": None, "usable": None}
def usable(window):
    if not getattr(window, "built", False):
        return False
    session = window.controller.session
    if expected is None:
        return True
    return (session.conversation_id == expected and bool(window.chat.cards())
            and bool(window.conversations.ids()))
def done():
    first, ready = state["first"], state["usable"]
    stalls = [l for t, l in late if t >= first]
    print(json.dumps({"first": first - T0, "usable": ready - T0, "stall_max_ms": max(stalls)}))
    sys.stdout.flush()
    os._exit(0)
class Watch(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and isinstance(obj, QWidget):
            now = time.time()
            if state["first"] is None:
                state["first"] = now
            if state["usable"] is None and usable(obj.window()):
                state["usable"] = now
                QTimer.singleShot(1000, done)
        return False
watch = Watch()
app.installEventFilter(watch)
from streamscope.cli import main
main([])
"""


def startup_once(display: str, home: str, expected: int | None) -> dict[str, Any]:
    env = {
        **os.environ,
        "DISPLAY": display,
        "QT_QPA_PLATFORM": "xcb",
        "STREAMSCOPE_HOME": home,
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    start = time.time()
    proc = subprocess.run(
        [sys.executable, "-c", _STARTUP, repr(start), json.dumps(expected)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"start-up script failed: {proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_startup(quick: bool) -> list[Row]:
    from support.big_profile import cached_profile

    runs = 3 if quick else 5
    with tempfile.TemporaryDirectory(prefix="streamscope-bench-") as tmp:
        big_home = Path(tmp) / "big"
        facts = cached_profile(big_home)
        empty_home = Path(tmp) / "empty"
        empty_home.mkdir()
        big: list[dict[str, Any]] = []
        empty: list[dict[str, Any]] = []
        with xvfb() as display:
            startup_once(display, str(empty_home), None)  # warm the file cache
            startup_once(display, str(big_home), facts.latest_id)
            for _ in range(runs):
                shutil.rmtree(empty_home)
                empty_home.mkdir()
                empty.append(startup_once(display, str(empty_home), None))
                big.append(startup_once(display, str(big_home), facts.latest_id))
    e = min(r["usable"] for r in empty)
    b = min(r["usable"] for r in big)
    name = f"start-up, year profile (Xvfb, best of {runs})"
    return [
        info(name, "profile", f"{facts.conversations} conversations, {facts.messages:,} msgs"),
        info(name, "usable, empty profile", f"{e:.3f} s"),
        info(name, "usable, year profile", f"{b:.3f} s"),
        check(name, "year / empty", b / e, 1.2, ".2f", "x"),
        check(name, "stall worst (year)", max(r["stall_max_ms"] for r in big), 100, ".1f", " ms"),
        info(name, "stall worst (empty)", f"{max(r['stall_max_ms'] for r in empty):.1f} ms"),
    ]


# -- the other benchmarks -------------------------------------------------------------------


def run_case(args: list[str], timeout: float = CASE_TIMEOUT) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(HERE), "--case", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"case {args} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def bench_switch(quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="streamscope-bench-") as tmp:
        empty = run_case(["switch", str(Path(tmp) / "empty"), "1"])
        s = run_case(["switch", str(Path(tmp) / "big"), "0"])
    name = "switch to the 727-message conversation"
    first = s["first_cards_s"]
    scroll = "scroll top to bottom, 100 wheel steps/s"
    reached = "reached the bottom" if s["scroll_reached_bottom"] else "did NOT reach the bottom"
    return [
        check(name, "first cards", (first if first is not None else 99) * 1000, 150, ".0f", " ms"),
        check(name, "stall worst", s["stall_max_ms"], 50, ".1f", " ms"),
        check(name, "quiet after", s["quiet_s"], 1.0, ".2f", " s"),
        info(
            name,
            "RSS empty profile / long conversation open",
            f"{empty['rss_mb']:.0f} / {s['rss_mb']:.0f} MB",
        ),
        check(name, "RSS over empty profile", s["rss_mb"] - empty["rss_mb"], 100, ".0f", " MB"),
        info(scroll, "steps", f"{s['scroll_steps']} in {s['scroll_s']:.1f} s ({reached})"),
        check(scroll, "stall worst", s["scroll_stall_max_ms"], 50, ".1f", " ms"),
        info(scroll, "stall p99", f"{s['scroll_stall_p99_ms']:.1f} ms"),
    ]


def bench_search(quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="streamscope-bench-") as tmp:
        s = run_case(["search", str(Path(tmp) / "big")])
    name = "search 134 MB of history"
    rows: list[Row] = []
    firsts = []
    for one in s["searches"]:
        first = one["first_s"]
        firsts.append(first if first is not None else 99.0)
        shown = f"{first * 1000:.0f} ms" if first is not None else "no results"
        rows.append(
            info(
                name,
                f"'{one['query']}'",
                f"{shown}, {one['rows']} rows, stall {one['stall_max_ms']:.1f} ms",
            )
        )
    rows.append(check(name, "first results, worst query", max(firsts) * 1000, 200, ".0f", " ms"))
    rows.append(
        check(name, "stall worst", max(o["stall_max_ms"] for o in s["searches"]), 20, ".1f", " ms")
    )
    return rows


def bench_busy_firehose(quick: bool) -> list[Row]:
    n = 100_000
    with FirehoseServer() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.base_url("line", n)
        r = run_case(["busy-firehose", str(Path(tmp) / "home"), url, str(n)])
    name = f"firehose {n // 1000}k, a core burnt by another process"
    return [
        info(name, "outcome", r["outcome"]),
        check(name, '"no data" shown while reads arrive', len(r["no_data_shown"]), 0, "d"),
        info(
            name,
            '"behind the stream" shown',
            r["behind_shown"][0] if r["behind_shown"] else "never (the window kept up)",
        ),
    ]


BENCHES = {
    "startup": bench_startup,
    "switch": bench_switch,
    "search": bench_search,
    "busy-firehose": bench_busy_firehose,
}

CASES = {
    "switch": lambda a: case_switch(a[0], a[1]),
    "search": lambda a: case_search(a[0]),
    "busy-firehose": lambda a: case_busy_firehose(a[0], a[1], a[2]),
}


def measure(only: list[str] | None = None, quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    for name, bench in BENCHES.items():
        if only and name not in only:
            continue
        rows += bench(quick)
        print(f"{name} done", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        result = CASES[sys.argv[2]](sys.argv[3:])
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(BENCHES))
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    rows = measure(args.only, args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
