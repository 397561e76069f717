"""Statistics over a bench's requests: distributions with percentiles, outcome counts kept
apart, throughput over a window trimmed of warm-up and drain, and effective concurrency.

Latency distributions are over the *included* outcomes (completed and length by default,
:data:`DEFAULT_INCLUDED`); every other outcome is counted and never mixed in. Warm-up
requests (``RequestMetrics.warmup``) are kept out of everything but the window's start and
the concurrency they add. Definitions: :mod:`.definitions`.

While a step runs, :class:`LiveSummary` keeps the same figures up to date one request at a
time (the progress line, the window's live view): no pass over the requests so far.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.percentiles import LEVELS, percentile_or_none

__all__ = [
    "DEFAULT_INCLUDED",
    "BenchSummary",
    "Distribution",
    "LiveSummary",
    "SortedValues",
    "Window",
    "distribution",
    "effective_concurrency",
    "measurement_window",
    "summarize",
    "throughput",
]

DEFAULT_INCLUDED: frozenset[str] = frozenset({"completed", "length"})
"""The outcomes latency statistics and throughput are computed over by default."""


@dataclass(frozen=True, slots=True)
class Distribution:
    """A set of values summed up: ``count`` values (``None`` values were left out), their
    mean, sample standard deviation (n - 1; ``None`` below 2 values), extremes, sum and
    percentiles (``None`` when hidden: too few values, see :mod:`.percentiles`)."""

    count: int
    avg: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    sum: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    p99_9: float | None = None

    def percentiles(self) -> dict[str, float | None]:
        """``{"p50": …, "p90": …, "p95": …, "p99": …, "p99_9": …}``."""
        return {key: getattr(self, key) for key, _ in LEVELS}


def distribution(values: Iterable[float | None]) -> Distribution:
    """The :class:`Distribution` of ``values`` (``None`` values are skipped)."""
    ordered = sorted(v for v in values if v is not None)
    n = len(ordered)
    if not n:
        return Distribution(0)
    total = math.fsum(ordered)
    mean = total / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in ordered) / (n - 1)) if n > 1 else None
    levels = {key: percentile_or_none(ordered, q) for key, q in LEVELS}
    return Distribution(n, mean, std, ordered[0], ordered[-1], total, **levels)


@dataclass(frozen=True, slots=True)
class Window:
    """The measurement window on the runner's clock (see
    :data:`~streamscope.core.bench.definitions.WINDOW`)."""

    start: float
    end: float

    @property
    def length(self) -> float:
        return self.end - self.start

    def overlap(self, a: float, b: float) -> float:
        """How long ``[a, b]`` lies inside the window."""
        return max(0.0, min(b, self.end) - max(a, self.start))


def measurement_window(results: Sequence[RequestMetrics]) -> Window | None:
    """From the later of (the last warm-up request's end, the first measured request's send)
    to the time the first worker finished its last measured request — or, when no request
    names a worker (open loop), the last measured request's send. ``None`` when there is no
    measured request or the window is empty."""
    measured = [r for r in results if not r.warmup]
    if not measured:
        return None
    start = min(r.sent_at for r in measured)
    warm_ends = [r.ended_at for r in results if r.warmup]
    if warm_ends:
        start = max(start, max(warm_ends))
    last_by_worker: dict[int, float] = {}
    for r in measured:
        if r.worker is not None:
            last_by_worker[r.worker] = max(last_by_worker.get(r.worker, r.ended_at), r.ended_at)
    end = min(last_by_worker.values()) if last_by_worker else max(r.sent_at for r in measured)
    return Window(start, end) if end > start else None


def _tokens_inside(r: RequestMetrics, window: Window) -> float:
    """The request's output tokens generated inside the window, its N spread evenly from
    its first to its last token frame."""
    if r.ttft is None or r.e2e_last_token is None or not r.output_tokens:
        return 0.0
    a, b = r.sent_at + r.ttft, r.sent_at + r.e2e_last_token
    if b <= a:
        return float(r.output_tokens) if window.start <= a <= window.end else 0.0
    return r.output_tokens * window.overlap(a, b) / (b - a)


def throughput(
    results: Sequence[RequestMetrics],
    window: Window,
    include: Collection[str] = DEFAULT_INCLUDED,
) -> tuple[float, float]:
    """``(output tokens/s, requests/s)`` of the measured requests with an included outcome,
    inside ``window``."""
    chosen = [r for r in results if not r.warmup and r.outcome in include]
    tokens = math.fsum(_tokens_inside(r, window) for r in chosen)
    ended = sum(1 for r in chosen if window.start <= r.ended_at <= window.end)
    return tokens / window.length, ended / window.length


def effective_concurrency(results: Sequence[RequestMetrics], window: Window) -> float:
    """Little's law: the time every request (any outcome, warm-up included) was in flight
    inside the window, over the window's length — the mean number in flight."""
    busy = math.fsum(window.overlap(r.sent_at, r.ended_at) for r in results)
    return busy / window.length


@dataclass(frozen=True, slots=True)
class BenchSummary:
    """A bench's figures over its requests (see :func:`summarize`). Times in seconds."""

    requests: int
    warmup_requests: int
    outcomes: dict[str, int]
    included: tuple[str, ...]
    included_requests: int
    token_sources: dict[str, int]
    ttfb: Distribution
    ttft: Distribution
    ttfo: Distribution
    itl: Distribution
    gaps: Distribution
    max_gap: Distribution
    e2e_terminal: Distribution
    e2e_last_token: Distribution
    output_tokens: Distribution
    vllm_ttft: Distribution
    genai_perf_ttft: Distribution
    vllm_itl: Distribution
    llmperf_itl: Distribution
    dispatch_lag: Distribution
    ttft_from_schedule: Distribution
    window: Window | None
    output_token_throughput: float | None
    request_throughput: float | None
    effective_concurrency: float | None
    benchmark_duration: float | None
    untrimmed_output_token_throughput: float | None
    untrimmed_request_throughput: float | None


def _untrimmed(chosen: Sequence[RequestMetrics]) -> tuple[float | None, ...]:
    """AIPerf's way: first send to the last one's last token, no trimming."""
    if not chosen:
        return None, None, None
    first = min(r.sent_at for r in chosen)
    last = max(
        r.sent_at + (r.e2e_last_token if r.e2e_last_token is not None else r.duration)
        for r in chosen
    )
    span = last - first
    if span <= 0:
        return span, None, None
    return span, sum(r.output_tokens for r in chosen) / span, len(chosen) / span


def summarize(
    results: Sequence[RequestMetrics], *, include: Collection[str] = DEFAULT_INCLUDED
) -> BenchSummary:
    """Sum up a bench's requests. ``include``: the outcomes (``RequestMetrics.outcome``
    values) latency statistics and throughput use; the outcome counts cover every
    measured request whatever it is. Dispatch lag is over every measured request (each
    was sent, whatever its outcome); TTFT from schedule over the included ones, as TTFT."""
    measured = [r for r in results if not r.warmup]
    chosen = [r for r in measured if r.outcome in include]
    window = measurement_window(results)
    tokens_s = requests_s = concurrency = None
    if window is not None:
        tokens_s, requests_s = throughput(results, window, include)
        concurrency = effective_concurrency(results, window)
    duration, untrimmed_tokens, untrimmed_requests = _untrimmed(chosen)
    return BenchSummary(
        requests=len(measured),
        warmup_requests=len(results) - len(measured),
        outcomes=dict(sorted(Counter(r.outcome_key for r in measured).items())),
        included=tuple(sorted(include)),
        included_requests=len(chosen),
        token_sources=dict(sorted(Counter(r.token_source or "none" for r in chosen).items())),
        ttfb=distribution(r.ttfb for r in chosen),
        ttft=distribution(r.ttft for r in chosen),
        ttfo=distribution(r.ttfo for r in chosen),
        itl=distribution(r.itl for r in chosen),
        gaps=distribution(g for r in chosen for g in r.gaps),
        max_gap=distribution(r.max_gap for r in chosen),
        e2e_terminal=distribution(r.e2e_terminal for r in chosen),
        e2e_last_token=distribution(r.e2e_last_token for r in chosen),
        output_tokens=distribution(float(r.output_tokens) for r in chosen),
        vllm_ttft=distribution(r.vllm_ttft for r in chosen),
        genai_perf_ttft=distribution(r.genai_perf_ttft for r in chosen),
        vllm_itl=distribution(g for r in chosen for g in r.vllm_itl_gaps),
        llmperf_itl=distribution(r.llmperf_itl for r in chosen),
        dispatch_lag=distribution(r.dispatch_lag for r in measured),
        ttft_from_schedule=distribution(r.ttft_from_schedule for r in chosen),
        window=window,
        output_token_throughput=tokens_s,
        request_throughput=requests_s,
        effective_concurrency=concurrency,
        benchmark_duration=duration,
        untrimmed_output_token_throughput=untrimmed_tokens,
        untrimmed_request_throughput=untrimmed_requests,
    )


# -- while a step runs -------------------------------------------------------------------------


class SortedValues:
    """Values kept in order as they come, for percentiles at any moment: :meth:`add` is a
    binary search and one insertion (``bisect.insort``: the list's tail moves in one C
    ``memmove``, ~40 µs at 100,000 values); :meth:`percentile` reads two values."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: list[float] = []

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: float | None) -> None:
        """Keep ``value`` (``None`` is left out, as :func:`distribution` does)."""
        if value is not None:
            bisect.insort(self.values, value)

    def percentile(self, q: float) -> float | None:
        """As :func:`~streamscope.core.bench.percentiles.percentile_or_none`: hidden while
        there are too few values."""
        return percentile_or_none(self.values, q)


class LiveSummary:
    """A step's figures so far, one request at a time, for a progress line or the window's
    live view: cheap enough to update as each request is measured and to read on every
    repaint (see :class:`SortedValues`). It counts as :func:`summarize` does — warm-up
    requests apart, outcomes of the measured requests, latencies over the ``include``d ones
    — so once every request is in, its figures are the step's report's exactly."""

    def __init__(self, include: Collection[str] = DEFAULT_INCLUDED) -> None:
        self.include = frozenset(include)
        self.requests = 0
        """Measured requests so far (warm-up excluded)."""
        self.warmup_requests = 0
        self.errors = 0
        """Measured requests whose outcome is not included (by default: not completed nor
        length — HTTP errors, truncations, timeouts, ...)."""
        self.outcomes: Counter[str] = Counter()
        """The measured requests' outcomes (by ``RequestMetrics.outcome_key``)."""
        self.ttft = SortedValues()
        self.itl = SortedValues()
        self.e2e_last_token = SortedValues()

    @property
    def included_requests(self) -> int:
        return self.requests - self.errors

    def add(self, m: RequestMetrics) -> None:
        """Count one measured request (warm-up requests are only counted)."""
        if m.warmup:
            self.warmup_requests += 1
            return
        self.requests += 1
        self.outcomes[m.outcome_key] += 1
        if m.outcome not in self.include:
            self.errors += 1
            return
        self.ttft.add(m.ttft)
        self.itl.add(m.itl)
        self.e2e_last_token.add(m.e2e_last_token)
