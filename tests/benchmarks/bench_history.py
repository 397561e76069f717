"""History at scale: the real window on a profile of a year of use (issue 23).

    .venv/bin/python tests/benchmarks/bench_history.py [--quick] [--only startup|switch]

The profile is :mod:`tests.support.big_profile`'s full build (~1,000 conversations, ~70k
messages, ~134 MB of text; built once into the temporary folder, ~30 s), copied into
``STREAMSCOPE_HOME/data`` for every case, which runs in a fresh subprocess (its own peak
RSS) with the window offscreen as ``run_app`` sets it up (GC on the Qt thread, a qasync
loop, the frame painted before the panels are built). A stall is the lateness of a 5 ms
repeating timer (``bench_gui``'s :class:`StallProbe`).

1. **Start-up** — process start to a usable window: the panels built and the chat showing the
   most recent conversation's cards (then one more pass of the event loop); the worst stall
   from the first paint to two seconds after that, and from when the panels are built (their
   building is one stall, mostly imports, as long with an empty profile: both are shown).
   With the big profile (the long conversation made the most recent one) against an empty
   profile, alternated.
2. **Switch** — the window open on the big profile, the 300-exchange / 727-message
   conversation is chosen (as a click in the list does): time to its first cards, the worst
   stall and when the window is quiet (the end of the last tick late by
   :data:`QUIET_LATE_MS` or more) within five seconds; then scrolled from the top to the
   end with wheel events at :data:`WHEEL_STEPS_PER_S` (the worst stall while scrolling);
   the resident memory with it open, against the empty profile's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))

from bench_gui import Row, StallProbe, check, info, print_table  # noqa: E402

CASE_TIMEOUT = 600.0
"""No single subprocess may run longer than this (seconds)."""

QUIET_LATE_MS = 20.0
"""A tick this late (or later) is not quiet."""

WHEEL_STEPS_PER_S = 100
"""Wheel notches (120 eighths of a degree each) sent per second while scrolling."""

STARTUP_RUNS = 3
"""Start-up runs per profile (alternated; medians)."""


# -- the profile and the cases' processes -------------------------------------------------


def profile_home(*, long_most_recent: bool = False) -> tuple[Path, dict[str, Any]]:
    """A fresh copy of the big profile in a temporary folder (and its facts); with
    ``long_most_recent`` the long conversation is the one the window opens at start."""
    from support.big_profile import cached_profile

    home = Path(tempfile.mkdtemp(prefix="streamscope-history-"))
    facts = cached_profile(home / "data")  # (the database is in STREAMSCOPE_HOME/data)
    if long_most_recent:
        from streamscope.core.store.database import Store

        store = Store(Path(facts.path))
        try:
            title = store.conversation(facts.long_id).title  # type: ignore[union-attr]
            store.rename(facts.long_id, title)  # (updated: now)
        finally:
            store.close()
    return home, facts.__dict__


def empty_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="streamscope-history-empty-"))


def run_case(args: list[str], home: Path, timeout: float = CASE_TIMEOUT) -> dict[str, Any]:
    """Run ``bench_history.py --case ...`` in a fresh interpreter with ``home`` as its
    profile; its last stdout line is JSON. ``BENCH_T0`` is the time it was started."""
    env = {
        **os.environ,
        "STREAMSCOPE_HOME": str(home),
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "BENCH_T0": repr(time.time()),
    }
    proc = subprocess.run(
        [sys.executable, str(HERE), "--case", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"case {args} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rss_mb() -> tuple[float, float]:
    """This process's resident set size now and at its peak (VmRSS, VmHWM), in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


# -- in the case's process ----------------------------------------------------------------


def _open_window(build_now: bool = True) -> tuple[Any, Any, Any]:
    """As ``run_app``: the frame painted first, then the profile and the panels; returns
    ``(window, loop, app)`` with the panels not built yet unless ``build_now``."""
    import qasync
    from PySide6.QtWidgets import QApplication

    from streamscope.ui.app import paint_now
    from streamscope.ui.first_paint import apply_saved_theme
    from streamscope.ui.gc_guard import MainThreadCollector
    from streamscope.ui.main_window import MainWindow

    app = QApplication([])
    app.setQuitOnLastWindowClosed(False)
    apply_saved_theme()
    window = MainWindow(deferred=True)
    window.resize(1400, 900)
    window.show()
    paint_now(window)
    app._collector = MainThreadCollector()  # type: ignore[attr-defined]
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    if build_now:
        _build(window)
    return window, loop, app


def _build(window: Any) -> None:
    from streamscope.ui.app import open_profile

    store, captures = open_profile()
    window.build(store=store, captures=captures)


def _shows(window: Any, conversation_id: int | None) -> bool:
    """Whether the chat shows ``conversation_id``'s cards (``None``: the welcome)."""
    if not getattr(window, "built", False):
        return False
    controller = window.controller
    if controller.session.conversation_id != conversation_id:
        return False
    return any(card.isVisible() for card in window.chat.cards())


async def _until(condition: Callable[[], bool], timeout: float = 60.0) -> float:
    """Poll ``condition`` every millisecond; when it holds, let the loop pass once more and
    return that time (``perf_counter``)."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the window never got there")
        await asyncio.sleep(0.001)
    await asyncio.sleep(0)
    return time.perf_counter()


def _quiet_after(probe: StallProbe, interval: float = 0.005) -> float:
    """When (seconds after the probe started) the last tick late by :data:`QUIET_LATE_MS`
    or more ended."""
    t = 0.0
    quiet = 0.0
    for lateness in probe.late:
        t += interval + lateness / 1000
        if lateness >= QUIET_LATE_MS:
            quiet = t
    return quiet


def case_startup(expect: str) -> dict[str, Any]:
    """Process start to a usable window; ``expect`` the conversation id it opens (or
    ``none``: the welcome)."""
    t_proc = float(os.environ["BENCH_T0"])
    window, loop, _app = _open_window(build_now=False)
    probe = StallProbe()
    wanted = None if expect == "none" else int(expect)
    out: dict[str, Any] = {}

    after = StallProbe()  # (from when the panels are built: what the history costs)

    def build() -> None:
        started = time.perf_counter()
        _build(window)
        out["build_s"] = time.perf_counter() - started
        after.start()

    async def run() -> None:
        probe.start()
        loop.call_soon(build)
        t_usable = await _until(lambda: _shows(window, wanted))
        await asyncio.sleep(2.0)
        stalls, later = probe.stop(), after.stop()
        out.update(
            usable_s=time.time() - (time.perf_counter() - t_usable) - t_proc,
            stall_max_ms=stalls["stall_max_ms"],
            stall_p99_ms=stalls["stall_p99_ms"],
            after_build_stall_max_ms=later["stall_max_ms"],
            cards=len(window.chat.cards()),
        )

    loop.run_until_complete(run())
    out["rss_mb"], out["peak_rss_mb"] = rss_mb()
    return out


def _viewport(chat: Any) -> Any:
    """The widget the chat's wheel events go to."""
    scroll = getattr(chat, "_scroll", None)  # (the column of cards before issue 23)
    return (scroll or chat).viewport()


def _wheel_down(widget: Any) -> None:
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    centre = QPointF(widget.width() / 2, widget.height() / 2)
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, -120),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def case_switch(long_id: str, max_steps: str) -> dict[str, Any]:
    """The long conversation chosen in an open window, then scrolled top to bottom."""
    window, loop, _app = _open_window()
    target = int(long_id)
    probe = StallProbe()
    out: dict[str, Any] = {}

    async def run() -> None:
        await asyncio.sleep(3.0)  # the window settles (the latest conversation renders)
        out["rss_before_mb"] = rss_mb()[0]
        probe.start()
        t0 = time.perf_counter()
        window.switcher.open_conversation(target)  # (what a click in the list calls)
        t_cards = await _until(lambda: _shows(window, target))
        await asyncio.sleep(max(0.0, 5.0 - (time.perf_counter() - t0)))
        stalls = probe.stop()
        out.update(
            first_cards_ms=(t_cards - t0) * 1000,
            stall_max_ms=stalls["stall_max_ms"],
            stall_p99_ms=stalls["stall_p99_ms"],
            quiet_s=_quiet_after(probe),
            cards_built=len(window.chat.cards()),
        )
        out["rss_open_mb"] = rss_mb()[0]

        chat = window.chat
        chat.scroll_to(0)
        await asyncio.sleep(2.0)  # (the first cards render)
        viewport = _viewport(chat)
        steps = 0
        probe.start()
        t1 = time.perf_counter()
        while not chat.is_at_bottom() and steps < int(max_steps):
            _wheel_down(viewport)
            steps += 1
            await asyncio.sleep(max(0.0, t1 + steps / WHEEL_STEPS_PER_S - time.perf_counter()))
        scrolled = probe.stop()
        out.update(
            scroll_steps=steps,
            scroll_s=time.perf_counter() - t1,
            scroll_stall_max_ms=scrolled["stall_max_ms"],
            scroll_stall_p99_ms=scrolled["stall_p99_ms"],
            reached_end=chat.is_at_bottom(),
        )
        await asyncio.sleep(1.0)
        out["rss_scrolled_mb"], out["peak_rss_mb"] = rss_mb()

    loop.run_until_complete(run())
    return out


def case_empty() -> dict[str, Any]:
    """The window on an empty profile, settled: its memory."""
    window, loop, _app = _open_window()

    async def run() -> None:
        await _until(lambda: _shows(window, None))
        await asyncio.sleep(3.0)

    loop.run_until_complete(run())
    now, peak = rss_mb()
    return {"rss_mb": now, "peak_rss_mb": peak}


# -- the benchmarks -------------------------------------------------------------------------


def bench_startup(quick: bool) -> list[Row]:
    runs = 1 if quick else STARTUP_RUNS
    big: list[dict[str, Any]] = []
    empty: list[dict[str, Any]] = []
    for _ in range(runs):
        home, facts = profile_home(long_most_recent=True)
        try:
            big.append(run_case(["startup", str(facts["long_id"])], home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
        home = empty_home()
        try:
            empty.append(run_case(["startup", "none"], home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
    big_s = statistics.median(r["usable_s"] for r in big)
    empty_s = statistics.median(r["usable_s"] for r in empty)
    name = "start-up, big profile (long conversation latest)"
    worst = max(r["stall_max_ms"] for r in big)
    return [
        info(name, "usable, empty profile", f"{empty_s:.2f} s"),
        info(name, "usable, big profile", f"{big_s:.2f} s"),
        check(name, "big / empty", big_s / empty_s, 1.2, ".2f", "x"),
        check(name, "worst stall", worst, 100, ".0f", " ms"),
        info(name, "the same, empty profile", f"{max(r['stall_max_ms'] for r in empty):.0f} ms"),
        info(
            name,
            "building the panels, empty / big (median)",
            "{:.2f} / {:.2f} s".format(
                statistics.median(r["build_s"] for r in empty),
                statistics.median(r["build_s"] for r in big),
            ),
        ),
        check(
            name,
            "worst stall once the panels are built",
            max(r["after_build_stall_max_ms"] for r in big),
            100,
            ".0f",
            " ms",
        ),
        info(
            name,
            "the same, empty profile",
            f"{max(r['after_build_stall_max_ms'] for r in empty):.0f} ms",
        ),
        info(name, "cards built", str(big[-1]["cards"])),
    ]


def bench_switch(quick: bool) -> list[Row]:
    home, facts = profile_home()
    try:
        result = run_case(["switch", str(facts["long_id"]), "800" if quick else "100000"], home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    home = empty_home()
    try:
        empty = run_case(["empty"], home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    name = f"switch to the {facts['long_messages']}-message conversation"
    scroll = f"scroll it top to bottom ({WHEEL_STEPS_PER_S} wheel steps/s)"
    memory = "memory with it open"
    grown = result["rss_scrolled_mb"] - empty["rss_mb"]
    return [
        check(name, "first cards", result["first_cards_ms"], 150, ".0f", " ms"),
        check(name, "worst stall", result["stall_max_ms"], 50, ".0f", " ms"),
        check(name, "quiet after", result["quiet_s"], 1.0, ".2f", " s"),
        info(name, "stall p99", f"{result['stall_p99_ms']:.0f} ms"),
        info(name, "cards built", str(result["cards_built"])),
        check(scroll, "worst stall", result["scroll_stall_max_ms"], 50, ".0f", " ms"),
        info(scroll, "stall p99", f"{result['scroll_stall_p99_ms']:.0f} ms"),
        info(
            scroll,
            "steps, time",
            f"{result['scroll_steps']} in {result['scroll_s']:.1f} s"
            + ("" if result["reached_end"] else " (end not reached)"),
        ),
        info(memory, "RSS, empty profile", f"{empty['rss_mb']:.0f} MB"),
        info(memory, "RSS, long one open, scrolled", f"{result['rss_scrolled_mb']:.0f} MB"),
        check(memory, "over the empty profile", grown, 100, ".0f", " MB"),
    ]


BENCHES = {"startup": bench_startup, "switch": bench_switch}

CASES = {
    "startup": lambda a: case_startup(a[0]),
    "switch": lambda a: case_switch(a[0], a[1]),
    "empty": lambda a: case_empty(),
}


def measure(only: list[str] | None = None, quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    for name, bench in BENCHES.items():
        if only and name not in only:
            continue
        rows += bench(quick)
    return rows


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--case":
        result = CASES[sys.argv[2]](sys.argv[3:])
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
        os._exit(0)  # no teardown: the figures are taken
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(BENCHES))
    parser.add_argument("--quick", action="store_true", help="one start-up run, a short scroll")
    args = parser.parse_args()
    rows = measure(args.only, args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
