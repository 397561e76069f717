"""The Bench window in the real main window, against the built-in demo's ``demo-bench`` over
loopback: a run fills the table and the plots; the p99-TTFT point opens its capture in the
inspector at the TTFT frame, and the TTFT recomputed from that capture is the plotted value;
the outcome mix is counted and kept out of the latencies; Stop stops; a planted key is in no
file the bench writes."""

from __future__ import annotations

import asyncio
import csv
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.bench.metrics import measure
from streamscope.core.bench.session import BenchPlan
from streamscope.core.capture.format import read_capture
from streamscope.demo.server import DemoServer
from streamscope.ui.bench.bench_settings import BenchSettings, SettingsError
from streamscope.ui.bench.bench_window import BenchTarget, BenchWindow, prune_runs
from streamscope.ui.shell.main_window import MainWindow
from support.memory_keyring import MemoryKeyring, installed

T = TypeVar("T")
FAST = "demo-bench?ttft=20&itl=2&tokens=8"


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    with installed(MemoryKeyring()):
        win = MainWindow(demo_speed=25)
        qtbot.addWidget(win)
        win.show()
        qtbot.waitUntil(lambda: win.bench is not None, timeout=10_000)
        yield win
        if win.bench is not None and win.bench.bench_window is not None:
            win.bench.bench_window.close()
        aloop.run_until_complete(win.shutdown())


def open_bench(qtbot: QtBot, win: MainWindow) -> BenchWindow:
    assert win.bench is not None
    win.bench.action.trigger()  # (Stream → Bench this endpoint…)
    qtbot.waitUntil(
        lambda: win.bench is not None and win.bench.bench_window is not None, timeout=20_000
    )
    bench = win.bench.bench_window
    assert bench is not None and bench.isVisible()
    return bench


def until(aloop: qasync.QEventLoop, ready: Callable[[], bool], timeout: float = 30.0) -> None:
    """Run the window's asyncio loop (its tasks need it running) until ``ready()``."""

    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.02)

    aloop.run_until_complete(wait())


def inside(aloop: qasync.QEventLoop, act: Callable[[], T]) -> T:
    """Do ``act`` as a click does in the app: with the window's loop running."""

    async def go() -> T:
        return act()

    return aloop.run_until_complete(go())


def run(aloop: qasync.QEventLoop, bench: BenchWindow, *, timeout: float = 60.0) -> None:
    ended: list[bool] = []
    bench.finished.connect(lambda: ended.append(True))
    inside(aloop, bench.start)
    until(aloop, lambda: bool(ended) and not bench.running and not bench.drawing, timeout)


def test_p99_ttft_opens_its_capture_at_the_ttft_frame(
    qtbot: QtBot, aloop: qasync.QEventLoop, window: MainWindow
) -> None:
    bench = open_bench(qtbot, window)
    assert bench.settings.model.text() == "demo-bench?ttft=200&itl=20&tokens=64"  # the demo's
    bench.settings.model.setText(FAST)
    bench.settings.concurrency.setValue(16)
    bench.settings.requests.setValue(100)
    run(aloop, bench)
    assert bench.report is not None
    assert len(bench.data.rows) == 100
    assert bench.table.requests.rowCount() == 100
    assert bench.progress.value() == 100
    assert bench.data.outcome_counts() == {"completed": 100}
    assert bench.run_dir is not None
    assert len(list((bench.run_dir / "captures" / "step-0").glob("*.sscap"))) == 100
    assert json.loads((bench.run_dir / "report.json").read_text())["steps"][0]["summary"]
    assert bench.summary_label.text().startswith("TTFT p50 ")
    # The p99 point: a request on the CDF whose plotted x is its TTFT in ms.
    row = bench.distribution.row_for("p99")
    assert row is not None and bench.distribution.buttons["p99"].isEnabled()
    m = bench.data.metrics(row)
    points = bench.distribution._points.points()
    plotted = next(p for p in points if int(p.data()) == row)
    assert plotted.pos().x() == m.ttft * 1000.0  # type: ignore[operator]
    assert inside(aloop, lambda: bench.distribution.open_percentile("p99"))
    frames = window.inspector.frames_panel

    def shown() -> bool:
        rows = frames.view.selectionModel().selectedRows()
        return not window.controller.busy and bool(rows) and rows[0].row() == m.ttft_frame

    until(aloop, shown)
    assert window.inspector.currentWidget() is frames
    # The frame it opened at carries the first token; the capture gives the same TTFT.
    assert b'"content":"' in frames.model.frame_bytes(m.ttft_frame)  # type: ignore[arg-type]
    again = measure(read_capture(bench.run_dir / m.capture))
    assert again.ttft == m.ttft
    assert again.ttft_frame == m.ttft_frame
    # Rows open too: the max-gap column at the frame after the gap.
    inside(aloop, lambda: bench.table.openRequest.emit(row, "max_gap"))
    until(
        aloop,
        lambda: (
            not window.controller.busy
            and frames.view.selectionModel().selectedRows()[0].row() == m.max_gap_frame
        ),
    )
    # Every plot draws (the tabs refresh when shown).
    for i in range(bench.tabs.count()):
        bench.tabs.setCurrentIndex(i)
    assert len(bench.gaps._points.points()) == 100
    assert bench.sweep._steps == [0]


def test_the_outcome_mix_is_counted_and_kept_out(
    qtbot: QtBot, aloop: qasync.QEventLoop, window: MainWindow
) -> None:
    bench = open_bench(qtbot, window)
    bench.settings.model.setText(FAST + "&cut=0.2&e429=0.2&seed=7")
    bench.settings.concurrency.setValue(4)
    bench.settings.requests.setValue(40)
    run(aloop, bench)
    counts = bench.data.outcome_counts()
    assert sum(counts.values()) == 40
    assert counts["http_429"] > 0 and counts["truncated"] > 0
    report = bench.report
    assert report is not None
    assert report["steps"][0]["summary"]["outcomes"] == counts  # (the same words, exactly)
    assert len(bench.data.values("ttft")[0]) == counts["completed"]
    assert "http_429" in bench.progress_label.text()


def test_stop_ends_the_run_and_the_load_process(
    qtbot: QtBot, aloop: qasync.QEventLoop, window: MainWindow
) -> None:
    bench = open_bench(qtbot, window)
    bench.settings.model.setText("demo-bench?ttft=20&itl=20&tokens=2000")  # 40 s each
    bench.settings.requests.setValue(8)
    ended: list[bool] = []
    bench.finished.connect(lambda: ended.append(True))
    inside(aloop, bench.start)
    until(aloop, lambda: bench.running and len(bench.data.rows) == 0)
    until(aloop, lambda: bench.progress_label.text().startswith("Running 1 step"))
    t0 = time.monotonic()
    until(aloop, lambda: time.monotonic() > t0 + 1.0)  # (requests in flight in the load process)
    bench.stop()
    until(aloop, lambda: bool(ended), timeout=10.0)
    assert "Ended: stopped" in bench.progress_label.text()
    assert bench.start_button.isEnabled() and not bench.stop_button.isEnabled()
    assert bench.bench is not None and bench.bench.join(5.0)


def test_settings_become_the_clis_steps(qtbot: QtBot) -> None:
    s = BenchSettings()
    qtbot.addWidget(s)
    s.requests.setValue(10)
    s.warmup.setValue(2)
    s.sweep.setText("1, 2,4")
    assert [(x.concurrency, x.requests, x.warmup) for x in s.steps()] == [
        (1, 10, 2),
        (2, 10, 2),
        (4, 10, 2),
    ]
    s.sweep.setText("1,2.5")
    with pytest.raises(SettingsError, match="whole numbers"):
        s.steps()
    s.mode.setCurrentIndex(1)  # open loop
    s.sweep.setText("")
    s.rate.setValue(3.5)
    s.cap.setValue(8)
    s.arrival.setCurrentText("gamma")
    s.burstiness.setValue(0.5)
    (step,) = s.steps()
    assert (step.rate, step.cap, step.arrival, step.burstiness) == (3.5, 8, "gamma", 0.5)
    s.sweep.setText("2,x")
    with pytest.raises(SettingsError, match="not a list of numbers"):
        s.steps()
    s.model.setText(" ")
    with pytest.raises(SettingsError, match="Model"):
        s.model_name()


def test_older_runs_are_pruned(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"run-2026120{i % 10}-{i:02d}").mkdir()
    (tmp_path / "notes").mkdir()  # not a run: kept
    gone = prune_runs(tmp_path, keep=10)
    assert len(gone) == 3
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len(left) == 10 and "notes" in left


def test_a_planted_key_is_in_no_file_the_bench_writes(
    qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    key = "sk-bench-PLANTED-7f3a9c"
    with DemoServer(speed=25) as server:

        async def target() -> BenchTarget:
            return BenchTarget("demo", server.base_url("openai"), "openai", key)

        opened: list[tuple[Path, int]] = []
        bench = BenchWindow(
            target=target,
            open_at=lambda p, f: opened.append((p, f)),
            runs_dir=tmp_path / "bench",
            model=FAST,
        )
        qtbot.addWidget(bench)
        bench.settings.requests.setValue(6)
        run(aloop, bench)
        bench.export_csv(tmp_path / "bench" / "out.csv")
        bench.export_json(tmp_path / "bench" / "out.json")
        assert inside(aloop, lambda: bench.open_request(0, "ttft"))
        assert bench.run_dir is not None
        assert opened == [(bench.run_dir / bench.data.metrics(0).capture, 1)]
    with (tmp_path / "bench" / "out.csv").open(newline="") as fp:
        assert len(list(csv.DictReader(fp))) == 6
    written = [p for p in (tmp_path / "bench").rglob("*") if p.is_file()]
    assert len(written) == 6 + 3  # captures, report.json, the exports
    for path in written:
        blob = path.read_bytes()
        for form in (key, key.encode().hex(), key[4:]):
            assert form.encode() not in blob, path


def test_plan_keeps_the_key_out_of_its_repr() -> None:
    plan = BenchPlan("http://127.0.0.1:1/v1", "m", "openai", ["p"], [], api_key="sk-SECRET")
    assert "sk-SECRET" not in repr(plan)
