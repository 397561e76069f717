"""Headless pipeline benchmark: 100,000 OpenAI deltas (~19 MB) over loopback.

    .venv/bin/python tests/benchmarks/bench_pipeline.py [--deltas N] [--runs R]

Times whole processes, in the same run, against the demo server's `demo-firehose` scenario:
  - `streamscope send --json` (the whole pipeline, raw-frame capture on),
  - the official `openai` SDK consuming the same stream,
  - a bare httpx read of the body with no parsing (the floor).
Targets: ours <= 0.1x the SDK's time and <= 4x the bare read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from streamscope.demo.server import DemoServer

SDK = """
import sys, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key="sk-bench", max_retries=0)
n = 0
stream = client.chat.completions.create(model="demo-firehose", max_tokens=int(sys.argv[2]),
    messages=[{"role": "user", "content": "go"}], stream=True)
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        n += 1
print(n)
"""

BARE = """
import sys, httpx
body = {"model": "demo-firehose", "max_tokens": int(sys.argv[2]), "stream": True,
        "messages": [{"role": "user", "content": "go"}]}
n = 0
with httpx.Client(timeout=60) as c, c.stream("POST", sys.argv[1] + "/chat/completions",
                                             json=body) as r:
    for chunk in r.iter_raw():
        n += len(chunk)
print(n)
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, result.stdout


def measure(deltas: int = 100_000, runs: int = 3) -> dict[str, float]:
    """Best whole-process seconds per peer (for ``run_all.py``)."""
    return _run(deltas, runs)[0]


def _run(deltas: int, runs: int) -> tuple[dict[str, float], int, int]:
    with DemoServer(speed=1000) as server:
        base = server.base_url("openai")
        n = str(deltas)
        ours_cmd = [
            sys.executable,
            "-m",
            "streamscope",
            "send",
            "--base-url",
            base,
            "--model",
            "demo-firehose",
            "--max-tokens",
            n,
            "--json",
            "go",
        ]
        peers = {
            "streamscope send --json": ours_cmd,
            "openai SDK": [sys.executable, "-c", SDK, base, n],
            "bare httpx read": [sys.executable, "-c", BARE, base, n],
        }
        best: dict[str, float] = {}
        size = body_bytes = 0
        for _ in range(runs):
            for name, cmd in peers.items():
                seconds, out = timed(cmd)
                best[name] = min(best.get(name, seconds), seconds)
                if name.startswith("streamscope"):
                    result = json.loads(out)
                    assert result["outcome"] == "completed", result["reason"]
                    assert result["events"] >= deltas, result["events"]
                    size = len(result["text"])
                elif name == "openai SDK":
                    assert int(out) == deltas, out
                else:
                    body_bytes = int(out)
    return best, size, body_bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    best, size, body_bytes = _run(args.deltas, args.runs)
    ours = best["streamscope send --json"]
    print(
        f"{args.deltas} deltas, {body_bytes / 1e6:.1f} MB body, text {size / 1e6:.2f} MB, "
        f"best of {args.runs} (whole processes, incl. interpreter start)"
    )
    print(f"{'peer':28} {'seconds':>8}")
    for name, seconds in best.items():
        print(f"{name:28} {seconds:8.2f}")
    sdk, bare = best["openai SDK"], best["bare httpx read"]
    print(f"ours / SDK  = {ours / sdk:.3f}x  (target <= 0.1x)")
    print(f"ours / bare = {ours / bare:.2f}x  (target <= 4x)")


if __name__ == "__main__":
    main()
