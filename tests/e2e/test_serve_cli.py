"""`streamscope serve` as a user runs it: a subprocess, the base URL on stdout's first line,
one JSON line per exchange, SIGTERM ends it with exit 0; a path it cannot serve is a usage
error (exit 2) naming the file, a port in use exit 1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from support.serve_client import CHAT, FINAL, ask, capture, frame, save
from support.tap_upstream import json_keys

SERVE = [sys.executable, "-m", "streamscope", "serve"]


def _start(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [*SERVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _stop(
    proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGTERM
) -> tuple[int, str, str]:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=15)
    return proc.returncode, out, err


def test_port_0_prints_the_base_url_first_and_a_json_line_per_exchange(tmp_path: Path) -> None:
    path = save(tmp_path, "hello.sscap", capture([(0.0, frame("Hallo")), (0.001, FINAL)]))
    proc = _start(str(path), "--listen", "127.0.0.1:0", "--json", "--fast")
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert sorted(first) == ["base_url", "recordings", "root_url"]
        assert first["recordings"] == 1
        assert first["base_url"] == first["root_url"] + "/v1"
        assert first["root_url"].startswith("http://127.0.0.1:")
        assert not first["root_url"].endswith(":0")
        with httpx.Client() as client:
            r = client.post(first["base_url"] + "/chat/completions", json=ask("hi"))
            again = client.post(first["base_url"] + "/chat/completions", json=ask("hi"))
        assert r.status_code == 200
        assert r.content == frame("Hallo") + FINAL
        assert again.status_code == 404
        lines = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        code, _out, err = _stop(proc)
    assert code == 0, err
    assert list(lines[0]) == [*json_keys(), "served"]
    assert lines[0] | {"duration_ms": 0, "ttft_ms": 0} == {
        "id": 1,
        "method": "POST",
        "path": CHAT,
        "status": 200,
        "outcome": "completed",
        "reason": "[DONE] received (finish_reason=stop)",
        "dialect": "openai",
        "frames": 3,
        "bytes": len(frame("Hallo") + FINAL),
        "ttft_ms": 0,
        "duration_ms": 0,
        "capture": None,
        "faults": [],
        "served": str(path),
    }
    assert (lines[1]["id"], lines[1]["status"], lines[1]["served"]) == (2, 404, None)
    assert lines[1]["reason"].startswith("the one recorded exchange for POST /v1/chat/completions")
    assert "listening on http://127.0.0.1:" in err
    assert "OPENAI_BASE_URL=" + first["base_url"] in err
    assert err.rstrip().endswith("streamscope serve: stopped")


def test_without_json_the_first_line_is_the_base_url_alone(tmp_path: Path) -> None:
    path = save(tmp_path, "a.sscap", capture([(0.0, FINAL)]))
    proc = _start(str(tmp_path), "--listen", "0")
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        r = httpx.post(base + "/chat/completions", json=ask("hi"))
        assert r.content == FINAL
        line = proc.stdout.readline()
    finally:
        code, _out, _err = _stop(proc, signal.SIGINT)  # (Ctrl-C)
    assert code == 0
    assert line.startswith("#1 POST /v1/chat/completions → 200 completed: [DONE] received")
    assert line.rstrip().endswith(f"served {path}")


def test_a_damaged_capture_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    good = save(tmp_path, "good.sscap", capture([(0.0, FINAL)]))
    bad = tmp_path / "bad.sscap"
    bad.write_text('{"format": "streamscope-capture", "version": 1}\n[1, 2]\n')
    result = subprocess.run([*SERVE, str(good), str(bad)], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"streamscope serve: error: {bad}: line 2: expected an object, got [1,2]\n"
    )
    missing = subprocess.run([*SERVE, str(tmp_path / "gone")], capture_output=True, text=True)
    assert missing.returncode == 2
    assert (
        missing.stderr == f"streamscope serve: error: {tmp_path / 'gone'}: no such file or folder\n"
    )
    both = subprocess.run([*SERVE, str(good), "--fast", "--speed", "2"], capture_output=True)
    assert both.returncode == 2  # (argparse: not allowed with)


def test_a_port_in_use_exits_1(tmp_path: Path) -> None:
    path = save(tmp_path, "a.sscap", capture([(0.0, FINAL)]))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*SERVE, str(path), "--listen", f"127.0.0.1:{port}"], capture_output=True, text=True
        )
    assert result.returncode == 1
    assert result.stderr.startswith(f"streamscope serve: cannot listen on 127.0.0.1:{port}: ")
