"""The headless CLI: `replay` and `send`, their JSON and their exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from streamscope.cli import main
from support.rawhttp import RawServer, chunk, head

FIXTURES = Path(__file__).parent / "fixtures"
KEYS = {
    "outcome",
    "reason",
    "text",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "usage",
    "events",
    "warnings",
}
EXIT = {"completed": 0, "truncated": 3, "error": 4, "cancelled": 130}
CLEAN_END_FIXTURES = sorted(
    p
    for p in FIXTURES.glob("*/*")
    if p.suffix in (".sse", ".ndjson")
    and json.loads(p.with_suffix(".expected.json").read_text()).get("end", "eof") == "eof"
)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("dialect_mode", ["own", "auto"])
@pytest.mark.parametrize("fixture", CLEAN_END_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_replay_json_matches_each_fixture(
    fixture: Path, dialect_mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = json.loads(fixture.with_suffix(".expected.json").read_text())
    dialect = fixture.parent.name if dialect_mode == "own" else "auto"
    code, out, _ = run_cli(["replay", str(fixture), "--dialect", dialect, "--json"], capsys)
    result = json.loads(out)
    assert result.keys() >= KEYS
    assert isinstance(result["warnings"], list)
    assert all(isinstance(w, str) for w in result["warnings"])
    assert code == EXIT[result["outcome"]]
    if dialect_mode == "auto" and expected.get("auto_differs"):
        return
    for key in ("outcome", "text", "reasoning", "finish_reason", "usage", "events"):
        if key in expected:
            assert result[key] == expected[key], key
    if "tool_calls" in expected:
        got = [{k: c[k] for k in ("id", "name", "arguments")} for c in result["tool_calls"]]
        want = [{k: c[k] for k in ("id", "name", "arguments")} for c in expected["tool_calls"]]
        assert got == want
    if "reason_contains" in expected:
        assert expected["reason_contains"] in result["reason"]


def test_replay_without_json_streams_text_and_summarises(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fixture = FIXTURES / "openai" / "multibyte.sse"
    expected = json.loads(fixture.with_suffix(".expected.json").read_text())
    code, out, err = run_cli(["replay", str(fixture), "--dialect", "openai"], capsys)
    assert code == 0
    assert out.rstrip("\n") == expected["text"]
    assert err.startswith("Completed")


def test_replay_raw_prints_every_frame(capsys: pytest.CaptureFixture[str]) -> None:
    fixture = FIXTURES / "openai" / "plain_text.sse"
    body = fixture.read_bytes()
    code, out, err = run_cli(
        ["replay", str(fixture), "--dialect", "openai", "--raw", "--json"], capsys
    )
    assert code == 0
    frames = [line for line in err.splitlines() if " B " in line]
    assert len(frames) == body.count(b"\n\n")
    assert "[DONE]" in frames[-1]
    assert json.loads(out)["outcome"] == "completed"


def test_replay_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["replay", str(tmp_path / "nope.sse"), "--json"], capsys)
    assert code == 2
    assert "nope.sse" in err


def test_replay_reads_stdin() -> None:
    body = (FIXTURES / "openai" / "plain_text.sse").read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "streamscope", "replay", "-", "--dialect", "auto", "--json"],
        input=body,
        capture_output=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "completed"


def _openai_stream(words: list[str], done: bool = True) -> bytes:
    out = b""
    for i, w in enumerate(words):
        obj: dict[str, Any] = {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": w},
                    "finish_reason": "stop" if i == len(words) - 1 else None,
                }
            ],
        }
        out += b"data: " + json.dumps(obj).encode() + b"\n\n"
    return out + (b"data: [DONE]\n\n" if done else b"")


def test_send_json_against_a_real_server(
    raw_server: RawServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(_openai_stream(["Hi ", "there"])) + b"0\r\n\r\n")

    raw_server.handler = handler
    monkeypatch.setenv("MY_KEY", "sk-secret-123")
    code, out, _ = run_cli(
        [
            "send",
            "--base-url",
            raw_server.url + "/v1",
            "--model",
            "m",
            "--api-key-env",
            "MY_KEY",
            "--system",
            "be brief",
            "--max-tokens",
            "5",
            "--json",
            "hello",
        ],
        capsys,
    )
    result = json.loads(out)
    assert code == 0
    assert result["outcome"] == "completed" and result["text"] == "Hi there"
    assert result["events"] == 3
    request = raw_server.requests[0]
    assert b"authorization: Bearer sk-secret-123" in request.lower().replace(b"bearer", b"Bearer")
    body = json.loads(request.split(b"\r\n\r\n", 1)[1])
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["messages"][-1]["content"] == "hello"
    assert body["max_tokens"] == 5 or body.get("max_completion_tokens") == 5


def test_send_truncated_exit_code_and_summary(
    raw_server: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(_openai_stream(["cut ", "short"], done=False)) + b"0\r\n\r\n")

    raw_server.handler = handler
    code, out, err = run_cli(
        ["send", "--base-url", raw_server.url + "/v1", "--model", "m", "hello"], capsys
    )
    assert code == 3
    assert out == "cut short\n"
    assert err.startswith("Truncated") and "no [DONE]" in err


def test_send_tools_file_is_sent(
    raw_server: RawServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head() + chunk(_openai_stream(["ok"])) + b"0\r\n\r\n")

    raw_server.handler = handler
    tools = tmp_path / "tools.json"
    tools.write_text(
        json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "description": "Weather",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    },
                }
            ]
        )
    )
    code, _, _ = run_cli(
        [
            "send",
            "--base-url",
            raw_server.url + "/v1",
            "--model",
            "m",
            "--tools",
            str(tools),
            "--json",
            "hi",
        ],
        capsys,
    )
    assert code == 0
    body = json.loads(raw_server.requests[0].split(b"\r\n\r\n", 1)[1])
    assert body["tools"][0]["function"]["name"] == "get_weather"


def test_send_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        [
            "send",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            "STREAMSCOPE_SURELY_UNSET",
            "hi",
        ],
        capsys,
    )
    assert code == 2 and "STREAMSCOPE_SURELY_UNSET" in err
    with pytest.raises(SystemExit) as info:
        main(["send", "--model", "m", "hi"])  # --base-url missing
    assert info.value.code == 2


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery")
def test_send_ctrl_c_is_cancelled_with_exit_130(raw_server: RawServer) -> None:
    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        for i in range(400):
            w.write(chunk(_openai_stream([f"w{i} "], done=False)))
            await w.drain()
            await asyncio.sleep(0.02)

    raw_server.handler = handler
    # (a test run started in the background, `cmd &`, ignores SIGINT and its children inherit
    # that: give the child Ctrl-C as a terminal would — a handled signal is default after exec)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = _start_send(raw_server.url)
    finally:
        signal.signal(signal.SIGINT, previous)
    deadline = time.monotonic() + 20
    while not raw_server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.6)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result["outcome"] == "cancelled"
    assert result["text"].startswith("w0 w1 ")


def _start_send(url: str) -> subprocess.Popen[bytes]:
    send = ["send", "--base-url", url + "/v1", "--model", "m", "--json", "hi"]
    return subprocess.Popen(
        [sys.executable, "-m", "streamscope", *send],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_reasoning_goes_to_stderr_on_its_own_lines(capsys: pytest.CaptureFixture[str]) -> None:
    fixture = FIXTURES / "openai" / "reasoning_content.sse"
    expected = json.loads(fixture.with_suffix(".expected.json").read_text())
    code, out, err = run_cli(["replay", str(fixture), "--dialect", "openai"], capsys)
    assert code == 0
    assert out.rstrip("\n") == expected["text"]  # stdout holds the answer only
    lines = err.splitlines()
    assert lines[-1].startswith("Completed")  # the summary is a line of its own
    assert expected["reasoning"] in err
