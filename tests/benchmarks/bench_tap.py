"""The tap's cost: added latency per forwarded read and firehose throughput, tap ÷ direct.

    .venv/bin/python tests/benchmarks/bench_tap.py [--quick]

Three processes on loopback: an upstream (Starlette under uvicorn, this file with
``--upstream``) that stamps each SSE frame with ``time.monotonic()`` as it writes it, the tap
(``streamscope tap``, recording into a temporary profile) and this process as the client
(httpx). A read's latency is its arrival time minus its stamp (one system-wide monotonic
clock); the table shows it direct and through the tap, on a new connection per stream and on
one reused keep-alive connection, at 100 reads/s. The firehose is the same upstream sending
frames as fast as it can; throughput through the tap ÷ direct, measured in the same run
(medians of five interleaved runs each), with the CPU seconds each process spent on it. A
third client, async httpx reading the firehose straight from the upstream, shows the
ceiling of any forwarder that reads its upstream with async httpx (as the tap's does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gui import Row, check, info, print_table

TAP = [sys.executable, "-m", "streamscope", "tap"]
FRAME_PAD = b"x" * 60
FIREHOSE_CHUNK_FRAMES = 32
FIREHOSE_REPEATS = 5


def _frame(i: int) -> bytes:
    return b'data: {"i":%d,"t":%r,"pad":"%s"}\n\n' % (i, time.monotonic(), FRAME_PAD)


def serve_upstream(port_file: str) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    async def paced(request: Request) -> StreamingResponse:
        n = int(request.query_params.get("n", "50"))
        gap = float(request.query_params.get("gap", "0.01"))

        async def body() -> AsyncIterator[bytes]:
            for i in range(n):
                if i:
                    await asyncio.sleep(gap)
                yield _frame(i)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def firehose(request: Request) -> StreamingResponse:
        n = int(request.query_params.get("n", "100000"))

        async def body() -> AsyncIterator[bytes]:
            chunk = b"".join(
                b'data: {"choices":[{"delta":{"content":"tok%d "}}]}\n\n' % i
                for i in range(FIREHOSE_CHUNK_FRAMES)
            )
            for _ in range(n // FIREHOSE_CHUNK_FRAMES):
                yield chunk
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/paced", paced), Route("/firehose", firehose)])
    from streamscope.core.tap.server import bind_nodelay

    sock = bind_nodelay("127.0.0.1", 0)  # as a real server does (nginx, uvicorn with its own)
    Path(port_file).write_text(str(sock.getsockname()[1]))
    config = uvicorn.Config(app, log_level="warning", lifespan="off", loop="asyncio")
    uvicorn.Server(config).run(sockets=[sock])


def _start(cmd: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


class _Recorded:
    """The tap's ``--json`` lines as they come (each: an exchange recorded and indexed)."""

    def __init__(self, stdout: IO[str]) -> None:
        self.lines: list[tuple[float, dict[str, Any]]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, args=(stdout,), daemon=True).start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            with self._cond:
                self.lines.append((time.perf_counter(), json.loads(line)))
                self._cond.notify_all()

    def wait(self, count: int, timeout: float = 300) -> tuple[float, dict[str, Any]]:
        """When the ``count``-th exchange was recorded (``perf_counter``), and its line."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.lines) >= count, timeout):
                raise RuntimeError(f"the tap recorded {len(self.lines)} exchanges, not {count}")
            return self.lines[count - 1]


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _children(pid: int) -> list[int]:
    """``pid``'s child processes (Linux; ``[]`` elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.parent.name))
    return found


def _cpu(pids: dict[str, int | None]) -> dict[str, float]:
    """CPU seconds (user + system) so far of each process (``None``: this one)."""
    out: dict[str, float] = {}
    for name, pid in pids.items():
        if pid is None:
            out[name] = time.process_time()
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def _add(
    into: dict[str, list[float]], run: str, now: dict[str, float], then: dict[str, float]
) -> None:
    for name, value in now.items():
        if name in then:
            into.setdefault(f"{run}:{name}", []).append(value - then[name])


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _latencies(base: str, streams: int, reads: int, *, reuse: bool) -> list[float]:
    """Every read's latency, stream after stream (``reads`` each)."""
    import httpx

    out: list[float] = []
    shared = httpx.Client(timeout=30) if reuse else None
    try:
        for _ in range(streams):
            client = shared or httpx.Client(timeout=30)
            try:
                url = f"{base}/paced?n={reads}&gap=0.01"
                with client.stream("GET", url) as response:
                    for chunk in response.iter_raw():
                        now = time.monotonic()
                        for stamp in re.findall(rb'"t":([0-9.e+-]+)', chunk):
                            out.append((now - float(stamp)) * 1000)
            finally:
                if shared is None:
                    client.close()
    finally:
        if shared is not None:
            shared.close()
    return out


def _firehose_seconds(base: str, frames: int) -> tuple[float, int]:
    import httpx

    with httpx.Client(timeout=120) as client:
        t0 = time.perf_counter()
        size = 0
        with client.stream("GET", f"{base}/firehose?n={frames}") as response:
            for chunk in response.iter_raw():
                size += len(chunk)
        return time.perf_counter() - t0, size


def _firehose_seconds_async(base: str, frames: int) -> float:
    """The firehose read by async httpx (as the tap's forwarder reads its upstream)."""
    import httpx

    async def read() -> float:
        async with httpx.AsyncClient(timeout=120) as client:
            t0 = time.perf_counter()
            async with client.stream("GET", f"{base}/firehose?n={frames}") as response:
                async for _chunk in response.aiter_raw():
                    pass
            return time.perf_counter() - t0

    return asyncio.run(read())


def measure(quick: bool = False) -> list[Row]:
    here = Path(__file__).resolve()
    app_dir = here.parents[2] / "app"
    env = {**os.environ, "PYTHONPATH": str(app_dir)}
    with tempfile.TemporaryDirectory(prefix="bench-tap-") as tmp:
        env["STREAMSCOPE_HOME"] = tmp
        port_file = Path(tmp) / "port"
        upstream = _start([sys.executable, str(here), "--upstream", str(port_file)], env)
        tap: subprocess.Popen[str] | None = None
        try:
            deadline = time.monotonic() + 20
            while not port_file.exists() or not port_file.read_text():
                assert time.monotonic() < deadline, "the upstream did not start"
                time.sleep(0.02)
            direct = f"http://127.0.0.1:{port_file.read_text()}"
            tap = _start(
                [*TAP, "--upstream", direct, "--listen", "127.0.0.1:0", "--json"],
                env,
            )
            assert tap.stderr is not None and tap.stdout is not None
            recorded = _Recorded(tap.stdout)
            banner = ""
            for line in tap.stderr:
                banner += line
                if line.startswith("Press Ctrl-C"):
                    break
            found = re.search(r"listening on (http://\S+)", banner)
            assert found, banner
            tapped = found.group(1)
            streams, reads = (2, 50) if quick else (4, 100)
            rows: list[Row] = []
            name = f"tap: latency per read ({streams}×{reads} reads at 100/s)"
            for reuse in (False, True):
                conn = "reused conn" if reuse else "new conn"
                for label, base in (("direct", direct), ("via tap", tapped)):
                    lat = _latencies(base, streams, reads, reuse=reuse)
                    p50, p99 = statistics.median(lat), _percentile(lat, 0.99)
                    if label == "direct":
                        rows.append(
                            info(name, f"{conn} direct p50 / p99", f"{p50:.2f} / {p99:.2f} ms")
                        )
                        base_p50 = p50
                    else:
                        rows.append(info(name, f"{conn} via tap p50", f"{p50:.2f} ms"))
                        rows.append(check(name, f"{conn} via tap p99", p99, 2.0, ".2f", " ms"))
                        rows.append(info(name, f"{conn} added p50", f"{p50 - base_p50:.2f} ms"))
                        firsts = lat[::reads]  # (each stream's first read: the head's too)
                        rows.append(
                            info(name, f"{conn} first reads via tap", f"{max(firsts):.2f} ms max")
                        )
                        rest = [v for i, v in enumerate(lat) if i % reads]
                        rows.append(
                            info(
                                name,
                                f"{conn} via tap p99, later reads",
                                f"{_percentile(rest, 0.99):.2f} ms",
                            )
                        )
            frames = 100_000 if quick else 400_000
            fh = f"tap: firehose ({frames:,} frames)"
            exchanges = 2 * streams  # (the latency streams through the tap, one line each)
            _firehose_seconds(direct, 10_000)  # warm both paths
            _firehose_seconds(tapped, 10_000)
            exchanges += 1
            recorded.wait(exchanges)
            directs: list[float] = []
            taps: list[float] = []
            asyncs: list[float] = []
            behind: list[float] = []
            # Who spends the CPU, per upstream read (Linux: /proc), direct and via the tap.
            who = {"upstream": upstream.pid, "client": None}
            forwarders = _children(tap.pid)
            cpu: dict[str, list[float]] = {}
            for _ in range(FIREHOSE_REPEATS):  # interleaved: a busy moment hits both alike
                before = _cpu(who)
                t, size = _firehose_seconds(direct, frames)
                directs.append(t)
                _add(cpu, "direct", _cpu(who), before)
                asyncs.append(_firehose_seconds_async(direct, frames))
                tapping = who | {"recording": tap.pid}  # (the tap, and its forwarding child)
                if forwarders:
                    tapping["forwarder"] = forwarders[0]
                before = _cpu(tapping)
                t, size_tap = _firehose_seconds(tapped, frames)
                streamed = time.perf_counter()
                taps.append(t)
                assert size == size_tap, (size, size_tap)
                # The recording may finish after the client has all the bytes; the next
                # direct run starts once it has (or it would share the CPU with it).
                exchanges += 1
                at, line = recorded.wait(exchanges)
                assert (line["outcome"], line["frames"]) == ("completed", frames + 1), line
                behind.append(max(0.0, at - streamed))
                _add(cpu, "via tap", _cpu(tapping), before)
            t_direct, t_tap = statistics.median(directs), statistics.median(taps)
            reads = frames / FIREHOSE_CHUNK_FRAMES
            for run in ("direct", "via tap"):
                spent = [
                    f"{name} {statistics.median(v) / reads * 1e6:.1f}"
                    for key, v in cpu.items()
                    if key.startswith(run + ":")
                    for name in [key.split(":", 1)[1]]
                ]
                if spent:
                    rows.append(info(fh, f"CPU per read {run} (µs)", " / ".join(spent)))
                seconds = [
                    f"{key.split(':', 1)[1]} {statistics.median(v):.2f}"
                    for key, v in cpu.items()
                    if key.startswith(run + ":")
                ]
                if seconds:
                    rows.append(info(fh, f"CPU s per firehose {run}", " / ".join(seconds)))
            rows.append(info(fh, "direct", f"{size / t_direct / 1e6:.1f} MB/s"))
            rows.append(info(fh, "via tap", f"{size / t_tap / 1e6:.1f} MB/s"))
            rows.append(
                info(fh, "recording done after the client's", f"{statistics.median(behind):.2f} s")
            )
            ceiling = t_direct / statistics.median(asyncs)
            rows.append(info(fh, "async httpx alone ÷ direct (a ceiling)", f"{ceiling:.2f}x"))
            ratio = t_direct / t_tap
            rows.append(Row(fh, "tap ÷ direct", f"{ratio:.2f}x", ">= 0.80x", ratio >= 0.8))
            return rows
        finally:
            if tap is not None:
                _stop(tap)
            _stop(upstream)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--upstream", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.upstream:
        serve_upstream(args.upstream)
        return 0
    rows = measure(args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
