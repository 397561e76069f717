"""The window while its tap records a firehose: the window's worst stall must stay ≤ 50 ms.

    .venv/bin/python tests/benchmarks/bench_tap_window.py [--quick]

Four processes on loopback: the upstream of ``bench_tap.py`` (its ``/firehose``: SSE frames
as fast as uvicorn sends them), the real window (offscreen, in a fresh process: ``--case``)
tapping it (Endpoint → Tap another app…, on port 0) with the Tapped list shown and the
exchange open in the inspector, live, and a client process reading the firehose through the
tap. A 5 ms probe timer on the window's event loop runs from before the firehose starts until
the window shows the exchange as completed; its lateness is the window's stall. Peers in the
same run: the same probe on the idle window (before the firehose), and the same client
reading the firehose straight from the upstream (time through the tap ÷ direct).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui import Row, StallProbe, _isolate, _qt_app, check, info, print_table
from bench_tap import _start, _stop

HERE = Path(__file__).resolve()
BENCH_TAP = HERE.parent / "bench_tap.py"
IDLE_S = 1.0


def client(url: str) -> None:
    """Read the firehose at ``url``; print the seconds it took and the bytes."""
    import httpx

    with httpx.Client(timeout=300) as c:
        t0 = time.perf_counter()
        size = 0
        with c.stream("GET", url) as response:
            for chunk in response.iter_raw():
                size += len(chunk)
        print(json.dumps({"seconds": time.perf_counter() - t0, "bytes": size}))


def _client(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HERE), "--client", url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ},
    )


def case(upstream: str, frames: int) -> dict[str, Any]:
    """In a fresh process: the window, its tap, the probe; the figures as JSON."""
    _isolate()
    from streamscope.ui.shell.main_window import MainWindow

    _app, collector, loop = _qt_app()
    window = MainWindow()
    window.show()
    probe = StallProbe()
    out: dict[str, Any] = {}

    async def run() -> None:
        await asyncio.sleep(1.0)  # (the window has painted)
        tap = window.tap
        window.tapped_dock.show()
        panel = window.tap_panel
        tap.start(upstream, 0)
        while not tap.running:
            assert not tap.error, tap.error
            await asyncio.sleep(0.02)
        assert tap.server is not None
        url = f"{tap.server.root_url}/firehose?n={frames}"
        probe.start()  # the idle window first (the peer)
        await asyncio.sleep(IDLE_S)
        out["idle"] = probe.stop()
        probe.start()
        t0 = time.perf_counter()
        proc = _client(url)
        while not tap.exchanges:
            await asyncio.sleep(0.005)
        item = tap.exchanges[0]
        t_show = time.perf_counter()
        assert tap.show(item)  # the exchange open in the inspector, live
        out["show_ms"] = (time.perf_counter() - t_show) * 1000
        out["show_at"] = t_show - t0
        while item.result is None:
            await asyncio.sleep(0.02)
        out["shown_s"] = time.perf_counter() - t0
        out["loaded"] = probe.stop()
        stdout, _ = await asyncio.to_thread(proc.communicate)
        out["client"] = json.loads(stdout)
        out["frames_shown"] = window.inspector.frames_model.rowCount()
        out["frames"] = item.result.frames
        out["outcome"] = item.result.outcome
        out["rows"] = panel.texts()
        out["big_stalls"] = [
            (round(t - t0, 3), round(late, 1)) for t, late in probe.ticks if late > 20
        ]
        tap.stop_and_wait()
        await window.shutdown()

    loop.run_until_complete(run())
    collector.stop()
    return out


def measure(quick: bool = False) -> list[Row]:
    frames = 200_000 if quick else 1_000_000
    app_dir = HERE.parents[2] / "app"
    env = {**os.environ, "PYTHONPATH": str(app_dir)}
    with tempfile.TemporaryDirectory(prefix="bench-tap-window-") as tmp:
        env["STREAMSCOPE_HOME"] = tmp
        port_file = Path(tmp) / "port"
        upstream = _start([sys.executable, str(BENCH_TAP), "--upstream", str(port_file)], env)
        try:
            deadline = time.monotonic() + 20
            while not port_file.exists() or not port_file.read_text():
                assert time.monotonic() < deadline, "the upstream did not start"
                time.sleep(0.02)
            direct = f"http://127.0.0.1:{port_file.read_text()}"
            done = subprocess.run(
                [sys.executable, str(HERE), "--client", f"{direct}/firehose?n={frames}"],
                capture_output=True,
                text=True,
                timeout=300,
                check=True,
                env=env,
            )
            direct_s = json.loads(done.stdout)["seconds"]
            out = subprocess.run(
                [sys.executable, str(HERE), "--case", direct, str(frames)],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
                env=env,
            )
            if out.returncode != 0:
                raise RuntimeError(f"the case failed:\n{out.stderr[-4000:]}")
        finally:
            _stop(upstream)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if os.environ.get("BENCH_WINDOW_DEBUG"):
        print("stalls over 20 ms (s after the firehose, ms):", result["big_stalls"])
        print(f"shown at {result['show_at']:.3f} s, show took {result['show_ms']:.1f} ms")
    loaded, idle = result["loaded"], result["idle"]
    tapped_s = result["client"]["seconds"]
    name = f"window tap: firehose {frames:,} frames (shown live)"
    worst, idle_worst = loaded["stall_max_ms"], idle["stall_max_ms"]
    outcome, frames_, shown = result["outcome"], result["frames"], result["frames_shown"]
    return [
        info(name, "outcome / frames / frames shown", f"{outcome} / {frames_:,} / {shown:,}"),
        check(name, "window worst stall", worst, 50, ".1f", " ms"),
        info(name, "window stall p99", f"{loaded['stall_p99_ms']:.1f} ms"),
        info(name, "idle window worst stall (peer)", f"{idle_worst:.1f} ms"),
        info(name, "worst stall / idle's", f"{worst / max(idle_worst, 0.1):.1f}x"),
        info(name, "client via tap / direct", f"{tapped_s:.2f} s / {direct_s:.2f} s"),
        info(name, "via tap ÷ direct (time)", f"{tapped_s / direct_s:.2f}x"),
        info(name, "shown completed after", f"{result['shown_s']:.2f} s"),
    ]


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--client":
        client(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print(json.dumps(case(sys.argv[2], int(sys.argv[3]))), flush=True)
        os._exit(0)  # (not Qt's teardown of the window's threads: the figures are out)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a shorter firehose")
    args = parser.parse_args()
    rows = measure(args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
