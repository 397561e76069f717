"""Run every benchmark and print one table: each figure, ratio and target, PASS/FAIL.

    .venv/bin/python tests/benchmarks/run_all.py [--quick]

Decoder (``bench_sse.py``), headless pipeline (``bench_pipeline.py``: a firehose, and a body
of frames that are not JSON against a pure-Python loop), lint against the CLI's replay
(``bench_lint.py``), the text diff of Compare
two turns, the tap (``bench_tap.py``: added latency per read, firehose tap ÷ direct; and
``bench_tap_window.py``: the window's worst stall while its tap records a firehose), serve's
timing (``bench_serve.py``: each read against its recorded offset at speed 1),
bench mode's load runner against the demo's stamps (``bench_load.py``) and with the Bench
window open and plotting (``bench_window_load.py``),
then the GUI firehose, the 1,000,000-frame capture and the cold start
(``bench_gui.py``), and history at the size of a year of use (``bench_history.py``: start-up,
switching, scrolling, search, a firehose on a busy machine). Takes a few
minutes; every subprocess has a timeout, every server listens on 127.0.0.1 and is stopped.
Exit code 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_gui
import bench_history
import bench_lint
import bench_load
import bench_pipeline
import bench_serve
import bench_sse
import bench_tap
import bench_tap_window
import bench_window_load
from bench_gui import Row, check, info, print_table


def decoder_rows() -> list[Row]:
    rates = bench_sse.measure()
    name = "SSE decoder (20 MB)"
    rows = [info(name, f"{peer} MB/s", f"{rate:.0f}") for peer, rate in rates.items()]
    for ours in ("feed", "feed_frames"):
        for other in ("openai SDK", "httpx-sse"):
            for suffix in ("", " +JSON"):
                ratio = rates[ours + suffix] / rates[other + suffix]
                rows.append(info(name, f"{ours}{suffix} / {other}", f"{ratio:.2f}x"))
    return rows


def pipeline_rows(quick: bool) -> list[Row]:
    best = bench_pipeline.measure(runs=1 if quick else 3)
    ours, sdk, bare = (
        best[k] for k in ("streamscope send --json", "openai SDK", "bare httpx read")
    )
    name = "headless pipeline 100k (processes)"
    return [
        info(name, "streamscope send --json", f"{ours:.2f} s"),
        info(name, "openai SDK", f"{sdk:.2f} s"),
        info(name, "bare httpx read", f"{bare:.2f} s"),
        check(name, "ours / SDK", ours / sdk, 0.1, ".3f", "x"),
        check(name, "ours / bare", ours / bare, 4, ".2f", "x"),
    ]


def nonjson_rows(quick: bool) -> list[Row]:
    """`streamscope replay` of frames that are not JSON against a pure-Python loop."""
    megabytes = 16 if quick else 64
    best = bench_pipeline.measure_nonjson(megabytes, runs=1 if quick else 3)
    ours, loop = best["streamscope replay FILE --json"], best["pure-Python loop"]
    name = f"replay {megabytes} MB of data: x ({best['frames'] / 1e6:.1f} M frames, processes)"
    rows = [
        info(name, "streamscope replay FILE --json", f"{ours:.2f} s"),
        info(name, "pure-Python loop (bytes.find + orjson)", f"{loop:.2f} s"),
        check(name, "ours / loop", ours / loop, 2.0, ".2f", "x"),
        info(name, "ours / the loop with a first-byte check",
             f"{ours / best['pure-Python loop, first-byte check']:.2f}x"),
    ]  # fmt: skip
    if not quick:
        rows.append(check(name, "replay time", ours, 10.0, ".2f", " s"))
    return rows


def lint_rows(quick: bool) -> list[Row]:
    """`streamscope lint` against the CLI's replay of the same capture."""
    frames = 200_000 if quick else 1_000_000
    best = bench_lint.measure(frames, runs=1 if quick else 3)
    name = f"lint a {frames:,}-frame capture"
    rows = [info(name, row, f"{seconds:.2f} s") for row, seconds in best.items()]
    for where, ratio in bench_lint.ratios(best).items():
        rows.append(
            check(name, f"lint / CLI replay, {where}", ratio, bench_lint.TARGET, ".2f", "x")
        )
    return rows


def text_diff_rows() -> list[Row]:
    """Compare two turns' word diff (a worker thread runs it; the window never waits)."""
    from streamscope.core.capture.text_diff import text_diff

    rng = random.Random(1)
    vocab = ["the", "a", "of", "and", "to", "in", *(f"w{i}" for i in range(2000))]
    rows = []
    for n in (10_000, 100_000):
        words = [rng.choice(vocab) + ("\n\n" if i % 40 == 39 else " ") for i in range(n)]
        changed = [("CHANGED " if i % 50 == 5 else w) for i, w in enumerate(words)]
        t0 = time.perf_counter()
        diff = text_diff("".join(words), "".join(changed))
        elapsed = time.perf_counter() - t0
        name = f"text diff {n:,} words (1 in 50 changed)"
        rows += [info(name, "compared", diff.how), check(name, "time", elapsed, 2.0, ".2f", " s")]
    return rows


def serve_rows() -> list[Row]:
    """`streamscope serve` at speed 1: each read's arrival against its recorded offset."""
    figures = bench_serve.measure()
    name = f"serve speed 1 ({bench_serve.READS} reads, 1-20 ms gaps)"
    return [
        info(name, "p50 |offset error|", f"{figures['p50 |offset error| ms']:.2f} ms"),
        check(name, "p99 |offset error|", figures["p99 |offset error| ms"], 2.0, ".2f", " ms"),
        info(name, "max |offset error|", f"{figures['max |offset error| ms']:.2f} ms"),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller capture, fewer runs")
    args = parser.parse_args()
    rows = decoder_rows()
    print("decoder done", file=sys.stderr, flush=True)
    rows += pipeline_rows(args.quick)
    rows += nonjson_rows(args.quick)
    print("pipeline done", file=sys.stderr, flush=True)
    rows += lint_rows(args.quick)
    print("lint done", file=sys.stderr, flush=True)
    rows += text_diff_rows()
    rows += bench_tap.measure(args.quick)
    rows += bench_tap_window.measure(args.quick)
    rows += serve_rows()
    print("tap and serve done", file=sys.stderr, flush=True)
    rows += bench_load.measure(args.quick)
    rows += bench_window_load.measure()
    print("bench load done", file=sys.stderr, flush=True)
    for name, bench in bench_gui.BENCHES.items():
        rows += bench(args.quick)
        print(f"{name} done", file=sys.stderr, flush=True)
    rows += bench_history.measure(quick=args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
