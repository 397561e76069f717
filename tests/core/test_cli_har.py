"""`streamscope replay FILE.har` and `streamscope export --har`."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from streamscope.cli import main
from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.har import import_har
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome

HAR = Path(__file__).parents[1] / "fixtures" / "har"
KEYS = {"outcome", "reason", "text", "reasoning", "tool_calls", "finish_reason", "usage"}


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_har_prints_one_line_per_exchange(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["replay", str(HAR / "chrome.har")], capsys)
    assert code == 0
    assert out.splitlines() == [
        "entry 2: POST https://api.openai.com/v1/chat/completions: Completed · stop · TTFT 0.40 s",
        "entry 3: POST https://api.anthropic.com/v1/messages: "
        "Completed · end_turn · 5 tokens · TTFT 0.45 s",
    ]
    assert err == "2 LLM exchange(s) replayed, 2 other entries skipped\n"


def test_replay_har_json_is_one_object_per_exchange_and_exits_with_the_worst(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(["replay", str(HAR / "firefox.har"), "--json"], capsys)
    objs = [json.loads(line) for line in out.splitlines()]
    assert code == 4  # the Anthropic exchange answered JSON, not a stream
    assert [(o["entry"], o["outcome"], o["text"]) for o in objs] == [
        (2, "completed", "Hello from HAR"),
        (3, "error", ""),
    ]
    assert all(o.keys() >= KEYS for o in objs)
    assert objs[0]["url"] == "https://llm.example.test/v1/chat/completions?api_key=***"
    assert objs[0]["events"] == 5


def test_replay_har_entry_behaves_like_a_capture(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["replay", str(HAR / "safari.har"), "--entry", "3"], capsys)
    assert (code, out) == (0, "Bonjour à vous\n")
    assert err == "Completed · end_turn · 5 tokens · TTFT 0.10 s\n"
    code, out, _ = run_cli(["replay", str(HAR / "safari.har"), "--entry", "2", "--json"], capsys)
    result = json.loads(out)
    assert (code, result["outcome"], result["text"]) == (0, "completed", "Hello from HAR")
    assert "entry" not in result  # exactly the capture replay's JSON
    code, out, _ = run_cli(
        ["replay", str(HAR / "safari.har"), "--entry", "2", "--raw", "--json"], capsys
    )
    assert code == 0


def test_replay_har_entry_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(["replay", str(HAR / "chrome.har"), "--entry", "4"], capsys)
    assert code == 2
    assert err == (
        "streamscope replay: error: entry 4 is not replayed: served from the browser's disk cache\n"
    )
    code, _, err = run_cli(["replay", str(HAR / "chrome.har"), "--entry", "9"], capsys)
    assert (code, err) == (2, "streamscope replay: error: no entry 9 (the HAR file has 4)\n")
    body = tmp_path / "body.sse"
    body.write_bytes(b"data: [DONE]\n\n")
    code, _, err = run_cli(["replay", str(body), "--entry", "1"], capsys)
    assert (code, err) == (2, "streamscope replay: error: --entry applies to a HAR file only\n")
    empty = tmp_path / "empty.har"
    empty.write_text('{"log": {"version": "1.2", "entries": []}}')
    code, _, err = run_cli(["replay", str(empty)], capsys)
    assert code == 2
    assert "no LLM exchange in the HAR file (0 entries" in err


def test_replay_har_from_stdin_by_content() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "streamscope", "replay", "-", "--json"],
        input=(HAR / "safari.har").read_bytes(),
        capture_output=True,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert [json.loads(line)["entry"] for line in lines] == [2, 3]


def test_export_har_of_captures_and_of_a_conversation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store() as db:
        store = CaptureStore(index=db)
        imported = import_har(HAR / "chrome.har", store).imported
    ids = [ex.capture_id for ex in imported]
    assert all(ids)
    out = tmp_path / "out.har"
    second = str(store.path(str(ids[1])))
    args = ["export", "--har", "--capture", str(ids[0]), "--capture", second, "-o", str(out)]
    code, stdout, _ = run_cli(args, capsys)
    assert (code, stdout) == (0, "")
    entries = json.loads(out.read_text())["log"]["entries"]
    assert [e["request"]["url"] for e in entries] == [
        "https://api.openai.com/v1/chat/completions",
        "https://api.anthropic.com/v1/messages",
    ]
    assert [e["response"]["content"]["size"] for e in entries] == [721, 848]
    with Store() as db:
        conv = db.create_conversation("HAR")
        db.add_user_message(conv, "Say hello")
        msg = db.begin_assistant_message(conv)
        db.finish_assistant_message(msg, Turn(text="Hello", outcome=Outcome.COMPLETED), ids[1])
    code, stdout, _ = run_cli(["export", "--har"], capsys)
    assert code == 0
    (entry,) = json.loads(stdout)["log"]["entries"]
    assert base64.b64encode(entry["response"]["content"]["text"].encode()) == base64.b64encode(
        imported[1].capture.reads.body()
    )
    code, _, err = run_cli(["export", "--har", "--capture", "nope"], capsys)
    assert code == 2 and err.startswith("streamscope export: error: nope: ")
