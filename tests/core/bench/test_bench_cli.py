"""`streamscope bench` as a user runs it: the --json report's keys, the table, exit codes,
usage errors, and a planted API key that reaches the server but no file, stdout or stderr."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from streamscope.demo.server import DemoServer

KEY = "sk-benchcanary-7d1e0b9c4a2f6e58"
FAST = "demo-bench?ttft=5&itl=1&tokens=6"


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer() as srv:
        yield srv


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamscope", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_json_is_the_whole_report(server: DemoServer) -> None:
    result = bench("--base-url", server.base_url("openai"), "--model", FAST,
                   "--concurrency", "2", "--requests", "4", "--warmup", "1", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"base_url", "model", "dialect", "steps"}
    assert report["dialect"] == "openai"  # (auto, from the base URL)
    (step,) = report["steps"]
    assert set(step) == {"label", "concurrency", "rate", "arrival", "summary", "runner", "requests"}
    assert set(step["summary"]) == {
        "requests", "outcomes", "ttfb_ms", "ttft_ms", "itl_ms", "e2e_ms", "ttft_from_schedule_ms",
        "dispatch_lag_ms", "window_s", "output_tokens_per_s", "requests_per_s",
    }  # fmt: skip
    assert set(step["runner"]) == {
        "loop_lag_p99_ms", "loop_lag_max_ms", "client_bound", "cpu_s", "cpu_ms_per_1k_reads",
        "reads",
    }  # fmt: skip
    assert set(step["requests"][0]) == {
        "index", "warmup", "scheduled_ms", "dispatch_lag_ms", "ttfb_ms", "ttft_ms", "itl_ms",
        "e2e_ms", "output_tokens", "tokens_source", "outcome", "status", "ttft_from_schedule_ms",
        "reads", "capture", "sent_at",
    }  # fmt: skip
    assert step["summary"]["outcomes"] == {"completed": 4}
    assert len(step["requests"]) == 5 and step["requests"][0]["warmup"] is True
    assert "[" in result.stderr and "5/5" in result.stderr  # the progress bar


def test_the_table_and_exit_code_1_when_requests_fail(server: DemoServer) -> None:
    model = "demo-bench;ttft=2;itl=1;tokens=4;e429=1"
    result = bench("--base-url", server.base_url("gemini"), "--model", model, "--requests", "2")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["step", "n", "ok", "TTFT"]
    assert lines[1].split()[:3] == ["c=1", "2", "0"]
    assert lines[1].endswith("http_429 2")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--api-key-env", "BENCH_NO_SUCH_VAR"], "BENCH_NO_SUCH_VAR is not set"),
        (["--sweep", "1,x"], "not a list of numbers"),
        (["--sweep-rates", "5", "--concurrency", "2"], "not with --concurrency"),
        (["--prompts", "/nonexistent/p.jsonl"], "cannot read"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = bench("--base-url", "http://127.0.0.1:9/v1", "--model", "m", *args)
    assert result.returncode == 2
    assert message in result.stderr


def _forms(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, base64.b64encode(raw), quote(secret, safe="").encode(), raw.hex().encode()]


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini"])
def test_a_planted_key_is_in_no_file_nor_output(
    server: DemoServer, tmp_path: Path, dialect: str
) -> None:
    out, table = tmp_path / "out", tmp_path / "rows.csv"
    model = FAST.replace("?", ";").replace("&", ";") + ";cut=0.5;seed=2"
    result = bench("--base-url", server.base_url(dialect), "--model", model,
                   "--dialect", dialect, "--api-key-env", "BENCH_KEY", "--requests", "4",
                   "--out", str(out), "--csv", str(table), "--json",
                   env={"BENCH_KEY": KEY})  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len([p for p in files if p.suffix == ".sscap"]) == 4
    assert {p.name for p in files} >= {"report.json", "rows.csv"}
    texts = [(p.name, p.read_bytes()) for p in files]
    texts += [("stdout", result.stdout.encode()), ("stderr", result.stderr.encode())]
    leaks = [(name, form) for name, data in texts for form in _forms(KEY) if form in data]
    assert leaks == []
    capture = next(p for p in files if p.suffix == ".sscap").read_text()
    assert "***" in capture  # (the key's header is there, masked)
