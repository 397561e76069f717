"""A bench's report: one row per request, a summary per step, the runner's own health.

The per-request figures come from ``measure(capture, turn)`` and the step's statistics from
``summarize(rows)``. The defaults here (:func:`quick_measure`, :func:`quick_summary`) are
deliberately small — TTFT and ITL from the replayed turn's timings, nearest-rank-free linear
percentiles — and are the seam where the bench's metric definitions
(``streamscope.core.bench.metrics``/``stats``) plug in: :class:`ReportBuilder` takes both as
parameters and nothing else computes a latency.

Row keys (seconds are milliseconds here, as ``_ms`` says): ``index``, ``warmup``,
``scheduled_ms`` (after the step's start), ``dispatch_lag_ms`` (send - scheduled),
``ttfb_ms``, ``ttft_ms``, ``ttft_from_schedule_ms``, ``itl_ms``, ``e2e_ms``,
``output_tokens``, ``tokens_source`` (``usage`` or ``none``), ``outcome``, ``status``,
``reads``, ``capture`` (path under ``--out``, or ``null``), and ``sent_at`` (absolute
``time.monotonic()``, for tools that score the run against a server's clock).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamscope.core.bench.load import LoadStep, StepStats
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome

__all__ = [
    "CLIENT_BOUND_LAG_MS",
    "LATENCY_OUTCOMES",
    "ReportBuilder",
    "outcome_of",
    "percentile",
    "quick_measure",
    "quick_summary",
]

Row = dict[str, Any]
Measure = Callable[[Capture, Turn], Row]
Summarize = Callable[[Sequence[Row]], Row]

CLIENT_BOUND_LAG_MS = 5.0
"""The run flags itself client-bound when its event loop's lag p99 is above this."""
LATENCY_OUTCOMES = ("completed", "length")
"""The outcomes latency statistics are computed over (the others are counted apart)."""
PERCENTILES = (50, 90, 95, 99, 99.9)


def percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile by linear interpolation between closest ranks (``None`` for
    no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def outcome_of(turn: Turn) -> str:
    """``completed``, ``length``, ``truncated``, ``http_429``, ``http_5xx``, ``http_4xx``,
    ``error`` (in-stream or protocol), ``timeout`` or ``cancelled``."""
    if turn.outcome is Outcome.COMPLETED:
        return "length" if turn.stopped_at_limit else "completed"
    if turn.outcome is Outcome.CANCELLED:
        return "cancelled"
    if turn.outcome is Outcome.TRUNCATED:
        return "timeout" if "timeout" in turn.reason.lower() else "truncated"
    status = turn.status or 0
    if status == 429:
        return "http_429"
    if status >= 500:
        return "http_5xx"
    if status >= 400:
        return "http_4xx"
    return "error"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def quick_measure(capture: Capture, turn: Turn) -> Row:
    """TTFB, TTFT (first token in any channel), ITL ((last - first token) / (N - 1), N from
    the server's usage) and E2E of one request, in ms from the request's send."""
    t = turn.timings
    n = turn.output_tokens
    itl = None
    if n and n > 1 and t.first_token is not None and t.last_token is not None:
        itl = (t.last_token - t.first_token) / (n - 1)
    end = capture.end.elapsed if capture.end is not None else None
    return {
        "ttfb_ms": _ms(capture.response.t if capture.response else None),
        "ttft_ms": _ms(t.ttft),
        "itl_ms": _ms(itl),
        "e2e_ms": _ms(end),
        "output_tokens": n,
        "tokens_source": "usage" if n is not None else "none",
        "outcome": outcome_of(turn),
        "status": turn.status,
    }


def _stat(values: list[float]) -> Row:
    out: Row = {"n": len(values)}
    for p in PERCENTILES:
        if len(values) >= 100 / (100 - p):  # (hidden until n can show it)
            out[f"p{p:g}"] = percentile(values, p)
    out["max"] = max(values) if values else None
    out["mean"] = sum(values) / len(values) if values else None
    return out


def quick_summary(rows: Sequence[Row]) -> Row:
    """Outcome counts over every measured row; latency statistics over the completed and
    length-stopped ones; dispatch lag over all that were sent; throughput over the window
    from the first send to the last end."""
    measured = [r for r in rows if not r["warmup"]]
    good = [r for r in measured if r["outcome"] in LATENCY_OUTCOMES]
    summary: Row = {
        "requests": len(measured),
        "outcomes": dict(Counter(r["outcome"] for r in measured)),
    }
    for key in ("ttfb_ms", "ttft_ms", "itl_ms", "e2e_ms", "ttft_from_schedule_ms"):
        summary[key] = _stat([r[key] for r in good if r.get(key) is not None])
    summary["dispatch_lag_ms"] = _stat(
        [r["dispatch_lag_ms"] for r in measured if r["dispatch_lag_ms"] is not None]
    )
    starts = [r["sent_at"] for r in measured if r["sent_at"] is not None]
    ends = [r["sent_at"] + r["e2e_ms"] / 1000 for r in measured if r["e2e_ms"] is not None]
    window = (max(ends) - min(starts)) if starts and ends else 0.0
    tokens = sum(r["output_tokens"] or 0 for r in good)
    summary["window_s"] = window
    summary["output_tokens_per_s"] = tokens / window if window > 0 else None
    summary["requests_per_s"] = len(good) / window if window > 0 else None
    return summary


@dataclass
class StepReport:
    step: LoadStep
    rows: list[Row] = field(default_factory=list)
    stats: StepStats | None = None

    def to_json(self, summarize: Summarize) -> Row:
        stats = self.stats
        lag = [x * 1000 for x in stats.loop_lag] if stats else []
        reads = sum(r["reads"] for r in self.rows)
        cpu = stats.cpu_s if stats else None
        lag_p99 = percentile(lag, 99)
        return {
            "label": self.step.label,
            "concurrency": self.step.concurrency,
            "rate": self.step.rate,
            "arrival": self.step.arrival if self.step.rate else None,
            "summary": summarize(self.rows),
            "runner": {
                "loop_lag_p99_ms": lag_p99,
                "loop_lag_max_ms": max(lag) if lag else None,
                "client_bound": lag_p99 is not None and lag_p99 > CLIENT_BOUND_LAG_MS,
                "cpu_s": cpu,
                "cpu_ms_per_1k_reads": cpu * 1e6 / reads if cpu is not None and reads else None,
                "reads": reads,
            },
            "requests": self.rows,
        }


class ReportBuilder:
    """Turns what the runner sends into rows, and the steps into one report."""

    def __init__(
        self, measure: Measure = quick_measure, summarize: Summarize = quick_summary
    ) -> None:
        self.measure = measure
        self.summarize = summarize
        self.steps: list[StepReport] = []

    def begin(self, step: LoadStep) -> StepReport:
        self.steps.append(StepReport(step))
        return self.steps[-1]

    def row(
        self, ex: Exchange, capture: Capture, turn: Turn, start: float, path: str | None
    ) -> Row:
        row: Row = {"index": ex.index, "warmup": ex.warmup}
        row["scheduled_ms"] = (ex.scheduled - start) * 1000
        row["dispatch_lag_ms"] = _ms(ex.sent - ex.scheduled) if ex.sent is not None else None
        row.update(self.measure(capture, turn))
        ttft = row.get("ttft_ms")
        lag = row["dispatch_lag_ms"]
        row["ttft_from_schedule_ms"] = ttft + lag if ttft is not None and lag is not None else None
        row["reads"] = len(ex.reads)
        row["capture"] = path
        row["sent_at"] = ex.sent
        return row

    def to_json(self) -> Row:
        return {"steps": [s.to_json(self.summarize) for s in self.steps]}
