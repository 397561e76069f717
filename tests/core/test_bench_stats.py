"""Bench statistics: percentiles against hand-computed values and the hiding rule, the
outcome mix counted exactly and kept out of latencies, the trimmed window, throughput and
Little's law on a starved closed loop."""

from __future__ import annotations

import io
import math
from dataclasses import replace

import pytest

from streamscope.core.bench.export import CSV_COLUMNS, csv_row, report, write_csv
from streamscope.core.bench.metrics import RequestMetrics, measure
from streamscope.core.bench.percentiles import min_count, percentile, percentile_or_none
from streamscope.core.bench.stats import (
    LiveSummary,
    SortedValues,
    Window,
    distribution,
    measurement_window,
    summarize,
)
from streamscope.core.capture.format import CaptureEnd
from support.bench_captures import role_first, timeline
from support.verdict_streams import DONE, oa


def test_percentile_is_numpys_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5  # h = 1.5
    assert percentile(values, 90) == pytest.approx(3.7, abs=1e-12)  # h = 2.7
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([7.0], 99) == 7.0
    hundred = [float(i) for i in range(1, 101)]
    assert percentile(hundred, 99) == pytest.approx(99.01, abs=1e-12)  # h = 98.01
    thousand = [float(i) for i in range(1, 1001)]
    assert percentile(thousand, 99.9) == pytest.approx(999.001, abs=1e-9)  # h = 998.001
    with pytest.raises(ValueError):
        percentile([], 50)


def test_a_percentile_is_hidden_below_one_over_one_minus_q() -> None:
    assert [min_count(q) for q in (50, 90, 95, 99, 99.9, 100)] == [2, 10, 20, 100, 1000, 1]
    assert percentile_or_none([1.0], 50) is None
    assert percentile_or_none([float(i) for i in range(99)], 99) is None
    assert percentile_or_none([float(i) for i in range(100)], 99) == pytest.approx(98.01)
    ten = distribution(float(i) for i in range(1, 11))
    assert (ten.count, ten.p50, ten.p95, ten.p99, ten.p99_9) == (10, 5.5, None, None, None)
    assert ten.p90 == pytest.approx(9.1, abs=1e-12)  # h = 8.1
    assert (ten.min, ten.max, ten.avg, ten.sum) == (1.0, 10.0, 5.5, 55.0)
    assert ten.std == pytest.approx(math.sqrt(55 / 6), abs=1e-12)  # sample std (n - 1)
    one = distribution([3.0, None])
    assert (one.count, one.max, one.std, one.p50) == (1, 3.0, None, None)
    assert distribution([]).count == 0


def _stream(
    t_first: float, *, finish: str = "stop", end: CaptureEnd | None = None
) -> RequestMetrics:
    """Two content frames from ``t_first`` (1/8 s apart), then the finish and ``[DONE]``
    unless ``end`` cuts it short."""
    reads = [(t_first, oa({"content": "a"})), (t_first + 0.125, oa({"content": "b"}))]
    if end is None:
        reads.append((t_first + 0.25, [oa({}, finish), DONE]))
    return measure(timeline("openai", reads, end=end))


def _mix() -> list[RequestMetrics]:
    """Eleven requests: 3 completed, 1 length, and one of every other outcome (two 503s)."""
    limit = b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}'
    busy = b'{"error":{"message":"overloaded","type":"server_error"}}'
    err = {"error": {"message": "boom", "type": "server_error"}}
    return [
        _stream(0.25),
        _stream(0.25),
        _stream(0.375),
        _stream(0.5, finish="length"),
        _stream(2.0, end=CaptureEnd("broken", elapsed=2.5)),  # truncated, slow
        _stream(3.0, end=CaptureEnd("idle_timeout", elapsed=9.0, timeout=5.0)),
        _stream(4.0, end=CaptureEnd("cancelled", elapsed=4.25)),
        measure(timeline("openai", [(1.5, oa({"content": "x"})), (1.625, err)])),
        measure(timeline("openai", [], status=429, end=CaptureEnd("http_error", body=limit))),
        measure(timeline("openai", [], status=503, end=CaptureEnd("http_error", body=busy))),
        measure(timeline("openai", [], status=503, end=CaptureEnd("http_error", body=busy))),
    ]


def test_outcome_mix_is_exact_and_kept_out_of_latencies() -> None:
    results = _mix()
    s = summarize(results)
    assert s.outcomes == {
        "cancelled": 1,
        "completed": 3,
        "http_429": 1,
        "http_503": 2,
        "length": 1,
        "stream_error": 1,
        "timeout": 1,
        "truncated": 1,
    }
    assert (s.requests, s.included_requests, s.included) == (11, 4, ("completed", "length"))
    assert (s.ttft.count, s.ttft.min, s.ttft.max) == (4, 0.25, 0.5)  # not 1.5, 2.0, 3.0 ...
    assert (s.itl.count, s.itl.max) == (4, 0.125)
    assert s.token_sources == {"chunks": 4}
    wider = summarize(results, include={"completed", "length", "truncated", "stream_error"})
    assert (wider.ttft.count, wider.ttft.max) == (6, 2.0)


def _run(sent_at: float, worker: int | None, *, warmup: bool = False) -> RequestMetrics:
    """The role-first request (TTFT 0.25 s, last token 0.625 s, 4 tokens, 1 s long)."""
    return replace(_ROLE_FIRST, sent_at=sent_at, worker=worker, warmup=warmup)


_ROLE_FIRST = measure(role_first())


def test_littles_law_shows_a_starved_closed_loop() -> None:
    """Two workers (concurrency 2), each waits 1 s between its 1 s requests: on average
    1.1 in flight, not 2."""
    results = [_run(t, 0) for t in (0.0, 2.0, 4.0)] + [_run(t, 1) for t in (0.5, 2.5, 4.5)]
    s = summarize(results)
    # from the first send to the first worker's last end (worker 0 at 5.0; worker 1 at 5.5)
    assert s.window == Window(0.0, 5.0)
    # in flight inside [0, 5]: worker 0 3 s, worker 1 2.5 s (its last only half inside)
    assert s.effective_concurrency == pytest.approx(1.1, abs=1e-12)
    assert s.request_throughput == 1.0  # 5 ended inside the window (5.5 did not)
    # 5 x 4 tokens, plus the last request's tokens [4.75, 5.125] 2/3 inside: 4 x 2/3
    assert s.output_token_throughput == pytest.approx((20 + 8 / 3) / 5, abs=1e-12)


def test_window_starts_after_the_warm_up_and_open_loop_ends_at_the_last_send() -> None:
    warm = [_run(0.0, 0, warmup=True), _run(0.5, 1, warmup=True)]  # end 1.0 and 1.5
    measured = [_run(t, None) for t in (1.0, 2.0, 3.0, 4.0)]
    assert measurement_window(warm + measured) == Window(1.5, 4.0)
    s = summarize(warm + measured)
    assert (s.requests, s.warmup_requests, s.outcomes) == (4, 2, {"completed": 4})
    assert measurement_window(warm) is None


def test_aiperf_duration_and_throughput_are_untrimmed() -> None:
    s = summarize([_run(0.0, 0), _run(1.0, 0)])
    assert s.benchmark_duration == 1.625  # first send 0 to the last one's last token 1.625
    assert s.untrimmed_output_token_throughput == pytest.approx(8 / 1.625, abs=1e-12)
    assert s.untrimmed_request_throughput == pytest.approx(2 / 1.625, abs=1e-12)


def test_report_uses_aiperf_names_in_ms_and_hides_percentiles() -> None:
    r = report(summarize([_run(0.0, 0), _run(1.0, 0)]))
    ttft = r["time_to_first_token"]
    assert ttft["unit"] == "ms"
    assert (ttft["avg"], ttft["min"], ttft["max"], ttft["count"], ttft["sum"]) == (
        250.0,
        250.0,
        250.0,
        2,
        500.0,
    )
    assert ttft["p50"] == 250.0
    assert (ttft["p90"], ttft["p99"], ttft["p99_9"]) == (None, None, None)  # n = 2
    assert r["inter_token_latency"]["avg"] == 125.0
    assert r["inter_chunk_latency"]["count"] == 4  # two gaps per request, pooled
    assert r["request_latency"]["max"] == 625.0  # to the last token
    assert r["e2e_terminal_latency"]["max"] == 875.0  # to [DONE]
    assert r["vllm_ttft"]["avg"] == 125.0  # the role chunk
    assert r["genai_perf_ttft"]["avg"] == 250.0
    assert r["llmperf_itl"]["avg"] == 156.25
    assert r["output_sequence_length"] == r["output_sequence_length"] | {"unit": "tokens"}
    assert r["request_count"] == {"unit": "requests", "avg": 2.0}
    assert r["error_request_count"] == {"unit": "requests", "avg": 0.0}
    assert r["outcomes"] == {"completed": 2}
    assert set(r["definitions"]) >= {"ttft", "ttfo", "itl", "gaps", "llmperf_itl", "window"}


def test_ttft_from_schedule_adds_the_dispatch_lag_and_is_summed_up() -> None:
    """Open loop: scheduled at 0, 1, 2, sent 0, 0.5 and 1.5 s late (a client falling
    behind); TTFT from the send stays 0.25 s, from the schedule it grows. A request never
    scheduled has neither."""
    late = [replace(_run(t + lag, None), scheduled_at=t) for t, lag in ((0, 0), (1, 0.5), (2, 1.5))]
    assert [m.dispatch_lag for m in late] == [0.0, 0.5, 1.5]
    assert [m.ttft_from_schedule for m in late] == [0.25, 0.75, 1.75]
    assert _ROLE_FIRST.ttft_from_schedule is None  # (no schedule)
    cut = replace(measure(timeline("openai", [], status=429, end=CaptureEnd("http_error"))),
                  sent_at=3.5, scheduled_at=3.0)  # fmt: skip
    assert (cut.dispatch_lag, cut.ttft_from_schedule) == (0.5, None)  # (no token)
    s = summarize([*late, cut])
    assert (s.ttft_from_schedule.count, s.ttft_from_schedule.max) == (3, 1.75)
    assert (s.dispatch_lag.count, s.dispatch_lag.max) == (4, 1.5)  # (every measured one)
    r = report(s, definitions=False)
    assert r["ttft_from_schedule"] == r["ttft_from_schedule"] | {
        "unit": "ms", "min": 250.0, "max": 1750.0, "p50": 750.0, "count": 3, "sum": 2750.0,
    }  # fmt: skip
    assert r["dispatch_lag"]["sum"] == 2500.0
    assert "definitions" not in r and "ttft_from_schedule" in report(s)["definitions"]
    assert csv_row(late[2])["ttft_from_schedule_ms"] == 1750.0
    assert csv_row(late[2])["dispatch_lag_ms"] == 1500.0


def test_csv_row_per_request() -> None:
    m = replace(_ROLE_FIRST, capture="runs/1/req-0007.sscap", worker=3, sent_at=12.5)
    row = csv_row(m)
    assert list(row) == list(CSV_COLUMNS)
    assert row == row | {
        "capture": "runs/1/req-0007.sscap",
        "worker": 3,
        "sent_at": 12.5,
        "outcome": "completed",
        "ttfb_ms": 62.5,
        "ttft_ms": 250.0,
        "ttft_frame": 1,
        "ttfo_ms": 250.0,
        "itl_ms": 125.0,
        "gaps": 2,
        "gap_p99_ms": None,
        "max_gap_ms": 250.0,
        "max_gap_frame": 2,
        "e2e_terminal_ms": 875.0,
        "e2e_last_token_ms": 625.0,
        "output_tokens": 4,
        "token_source": "usage",
    }
    out = io.StringIO()
    assert write_csv(out, [m, m]) == 2
    lines = out.getvalue().splitlines()
    assert lines[0] == ",".join(CSV_COLUMNS)
    assert len(lines) == 3 and lines[1].startswith("runs/1/req-0007.sscap,3,0,12.5,,")


# -- the live summary -----------------------------------------------------------------------


def test_the_live_summary_counts_as_the_report_does() -> None:
    """Fed one request at a time (any order), warm-up among them: the same counts and the
    same percentiles as summarize() over them all, and hidden ones hidden alike."""
    warm = [replace(r, warmup=True) for r in _mix()[:3]]
    results = _mix()
    live = LiveSummary()
    for m in [results[9], warm[0], *results[:5], warm[1], *results[5:9], results[10], warm[2]]:
        live.add(m)
    s = summarize(warm + results)
    assert (live.requests, live.warmup_requests) == (11, 3)
    assert (live.included_requests, live.errors) == (4, 7)
    assert dict(live.outcomes) == s.outcomes
    assert live.ttft.values == [0.25, 0.25, 0.375, 0.5]  # (in order: included ones only)
    assert live.ttft.percentile(50) == s.ttft.p50 == 0.3125
    assert live.ttft.percentile(90) is s.ttft.p90 is None  # (hidden below 10 values)
    assert live.itl.percentile(50) == s.itl.p50 == 0.125
    assert live.e2e_last_token.percentile(50) == s.e2e_last_token.p50 == 0.4375
    assert len(live.itl) == s.itl.count == 4


def test_the_live_summary_follows_the_chosen_outcomes() -> None:
    live = LiveSummary(include={"completed", "length", "truncated", "stream_error"})
    for m in _mix():
        live.add(m)
    assert (live.included_requests, live.errors) == (6, 5)
    assert live.ttft.values == [0.25, 0.25, 0.375, 0.5, 1.5, 2.0]


def test_sorted_values_keep_order_and_hide_as_distributions_do() -> None:
    values = SortedValues()
    for v in (3.0, None, 1.0, 2.0, 1.0):
        values.add(v)
    assert values.values == [1.0, 1.0, 2.0, 3.0]
    assert values.percentile(50) == 1.5
    assert values.percentile(100) == 3.0
    assert values.percentile(90) is None
    ten = SortedValues()
    for v in range(10, 0, -1):
        ten.add(float(v))
    assert ten.percentile(90) == pytest.approx(9.1, abs=1e-12)
