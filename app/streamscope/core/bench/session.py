"""A bench run, end to end, without a window: build the requests, run each step in the load
process, turn every finished request into a capture and a report row as it arrives.

    report = await run_bench(plan, on_progress=print)

The load process (:mod:`~streamscope.core.bench.runner_process`) only sends and stamps; the
replay of each request through the pipeline (once: it gives the capture's outcome and the
request's :class:`~streamscope.core.bench.metrics.RequestMetrics`), the capture files and the
report are made here, in the calling process, while the load goes on.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from streamscope.core.bench.captures import CaptureShelf, record_exchange
from streamscope.core.bench.load import LoadRequest, LoadStep, StepStats
from streamscope.core.bench.metrics import RequestMetrics
from streamscope.core.bench.report import ReportBuilder, RequestRecord, StepReport
from streamscope.core.bench.runner_process import BenchRunner
from streamscope.core.bench.stats import LiveSummary
from streamscope.core.bench.tokenizer import TokenCounter
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["BenchPlan", "Progress", "build_specs", "run_bench"]


@dataclass(frozen=True, slots=True)
class BenchPlan:
    """What to run: the endpoint, the prompts and the steps (one, or a sweep's)."""

    base_url: str
    model: str
    dialect: str
    prompts: Sequence[str]
    steps: Sequence[LoadStep]
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    tokenizer: TokenCounter | None = field(default=None, compare=False)
    """The user's tokenizer, to count output tokens with (source ``tokenizer``;
    :mod:`~streamscope.core.bench.tokenizer`); ``None``: the server's usage, else chunks."""


@dataclass(slots=True)
class Progress:
    """Where a step is: requests ended (warm-up included), sent, and outcomes so far (by
    :attr:`~streamscope.core.bench.metrics.RequestMetrics.outcome_key`, warm-up included);
    ``live``: the measured requests' figures so far (TTFT, ITL and E2E percentiles, outcomes;
    :class:`~streamscope.core.bench.stats.LiveSummary`, updated as each request is
    measured: read it on every repaint)."""

    step: int
    label: str
    total: int | None
    done: int = 0
    sent: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    live: LiveSummary = field(default_factory=LiveSummary)

    @property
    def in_flight(self) -> int:
        return max(0, self.sent - self.done)


def build_specs(plan: BenchPlan) -> list[RequestSpec]:
    """One streaming request per prompt, in the plan's dialect."""
    dialect = get_dialect(plan.dialect)
    return [
        dialect.build_request(
            Conversation(
                messages=[Message("user", prompt)],
                max_tokens=plan.max_tokens,
                extra_body=plan.extra_body,
            ),
            base_url=plan.base_url,
            model=plan.model,
            api_key=plan.api_key,
        )
        for prompt in plan.prompts
    ]


def _load_request(spec: RequestSpec) -> LoadRequest:
    return LoadRequest(spec.url, dict(spec.headers), orjson.dumps(spec.json))


OnRequest = Callable[[int, Exchange, Capture, RequestMetrics], None]
"""Called with each request as it is measured: step number, the exchange as the runner saw
it, its capture, its figures."""


async def run_bench(
    plan: BenchPlan,
    *,
    builder: ReportBuilder | None = None,
    out: Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_request: OnRequest | None = None,
    runner: BenchRunner | None = None,
) -> dict[str, Any]:
    """Run every step of ``plan``; the report as a JSON-ready dict (see
    :mod:`~streamscope.core.bench.report`). Captures go under ``out`` when given.
    ``on_request`` sees each request's figures as it ends."""
    builder = builder or ReportBuilder()
    specs = build_specs(plan)
    requests = [_load_request(s) for s in specs]
    shelf = CaptureShelf(out) if out is not None else None
    own_runner = runner is None
    runner = runner or BenchRunner()
    try:
        for number, step in enumerate(plan.steps):
            report = builder.begin(step)
            total = None if step.requests is None else step.requests + step.warmup
            progress = Progress(number, step.label, total, live=LiveSummary(builder.include))
            await _run_step(
                runner, number, step, requests, specs, plan, report, shelf,
                progress, on_progress, on_request,
            )  # fmt: skip
    finally:
        if own_runner:
            await runner.aclose()
    return builder.to_json(shelf.evicted if shelf is not None else ())


async def _run_step(
    runner: BenchRunner,
    number: int,
    step: LoadStep,
    requests: list[LoadRequest],
    specs: list[RequestSpec],
    plan: BenchPlan,
    report: StepReport,
    shelf: CaptureShelf | None,
    progress: Progress,
    on_progress: Callable[[Progress], None] | None,
    on_request: OnRequest | None,
) -> None:
    pending: set[asyncio.Task[None]] = set()

    async def take(ex: Exchange) -> None:
        capture, metrics = await record_exchange(
            ex, specs[ex.prompt], plan.dialect, tokenizer=plan.tokenizer
        )
        if shelf is not None:
            metrics = replace(metrics, capture=shelf.put(number, ex.index, capture))
        report.records.append(RequestRecord(ex.index, metrics, len(ex.reads)))
        progress.done += 1
        progress.outcomes[metrics.outcome_key] += 1
        progress.live.add(metrics)
        if on_request is not None:
            on_request(number, ex, capture, metrics)
        if on_progress is not None:
            on_progress(progress)

    # A request that cannot be measured (a tokenizer or a callback that raised, a full disk)
    # stops the step: its load is cancelled, the requests being measured finish, and the
    # first failure is raised — none is lost in a task nobody awaits.
    failures: list[BaseException] = []
    load: asyncio.Future[StepStats] | None = None

    def settled(task: asyncio.Task[None]) -> None:
        pending.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            failures.append(exc)
            if load is not None:
                load.cancel()

    def on_exchange(ex: Exchange, sent: int) -> None:
        progress.sent = sent
        task = asyncio.ensure_future(take(ex))
        pending.add(task)
        task.add_done_callback(settled)

    load = asyncio.ensure_future(runner.run_step(step, requests, on_exchange))
    try:
        report.stats = await load
    except asyncio.CancelledError:
        if not failures:
            raise  # (cancelled from outside)
    if pending:
        await asyncio.wait(pending)
    if failures:
        raise failures[0]
