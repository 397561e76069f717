"""`streamscope bench` as a user runs it: the --json report's keys, the table, exit codes,
usage errors, and a planted API key that reaches the server but no file, stdout or stderr."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from streamscope.core.bench.report import ROW_COLUMNS
from streamscope.core.capture.format import read_capture
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
    assert set(report) == {
        "format", "version", "base_url", "model", "dialect", "tokenizer", "definitions",
        "steps",
    }  # fmt: skip
    assert (report["format"], report["version"]) == ("streamscope-bench-run", 1)
    assert report["dialect"] == "openai"  # (auto, from the base URL)
    assert report["tokenizer"] is None  # (the server's usage counts)
    assert report["definitions"]["ttft_from_schedule"].startswith("TTFT from schedule = ")
    (step,) = report["steps"]
    assert set(step) == {"label", "concurrency", "rate", "arrival", "summary", "runner", "requests"}
    summary = step["summary"]
    assert set(summary) == {
        "format", "version", "time_to_first_token", "time_to_first_output_token",
        "inter_token_latency", "inter_chunk_latency", "request_latency",
        "output_sequence_length", "request_count", "error_request_count",
        "benchmark_duration", "output_token_throughput", "request_throughput", "ttfb",
        "e2e_terminal_latency", "max_gap", "vllm_ttft", "genai_perf_ttft", "vllm_itl",
        "llmperf_itl", "dispatch_lag", "ttft_from_schedule",
        "windowed_output_token_throughput", "windowed_request_throughput",
        "effective_concurrency", "window", "requests", "warmup_requests", "outcomes",
        "included_outcomes", "token_sources",
    }  # fmt: skip
    assert set(summary["time_to_first_token"]) == {
        "unit", "avg", "min", "max", "p50", "p90", "p95", "p99", "p99_9", "std", "count", "sum",
    }  # fmt: skip
    assert summary["time_to_first_token"]["unit"] == "ms"
    assert summary["time_to_first_token"]["count"] == 4
    assert summary["time_to_first_token"]["p90"] is None  # (hidden: 4 values)
    assert summary["output_sequence_length"]["avg"] == 6.0  # (tokens=6, from usage)
    assert summary["token_sources"] == {"usage": 4}
    assert summary["included_outcomes"] == ["completed", "length"]
    assert (summary["requests"], summary["warmup_requests"]) == (4, 1)
    assert set(summary["window"]) == {"start", "end", "length"}
    assert set(step["runner"]) == {
        "loop_lag_p99_ms", "loop_lag_max_ms", "loop_lag_samples", "client_bound", "cpu_s",
        "cpu_ms_per_1k_reads", "reads", "cpu_ms_per_1k_frames", "frames", "read_stamps",
        "kernel_stamped_reads", "read_wake_lag_p50_ms", "read_wake_lag_p99_ms",
        "read_wake_lag_max_ms",
    }  # fmt: skip
    assert list(step["requests"][0]) == [
        "index", "capture", "worker", "warmup", "sent_at", "scheduled_at", "dispatch_lag_ms",
        "ttft_from_schedule_ms", "outcome", "status", "finish_reason", "ttfb_ms", "ttft_ms",
        "ttft_frame", "ttfo_ms", "ttfo_frame", "itl_ms", "gaps", "gap_p99_ms", "max_gap_ms",
        "max_gap_frame", "e2e_terminal_ms", "e2e_last_token_ms", "duration_ms",
        "output_tokens", "token_source", "first_frame_tokens", "vllm_ttft_ms",
        "genai_perf_ttft_ms", "llmperf_itl_ms", "reason", "scheduled_ms", "reads", "frames",
    ]  # fmt: skip
    assert summary["outcomes"] == {"completed": 4}
    assert len(step["requests"]) == 5 and step["requests"][0]["warmup"] == 1
    assert step["requests"][0]["capture"] is None  # (no --out: no file)
    assert sum(r["reads"] for r in step["requests"]) == step["runner"]["reads"]
    # role, 6 tokens, finish, usage, [DONE]: 10 frames a request, 5 requests
    assert [r["frames"] for r in step["requests"]] == [10] * 5
    assert step["runner"]["frames"] == 50
    runner = step["runner"]
    assert runner["cpu_ms_per_1k_frames"] == pytest.approx(runner["cpu_s"] * 1e6 / 50)
    # The progress line, last drawn when the last request was measured: done, in flight,
    # errors (warm-up included) and the live TTFT p50 — the report's, as it ends.
    final = result.stderr.splitlines()[-1]  # (text mode reads each "\r" as a line end)
    p50 = summary["time_to_first_token"]["p50"]
    assert final == f"{'c=2':>12} [{'#' * 30}] 5/5  in flight 0  errors 0  TTFT p50 {p50:.1f} ms"


def test_the_table_and_exit_code_1_when_requests_fail(server: DemoServer) -> None:
    model = "demo-bench;ttft=2;itl=1;tokens=4;e429=1"
    result = bench("--base-url", server.base_url("gemini"), "--model", model, "--requests", "2")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["step", "n", "ok", "TTFT"]
    assert lines[1].split()[:3] == ["c=1", "2", "0"]
    assert lines[1].split()[3:5] == ["-", "-"]  # (no TTFT over 0 completed requests)
    assert lines[1].endswith("http_429 2")
    assert lines[0].split()[-5:] == ["CPU", "s", "ms/1k", "fr", "outcomes"]
    per_1k = lines[1].split()[-3]  # (the load's CPU per 1,000 frames: one frame per 429)
    assert per_1k != "-" and float(per_1k) > 0


def test_csv_is_the_json_rows_with_their_step(server: DemoServer, tmp_path: Path) -> None:
    rows_csv = tmp_path / "rows.csv"
    result = bench("--base-url", server.base_url("openai"), "--model", FAST, "--sweep", "1,2",
                   "--requests", "2", "--csv", str(rows_csv), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    with rows_csv.open(newline="", encoding="utf-8") as fp:
        table = list(csv.DictReader(fp))
    assert list(table[0]) == ["step", *ROW_COLUMNS]
    assert [r["step"] + ":" + r["index"] for r in table] == ["0:0", "0:1", "1:0", "1:1"]
    want = [
        {"step": str(n), **{k: "" if v is None else str(v) for k, v in row.items()}}
        for n, step in enumerate(report["steps"])
        for row in step["requests"]
    ]
    assert table == want


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


# -- --prompts FILE.jsonl --------------------------------------------------------------------

PROMPTS = [
    "Привет, как дела?",
    "東京の天気は? 🌧️",
    "line\u2028separator and NEL\x85 inside one prompt",  # (str.splitlines() would split)
]


def _sent_prompt(out: Path, row: dict[str, object]) -> str:
    capture = read_capture(out / str(row["capture"]))
    assert capture.request is not None
    body = json.loads(capture.request.body)
    content: str = body["messages"][0]["content"]
    return content


def test_prompts_cycle_over_the_requests_warm_up_included(
    server: DemoServer, tmp_path: Path
) -> None:
    """Request i sends prompt i mod n (i counts the warm-up first); blank and blank-looking
    lines are skipped, a bare JSON string is a prompt, a UTF-8 BOM and CRLF are fine."""
    lines = [
        json.dumps({"prompt": PROMPTS[0]}, ensure_ascii=False),
        "",
        "   \t",
        json.dumps(PROMPTS[1], ensure_ascii=False),  # (a bare string)
        "",
        json.dumps({"prompt": PROMPTS[2], "id": 7}, ensure_ascii=False),  # (other keys ignored)
        "",
    ]
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode())
    out = tmp_path / "out"
    result = bench("--base-url", server.base_url("openai"), "--model", FAST, "--prompts",
                   str(path), "--requests", "4", "--warmup", "1", "--concurrency", "2",
                   "--out", str(out), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["steps"][0]["requests"]
    assert [r["index"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["warmup"] for r in rows] == [1, 0, 0, 0, 0]
    assert [_sent_prompt(out, r) for r in rows] == [
        PROMPTS[0], PROMPTS[1], PROMPTS[2], PROMPTS[0], PROMPTS[1],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"prompt": "a"}\n\n{"prompt": "b"\n', "prompts.jsonl:3: not JSON"),
        (b'{"prompt": "a"}\n{"text": "b"}\n', 'prompts.jsonl:2: expected {"prompt": "..."}'),
        (b'{"prompt": 5}\n', 'prompts.jsonl:1: expected {"prompt": "..."}'),
        (b"[1, 2]\n", 'prompts.jsonl:1: expected {"prompt": "..."}'),
        (b"", "prompts.jsonl: no prompts"),
        (b"\n  \n\r\n", "prompts.jsonl: no prompts"),
        (b'{"prompt": "a"}\n{"prompt": "caf\xe9"}\n', "prompts.jsonl:2: not UTF-8 text"),
    ],
)
def test_a_bad_prompts_file_is_a_usage_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(content)
    result = bench("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--prompts", str(path))
    assert result.returncode == 2
    assert result.stderr == f"streamscope bench: error: {path.parent / message}\n"
    assert result.stdout == ""


def test_a_missing_prompts_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"
    result = bench("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--prompts", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        f"streamscope bench: error: cannot read {path}: No such file or directory\n"
    )


def test_prompt_and_prompts_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"prompt": "a"}\n', encoding="utf-8")
    result = bench("--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                   "--prompt", "hi", "--prompts", str(path))  # fmt: skip
    assert result.returncode == 2
    assert "argument --prompts: not allowed with argument --prompt" in result.stderr


def test_the_progress_line_shows_live_figures_and_covers_a_longer_line() -> None:
    from streamscope.bench_cli import _Bar
    from streamscope.core.bench.metrics import measure
    from streamscope.core.bench.session import Progress
    from support.bench_captures import role_first

    bar = _Bar(io.StringIO())
    p = Progress(0, "c=16", 200, done=120, sent=136)
    p.outcomes.update({"completed": 118, "http_429": 2})
    first = bar.line(p)
    assert (
        first
        == f"{'c=16':>12} [{'#' * 18}{'-' * 12}] 120/200  in flight 16  errors 2  TTFT p50 - ms"
    )
    role = measure(role_first())  # (TTFT 0.25 s)
    for k in range(100):
        p.live.add(replace(role, ttft=0.25 + k / 1000))
    p.sent = 125  # (5 in flight: a shorter count)
    second = bar.line(p)
    assert second.rstrip() == (
        f"{'c=16':>12} [{'#' * 18}{'-' * 12}] 120/200  in flight 5  errors 2  "
        "TTFT p50 299.5 p99 348.0 ms"
    )
    p.live = type(p.live)()  # (no TTFT yet: a shorter line than the one on screen)
    third = bar.line(p)
    assert third.rstrip().endswith("TTFT p50 - ms") and len(third) == len(second.rstrip())
