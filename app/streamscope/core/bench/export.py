"""A bench as data for scripts: the report (one JSON-ready dict) and one CSV row per request.

The report's keys follow AIPerf's ``profile_export_aiperf.json`` where our definition is
theirs — each metric a block ``{"unit", "avg", "min", "max", "p50", "p90", "p95", "p99",
"std", "count", "sum"}`` (plus our ``p99_9``; a percentile hidden for too few values is
``null``), throughputs and counts ``{"unit", "avg"}``:

==============================  ============================================================
``time_to_first_token``         TTFT (any channel; AIPerf counts reasoning too)
``time_to_first_output_token``  TTFO (reasoning excluded)
``inter_token_latency``         ITL (AIPerf's with k = 1 token in the first frame)
``inter_chunk_latency``         the gaps between token frames, pooled
``request_latency``             E2E to the last token (AIPerf: last content response)
``output_sequence_length``      N (usage counts reasoning tokens, as AIPerf's OSL does)
``request_count``               included requests; ``error_request_count`` the others
``benchmark_duration``          first send to last token, untrimmed (seconds)
``output_token_throughput``     N over ``benchmark_duration``; ``request_throughput`` too
==============================  ============================================================

The rest carries StreamScope's names: ``ttfb``, ``e2e_terminal_latency``, ``max_gap``, the
compatibility columns ``vllm_ttft``, ``genai_perf_ttft``, ``vllm_itl``, ``llmperf_itl``,
``dispatch_lag``, ``ttft_from_schedule``, the trimmed ``windowed_output_token_throughput`` /
``windowed_request_throughput``, ``effective_concurrency``, ``window``, ``outcomes``,
``token_sources``, ``included_outcomes`` and ``definitions`` (every formula's text).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import IO, Any

from streamscope.core.bench.definitions import DEFINITIONS
from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.percentiles import LEVELS
from streamscope.core.bench.stats import BenchSummary, Distribution

__all__ = ["CSV_COLUMNS", "REPORT_FORMAT", "csv_row", "report", "write_csv"]

REPORT_FORMAT = "streamscope-bench-report"
REPORT_VERSION = 1


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value * scale


def _block(dist: Distribution, unit: str, scale: float = 1.0) -> dict[str, Any]:
    """A metric block in AIPerf's shape (``ms`` blocks are seconds x 1000)."""
    block: dict[str, Any] = {"unit": unit, "avg": _scaled(dist.avg, scale)}
    block["min"] = _scaled(dist.min, scale)
    block["max"] = _scaled(dist.max, scale)
    for key, _ in LEVELS:
        block[key] = _scaled(getattr(dist, key), scale)
    block["std"] = _scaled(dist.std, scale)
    block["count"] = dist.count
    block["sum"] = _scaled(dist.sum, scale)
    return block


def _ms(dist: Distribution) -> dict[str, Any]:
    return _block(dist, "ms", 1000.0)


def _scalar(value: float | None, unit: str) -> dict[str, Any]:
    return {"unit": unit, "avg": value}


def report(summary: BenchSummary, *, definitions: bool = True) -> dict[str, Any]:
    """The whole bench as one JSON-ready dict (see the module docstring).
    ``definitions=False`` leaves the formulas' texts out (a run of several steps carries
    them once, beside its steps)."""
    s = summary
    window = (
        None
        if s.window is None
        else {"start": s.window.start, "end": s.window.end, "length": s.window.length}
    )
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        # AIPerf's names: the definitions match.
        "time_to_first_token": _ms(s.ttft),
        "time_to_first_output_token": _ms(s.ttfo),
        "inter_token_latency": _ms(s.itl),
        "inter_chunk_latency": _ms(s.gaps),
        "request_latency": _ms(s.e2e_last_token),
        "output_sequence_length": _block(s.output_tokens, "tokens"),
        "request_count": _scalar(float(s.included_requests), "requests"),
        "error_request_count": _scalar(float(s.requests - s.included_requests), "requests"),
        "benchmark_duration": _scalar(s.benchmark_duration, "sec"),
        "output_token_throughput": _scalar(s.untrimmed_output_token_throughput, "tokens/sec"),
        "request_throughput": _scalar(s.untrimmed_request_throughput, "requests/sec"),
        # StreamScope's own.
        "ttfb": _ms(s.ttfb),
        "e2e_terminal_latency": _ms(s.e2e_terminal),
        "max_gap": _ms(s.max_gap),
        "vllm_ttft": _ms(s.vllm_ttft),
        "genai_perf_ttft": _ms(s.genai_perf_ttft),
        "vllm_itl": _ms(s.vllm_itl),
        "llmperf_itl": _ms(s.llmperf_itl),
        "dispatch_lag": _ms(s.dispatch_lag),
        "ttft_from_schedule": _ms(s.ttft_from_schedule),
        "windowed_output_token_throughput": _scalar(s.output_token_throughput, "tokens/sec"),
        "windowed_request_throughput": _scalar(s.request_throughput, "requests/sec"),
        "effective_concurrency": _scalar(s.effective_concurrency, "requests"),
        "window": window,
        "requests": s.requests,
        "warmup_requests": s.warmup_requests,
        "outcomes": dict(s.outcomes),
        "included_outcomes": list(s.included),
        "token_sources": dict(s.token_sources),
    }
    if definitions:
        out["definitions"] = dict(DEFINITIONS)
    return out


CSV_COLUMNS: tuple[str, ...] = (
    "capture",
    "worker",
    "warmup",
    "sent_at",
    "scheduled_at",
    "dispatch_lag_ms",
    "ttft_from_schedule_ms",
    "outcome",
    "status",
    "finish_reason",
    "ttfb_ms",
    "ttft_ms",
    "ttft_frame",
    "ttfo_ms",
    "ttfo_frame",
    "itl_ms",
    "gaps",
    "gap_p99_ms",
    "max_gap_ms",
    "max_gap_frame",
    "e2e_terminal_ms",
    "e2e_last_token_ms",
    "duration_ms",
    "output_tokens",
    "token_source",
    "first_frame_tokens",
    "vllm_ttft_ms",
    "genai_perf_ttft_ms",
    "llmperf_itl_ms",
    "reason",
)
"""The per-request CSV's columns, in order (times in ms, rounded to the microsecond;
``sent_at``/``scheduled_at`` in seconds on the runner's clock; ``gaps`` is how many)."""


def _rounded_ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000.0, 3)


def csv_row(m: RequestMetrics) -> dict[str, str | int | float | None]:
    """One request's row, keyed by :data:`CSV_COLUMNS`."""
    return {
        "capture": m.capture,
        "worker": m.worker,
        "warmup": int(m.warmup),
        "sent_at": m.sent_at,
        "scheduled_at": m.scheduled_at,
        "dispatch_lag_ms": _rounded_ms(m.dispatch_lag),
        "ttft_from_schedule_ms": _rounded_ms(m.ttft_from_schedule),
        "outcome": m.outcome_key,
        "status": m.status,
        "finish_reason": m.finish_reason,
        "ttfb_ms": _rounded_ms(m.ttfb),
        "ttft_ms": _rounded_ms(m.ttft),
        "ttft_frame": m.ttft_frame,
        "ttfo_ms": _rounded_ms(m.ttfo),
        "ttfo_frame": m.ttfo_frame,
        "itl_ms": _rounded_ms(m.itl),
        "gaps": len(m.gaps),
        "gap_p99_ms": _rounded_ms(m.gap_p99),
        "max_gap_ms": _rounded_ms(m.max_gap),
        "max_gap_frame": m.max_gap_frame,
        "e2e_terminal_ms": _rounded_ms(m.e2e_terminal),
        "e2e_last_token_ms": _rounded_ms(m.e2e_last_token),
        "duration_ms": _rounded_ms(m.duration),
        "output_tokens": m.output_tokens,
        "token_source": m.token_source,
        "first_frame_tokens": m.first_frame_tokens,
        "vllm_ttft_ms": _rounded_ms(m.vllm_ttft),
        "genai_perf_ttft_ms": _rounded_ms(m.genai_perf_ttft),
        "llmperf_itl_ms": _rounded_ms(m.llmperf_itl),
        "reason": m.reason,
    }


def write_csv(fp: IO[str], results: Iterable[RequestMetrics]) -> int:
    """Write a header and one row per request to the text stream ``fp`` (open it with
    ``newline=""``); ``None`` is an empty cell. Returns the number of rows."""
    writer = csv.DictWriter(fp, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    n = 0
    for m in results:
        writer.writerow(csv_row(m))
        n += 1
    return n
