"""`streamscope bench`: load an endpoint and report TTFT, ITL, E2E and outcomes per step.

    streamscope bench --base-url http://127.0.0.1:8765/v1 --model 'demo-bench?ttft=200' \\
        --concurrency 16 --requests 64 --warmup 4 --json

A progress line on stderr (done, in flight, errors, the live TTFT p50 of the requests
measured so far), a summary table on stdout (``--json``: the whole report instead;
``--csv FILE``: one row per request). ``--out DIR`` keeps every request's capture (bounded:
:mod:`streamscope.core.bench.captures`) and ``report.json``. The API key is read from the
environment variable ``--api-key-env`` names and goes only into the requests' headers.

Every figure is computed from the request's capture by :mod:`streamscope.core.bench.metrics`
and summed up by :mod:`streamscope.core.bench.stats`; the ``definitions`` object says what
each one means. ``--json`` (and ``report.json``) is one object::

    {"format": "streamscope-bench-run", "version": 1,
     "base_url", "model", "dialect", "tokenizer",   # --tokenizer as given, or null
     "definitions": {"ttft": "TTFT = ...", ...},
     "steps": [{
       "label": "c=16" | "rate=5/s", "concurrency", "rate", "arrival",
       "summary": {                         # over the step's measured (non-warm-up) requests
         "format": "streamscope-bench-report", "version",
         "time_to_first_token", "time_to_first_output_token", "inter_token_latency",
         "inter_chunk_latency", "request_latency", "ttfb", "e2e_terminal_latency",
         "max_gap", "vllm_ttft", "genai_perf_ttft", "vllm_itl", "llmperf_itl",
         "dispatch_lag", "ttft_from_schedule",
                                            # each {"unit": "ms", "avg", "min", "max", "p50",
                                            # "p90", "p95", "p99", "p99_9", "std", "count",
                                            # "sum"}; a percentile with too few values: null
         "output_sequence_length",          # the same block in tokens
         "request_count", "error_request_count", "benchmark_duration",
         "output_token_throughput", "request_throughput",
         "windowed_output_token_throughput", "windowed_request_throughput",
         "effective_concurrency",           # each {"unit", "avg"}
         "window": {"start", "end", "length"} | null,
         "requests", "warmup_requests", "outcomes": {"completed": 60, "http_429": 4, ...},
         "included_outcomes": ["completed", "length"], "token_sources": {"usage": 60}},
       "runner": {"loop_lag_p99_ms", "loop_lag_max_ms", "loop_lag_samples",
                  "client_bound", "cpu_s", "cpu_ms_per_1k_reads", "reads",
                  "cpu_ms_per_1k_frames", "frames", "read_stamps",
                  "kernel_stamped_reads", "read_wake_lag_p50_ms",
                  "read_wake_lag_p99_ms", "read_wake_lag_max_ms"},
       "requests": [{"index", "capture", "worker", "warmup", "sent_at", "scheduled_at",
                     "dispatch_lag_ms", "ttft_from_schedule_ms", "outcome", "status",
                     "finish_reason", "ttfb_ms", "ttft_ms", "ttft_frame", "ttfo_ms",
                     "ttfo_frame", "itl_ms", "gaps", "gap_p99_ms", "max_gap_ms",
                     "max_gap_frame", "e2e_terminal_ms", "e2e_last_token_ms",
                     "duration_ms", "output_tokens", "token_source", "first_frame_tokens",
                     "vllm_ttft_ms", "genai_perf_ttft_ms", "llmperf_itl_ms", "reason",
                     "scheduled_ms", "reads", "frames"}, ...]}]}

Latency statistics are over completed + length requests; the other outcomes are counted
apart. A request row is :data:`streamscope.core.bench.report.ROW_COLUMNS`: times in ms from
the request's send (``sent_at``/``scheduled_at``: seconds on the runner's monotonic clock,
``scheduled_ms``: after the step's start), ``*_frame`` the Frames tab's number of the frame
that defined the value, ``warmup`` 0 or 1, ``gaps`` how many, ``reads`` / ``frames`` the
network reads and the frames (SSE events, NDJSON lines) it took, ``capture`` the file under
``--out`` (``null``: none written, or evicted). ``--csv`` writes the same rows with a
``step`` column first. ``runner``: the load process's own health — its event loop's lag,
``client_bound`` when that lag's p99 is over 5 ms, its CPU time in seconds and per 1,000
reads and per 1,000 frames of the step; ``read_stamps`` says who stamped the reads —
``"kernel"`` (``--read-stamps kernel``, the default, where it can be done: Linux, plain
http; every time in the report is then from when the bytes reached the socket), else
``"user"`` (when the load process read them) — and, with kernel stamps, the read wake lag
(user-space time minus kernel time per read: how late the load process picked reads up).

``--tokenizer MODULE:FUNC`` (or ``FILE.py:FUNC``) counts every request's output tokens with
the user's own function ``str -> int`` instead of the server's usage: each row's
``token_source`` is then ``"tokenizer"`` (:mod:`streamscope.core.bench.tokenizer`; nothing
is downloaded).

Exit codes: 0 every measured request completed (or stopped at its length), 1 some did not,
2 usage error (a tokenizer that cannot be loaded or fails included), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from streamscope.core.bench.load import LoadStep
from streamscope.core.bench.report import ROW_COLUMNS
from streamscope.core.bench.schedule import ARRIVALS
from streamscope.core.bench.session import BenchPlan, Progress, run_bench
from streamscope.core.bench.stats import DEFAULT_INCLUDED
from streamscope.core.bench.tokenizer import TokenizerError, load_tokenizer

EXIT_OK, EXIT_FAILURES, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
CSV_KEYS = ("step", *ROW_COLUMNS)
"""``--csv``'s columns: the step's number, then a request row's keys."""


class UsageError(Exception):
    pass


def add_parser(sub: Any) -> None:
    """The ``bench`` subcommand's arguments (called by :func:`streamscope.cli.build_parser`)."""
    from streamscope.core.wire.dialects import dialect_names

    p = sub.add_parser(
        "bench",
        help="load an endpoint and report TTFT/ITL/E2E per step",
        description="Load an endpoint; a summary table per step on stdout, progress on "
        "stderr. --json prints the whole report: {format, version, base_url, model, dialect, "
        "definitions, steps: [{label, concurrency, rate, arrival, summary (AIPerf's names: "
        "time_to_first_token, inter_token_latency, ... in ms), runner, requests (one row per "
        "request)}]}; the module streamscope.bench_cli documents every key.",
    )
    p.add_argument("--base-url", required=True, help="API base URL including its version prefix")
    p.add_argument("--model", required=True)
    p.add_argument("--dialect", choices=dialect_names(with_auto=True), default="auto")
    p.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--prompt", default="Write a short story about a lighthouse.")
    which.add_argument(
        "--prompts",
        metavar="FILE.jsonl",
        help='lines of {"prompt": "..."} (or a JSON string); request i sends prompt i mod n',
    )
    p.add_argument("--max-tokens", type=int, metavar="N")
    p.add_argument(
        "--tokenizer",
        metavar="MODULE:FUNC",
        help="count output tokens with your own function str -> int (MODULE:FUNC or "
        "FILE.py:FUNC; never downloaded): token_source 'tokenizer'",
    )
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=int, metavar="C", help="closed loop (default 1)")
    load.add_argument("--rate", type=float, metavar="R", help="open loop: requests per second")
    p.add_argument("--arrival", choices=ARRIVALS, default="poisson")
    p.add_argument("--burstiness", type=float, default=1.0, metavar="K", help="gamma's shape")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.add_argument("--max-in-flight", type=int, metavar="N", help="open loop: cap in flight")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--requests", type=int, metavar="N", help="measured requests per step")
    size.add_argument("--duration", type=float, metavar="S", help="seconds per step")
    p.add_argument("--warmup", type=int, default=0, metavar="N")
    sweep = p.add_mutually_exclusive_group()
    sweep.add_argument("--sweep", metavar="C,C,...", help="closed-loop steps: concurrencies")
    sweep.add_argument("--sweep-rates", metavar="R,R,...", help="open-loop steps: rates")
    p.add_argument(
        "--connection",
        choices=("pooled", "new"),
        default="pooled",
        help="pooled: each worker reuses its own connection; new: one per request",
    )
    p.add_argument(
        "--read-stamps",
        choices=("kernel", "user"),
        default="kernel",
        help="kernel: each read's time is when its bytes reached the socket (Linux, http; "
        "else as user); user: when the load process read them",
    )
    p.add_argument("--first-byte-timeout", type=float, default=300.0, metavar="S")
    p.add_argument("--idle-timeout", type=float, default=300.0, metavar="S")
    p.add_argument(
        "--json", action="store_true", help="print the whole report as JSON (shape above)"
    )
    p.add_argument("--csv", metavar="FILE", help="write one row per request (with its step)")
    p.add_argument("--out", metavar="DIR", help="keep captures and report.json here")


def _numbers(text: str, kind: type[float] | type[int]) -> list[Any]:
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"not a list of numbers: {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"expected positive numbers: {text!r}")
    return values


def _steps(args: argparse.Namespace) -> list[LoadStep]:
    if args.requests is None and args.duration is None:
        args.requests = 10
    common: dict[str, Any] = {
        "requests": args.requests,
        "duration": args.duration,
        "warmup": args.warmup,
        "connection": args.connection,
        "first_byte_timeout": args.first_byte_timeout,
        "idle_timeout": args.idle_timeout,
        "read_stamps": args.read_stamps,
    }
    open_loop: dict[str, Any] = {
        "arrival": args.arrival,
        "burstiness": args.burstiness,
        "seed": args.seed,
        "cap": args.max_in_flight,
    }
    try:
        if args.sweep_rates or args.rate is not None:
            rates = _numbers(args.sweep_rates, float) if args.sweep_rates else [args.rate]
            if args.concurrency is not None:
                raise UsageError("--sweep-rates is an open loop: not with --concurrency")
            return [LoadStep(rate=r, **open_loop, **common) for r in rates]
        levels = _numbers(args.sweep, int) if args.sweep else [args.concurrency or 1]
        if any(c < 1 for c in levels):
            raise UsageError("concurrency must be >= 1")
        return [LoadStep(concurrency=c, **common) for c in levels]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _prompts(args: argparse.Namespace) -> list[str]:
    """``--prompt``'s one prompt, or ``--prompts``' file: one JSON value a line, an object
    ``{"prompt": "..."}`` or a bare string; blank lines are skipped, a UTF-8 BOM is allowed.
    Request *i* of a step (warm-up included) sends prompt ``i % len(prompts)``."""
    if not args.prompts:
        return [args.prompt]
    prompts = []
    try:
        content = Path(args.prompts).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UsageError(f"cannot read {args.prompts}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        where = exc.object[: exc.start].count(b"\n") + 1
        raise UsageError(f"{args.prompts}:{where}: not UTF-8 text") from None
    # Lines end at "\n" only: a JSON string may hold U+2028 or U+0085 as they are, which
    # str.splitlines() would take for line ends.
    for n, line in enumerate(content.split("\n"), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise UsageError(f"{args.prompts}:{n}: not JSON") from None
        prompt = item.get("prompt") if isinstance(item, dict) else item
        if not isinstance(prompt, str):
            raise UsageError(f'{args.prompts}:{n}: expected {{"prompt": "..."}}')
        prompts.append(prompt)
    if not prompts:
        raise UsageError(f"{args.prompts}: no prompts")
    return prompts


def guess_dialect(base_url: str) -> str:
    """``--dialect auto``: the API a base URL most likely speaks (OpenAI unless it says)."""
    url = base_url.lower().rstrip("/")
    if "anthropic" in url:
        return "anthropic"
    if url.endswith("/v1beta") or "generativelanguage" in url:
        return "gemini"
    if url.endswith(":11434") or url.endswith("/api"):
        return "ollama"
    return "openai"


class _Bar:
    """One line on stderr, redrawn in place (at most ~10 times a second): requests done,
    in flight, errors (warm-up included: any outcome but completed or length) and the live
    TTFT p50 (p99 from 100 requests) of the measured requests so far."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = 0.0
        self.width = 0

    def __call__(self, p: Progress) -> None:
        import time

        now = time.monotonic()
        if (p.total is None or p.done < p.total) and now - self.last < 0.1:
            return
        self.last = now
        self.stream.write("\r" + self.line(p))
        if p.total is not None and p.done >= p.total:
            self.stream.write("\n")
            self.width = 0
        self.stream.flush()

    def line(self, p: Progress) -> str:
        """The line for ``p``, padded over the longer one it replaces."""
        errors = sum(n for k, n in p.outcomes.items() if k not in DEFAULT_INCLUDED)
        if p.total:
            filled = int(30 * p.done / p.total)
            bar = "#" * filled + "-" * (30 - filled)
            head = f"[{bar}] {p.done}/{p.total}"
        else:
            head = f"{p.done} done"
        ttft = p.live.ttft
        p50, p99 = ttft.percentile(50), ttft.percentile(99)
        live = f"TTFT p50 {_fmt(None if p50 is None else p50 * 1000)}"
        if p99 is not None:
            live += f" p99 {p99 * 1000:.1f}"
        text = f"{p.label:>12} {head}  in flight {p.in_flight}  errors {errors}  {live} ms"
        padded, self.width = text.ljust(self.width), len(text)
        return padded


def _fmt(value: Any, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict[str, Any]) -> str:
    """The summary: one line per step, read off each step's ``summary`` and ``runner``."""
    head = (
        f"{'step':>12} {'n':>5} {'ok':>5} {'TTFT p50':>9} {'p99':>8} {'sched p50':>9} "
        f"{'ITL p50':>8} {'E2E p50':>9} {'tok/s':>8} {'conc':>6} {'lag max':>8} "
        f"{'loop p99':>8} {'CPU s':>6} {'ms/1k fr':>8}  outcomes"
    )
    lines = [head]
    for step in report["steps"]:
        s, r = step["summary"], step["runner"]
        included = set(s["included_outcomes"])
        ok = sum(n for k, n in s["outcomes"].items() if k in included)
        outcomes = ", ".join(f"{k} {n}" for k, n in sorted(s["outcomes"].items()))
        flag = "  CLIENT-BOUND" if r["client_bound"] else ""
        ttft = s["time_to_first_token"]
        lines.append(
            f"{step['label']:>12} {s['requests']:>5} {ok:>5} "
            f"{_fmt(ttft['p50']):>9} {_fmt(ttft['p99']):>8} "
            f"{_fmt(s['ttft_from_schedule']['p50']):>9} "
            f"{_fmt(s['inter_token_latency']['p50'], '.2f'):>8} "
            f"{_fmt(s['request_latency']['p50']):>9} "
            f"{_fmt(s['windowed_output_token_throughput']['avg']):>8} "
            f"{_fmt(s['effective_concurrency']['avg'], '.2f'):>6} "
            f"{_fmt(s['dispatch_lag']['max'], '.2f'):>8} "
            f"{_fmt(r['loop_lag_p99_ms'], '.2f'):>8} {_fmt(r['cpu_s'], '.2f'):>6} "
            f"{_fmt(r['cpu_ms_per_1k_frames']):>8}  {outcomes}{flag}"
        )
    lines.append(
        "ms unless stated; latencies over completed + length (p99 shown from 100 requests); "
        "sched = TTFT from the scheduled time; E2E to the last token; tok/s over the trimmed "
        "window; conc = effective concurrency; lag = send - scheduled; CPU of the load "
        "process, in s and in ms per 1,000 frames"
    )
    return "\n".join(lines)


def _write_csv(path: Path, report: dict[str, Any]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fp:
        writer = csv.DictWriter(fp, CSV_KEYS, lineterminator="\n")
        writer.writeheader()
        for number, step in enumerate(report["steps"]):
            for row in step["requests"]:
                writer.writerow({"step": number, **row})


def run(args: argparse.Namespace) -> int:
    """Entry point of ``streamscope bench``."""
    try:
        return _run(args)
    except (UsageError, TokenizerError) as exc:
        print(f"streamscope bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"environment variable {args.api_key_env} is not set or empty")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max-tokens must be >= 1")
    dialect = guess_dialect(args.base_url) if args.dialect == "auto" else args.dialect
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else None
    plan = BenchPlan(
        base_url=args.base_url,
        model=args.model,
        dialect=dialect,
        prompts=_prompts(args),
        steps=_steps(args),
        api_key=api_key,
        max_tokens=args.max_tokens,
        tokenizer=tokenizer,
    )
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    try:
        report = asyncio.run(run_bench(plan, out=out, on_progress=_Bar(sys.stderr)))
    except KeyboardInterrupt:
        print("\nstreamscope bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    head = {"format": report.pop("format"), "version": report.pop("version")}
    report = {
        **head,
        "base_url": args.base_url,
        "model": args.model,
        "dialect": dialect,
        "tokenizer": args.tokenizer,
        **report,
    }
    text = json.dumps(report, ensure_ascii=False)
    if out is not None:
        (out / "report.json").write_text(text + "\n", encoding="utf-8")
    if args.csv:
        _write_csv(Path(args.csv), report)
    print(text if args.json else table(report))
    failed = any(
        k not in DEFAULT_INCLUDED for step in report["steps"] for k in step["summary"]["outcomes"]
    )
    return EXIT_FAILURES if failed else EXIT_OK
