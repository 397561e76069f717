"""The Bench window under its acceptance load: c = 16, 64 requests (16 warm-up) of
``demo-bench`` (TTFT 200 ms, ITL 20 ms, 64 tokens) with the window open and plotting, a 5 ms
probe timer on its event loop. The window's worst stall must stay ≤ 50 ms, and the run's
figures — scored from the captures the window kept against the demo's own stamps — must be
those of the headless run (``bench_load.py``).

    .venv/bin/python tests/benchmarks/bench_window_load.py

The case runs in a fresh process (``--case``); the demo server runs in another.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui import Row, StallProbe, _isolate, check, info, print_table
from bench_load import MODEL, _pct, _start_server, score


def case(base: str) -> dict[str, Any]:
    """In a fresh process: the window, a run, the probe; the figures as JSON."""
    _isolate()
    from PySide6.QtWidgets import QApplication

    from streamscope.core.capture.format import read_capture
    from streamscope.ui.base.event_loop import AppLoop
    from streamscope.ui.bench.bench_window import BenchTarget, BenchWindow
    from streamscope.ui.shell.app import SWITCH_INTERVAL_S
    from streamscope.ui.shell.gc_guard import MainThreadCollector

    sys.setswitchinterval(SWITCH_INTERVAL_S)  # (as run_app sets it)
    app = QApplication([])
    collector = MainThreadCollector()
    loop = AppLoop(app)
    asyncio.set_event_loop(loop)

    async def target() -> BenchTarget:
        return BenchTarget("demo", base, "openai", None)

    runs = Path(os.environ["STREAMSCOPE_HOME"]) / "bench"
    window = BenchWindow(target=target, open_at=lambda p, f: None, runs_dir=runs, model=MODEL)
    window.settings.concurrency.setValue(16)
    window.settings.requests.setValue(64)
    window.settings.warmup.setValue(16)
    window.show()
    probe = StallProbe()

    async def go() -> dict[str, Any]:
        await asyncio.sleep(0.5)  # (the window has painted)
        ended: list[bool] = []
        window.finished.connect(lambda: ended.append(True))
        probe.start()
        t0 = time.perf_counter()
        window.start()
        while not ended:
            await asyncio.sleep(0.05)
        stalls = probe.stop()
        assert window.report is not None and window.run_dir is not None
        step = window.report["steps"][0]
        samples = []
        for f in window.data.rows:
            m = f.metrics
            if m.warmup or not m.capture:
                continue
            capture = read_capture(window.run_dir / m.capture)
            arrived = capture.response.header("x-demo-arrived") if capture.response else None
            if arrived is None:
                continue
            reads = [(m.sent_at + t, data) for t, data in capture.reads]
            sample = score(m.sent_at, float(arrived), reads)
            if sample is not None and m.ttft is not None and m.itl is not None:
                sample["ttft"], sample["itl"] = m.ttft * 1000, m.itl * 1000
                samples.append(sample)
        return {
            "big_stalls": [
                (round(t - t0, 3), round(late, 1)) for t, late in probe.ticks if late > 20
            ],
            "stalls": stalls,
            "worst_paint_ms": window.worst_paint_ms,
            "rows": len(window.data.rows),
            "samples": samples,
            "step": step,
        }

    try:
        result = loop.run_until_complete(go())
    finally:
        window.close()
        del collector
    return result


def measure() -> list[Row]:
    proc, base = _start_server()
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--case", base],
            capture_output=True,
            timeout=300,
            check=True,
        )
    finally:
        proc.terminate()
        proc.wait(10)
    result = json.loads(out.stdout.decode().strip().splitlines()[-1])
    if os.environ.get("BENCH_WINDOW_DEBUG"):
        print("stalls over 20 ms (s after Start, ms):", result["big_stalls"], file=sys.stderr)
    samples = result["samples"]
    step = result["step"]
    name = "bench window c=16 (plotting)"
    ttft = [s["ttft"] for s in samples]
    lags = [r["dispatch_lag_ms"] for r in step["requests"] if not r["warmup"]]
    itl = statistics.median(s["itl"] for s in samples)
    return [
        info(name, "requests measured / scored", f"{result['rows']} / {len(samples)}"),
        check(name, "window worst stall", result["stalls"]["stall_max_ms"], 50, ".1f", " ms"),
        info(name, "window stall p99", f"{result['stalls']['stall_p99_ms']:.1f} ms"),
        info(name, "slowest paint", f"{result['worst_paint_ms']:.1f} ms"),
        check(
            name,
            "client error on TTFT, median",
            statistics.median(s["ttft_error"] for s in samples),
            2.0,
            ".2f",
            " ms",
        ),
        check(name, "TTFT median", statistics.median(ttft), 203, ".1f", " ms"),
        check(name, "TTFT p99", _pct(ttft, 99), 212, ".1f", " ms"),
        Row(name, "ITL median", f"{itl:.2f} ms", "20 ± 0.2 ms", abs(itl - 20) <= 0.2),
        check(name, "dispatch lag p99", _pct(lags, 99), 5.0, ".2f", " ms"),
        check(name, "client CPU (load process)", step["runner"]["cpu_s"], 1.0, ".2f", " s"),
    ]


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        print(json.dumps(case(sys.argv[2])))
        return 0
    rows = measure()
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
