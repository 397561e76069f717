"""`streamscope serve` at speed 1: how far from its recorded offset each read arrives.

    .venv/bin/python tests/benchmarks/bench_serve.py

A capture of 400 reads (gaps of 1, 5 and 20 ms in turn, ~3 s) is served by
``streamscope serve`` in a process of its own; a raw socket client in this process stamps
each chunk as the ``recv`` that completes it returns, and compares its offset from the request
with the recorded one. Target (issue 26): p99 within 2 ms on loopback. Prints one line per
figure; ``measure()`` returns them for a table.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from support.serve_client import ask, capture, frame, save  # noqa: E402

READS = 400
GAPS = (0.001, 0.005, 0.020)


def _reads() -> list[tuple[float, bytes]]:
    t, out = 0.01, []
    for i in range(READS):
        out.append((round(t, 6), frame(f"token {i} ")))
        t += GAPS[i % len(GAPS)]
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure() -> dict[str, float]:
    reads = _reads()
    with tempfile.TemporaryDirectory() as tmp:
        path = save(Path(tmp), "timed.sscap", capture(reads, elapsed=reads[-1][0]))
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamscope", "serve", str(path), "--listen", "0", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert proc.stdout is not None
            root = json.loads(proc.stdout.readline())["root_url"]
            port = int(root.rsplit(":", 1)[1])
            arrivals = _client(port, len(reads))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    errors = [(t - want) * 1000 for t, (want, _) in zip(arrivals, reads, strict=True)]
    late = [abs(e) for e in errors]
    # (from the first read on: without the time the server took to take the request)
    first = errors[0]
    jitter = [abs(e - first) for e in errors]
    return {
        "p50 |offset error| ms": _percentile(late, 0.5),
        "p99 |offset error| ms": _percentile(late, 0.99),
        "max |offset error| ms": max(late),
        "mean offset error ms": sum(errors) / len(errors),
        "p99 |error after the first read's| ms": _percentile(jitter, 0.99),
    }


def _client(port: int, n: int) -> list[float]:
    """Each chunk's arrival (seconds since the request was sent)."""
    body = json.dumps(ask("hi")).encode()
    arrivals: list[float] = []
    buf = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: b\r\ncontent-length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        t0 = time.monotonic()
        head_done = False
        while len(arrivals) < n:
            got = sock.recv(1 << 20)
            now = time.monotonic() - t0
            if not got:
                break
            buf += got
            if not head_done:
                if b"\r\n\r\n" not in buf:
                    continue
                buf = buf.split(b"\r\n\r\n", 1)[1]
                head_done = True
            while True:  # every chunk this recv completed arrived now
                eol = buf.find(b"\r\n")
                if eol < 0:
                    break
                size = int(buf[:eol], 16)
                if size == 0 or len(buf) < eol + 2 + size + 2:
                    break
                buf = buf[eol + 2 + size + 2 :]
                arrivals.append(now)
    return arrivals


if __name__ == "__main__":
    for name, value in measure().items():
        print(f"serve speed 1, {READS} reads: {name}: {value:.3f}")
