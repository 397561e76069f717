"""What the Bench window plots, as arrays: every measured request of a run, and the figures
the plots and the live summary read off them.

Plain Python and numpy (no Qt): the window's paint job hands it each batch of
:class:`~streamscope.core.bench.background.Finished` requests and reads arrays back. A
*row* is a request's place in :attr:`BenchData.rows` (the order requests ended), which is
also the per-request table's row and the ``data`` of every plotted point — so a click on a
point names the request, and the metric names the frame that defined its value
(:data:`METRICS`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from streamscope.core.bench import definitions as d
from streamscope.core.bench.background import Finished
from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.percentiles import percentile_or_none
from streamscope.core.bench.stats import DEFAULT_INCLUDED

__all__ = ["METRICS", "BenchData", "Metric", "frame_of"]

GAP_ROWS = 2_000
"""Gaps against position are drawn from the latest this many included requests."""


@dataclass(frozen=True, slots=True)
class Metric:
    """A plotted figure: its key on :class:`RequestMetrics`, its name, its definition (the
    tooltip), and the attribute naming the frame that defined it (``None``: the request's
    first frame)."""

    key: str
    name: str
    definition: str
    frame: str | None


METRICS: tuple[Metric, ...] = (
    Metric("ttft", "TTFT", d.TTFT, "ttft_frame"),
    Metric("ttfo", "TTFO", d.TTFO, "ttfo_frame"),
    Metric("itl", "ITL", d.ITL, "last_token_frame"),
    Metric("e2e_terminal", "E2E (to terminal)", d.E2E_TERMINAL, "terminal_frame"),
    Metric("e2e_last_token", "E2E (to last token)", d.E2E_LAST_TOKEN, "last_token_frame"),
    Metric("max_gap", "Max gap", d.MAX_GAP, "max_gap_frame"),
    Metric("ttfb", "TTFB", d.TTFB, None),
    Metric("ttft_from_schedule", "TTFT from schedule", d.TTFT_FROM_SCHEDULE, "ttft_frame"),
    Metric("dispatch_lag", "Dispatch lag", d.DISPATCH_LAG, None),
)
BY_KEY = {m.key: m for m in METRICS}


def frame_of(metrics: RequestMetrics, key: str) -> int:
    """The Frames tab's number of the frame that defined ``metrics``' value of ``key`` (0
    when the value has no frame of its own: TTFB, dispatch lag)."""
    attr = BY_KEY[key].frame
    frame = getattr(metrics, attr) if attr is not None else None
    return frame if frame is not None else 0


class BenchData:
    """Every finished request of a run (warm-up included, marked), with numpy views."""

    def __init__(self, include: frozenset[str] = frozenset(DEFAULT_INCLUDED)) -> None:
        self.include = include
        self.rows: list[Finished] = []
        self.steps: dict[int, str] = {}
        self._cache: dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray]] = {}

    def add(self, batch: list[Finished]) -> None:
        self.rows.extend(batch)
        self._cache.clear()

    def label_step(self, step: int, label: str) -> None:
        self.steps[step] = label

    def metrics(self, row: int) -> RequestMetrics:
        return self.rows[row].metrics

    def _included(self, m: RequestMetrics) -> bool:
        return not m.warmup and m.outcome in self.include

    def values(self, key: str, step: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(values in ms, rows)`` of ``key`` over the included requests (of ``step``, or
        every step), in row order; requests without the value are left out."""
        cached = self._cache.get((key, step))
        if cached is not None:
            return cached
        vals: list[float] = []
        rows: list[int] = []
        for i, f in enumerate(self.rows):
            if step is not None and f.step != step:
                continue
            m = f.metrics
            v = getattr(m, key)
            if v is not None and self._included(m):
                vals.append(v * 1000.0)
                rows.append(i)
        out = (np.asarray(vals, dtype=float), np.asarray(rows, dtype=np.int64))
        self._cache[(key, step)] = out
        return out

    def percentile(self, key: str, q: float, step: int | None = None) -> float | None:
        """The ``q``-th percentile of ``key`` in ms, linear interpolation (as the report);
        ``None`` when there are too few requests for it."""
        vals, _ = self.values(key, step)
        return percentile_or_none(sorted(vals.tolist()), q)

    def row_at_percentile(self, key: str, q: float, step: int | None = None) -> int | None:
        """The request whose value is nearest the ``q``-th percentile (the higher one on a
        tie): the point a "p99" marker opens. ``None`` without enough requests."""
        p = self.percentile(key, q, step)
        if p is None:
            return None
        vals, rows = self.values(key, step)
        distance = np.abs(vals - p)
        best = np.flatnonzero(distance == distance.min())
        return int(rows[best[np.argmax(vals[best])]])

    def outcome_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.rows:
            if not f.metrics.warmup:
                k = f.metrics.outcome_key
                counts[k] = counts.get(k, 0) + 1
        return dict(sorted(counts.items()))

    # -- gaps against position ----------------------------------------------------------------

    def gap_profile(self, step: int | None = None) -> tuple[np.ndarray, ...]:
        """Per gap position (1 = the gap before the second token frame): the p50, p99 and
        max gap in ms over the latest :data:`GAP_ROWS` included requests, and how many
        requests reach that position."""
        chosen = [
            f.metrics.gaps
            for f in self.rows
            if (step is None or f.step == step) and self._included(f.metrics) and f.metrics.gaps
        ][-GAP_ROWS:]
        if not chosen:
            empty = np.zeros(0)
            return empty, empty, empty, empty, empty
        width = max(len(g) for g in chosen)
        grid = np.full((len(chosen), width), np.nan)
        for i, gaps in enumerate(chosen):
            grid[i, : len(gaps)] = gaps
        grid *= 1000.0
        counts = np.sum(~np.isnan(grid), axis=0)
        p50 = np.nanpercentile(grid, 50, axis=0)
        p99 = np.nanpercentile(grid, 99, axis=0)
        top = np.nanmax(grid, axis=0)
        return np.arange(1, width + 1), p50, p99, top, counts

    def max_gap_points(self, step: int | None = None) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Each included request's max gap: ``(position, ms, rows)``."""
        xs: list[float] = []
        ys: list[float] = []
        rows: list[int] = []
        for i, f in enumerate(self.rows):
            m = f.metrics
            if (step is None or f.step == step) and self._included(m) and m.gaps:
                at = int(np.argmax(m.gaps))
                xs.append(at + 1)
                ys.append(m.gaps[at] * 1000.0)
                rows.append(i)
        return np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), rows

    # -- throughput over time ----------------------------------------------------------------

    def throughput_series(self, bin_s: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Output tokens/s and requests ended/s per ``bin_s`` bin, from the run's first send
        (seconds): each included request's tokens spread evenly over its generation (first
        to last token frame)."""
        chosen = [f.metrics for f in self.rows if self._included(f.metrics)]
        if not chosen:
            empty = np.zeros(0)
            return empty, empty, empty
        t0 = min(f.metrics.sent_at for f in self.rows)
        end = max(m.ended_at for m in chosen) - t0
        n = max(1, int(np.ceil(end / bin_s)))
        tokens = np.zeros(n)
        ended = np.zeros(n)
        edges = np.arange(n + 1) * bin_s
        for m in chosen:
            ended[min(n - 1, int((m.ended_at - t0) / bin_s))] += 1
            if m.ttft is None or m.e2e_last_token is None or not m.output_tokens:
                continue
            a, b = m.sent_at - t0 + m.ttft, m.sent_at - t0 + m.e2e_last_token
            if b <= a:
                tokens[min(n - 1, int(a / bin_s))] += m.output_tokens
                continue
            overlap = np.clip(np.minimum(edges[1:], b) - np.maximum(edges[:-1], a), 0.0, None)
            tokens += m.output_tokens * overlap / (b - a)
        return edges[:-1] + bin_s / 2, tokens / bin_s, ended / bin_s

    # -- the sweep curve --------------------------------------------------------------------

    def sweep_points(self) -> list[tuple[str, float, float | None, float | None]]:
        """Per step with included requests: ``(label, output tokens/s, TTFT p50 ms, TTFT p99
        ms)``; tokens/s over the step's span from its first send to its last token."""
        out = []
        for step, label in sorted(self.steps.items()):
            chosen = [f.metrics for f in self.rows if f.step == step and self._included(f.metrics)]
            if not chosen:
                continue
            first = min(m.sent_at for m in chosen)
            last = max(
                m.sent_at + (m.e2e_last_token if m.e2e_last_token is not None else m.duration)
                for m in chosen
            )
            span = last - first
            rate = sum(m.output_tokens for m in chosen) / span if span > 0 else 0.0
            out.append(
                (label, rate, self.percentile("ttft", 50, step), self.percentile("ttft", 99, step))
            )
        return out
