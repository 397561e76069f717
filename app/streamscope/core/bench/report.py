"""A bench run's report: per step, the summary of its requests, one row per request, and the
runner's own health.

Nothing here computes a request's figure or a statistic over requests: each request's figures
are its :class:`~streamscope.core.bench.metrics.RequestMetrics` (from the one replay of its
capture, :func:`~streamscope.core.bench.captures.record_exchange`), a step's summary is
:func:`~streamscope.core.bench.stats.summarize` in :func:`~streamscope.core.bench.export.report`'s
shape, a row is :func:`~streamscope.core.bench.export.csv_row`. This module adds what only the
run knows: a request's number, when it was scheduled within the step, how many reads it took,
whether its capture file is still there, and the runner's health (:func:`runner_health`).

The run's report (:meth:`ReportBuilder.to_json`)::

    {"format": "streamscope-bench-run", "version": 1,
     "definitions": {name: formula, ...},                  # every figure's definition, once
     "steps": [{"label", "concurrency", "rate", "arrival",
                "summary": export.report(...) without "definitions",
                "runner": {"loop_lag_p99_ms", "loop_lag_max_ms", "loop_lag_samples",
                           "client_bound", "cpu_s", "cpu_ms_per_1k_reads", "reads",
                           "cpu_ms_per_1k_frames", "frames", "read_stamps",
                           "kernel_stamped_reads", "read_wake_lag_p50_ms",
                           "read_wake_lag_p99_ms", "read_wake_lag_max_ms"},
                "requests": [row, ...]}]}                   # rows: ROW_COLUMNS, by index

A row holds :data:`ROW_COLUMNS`: ``index``, then :data:`~streamscope.core.bench.export.CSV_COLUMNS`
(``capture`` is the file's path under ``--out``, ``null`` when none was written or it was
evicted), then ``scheduled_ms`` (after the step's start), ``reads`` and ``frames`` (the
request's frames as the Frames tab numbers them:
:attr:`~streamscope.core.bench.metrics.RequestMetrics.frames`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from streamscope.core.bench.definitions import DEFINITIONS
from streamscope.core.bench.export import CSV_COLUMNS, csv_row, report
from streamscope.core.bench.load import LoadStep, StepStats
from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.percentiles import percentile
from streamscope.core.bench.stats import DEFAULT_INCLUDED, summarize

__all__ = [
    "CLIENT_BOUND_LAG_MS",
    "ROW_COLUMNS",
    "RUN_FORMAT",
    "ReportBuilder",
    "RequestRecord",
    "StepReport",
    "request_row",
    "runner_health",
]

Row = dict[str, Any]

RUN_FORMAT = "streamscope-bench-run"
RUN_VERSION = 1
CLIENT_BOUND_LAG_MS = 5.0
"""The run flags itself client-bound when its event loop's lag p99 is above this."""
ROW_COLUMNS: tuple[str, ...] = ("index", *CSV_COLUMNS, "scheduled_ms", "reads", "frames")
"""A request row's keys, in order."""


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request of a step: its figures and what only the run knows of it."""

    index: int
    metrics: RequestMetrics
    reads: int


def request_row(record: RequestRecord, step_start: float, evicted: Collection[str] = ()) -> Row:
    """The request's row (:data:`ROW_COLUMNS`); ``step_start`` on the runner's clock,
    ``evicted``: capture paths no longer on disk."""
    m = record.metrics
    row: Row = {"index": record.index, **csv_row(m)}
    row["capture"] = m.capture if m.capture and m.capture not in evicted else None
    scheduled = m.scheduled_at
    row["scheduled_ms"] = None if scheduled is None else round((scheduled - step_start) * 1e3, 3)
    row["reads"] = record.reads
    row["frames"] = m.frames
    return row


def runner_health(stats: StepStats | None, reads: int, frames: int | None = None) -> Row:
    """The runner's own figures for a step: its event loop's lag (p99 by
    :func:`~streamscope.core.bench.percentiles.percentile`, shown whatever the number of
    samples — a flag must not vanish on a short step; ``loop_lag_samples`` says how many),
    ``client_bound`` when that p99 is above :data:`CLIENT_BOUND_LAG_MS`, the load process's
    CPU time, and that time per 1,000 network reads and per 1,000 frames (the SSE events
    or NDJSON lines the step's requests carried; ``None`` when not counted); who stamped
    the reads, and with kernel stamps how late the process read them (:func:`_wake_lag`)."""
    lag = sorted(x * 1000 for x in stats.loop_lag) if stats is not None else []
    lag_p99 = percentile(lag, 99) if lag else None
    cpu = stats.cpu_s if stats is not None else None
    return {
        "loop_lag_p99_ms": lag_p99,
        "loop_lag_max_ms": lag[-1] if lag else None,
        "loop_lag_samples": len(lag),
        "client_bound": lag_p99 is not None and lag_p99 > CLIENT_BOUND_LAG_MS,
        "cpu_s": cpu,
        "cpu_ms_per_1k_reads": _per_1k(cpu, reads),
        "reads": reads,
        "cpu_ms_per_1k_frames": _per_1k(cpu, frames),
        "frames": frames,
        **_wake_lag(stats),
    }


def _wake_lag(stats: StepStats | None) -> Row:
    """How the step's reads were stamped, and how late the load process read the ones the
    kernel stamped (p50, p99 and max of user-space time minus kernel time, in ms)."""
    lag = sorted(stats.wake_lag) if stats is not None else []
    ms = [x * 1000 for x in lag]
    return {
        "read_stamps": "kernel" if ms else "user",
        "kernel_stamped_reads": len(ms),
        "read_wake_lag_p50_ms": percentile(ms, 50) if ms else None,
        "read_wake_lag_p99_ms": percentile(ms, 99) if ms else None,
        "read_wake_lag_max_ms": ms[-1] if ms else None,
    }


def _per_1k(cpu_s: float | None, count: int | None) -> float | None:
    """``cpu_s`` in milliseconds per 1,000 of ``count``."""
    return cpu_s * 1e6 / count if cpu_s is not None and count else None


@dataclass
class StepReport:
    """One step as it runs: its requests as they end (any order), then the runner's stats."""

    step: LoadStep
    records: list[RequestRecord] = field(default_factory=list)
    stats: StepStats | None = None

    @property
    def metrics(self) -> list[RequestMetrics]:
        """The step's requests' figures, warm-up included (marked), by request number."""
        return [r.metrics for r in sorted(self.records, key=lambda r: r.index)]

    def to_json(
        self, include: Collection[str] = DEFAULT_INCLUDED, evicted: Collection[str] = ()
    ) -> Row:
        """The step's part of the report (module docstring)."""
        records = sorted(self.records, key=lambda r: r.index)
        if self.stats is not None:
            start = self.stats.started  # (the runner's clock: monotonic, system-wide)
        else:
            start = min((r.metrics.sent_at for r in records), default=0.0)
        summary = summarize([r.metrics for r in records], include=include)
        return {
            "label": self.step.label,
            "concurrency": self.step.concurrency,
            "rate": self.step.rate,
            "arrival": self.step.arrival if self.step.rate else None,
            "summary": report(summary, definitions=False),
            "runner": runner_health(
                self.stats,
                sum(r.reads for r in records),
                sum(r.metrics.frames for r in records),
            ),
            "requests": [request_row(r, start, evicted) for r in records],
        }


class ReportBuilder:
    """Collects the steps of a run and makes its report. ``include``: the outcomes latency
    statistics and throughput are over (:func:`~streamscope.core.bench.stats.summarize`)."""

    def __init__(self, include: Collection[str] = DEFAULT_INCLUDED) -> None:
        self.include = include
        self.steps: list[StepReport] = []

    def begin(self, step: LoadStep) -> StepReport:
        self.steps.append(StepReport(step))
        return self.steps[-1]

    def to_json(self, evicted: Collection[str] = ()) -> Row:
        """The run's report (module docstring); ``evicted``: capture paths deleted to keep
        the run within its bounds (their rows say ``"capture": null``)."""
        return {
            "format": RUN_FORMAT,
            "version": RUN_VERSION,
            "definitions": dict(DEFINITIONS),
            "steps": [s.to_json(self.include, evicted) for s in self.steps],
        }
