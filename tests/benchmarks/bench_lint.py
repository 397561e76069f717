"""Lint benchmark: a capture of N OpenAI content frames (default 1,000,000, ~150 MB), linted
against its replay, in the same run.

    .venv/bin/python tests/benchmarks/bench_lint.py [--frames N] [--runs R]

In this process: the instant replay the window does (frames kept, for the Frames tab), the
CLI's replay (no frames kept), and ``lint_capture`` (the pipeline with frames, then every
rule). End to end (whole processes, the capture written to a ``.sscap`` file):
``streamscope replay FILE --json`` and ``streamscope lint FILE --json``, interleaved.
Target: lint <= 1.5x the CLI's replay, both in this process and end to end.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureResponse,
    ReadLog,
    dump_capture,
)
from streamscope.core.capture.replay import replay_capture
from streamscope.lint import lint_capture

TARGET = 1.5
"""lint <= this many times the CLI's replay of the same capture."""

_HEAD = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764449000,"model":"m",'
FIRST = f'data: {_HEAD}"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"finish_reason":null}}]}}\n\n'  # noqa: E501
FRAME = f'data: {_HEAD}"choices":[{{"index":0,"delta":{{"content":"word "}},"logprobs":null,"finish_reason":null}}]}}\n\n'  # noqa: E501
LAST = f'data: {_HEAD}"choices":[{{"index":0,"delta":{{}},"finish_reason":"stop"}}]}}\n\ndata: [DONE]\n\n'  # noqa: E501


def capture(frames: int) -> Capture:
    body = (FIRST + FRAME * frames + LAST).encode()
    reads = [
        (0.1 + k * 0.001, body[i : i + 65536]) for k, i in enumerate(range(0, len(body), 65536))
    ]
    return Capture(
        "openai",
        response=CaptureResponse(200, (("content-type", "text/event-stream"),), 0.05),
        reads=ReadLog(reads),
        end=CaptureEnd("eof", elapsed=reads[-1][0]),
    )


def best(runs: int, job: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return min(times)


def _process(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "streamscope", *args], capture_output=True, timeout=600
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"streamscope {args[0]} exited {done.returncode}: {done.stderr!r}")
    return seconds


def measure(frames: int = 1_000_000, runs: int = 3) -> dict[str, float]:
    """Best seconds of each row (for ``run_all.py``)."""
    cap = capture(frames)
    verdict = lint_capture(cap)
    assert verdict.findings == (), verdict.findings
    assert verdict.turn.text == "word " * frames
    result = {
        "replay (frames kept, as the window)": best(
            runs, lambda: asyncio.run(replay_capture(cap, keep_frames=True))
        ),
        "replay (no frames, as the CLI)": best(
            runs, lambda: asyncio.run(replay_capture(cap, keep_frames=False))
        ),
        "lint": best(runs, lambda: lint_capture(cap)),
    }
    del verdict
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sscap"
        with path.open("wb") as fp:
            dump_capture(cap, fp)
        replay_s = lint_s = float("inf")
        for _ in range(runs):  # interleaved: both see the same machine
            replay_s = min(replay_s, _process(["replay", str(path), "--json"]))
            lint_s = min(lint_s, _process(["lint", str(path), "--json"]))
    result["streamscope replay FILE --json (process)"] = replay_s
    result["streamscope lint FILE --json (process)"] = lint_s
    return result


def ratios(result: dict[str, float]) -> dict[str, float]:
    """lint ÷ the CLI's replay: in this process, end to end."""
    return {
        "in process": result["lint"] / result["replay (no frames, as the CLI)"],
        "end to end": result["streamscope lint FILE --json (process)"]
        / result["streamscope replay FILE --json (process)"],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.frames, args.runs)
    cli = result["replay (no frames, as the CLI)"]
    print(f"{args.frames:,} frames, best of {args.runs}")
    print(f"{'':44} {'seconds':>8} {'× CLI replay':>13}")
    for name, seconds in result.items():
        base = cli if "process" not in name else result["streamscope replay FILE --json (process)"]
        print(f"{name:44} {seconds:8.2f} {seconds / base:13.2f}")
    ok = True
    for where, ratio in ratios(result).items():
        good = ratio <= TARGET
        ok = ok and good
        print(f"lint / CLI replay, {where} = {ratio:.2f} (target <= {TARGET}): "
              f"{'ok' if good else 'SLOW'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
