"""The load runner end to end: its own process, real loopback sockets to the demo server,
every request a capture whose measure (metrics.measure, a fresh replay of the file) gives the
run's figures and its row exactly; the open loop above capacity shows its dispatch lag; the
runner flags itself client-bound."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from streamscope.core.bench.export import CSV_COLUMNS, csv_row
from streamscope.core.bench.load import LoadStep, StepStats
from streamscope.core.bench.metrics import RequestMetrics, measure
from streamscope.core.bench.report import ROW_COLUMNS, runner_health
from streamscope.core.bench.session import BenchPlan, Progress, run_bench
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture, read_capture
from streamscope.demo.server import DemoServer

_SENT = re.compile(rb"demo_sent=(\d+\.\d+)")


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer() as srv:
        yield srv


def _plan(server: DemoServer, model: str, *steps: LoadStep) -> BenchPlan:
    return BenchPlan(server.base_url("openai"), model, "openai", ["hello"], steps)


def test_a_closed_loop_records_every_request_as_a_capture(
    server: DemoServer, tmp_path: Path
) -> None:
    model = "demo-bench?ttft=20&itl=2&tokens=8&cut=0.25&seed=1"
    seen: list[tuple[Exchange, Capture, RequestMetrics]] = []
    report = asyncio.run(
        run_bench(
            _plan(server, model, LoadStep(concurrency=2, requests=8)),
            out=tmp_path,
            on_request=lambda _s, ex, cap, m: seen.append((ex, cap, m)),
        )
    )
    (step,) = report["steps"]
    rows = step["requests"]
    assert [r["index"] for r in rows] == list(range(8))
    assert all(list(r) == list(ROW_COLUMNS) for r in rows)
    assert step["summary"]["outcomes"] == {"completed": 5, "truncated": 3}  # (seed 1's draws)
    assert step["runner"]["frames"] == sum(r["frames"] for r in rows)
    assert step["runner"]["cpu_ms_per_1k_frames"] == pytest.approx(
        step["runner"]["cpu_s"] * 1e6 / step["runner"]["frames"]
    )
    assert Counter(r["outcome"] for r in rows) == {"completed": 5, "truncated": 3}
    assert step["summary"]["time_to_first_token"]["count"] == 5  # (completed only)
    assert {r["worker"] for r in rows} == {0, 1}  # (the closed loop names its workers)
    in_run = {ex.index: m for ex, _cap, m in seen}
    for row in rows:
        capture = read_capture(tmp_path / row["capture"])
        assert capture.request is not None and b'"demo-bench?ttft=20' in capture.request.body
        assert len(capture.reads) == row["reads"]
        assert row["frames"] == in_run[row["index"]].frames
        # The file measured afresh, with the run's context, is the run's figures exactly,
        # and the row is those figures' CSV row.
        again = measure(
            capture,
            sent_at=row["sent_at"],
            scheduled_at=row["scheduled_at"],
            worker=row["worker"],
            warmup=bool(row["warmup"]),
            capture_ref=row["capture"],
        )
        assert again == in_run[row["index"]]
        assert csv_row(again) == {k: row[k] for k in CSV_COLUMNS}
        assert again.ttft is not None and again.ttft_frame is not None
        assert round(again.ttft * 1000, 3) == row["ttft_ms"]
        if row["outcome"] == "completed":
            assert row["output_tokens"] == 8 and row["token_source"] == "usage"
            assert row["frames"] == 12  # role, 8 tokens, finish, usage, [DONE]
            assert 20 <= row["ttft_ms"] < 200 and 1 <= row["itl_ms"] < 20
        else:
            assert row["frames"] < 12  # (cut mid-way)
    # Every read came after the server stamped the frames it carries (one clock: monotonic).
    for ex, _capture, _m in seen:
        assert ex.sent is not None and ex.scheduled <= ex.sent
        for t, data in ex.reads:
            stamps = [float(s) for s in _SENT.findall(data)]
            assert stamps and max(stamps) <= t


def test_warm_up_requests_are_marked_and_left_out(server: DemoServer) -> None:
    model = "demo-bench?ttft=5&itl=1&tokens=4"
    report = asyncio.run(
        run_bench(_plan(server, model, LoadStep(concurrency=3, requests=6, warmup=3)))
    )
    (step,) = report["steps"]
    assert [r["warmup"] for r in step["requests"]] == [1] * 3 + [0] * 6
    assert step["summary"]["requests"] == 6
    assert step["summary"]["warmup_requests"] == 3
    assert step["summary"]["time_to_first_token"]["count"] == 6
    assert step["summary"]["dispatch_lag"]["count"] == 6


def test_a_sweep_is_steps_of_one_report(server: DemoServer) -> None:
    model = "demo-bench?ttft=5&itl=1&tokens=4"
    steps = [LoadStep(concurrency=c, requests=4, connection="new") for c in (1, 2)]
    report = asyncio.run(run_bench(_plan(server, model, *steps)))
    assert [s["label"] for s in report["steps"]] == ["c=1", "c=2"]
    assert [s["summary"]["outcomes"] for s in report["steps"]] == [{"completed": 4}] * 2


def test_an_open_loop_above_capacity_shows_dispatch_lag_growing(server: DemoServer) -> None:
    """200 requests/s into 2 slots of ~60 ms each (~33/s): each request waits longer for a
    slot than the one before; the lag and TTFT from the schedule grow, TTFT from the send
    does not."""
    model = "demo-bench?ttft=50&itl=1&tokens=10"
    step = LoadStep(rate=200, arrival="constant", cap=2, requests=16)
    report = asyncio.run(run_bench(_plan(server, model, step)))
    rows = report["steps"][0]["requests"]
    lags = [r["dispatch_lag_ms"] for r in rows]
    assert [r["scheduled_ms"] for r in rows][:3] == pytest.approx([1, 6, 11], abs=0.5)
    assert lags[-1] > 300 and lags[-1] > lags[8] > lags[3]
    from_schedule = [r["ttft_from_schedule_ms"] for r in rows]
    assert from_schedule[-1] > from_schedule[0] + 250
    assert from_schedule == [
        pytest.approx(r["ttft_ms"] + r["dispatch_lag_ms"], abs=0.002) for r in rows
    ]
    assert max(r["ttft_ms"] for r in rows) < 50 + 100  # (from the send: no growth)
    assert {r["worker"] for r in rows} == {None}
    summary = report["steps"][0]["summary"]
    assert summary["ttft_from_schedule"]["max"] == pytest.approx(max(from_schedule), abs=0.001)
    assert summary["dispatch_lag"]["max"] == pytest.approx(max(lags), abs=0.001)


def _report(lag_ms: list[float]) -> dict[str, Any]:
    stats = StepStats(started=0.0, ended=1.0, cpu_s=0.5, loop_lag=[x / 1000 for x in lag_ms])
    return runner_health(stats, 2000, 4000)


def test_the_runner_flags_itself_client_bound_when_its_loop_lags() -> None:
    assert _report([0.5] * 98 + [4.0, 4.0])["client_bound"] is False
    lagging = _report([0.5] * 90 + [12.0] * 10)
    assert lagging["client_bound"] is True
    assert lagging["loop_lag_p99_ms"] == pytest.approx(12.0)
    assert lagging["loop_lag_samples"] == 100
    assert lagging["cpu_ms_per_1k_reads"] == pytest.approx(250.0)  # 500 ms / 2 (x 1,000)
    assert lagging["cpu_ms_per_1k_frames"] == pytest.approx(125.0)  # 500 ms / 4 (x 1,000)
    assert (lagging["reads"], lagging["frames"]) == (2000, 4000)
    short = _report([0.5] * 8 + [9.0, 9.0])  # (10 samples: p99 still shown, and flags)
    assert short["client_bound"] is True
    assert short["loop_lag_p99_ms"] == pytest.approx(9.0)


def test_cpu_per_1k_frames_is_none_without_frames() -> None:
    stats = StepStats(started=0.0, ended=1.0, cpu_s=0.5)
    assert runner_health(stats, 10)["cpu_ms_per_1k_frames"] is None  # (not counted)
    assert runner_health(stats, 10, 0)["cpu_ms_per_1k_frames"] is None  # (no frames)
    assert runner_health(None, 0, 8)["cpu_ms_per_1k_frames"] is None  # (no CPU figure)


def test_a_request_that_cannot_be_measured_stops_the_run_with_its_error(
    server: DemoServer,
) -> None:
    """An on_request callback (or a tokenizer) raising: the step's load is cancelled and
    run_bench raises that error, not a later one, and no task's error goes unheard."""
    seen: list[int] = []

    def on_request(_step: int, ex: Exchange, _cap: Capture, _m: RequestMetrics) -> None:
        seen.append(ex.index)
        if len(seen) == 2:
            raise LookupError("the window's table is gone")

    model = "demo-bench?ttft=5&itl=1&tokens=4"
    with pytest.raises(LookupError, match="the window's table is gone"):
        asyncio.run(
            run_bench(
                _plan(server, model, LoadStep(concurrency=1, requests=200)), on_request=on_request
            )
        )
    assert 2 <= len(seen) < 200  # (stopped early: not every request was sent)


def test_the_live_summary_ends_as_the_report(server: DemoServer) -> None:
    """on_progress sees each request counted as it is measured; after the last one, the
    live figures are the step's report's exactly."""
    model = "demo-bench?ttft=20&itl=2&tokens=8&cut=0.25&seed=1"
    seen: list[tuple[int, int, int, int]] = []
    last: list[Progress] = []

    def on_progress(p: Progress) -> None:
        seen.append((p.done, p.live.requests, p.live.warmup_requests, p.live.errors))
        last[:] = [p]

    step = LoadStep(concurrency=2, requests=8, warmup=2)
    report = asyncio.run(run_bench(_plan(server, model, step), on_progress=on_progress))
    summary = report["steps"][0]["summary"]
    assert [done for done, *_ in seen] == list(range(1, 11))
    assert [r + w for _d, r, w, _e in seen] == list(range(1, 11))
    (p,) = last
    assert (p.done, p.in_flight, p.live.requests, p.live.warmup_requests) == (10, 0, 8, 2)
    assert dict(p.live.outcomes) == summary["outcomes"]
    assert p.live.errors == summary["error_request_count"]["avg"]
    ttft = p.live.ttft.percentile(50)
    assert ttft is not None and ttft * 1000 == summary["time_to_first_token"]["p50"]
    itl = p.live.itl.percentile(50)
    assert itl is not None and itl * 1000 == summary["inter_token_latency"]["p50"]
