"""What the Bench window plots, on hand-made requests: the values and the rows behind each
point, the percentile a marker opens, the frame each metric opens at, gaps by position,
throughput over time and the sweep curve — exact values written here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from streamscope.core.bench.background import Finished
from streamscope.core.bench.metrics import measure
from streamscope.ui.bench.bench_data import BenchData, frame_of
from support.bench_captures import role_first

# TTFT 0.25 s (frame 1), gaps (0.25, 0.125) → max gap 0.25 ends at frame 2, last token 0.625 s
# (frame 3), terminal 0.875 s (frame 6), 4 tokens, 1 s long.
BASE = measure(role_first())


def req(ttft: float, *, step: int = 0, sent_at: float = 0.0, **kw: object) -> Finished:
    m = replace(BASE, ttft=ttft, sent_at=sent_at, **kw)  # type: ignore[arg-type]
    return Finished(step, m)


def test_values_are_the_included_requests_in_ms_with_their_rows() -> None:
    data = BenchData()
    data.add(
        [
            req(0.1),
            req(0.5, outcome="truncated"),  # kept out of latencies
            req(0.3, warmup=True),  # warm-up: kept out
            req(0.2, outcome="length"),
            req(0.4, step=1),
        ]
    )
    vals, rows = data.values("ttft")
    assert vals.tolist() == pytest.approx([100.0, 200.0, 400.0])
    assert rows.tolist() == [0, 3, 4]
    vals1, rows1 = data.values("ttft", step=1)
    assert (vals1.tolist(), rows1.tolist()) == ([400.0], [4])
    assert data.outcome_counts() == {"completed": 2, "length": 1, "truncated": 1}


def test_the_percentile_marker_opens_the_request_nearest_it() -> None:
    data = BenchData()
    data.add([req(t / 1000) for t in (10.0, 20.0, 30.0, 40.0)])
    assert data.percentile("ttft", 50) == pytest.approx(25.0)  # linear: 20 + 0.5 * 10
    assert data.row_at_percentile("ttft", 50) == 2  # a tie (20 and 30): the higher
    assert data.percentile("ttft", 90) is None  # hidden: 4 requests cannot say a p90
    assert data.row_at_percentile("ttft", 90) is None
    assert data.row_at_percentile("ttft", 100) == 3  # max
    hundred = BenchData()
    hundred.add([req(t / 1000) for t in range(1, 101)])
    assert hundred.percentile("ttft", 99) == pytest.approx(99.01)
    assert hundred.row_at_percentile("ttft", 99) == 98  # 99 ms is nearest 99.01


def test_each_metric_opens_at_the_frame_that_defined_it() -> None:
    assert frame_of(BASE, "ttft") == 1
    assert frame_of(BASE, "max_gap") == 2
    assert frame_of(BASE, "e2e_last_token") == 3
    assert frame_of(BASE, "e2e_terminal") == 6
    assert frame_of(BASE, "ttfb") == 0  # (headers: no frame of its own)
    assert frame_of(replace(BASE, ttft_frame=None), "ttft") == 0


def test_gap_profile_by_position() -> None:
    data = BenchData()
    data.add(
        [
            req(0.1, gaps=(0.010, 0.020, 0.030)),
            req(0.1, gaps=(0.030, 0.040)),
            req(0.1, gaps=(0.5,), outcome="truncated"),  # kept out
        ]
    )
    x, p50, p99, top, counts = data.gap_profile()
    assert x.tolist() == [1, 2, 3]
    assert p50.tolist() == pytest.approx([20.0, 30.0, 30.0])
    assert p99.tolist() == pytest.approx([29.8, 39.8, 30.0])
    assert top.tolist() == pytest.approx([30.0, 40.0, 30.0])
    assert counts.tolist() == [2, 2, 1]
    xs, ys, rows = data.max_gap_points()
    assert (xs.tolist(), ys.tolist(), rows) == ([3.0, 2.0], pytest.approx([30.0, 40.0]), [0, 1])


def test_throughput_spreads_each_request_over_its_generation() -> None:
    data = BenchData()
    # tokens 4 from 0.25 s to 0.625 s (sent at 0): all inside the first 0.5 s bin but
    # 0.125 s of it; a second request sent at 1 s: 1.25 → 1.625.
    data.add([req(0.25), req(0.25, sent_at=1.0)])
    t, tokens, ended = data.throughput_series(0.5)
    assert t.tolist() == pytest.approx([0.25, 0.75, 1.25, 1.75])
    # 4 tokens over 0.375 s: 0.25 s in bin 0 (2.667 tokens), 0.125 s in bin 1 (1.333)
    assert tokens.tolist() == pytest.approx([16 / 3, 8 / 3, 16 / 3, 8 / 3])
    assert ended.tolist() == pytest.approx([0.0, 0.0, 2.0, 2.0])  # ended at 1.0 s, 2.0 s (last bin)
    assert np.sum(tokens * 0.5) == pytest.approx(8.0)


def test_sweep_points_are_a_step_each() -> None:
    data = BenchData()
    data.label_step(0, "c=1")
    data.label_step(1, "c=2")
    data.label_step(2, "c=4")  # no requests: no point
    data.add([req(0.1, step=0), req(0.3, step=0), req(0.2, step=1, sent_at=0.5)])
    points = data.sweep_points()
    assert [p[0] for p in points] == ["c=1", "c=2"]
    # step 0: 8 tokens from 0 to 0.625 s; step 1: 4 tokens over 0.625 s
    assert points[0][1] == pytest.approx(8 / 0.625)
    assert points[0][2] == pytest.approx(200.0)  # p50 of 100 and 300 ms
    assert points[0][3] is None  # 2 requests: no p99
    assert points[1][1:] == (pytest.approx(4 / 0.625), None, None)  # one request: no p50
