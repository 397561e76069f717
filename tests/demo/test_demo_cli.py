"""`streamscope demo-server` in a real process, and the Qt-free boundary of `streamscope.demo`."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest


def test_demo_package_is_qt_free() -> None:
    code = (
        "import sys, streamscope.demo.server, streamscope.demo.scenarios; "
        "assert not [m for m in sys.modules if m.startswith('PySide6')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery differs on Windows")
def test_demo_server_command_runs_until_ctrl_c() -> None:
    command = [sys.executable, "-m", "streamscope", "demo-server", "--port", "0", "--speed", "50"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            root = first.rsplit(" ", 1)[-1].strip()
            assert root.startswith("http://127.0.0.1:")
            listing = [proc.stdout.readline() for _ in range(6)]
            assert any(line.split() == ["gemini", root + "/v1beta"] for line in listing)
            assert any(line.split() == ["ollama", root] for line in listing)
            with httpx.Client() as client:
                models = client.get(root + "/v1/models").json()
            assert models["data"][0]["id"] == "demo"
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
