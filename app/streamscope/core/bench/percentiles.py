"""Percentiles by linear interpolation (numpy's default ``method="linear"``, written out:
numpy is no runtime dependency), and the rule that hides one when there are too few values
for it (:data:`~streamscope.core.bench.definitions.PERCENTILES`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["LEVELS", "min_count", "percentile", "percentile_or_none"]

LEVELS: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99_9", 99.9),
)
"""The percentiles a distribution reports, by the key the report uses."""


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``ordered`` (sorted ascending, not empty):
    ``h = (n - 1) * q / 100``, then ``x[⌊h⌋] + (h - ⌊h⌋) * (x[⌊h⌋ + 1] - x[⌊h⌋])``."""
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be within 0..100, not {q}")
    h = (len(ordered) - 1) * q / 100.0
    lo = math.floor(h)
    if lo >= len(ordered) - 1:
        return float(ordered[-1])
    below = ordered[lo]
    return float(below + (h - lo) * (ordered[lo + 1] - below))


def min_count(q: float) -> int:
    """The fewest values for which the ``q``-th percentile is shown: ``1 / (1 - q)``
    (p50: 2, p90: 10, p95: 20, p99: 100, p99.9: 1000) — at least one value is expected
    above it. 100 (the max) needs one."""
    if q >= 100.0:
        return 1
    return math.ceil(round(100.0 / (100.0 - q), 9))


def percentile_or_none(ordered: Sequence[float], q: float) -> float | None:
    """:func:`percentile`, or ``None`` when ``ordered`` holds fewer than :func:`min_count`
    values."""
    if len(ordered) < min_count(q) or not ordered:
        return None
    return percentile(ordered, q)
