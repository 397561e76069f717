"""Open-loop schedules: exact for constant, seeded and of the right shape for Poisson and
gamma (pinned values: a change of algorithm or seed handling shows)."""

from __future__ import annotations

import itertools
import statistics

import pytest

from streamscope.core.bench.schedule import arrival_offsets


def _gaps(offsets: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(offsets)]


def test_constant_arrivals_are_exact() -> None:
    assert arrival_offsets(rate=4, arrival="constant", count=5) == [0.0, 0.25, 0.5, 0.75, 1.0]
    long = arrival_offsets(rate=3, arrival="constant", count=30_001)
    assert long[-1] == 10_000.0  # (a product per request: no drift from summing 1/3)


def test_poisson_is_seeded_and_pinned() -> None:
    first = arrival_offsets(rate=10, arrival="poisson", seed=1, count=5)
    assert [round(x, 6) for x in first] == [0.0, 0.014429, 0.202445, 0.346742, 0.376188]
    assert arrival_offsets(rate=10, arrival="poisson", seed=1, count=5) == first
    assert arrival_offsets(rate=10, arrival="poisson", seed=2, count=5) != first


def test_gamma_is_seeded_and_pinned() -> None:
    first = arrival_offsets(rate=10, arrival="gamma", burstiness=0.5, seed=1, count=5)
    assert [round(x, 6) for x in first] == [0.0, 0.005061, 0.1686, 0.237411, 0.239881]


@pytest.mark.parametrize(
    ("arrival", "burstiness", "cv"),
    [
        ("poisson", 1.0, 1.0042),
        ("gamma", 1.0, 1.0042),
        ("gamma", 0.25, 1.9974),
        ("gamma", 4.0, 0.5008),
    ],
)
def test_the_shape_of_the_gaps(arrival: str, burstiness: float, cv: float) -> None:
    """Mean gap 1/rate; coefficient of variation 1/sqrt(K) for gamma (1 for Poisson)."""
    gaps = _gaps(
        arrival_offsets(rate=100, arrival=arrival, burstiness=burstiness, seed=7, count=20_001)  # type: ignore[arg-type]
    )
    mean = statistics.mean(gaps)
    assert mean == pytest.approx(0.01, rel=0.01)
    assert round(statistics.stdev(gaps) / mean, 4) == cv


def test_a_duration_bounds_the_schedule() -> None:
    assert len(arrival_offsets(rate=10, arrival="constant", duration=1.0)) == 10
    offsets = arrival_offsets(rate=10, arrival="poisson", seed=3, duration=10)
    assert len(offsets) == 83 and offsets[-1] < 10
    assert len(arrival_offsets(rate=10, arrival="constant", count=5, duration=100)) == 5


@pytest.mark.parametrize(
    "kwargs",
    [{"rate": 0, "count": 1}, {"rate": 1, "burstiness": 0, "count": 1}, {"rate": 1}],
)
def test_bad_schedules_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        arrival_offsets(**kwargs)  # type: ignore[arg-type]
