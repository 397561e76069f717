"""Bench mode's acceptance figures: the load runner scored against the demo server's stamps.

    .venv/bin/python tests/benchmarks/bench_load.py [--quick]

Processes on loopback: the demo server (``streamscope demo-server``), the bench's load process
(started by :func:`streamscope.core.bench.session.run_bench`) and this one (replays and
scoring). ``demo-bench`` answers with TTFT 200 ms, ITL 20 ms, 64 tokens, no jitter; every frame
carries the server's send and due times and the response the request's arrival time (one
system-wide monotonic clock), so each figure is the client's against the server's:

- send lag = arrival - client send; first-token delivery lag = client read - server send;
  client error on TTFT = client TTFT - server TTFT = the two together;
- server pacing error = send - due per frame (the increment over c = 1 is the part the
  client's load causes);
- dispatch lag (send - scheduled), CPU of the load process, from the run's own report.

For our runner, TTFT and ITL are the run's own figures (``streamscope.core.bench.metrics``,
what the report and the window show); the errors against the server's stamps are scored
here from the same reads. Percentiles: ``streamscope.core.bench.percentiles.percentile``.

The server stamps ``demo_sent`` as it writes each chunk to its socket
(``streamscope.demo.stamping``); our runner's reads are stamped by the kernel as their bytes
reach its socket (``streamscope.core.bench.kernel_stamps``), and the run reports how late the
load process read them (read wake lag). For comparison, c = 16 also runs with reads stamped
in user space (``read_stamps="user"``, where ``data_received`` sees them: info rows).

The peer, measured in the same run: a shared-pool ``httpx.AsyncClient`` (every stream on one
client, in a process of its own, a read stamped as ``aiter_raw`` yields it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui import Row, check, info, print_table

from streamscope.core.bench.percentiles import percentile

MODEL = "demo-bench?ttft=200&itl=20&tokens=64"
_STAMP = re.compile(rb"demo_sent=(\d+\.\d+) demo_due=(\d+\.\d+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamscope", "demo-server", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the demo server did not start")


Sample = dict[str, Any]


def score(sent: float, arrived: float, reads: list[tuple[float, bytes]]) -> Sample | None:
    """One request's figures against the server's stamps (``None``: not a whole answer)."""
    tokens: list[tuple[float, float, float]] = []  # (read time, server sent, due)
    for t, data in reads:
        for s, d in _STAMP.findall(data):
            if float(d) != arrived:  # (the opening frames are due at arrival)
                tokens.append((t, float(s), float(d)))
    if len(tokens) < 64:
        return None
    first, last = tokens[0], tokens[63]
    client_ttft = first[0] - sent
    server_ttft = first[1] - arrived
    return {
        "ttft": client_ttft * 1000,
        "ttft_error": (client_ttft - server_ttft) * 1000,
        "send_lag": (arrived - sent) * 1000,
        "delivery": (first[0] - first[1]) * 1000,
        "itl": (last[0] - first[0]) / 63 * 1000,
        "pacing": [(s - d) * 1000 for _t, s, d in tokens[:64]],
    }


def _pct(values: list[float], p: float) -> float:
    """The run's percentile (numpy's linear), not hidden for few values: a check needs it."""
    return percentile(sorted(values), p)


async def _ours(
    base: str, c: int, n: int, warmup: int, read_stamps: str = "kernel"
) -> tuple[list[Sample], dict[str, Any]]:
    from streamscope.core.bench.load import LoadStep
    from streamscope.core.bench.metrics import RequestMetrics
    from streamscope.core.bench.session import BenchPlan, run_bench

    samples: list[Sample] = []

    def keep(_step: int, ex: Any, _capture: Any, m: RequestMetrics) -> None:
        arrived = dict(ex.headers).get("x-demo-arrived")
        if ex.warmup or arrived is None or ex.sent is None:
            return
        sample = score(ex.sent, float(arrived), ex.reads)
        if sample is not None and m.ttft is not None and m.itl is not None:
            sample["ttft"], sample["itl"] = m.ttft * 1000, m.itl * 1000  # (as reported)
            samples.append(sample)

    step = LoadStep(concurrency=c, requests=n, warmup=warmup, read_stamps=read_stamps)  # type: ignore[arg-type]
    plan = BenchPlan(base, MODEL, "openai", ["hello"], [step], max_tokens=None)
    report = await run_bench(plan, on_request=keep)
    return samples, report["steps"][0]


async def _peer_main(base: str, c: int, n: int) -> None:
    """The peer (in its own process): one shared httpx client, c workers, n requests."""
    import httpx

    body = {
        "model": MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
        "stream_options": {"include_usage": True},
    }
    out: list[dict[str, Any]] = []
    todo = iter(range(n))
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def worker() -> None:
            ready = time.monotonic()
            for _ in todo:
                sent = time.monotonic()
                reads = []
                async with client.stream("POST", base + "/chat/completions", json=body) as r:
                    async for chunk in r.aiter_raw():
                        reads.append((time.monotonic(), chunk.decode("latin-1")))
                    arrived = float(r.headers["x-demo-arrived"])
                out.append({"ready": ready, "sent": sent, "arrived": arrived, "reads": reads})
                ready = time.monotonic()

        await asyncio.gather(*(worker() for _ in range(c)))
    json.dump(out, sys.stdout)


def _peer(base: str, c: int, n: int) -> tuple[list[Sample], list[float]]:
    cmd = [sys.executable, __file__, "--peer", base, str(c), str(n)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    samples, lags = [], []
    for item in json.loads(result.stdout):
        reads = [(t, d.encode("latin-1")) for t, d in item["reads"]]
        sample = score(item["sent"], item["arrived"], reads)
        if sample is not None:
            samples.append(sample)
        lags.append((item["sent"] - item["ready"]) * 1000)
    return samples, lags


def _rows(name: str, samples: list[Sample], step: dict[str, Any] | None, c: int) -> list[Row]:
    pacing = [x for s in samples for x in s["pacing"]]
    rows = [
        info(name, "requests scored", str(len(samples))),
        check(
            name,
            "client error on TTFT, median",
            statistics.median(s["ttft_error"] for s in samples),
            2.0,
            ".2f",
            " ms",
        ),
        check(
            name, "TTFT median", statistics.median(s["ttft"] for s in samples), 203, ".1f", " ms"
        ),
        info(
            name, "send lag median", f"{statistics.median(s['send_lag'] for s in samples):.2f} ms"
        ),
        info(name, "server pacing error median", f"{statistics.median(pacing):.2f} ms"),
    ]
    itl = statistics.median(s["itl"] for s in samples)
    rows.append(Row(name, "ITL median", f"{itl:.2f} ms", "20 ± 0.2 ms", abs(itl - 20) <= 0.2))
    delivery = [s["delivery"] for s in samples]
    if c >= 16:
        ttft = [s["ttft"] for s in samples]
        rows += [
            check(name, "TTFT p99", _pct(ttft, 99), 212, ".1f", " ms"),
            check(name, "first-token delivery lag p50", _pct(delivery, 50), 0.3, ".3f", " ms"),
            check(name, "first-token delivery lag p99", _pct(delivery, 99), 1.0, ".3f", " ms"),
        ]
    if step is not None:
        lag = step["summary"]["dispatch_lag"]
        limit = 5.0 if c <= 16 else 15.0
        lag99 = _pct([r["dispatch_lag_ms"] for r in step["requests"] if not r["warmup"]], 99)
        rows.append(check(name, "dispatch lag p99", lag99, limit, ".2f", " ms"))
        rows.append(info(name, "dispatch lag max", f"{lag['max']:.2f} ms"))
        runner = step["runner"]
        rows.append(info(name, "loop lag p99", f"{runner['loop_lag_p99_ms']:.2f} ms"))
        rows.append(info(name, "read stamps", runner["read_stamps"]))
        if runner["read_wake_lag_p50_ms"] is not None:
            wake = f"{runner['read_wake_lag_p50_ms']:.3f} / {runner['read_wake_lag_p99_ms']:.3f} ms"
            rows.append(info(name, "read wake lag p50 / p99 (all reads)", wake))
        if c == 16:
            rows.append(check(name, "client CPU (load process)", runner["cpu_s"], 1.0, ".2f", " s"))
    return rows


def measure(quick: bool = False) -> list[Row]:
    proc, base = _start_server()
    rows: list[Row] = []
    try:
        asyncio.run(_ours(base, 1, 2, 0))  # (the server's first requests import things)
        medians: dict[int, float] = {}
        for c, n in ((1, 8 if quick else 20), (16, 64), (64, 128)):
            samples, step = asyncio.run(_ours(base, c, n, warmup=c))
            medians[c] = statistics.median(x for s in samples for x in s["pacing"])
            rows += _rows(f"bench load c={c} (ours)", samples, step, c)
        rows.append(
            check(
                "bench load c=16 (ours)",
                "server pacing error caused by the client, median",
                medians[16] - medians[1],
                0.5,
                ".2f",
                " ms",
            )
        )
        samples, step = asyncio.run(_ours(base, 16, 64, warmup=16, read_stamps="user"))
        name = "bench load c=16 (ours, user-space read stamps)"
        delivery = [s["delivery"] for s in samples]
        rows += [
            info(name, "first-token delivery lag p50", f"{_pct(delivery, 50):.3f} ms"),
            info(name, "first-token delivery lag p99", f"{_pct(delivery, 99):.3f} ms"),
            info(name, "TTFT median", f"{statistics.median(s['ttft'] for s in samples):.1f} ms"),
            info(name, "client CPU (load process)", f"{step['runner']['cpu_s']:.2f} s"),
        ]
        for c in (16, 64):
            samples, lags = _peer(base, c, 64 if c == 16 else 128)
            name = f"bench load c={c} (shared-pool httpx)"
            rows += _rows(name, samples, None, c)
            rows.append(info(name, "dispatch lag p99", f"{_pct(lags, 99):.2f} ms"))
    finally:
        proc.terminate()
        proc.wait(10)
    return rows


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--peer":
        asyncio.run(_peer_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    rows = measure(parser.parse_args().quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
