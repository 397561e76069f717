"""Stream → Bench this endpoint…: a window that loads the current endpoint and plots it.

The load runs in its own process and the requests are measured on a thread
(:class:`~streamscope.core.bench.background.BackgroundBench`); this window only draws. When
the bench says something is new, the window's paint job is woken on the application's paint
clock, no sooner than :data:`PAINT_INTERVAL_S` after the last one: it takes every request
measured since, appends them to the table, and redraws the plot in view and the progress.

Every request's capture is kept under ``<data dir>/bench/<run>/`` (bounded per run as
``streamscope bench --out`` is, and the :data:`KEEP_RUNS` latest runs kept), so a click on a
point or a row opens the request in the inspector at the frame that defined the value.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.bench.background import BackgroundBench, BenchNews
from streamscope.core.bench.export import report as export_report
from streamscope.core.bench.export import write_csv
from streamscope.core.bench.session import BenchPlan
from streamscope.core.bench.stats import summarize
from streamscope.ui.base.paint_clock import default_clock
from streamscope.ui.bench.bench_data import BenchData, frame_of
from streamscope.ui.bench.bench_plots import (
    DistributionView,
    GapsView,
    SweepView,
    ThroughputView,
    restyle,
)
from streamscope.ui.bench.bench_settings import BenchSettings, SettingsError
from streamscope.ui.bench.bench_table import RequestsTable

__all__ = ["KEEP_RUNS", "PAINT_INTERVAL_S", "BenchTarget", "BenchWindow"]

PAINT_INTERVAL_S = 0.25
PART_GAP_S = 0.03
KEEP_RUNS = 10


@dataclass(frozen=True, slots=True)
class BenchTarget:
    """Where the bench sends: resolved when Start is pressed (the built-in demo starts
    then). ``api_key`` never leaves memory but for the load process's socket."""

    name: str
    base_url: str
    dialect: str
    api_key: str | None


OpenAt = Callable[[Path, int], object]
"""Open a capture in the inspector at a frame (the main window's)."""


def prune_runs(root: Path, keep: int = KEEP_RUNS) -> list[Path]:
    """Delete all but the ``keep - 1`` newest run folders under ``root`` (a new run is about
    to be made); returns what was deleted."""
    runs = sorted((p for p in root.glob("run-*") if p.is_dir()), key=lambda p: p.name)
    doomed = runs[: max(0, len(runs) - (keep - 1))]
    for path in doomed:
        shutil.rmtree(path, ignore_errors=True)
    return doomed


class BenchWindow(QMainWindow):
    """See the module docstring."""

    finished = Signal()
    _news = Signal()  # (emitted on the bench's thread: delivered on this one)

    def __init__(
        self,
        *,
        target: Callable[[], Awaitable[BenchTarget]],
        open_at: OpenAt,
        runs_dir: Path,
        model: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("bench_window")
        self.setWindowTitle("Bench — StreamScope")
        self._target = target
        self._open_at = open_at
        self.runs_dir = runs_dir
        self.bench: BackgroundBench | None = None
        self.run_dir: Path | None = None
        self.report: dict[str, Any] | None = None
        self.data = BenchData()
        self._last_paint = 0.0
        self._parts: list[Callable[[], None]] = []
        self._started_at = 0.0
        self.worst_paint_ms = 0.0
        self._news.connect(self._on_news, Qt.ConnectionType.QueuedConnection)

        self.settings = BenchSettings(self)
        self.settings.model.setText(model)
        self.start_button = QPushButton("Start", self)
        self.start_button.setDefault(True)
        self.start_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop)
        self.export_json_button = QPushButton("Export JSON…", self)
        self.export_json_button.clicked.connect(self._export_json_dialog)
        self.export_csv_button = QPushButton("Export CSV…", self)
        self.export_csv_button.clicked.connect(self._export_csv_dialog)
        self.progress = QProgressBar(self)
        self.progress.setFormat("%v / %m")
        self.progress_label = QLabel("Not started", self)
        self.progress_label.setWordWrap(True)
        self.summary_label = QLabel("", self)
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        side = QWidget(self)
        side_layout = QVBoxLayout(side)
        side_layout.addWidget(self.settings)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        side_layout.addLayout(buttons)
        side_layout.addWidget(self.progress)
        side_layout.addWidget(self.progress_label)
        side_layout.addWidget(self.summary_label)
        side_layout.addStretch(1)
        exports = QHBoxLayout()
        exports.addWidget(self.export_json_button)
        exports.addWidget(self.export_csv_button)
        side_layout.addLayout(exports)

        self.distribution = DistributionView(self.data, self)
        self.gaps = GapsView(self.data, self)
        self.throughput = ThroughputView(self.data, self)
        self.sweep = SweepView(self.data, self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.distribution, "Distributions")
        self.tabs.addTab(self.gaps, "Gaps by position")
        self.tabs.addTab(self.throughput, "Throughput")
        self.tabs.addTab(self.sweep, "Sweep")
        self.tabs.currentChanged.connect(lambda *_: self._refresh_plot())
        self.table = RequestsTable(self.data, self)
        for view in (self.distribution, self.gaps, self.sweep, self.table):
            view.openRequest.connect(self.open_request)

        plots = QSplitter(Qt.Orientation.Vertical, self)
        plots.addWidget(self.tabs)
        plots.addWidget(self.table)
        plots.setStretchFactor(0, 3)
        plots.setStretchFactor(1, 2)
        main = QSplitter(Qt.Orientation.Horizontal, self)
        main.addWidget(side)
        main.addWidget(plots)
        main.setStretchFactor(1, 1)
        main.setSizes([330, 900])
        self.setCentralWidget(main)
        self.resize(1280, 820)
        self._show_idle()

    # -- running ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.bench is not None and self.bench.running

    def start(self) -> None:
        """Start a run with the settings shown (its target resolved first)."""
        if self.running:
            return
        try:
            steps = self.settings.steps()
            prompt = self.settings.prompt_text()
            model = self.settings.model_name()
        except (SettingsError, ValueError) as exc:
            self.progress_label.setText(str(exc))
            return
        import asyncio

        self.start_button.setEnabled(False)
        self.progress_label.setText("Starting…")
        self._starting = asyncio.ensure_future(self._start(steps, prompt, model))

    async def _start(self, steps: list[Any], prompt: str, model: str) -> None:
        try:
            target = await self._target()
        except Exception as exc:  # (a demo that will not start, a key store that fails)
            self.progress_label.setText(f"Could not start: {exc}")
            self.start_button.setEnabled(True)
            return
        max_tokens = self.settings.max_tokens.value() or None
        plan = BenchPlan(
            base_url=target.base_url,
            model=model,
            dialect=target.dialect,
            prompts=[prompt],
            steps=steps,
            api_key=target.api_key,
            max_tokens=max_tokens,
        )
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        prune_runs(self.runs_dir)
        self.run_dir = self.runs_dir / f"run-{datetime.now():%Y%m%d-%H%M%S-%f}"
        self.run_dir.mkdir()
        self.data = BenchData()
        for i, step in enumerate(steps):
            self.data.label_step(i, step.label)
        for view in (self.distribution, self.gaps, self.throughput, self.sweep):
            view.bench = self.data
        self.table.requests.bench = self.data
        self.table.requests.reset()
        self.report = None
        self.worst_paint_ms = 0.0
        total = sum((s.requests or 0) + s.warmup for s in steps)
        self.progress.setRange(0, total)
        self.progress.setValue(0)
        self.setWindowTitle(f"Bench — {target.name} · {model}")
        self.bench = BackgroundBench(plan, out=self.run_dir, on_news=self._news.emit)
        self._started_at = time.monotonic()
        self.bench.start()
        self.stop_button.setEnabled(True)
        self.progress_label.setText(f"Running {len(steps)} step(s) against {target.base_url}")

    @property
    def drawing(self) -> bool:
        """Whether plots are still to be redrawn from what was taken last."""
        return bool(self._parts)

    def stop(self) -> None:
        if self.bench is not None:
            self.bench.stop()
            self.progress_label.setText("Stopping…")

    def _on_news(self) -> None:
        due = max(time.monotonic(), self._last_paint + PAINT_INTERVAL_S)
        default_clock().wake(self._paint, due, widget=None)

    def _paint(self, _deadline: float) -> float | None:
        """The paint job: take what the bench measured and draw it."""
        started = time.perf_counter()
        self._last_paint = time.monotonic()
        if self.bench is None:
            return None
        news = self.bench.take()
        self.data.add(news.finished)
        self.table.requests.catch_up()
        self._show_progress(news)
        self._parts = self._plot_parts()
        default_clock().wake(self._paint_part, time.monotonic() + PART_GAP_S)
        if news.done:
            self._finish(news)
        self.worst_paint_ms = max(self.worst_paint_ms, (time.perf_counter() - started) * 1000)
        return None

    def _plot_parts(self) -> list[Callable[[], None]]:
        view = self.tabs.currentWidget()
        parts = getattr(view, "parts", None)
        if parts is not None:
            return list(parts())
        return [view.refresh] if hasattr(view, "refresh") else []

    def _paint_part(self, _deadline: float) -> float | None:
        """The plots redraw a part per turn of the event loop, :data:`PART_GAP_S` apart: the
        table, a histogram and a CDF painted in one pass would stall the window ~3× as long."""
        started = time.perf_counter()
        if self._parts:
            self._parts.pop(0)()
        self.worst_paint_ms = max(self.worst_paint_ms, (time.perf_counter() - started) * 1000)
        return time.monotonic() + PART_GAP_S if self._parts else None

    def _refresh_plot(self) -> None:
        for part in self._plot_parts():
            part()

    def _show_progress(self, news: BenchNews) -> None:
        p = news.progress
        done = len(self.data.rows)
        self.progress.setValue(min(done, self.progress.maximum()))
        counts = self.data.outcome_counts()
        outcomes = ", ".join(f"{k} {v}" for k, v in counts.items()) or "none yet"
        flight = p.in_flight if p is not None else 0
        step = f"step {p.step + 1} ({p.label}) · " if p is not None else ""
        self.progress_label.setText(f"{step}done {done} · in flight {flight} · {outcomes}")
        parts = []
        for key, name in (("ttft", "TTFT"), ("itl", "ITL"), ("e2e_terminal", "E2E")):
            p50 = self.data.percentile(key, 50)
            p99 = self.data.percentile(key, 99)
            if p50 is not None:
                tail = f" · p99 {p99:.2f}" if p99 is not None else ""
                parts.append(f"{name} p50 {p50:.2f} ms{tail}")
        self.summary_label.setText("\n".join(parts))

    def _finish(self, news: BenchNews) -> None:
        self.report = news.report
        elapsed = time.monotonic() - self._started_at
        if news.error is not None:
            self.progress_label.setText(
                f"{self.progress_label.text()}\nEnded: {news.error} after {elapsed:.1f} s"
            )
        else:
            self.progress_label.setText(
                f"{self.progress_label.text()}\nFinished in {elapsed:.1f} s"
            )
            if self.run_dir is not None and news.report is not None:
                (self.run_dir / "report.json").write_text(json.dumps(news.report) + "\n", "utf-8")
        self.stop_button.setEnabled(False)
        self.start_button.setEnabled(True)
        self.finished.emit()

    def _show_idle(self) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)

    # -- opening a request ---------------------------------------------------------------------

    def open_request(self, row: int, key: str) -> bool:
        """Open request ``row`` in the inspector at the frame that defined its ``key``."""
        m = self.data.metrics(row)
        self.table.select_row(row)
        if not m.capture or self.run_dir is None:
            self.progress_label.setText("That request's capture is not kept (the run's bound)")
            return False
        path = self.run_dir / m.capture
        if not path.exists():
            self.progress_label.setText(f"{m.capture} is gone from {self.run_dir}")
            return False
        self._open_at(path, frame_of(m, key))
        return True

    # -- exporting ----------------------------------------------------------------------------

    def export_json(self, path: Path) -> None:
        """The run's report (the CLI's ``--json``); a stopped run's is made from what ended."""
        report = self.report
        if report is None:
            summary = summarize([f.metrics for f in self.data.rows])
            report = {"steps": [{"summary": export_report(summary)}], "partial": True}
        path.write_text(json.dumps(report, ensure_ascii=False) + "\n", encoding="utf-8")

    def export_csv(self, path: Path) -> int:
        with path.open("w", newline="", encoding="utf-8") as fp:
            return write_csv(fp, (f.metrics for f in self.data.rows))

    def _export_json_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export JSON", "bench.json", "JSON (*.json)")
        if name:
            self.export_json(Path(name))

    def _export_csv_dialog(self) -> None:
        name, _ = QFileDialog.getSaveFileName(self, "Export CSV", "bench.csv", "CSV (*.csv)")
        if name:
            self.export_csv(Path(name))

    # -- the window ---------------------------------------------------------------------------

    def changeEvent(self, event: Any) -> None:
        from PySide6.QtCore import QEvent

        if event.type() == QEvent.Type.PaletteChange:
            for view in (self.distribution, self.gaps, self.throughput, self.sweep):
                for plot in view.findChildren(type(self.gaps.plot)):
                    restyle(plot, self.palette())
        super().changeEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.stop()
        super().closeEvent(event)
