"""Headless pipeline benchmark: 100,000 OpenAI deltas (~19 MB) over loopback.

    .venv/bin/python tests/benchmarks/bench_pipeline.py [--deltas N] [--runs R]

Times whole processes, in the same run, against the demo server's `demo-firehose` scenario:
  - `streamscope send --json` (the whole pipeline, raw-frame capture on),
  - the official `openai` SDK consuming the same stream,
  - a bare httpx read of the body with no parsing (the floor).
Targets: ours <= 0.1x the SDK's time and <= 4x the bare read.

Then frames that are not JSON at all: a body of ``data: x`` frames (default 64 MB, ~7.5 M
frames) written to a file, replayed by ``streamscope replay FILE --json`` against a 30-line
pure-Python loop that cuts the same SSE with ``bytes.find`` and parses each payload with orjson
(whole processes, interleaved), and the same loop with our first-byte check (a payload that
cannot start JSON is not parsed). Targets: ours <= 2x the loop, and under 10 s at 64 MB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


NONJSON_FRAME = b"data: x\n\n"

LOOP = """
import sys, orjson
body, FIRST_BYTE = open(sys.argv[1], "rb").read(), sys.argv[2] == "1"
loads, bad_json = orjson.loads, orjson.JSONDecodeError
find = body.find
pos = events = malformed = 0
while True:
    end = find(b"\\n\\n", pos)
    if end < 0:
        break
    block, pos = body[pos:end], end + 2
    data = []
    for line in block.split(b"\\n"):
        if line[:5] == b"data:":
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
    if not data:
        continue
    events += 1
    payload = b"\\n".join(data)
    if payload == b"[DONE]":
        continue
    if FIRST_BYTE and payload[:1] not in b' \\t\\r\\n{["-0123456789tfn':
        malformed += 1
        continue
    try:
        loads(payload)
    except bad_json:
        malformed += 1
print(events, malformed)
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


def measure_nonjson(megabytes: int = 64, runs: int = 3) -> dict[str, float]:
    """Best whole-process seconds of the replay of ``megabytes`` of ``data: x`` frames and of
    the pure-Python loop (for ``run_all.py``); ``frames`` is their count."""
    frames = megabytes * 1024 * 1024 // len(NONJSON_FRAME)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nonjson.sse"
        path.write_bytes(NONJSON_FRAME * frames)
        ours_cmd = [sys.executable, "-m", "streamscope", "replay", str(path), "--json"]
        loop_cmd = [sys.executable, "-c", LOOP, str(path), "0"]
        checked_cmd = [sys.executable, "-c", LOOP, str(path), "1"]
        ours = loop = checked = float("inf")
        for _ in range(runs):  # interleaved: all see the same machine
            start = time.perf_counter()
            done = subprocess.run(ours_cmd, capture_output=True, text=True, timeout=900)
            ours = min(ours, time.perf_counter() - start)
            result = json.loads(done.stdout)
            assert result["events"] == frames, (result["events"], frames)
            for cmd in (loop_cmd, checked_cmd):
                seconds, out = timed(cmd)
                assert out.split() == [str(frames), str(frames)], out
                if cmd is loop_cmd:
                    loop = min(loop, seconds)
                else:
                    checked = min(checked, seconds)
    return {
        "streamscope replay FILE --json": ours,
        "pure-Python loop": loop,
        "pure-Python loop, first-byte check": checked,
        "frames": frames,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nonjson-mb", type=int, default=64, help="0: skip that part")
    parser.add_argument("--skip-firehose", action="store_true")
    args = parser.parse_args()
    if args.nonjson_mb:
        nonjson = measure_nonjson(args.nonjson_mb, args.runs)
        ours, loop = nonjson["streamscope replay FILE --json"], nonjson["pure-Python loop"]
        print(f"{args.nonjson_mb} MB of data: x ({nonjson['frames']:,.0f} frames), "
              f"best of {args.runs} (whole processes)")  # fmt: skip
        print(f"{'streamscope replay FILE --json':32} {ours:8.2f}")
        print(f"{'pure-Python loop':32} {loop:8.2f}")
        checked = nonjson["pure-Python loop, first-byte check"]
        label = "  the same, first-byte check"
        print(f"{label:32} {checked:8.2f}  (ours / it = {ours / checked:.2f}x)")
        print(f"ours / loop = {ours / loop:.2f}x  (target <= 2x; under 10 s at 64 MB)\n")
    if args.skip_firehose:
        return
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
