"""Lint benchmark: a capture of N OpenAI content frames (default 1,000,000, ~150 MB), linted
against its instant replay, in the same process and run.

    .venv/bin/python tests/benchmarks/bench_lint.py [--frames N] [--runs R]

Rows: the instant replay the window does (frames kept, for the Frames tab), the CLI's
replay (no frames kept), and ``lint`` (the pipeline with frames, then every rule).
Target: lint <= 1.5x the window's instant replay.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.capture.replay import replay_capture
from streamscope.lint import lint_capture

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


def measure(frames: int = 1_000_000, runs: int = 3) -> dict[str, float]:
    cap = capture(frames)
    verdict = lint_capture(cap)
    assert verdict.findings == (), verdict.findings
    assert verdict.turn.text == "word " * frames
    return {
        "replay (frames kept, as the window)": best(
            runs, lambda: asyncio.run(replay_capture(cap, keep_frames=True))
        ),
        "replay (no frames, as the CLI)": best(
            runs, lambda: asyncio.run(replay_capture(cap, keep_frames=False))
        ),
        "lint": best(runs, lambda: lint_capture(cap)),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.frames, args.runs)
    window = result["replay (frames kept, as the window)"]
    print(f"{'':40} {'seconds':>8} {'× window replay':>16}")
    for name, seconds in result.items():
        print(f"{name:40} {seconds:8.2f} {seconds / window:16.2f}")
    ratio = result["lint"] / window
    print(
        f"lint / instant replay = {ratio:.2f} (target <= 1.5): {'ok' if ratio <= 1.5 else 'SLOW'}"
    )
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
