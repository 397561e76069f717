"""`streamscope tap` as a user runs it: a subprocess in front of the demo endpoint, real
clients through it, one JSON line per exchange, Ctrl-C (SIGINT) ends it with exit 0."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from streamscope.core.capture.format import read_capture
from streamscope.demo.server import DemoServer
from support.tap_upstream import json_keys

CHAT = "/v1/chat/completions"
TAP = [sys.executable, "-m", "streamscope", "tap"]


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=1000) as server:
        yield server


class TapProcess:
    def __init__(self, *args: str, home: Path) -> None:
        env = {**os.environ, "STREAMSCOPE_HOME": str(home), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamscope", "tap", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.stderr: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            if line.startswith("Press Ctrl-C"):
                break
        found = re.search(r"listening on (http://\S+)", "".join(self.stderr))
        assert found, "".join(self.stderr)
        self.root = found.group(1)
        self.lines: list[str] = []
        self._got = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._got:
                self.lines.append(line)
                self._got.notify_all()

    def wait_lines(self, n: int) -> list[dict[str, object]]:
        with self._got:
            assert self._got.wait_for(lambda: len(self.lines) >= n, 15), self.lines
            return [json.loads(line) for line in self.lines]

    def interrupt(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        rc = self.proc.wait(15)
        assert self.proc.stderr is not None and self.proc.stdout is not None
        stderr = "".join(self.stderr) + self.proc.stderr.read()
        self._reader.join(5)
        self.proc.stderr.close()
        self.proc.stdout.close()
        return rc, stderr


def test_tap_prints_one_json_line_per_exchange_and_stops_on_sigint(
    demo: DemoServer, tmp_path: Path
) -> None:
    tap = TapProcess(
        "--upstream", demo.root_url, "--listen", "127.0.0.1:0", "--json", home=tmp_path
    )
    try:
        with openai.OpenAI(base_url=tap.root + "/v1", api_key="sk-x", max_retries=0) as oai:
            stream = oai.chat.completions.create(
                model="demo", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream(
                "POST",
                tap.root + CHAT,
                json={
                    "model": "demo-cut",
                    "messages": [{"role": "user", "content": "hi"}],
                    "stream": True,
                },
            ) as response,
        ):
            cut = bytearray()
            for chunk in response.iter_raw():
                cut += chunk
        first, second = tap.wait_lines(2)
    finally:
        rc, stderr = tap.interrupt()
    assert rc == 0, stderr
    assert "hi" in text
    assert list(first) == json_keys() and list(second) == json_keys()
    assert (first["id"], first["method"], first["path"], first["status"]) == (1, "POST", CHAT, 200)
    assert (first["outcome"], first["reason"], first["dialect"]) == (
        "completed",
        "[DONE] received (finish_reason=stop)",
        "openai",
    )
    assert (second["outcome"], second["dialect"], second["bytes"]) == (
        "truncated",
        "openai",
        len(cut),
    )
    assert isinstance(second["frames"], int) and second["frames"] >= 2
    capture = read_capture(Path(str(second["capture"])))
    assert capture.reads.body() == bytes(cut)
    assert capture.end is not None and capture.end.outcome == "truncated"
    assert Path(str(first["capture"])).parent == tmp_path / "captures"
    # (tagged as the tap's: the window's Tapped dock lists them as earlier exchanges)
    assert "-tap-" in Path(str(first["capture"])).name
    assert "base URL: " + tap.root in stderr and f"OPENAI_BASE_URL={tap.root}/v1" in stderr
    assert stderr.rstrip().endswith("streamscope tap: stopped")


def test_sigint_with_a_stream_open_still_exits_0(demo: DemoServer, tmp_path: Path) -> None:
    tap = TapProcess(
        "--upstream", demo.root_url, "--listen", "127.0.0.1:0", "--json", home=tmp_path
    )
    body = {"model": "demo-stall", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream("POST", tap.root + CHAT, json=body, timeout=20) as response:
        chunks = response.iter_raw()
        assert next(chunks)  # the stream is open, upstream stalls
        rc, stderr = tap.interrupt()
        with pytest.raises(httpx.RemoteProtocolError):  # dropped, not ended
            b"".join(chunks)
    assert rc == 0, stderr
    [line] = tap.wait_lines(1)
    assert (line["outcome"], line["status"]) == ("cancelled", 200)
    assert str(line["reason"]).startswith("the tap stopped after ")


def test_other_interfaces_need_an_explicit_flag(demo: DemoServer, tmp_path: Path) -> None:
    env = {**os.environ, "STREAMSCOPE_HOME": str(tmp_path)}
    refused = subprocess.run(
        [*TAP, "--upstream", demo.root_url, "--listen", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "add --allow-remote if you mean it" in refused.stderr
    bad = subprocess.run(
        [*TAP, "--upstream", "ftp://x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert bad.returncode == 2 and "--upstream must be an http://" in bad.stderr
    tap = TapProcess(
        "--upstream", demo.root_url, "--listen", "0.0.0.0:0", "--allow-remote", home=tmp_path
    )
    rc, stderr = tap.interrupt()
    assert rc == 0
    assert "WARNING: listening on 0.0.0.0, reachable from other machines" in stderr
