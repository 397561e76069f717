"""`streamscope lint`: the JSON contract, SARIF 2.1.0, exit codes, every input replay takes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamscope import __version__
from streamscope.cli import main
from streamscope.core.capture.bundle import write_repro_bundle
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    write_capture,
)
from streamscope.core.turn.model import Turn
from streamscope.core.verdict import RULES
from streamscope.core.verdict.report import artifact_uri, rules_text

FIXTURES = Path(__file__).parent / "fixtures"
CLEAN = FIXTURES / "openai/plain_text.sse"
BROKEN = FIXTURES / "openai/cut_mid_frame.sse"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_of_a_clean_body(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(CLEAN), "--json")
    assert code == 0
    assert json.loads(out) == {
        "dialect": "openai",
        "outcome": "completed",
        "findings": [],
        "summary": {"error": 0, "warning": 0, "info": 0},
    }


def test_json_of_a_broken_body(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN), "--json", "--dialect", "openai")
    assert code == 1
    doc = json.loads(out)
    assert list(doc) == ["dialect", "outcome", "findings", "summary"]
    assert doc["outcome"] == "truncated"
    assert doc["summary"] == {"error": 2, "warning": 0, "info": 0}
    first, second = doc["findings"]
    assert list(first) == ["rule", "severity", "frame", "message", "hint", "count", "frames"]
    assert (first["rule"], first["severity"], first["frame"]) == ("sse.truncated-frame", "error", 2)
    assert first["hint"] == RULES["sse.truncated-frame"].hint
    assert (second["rule"], second["frame"]) == ("stream.terminal-missing", None)
    assert second["message"] == (
        "the body ended without the dialect's terminal signal: "
        "[DONE] (connection closed mid-frame after 633 B, no [DONE])"
    )


def test_text_output_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["✖", "error", "frame", "2", "sse.truncated-frame"]
    assert lines[-1] == "openai · truncated · 2 errors, 0 warnings, 0 notes"
    code, out, _ = run(capsys, str(CLEAN))
    assert (code, out) == (0, "openai · completed · 0 errors, 0 warnings, 0 notes\n")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing.sse"))
    assert code == 2
    assert "missing.sse" in err
    code, _, err = run(capsys)
    assert code == 2
    assert "FILE is required" in err
    with pytest.raises(SystemExit) as exc:
        main(["lint", str(CLEAN), "--json", "--sarif"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["lint", str(CLEAN), "--dialect", "klingon"])
    assert exc.value.code == 2
    capsys.readouterr()


def test_rules_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--rules")
    assert code == 0
    assert out == rules_text()
    ids = [line.split()[0] for line in out.splitlines() if not line.startswith(" ")]
    assert ids == list(RULES)
    assert RULES["openai.finish-reason-once"].hint in out


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake = io.TextIOWrapper(io.BytesIO(BROKEN.read_bytes()))
    monkeypatch.setattr(sys, "stdin", fake)
    code, out, _ = run(capsys, "-", "--json")
    assert code == 1
    assert [f["rule"] for f in json.loads(out)["findings"]] == [
        "sse.truncated-frame",
        "stream.terminal-missing",
    ]


def _capture() -> Capture:
    frames = (FIXTURES / "openai/plain_text.sse").read_bytes().split(b"\n\n")
    reads = [(0.5 + 0.1 * i, f + b"\n\n") for i, f in enumerate(frames) if f.strip()]
    return Capture(
        dialect="openai",
        request=CaptureRequest(
            "POST",
            "http://127.0.0.1/v1/chat/completions",
            (),
            b'{"stream": true, "stream_options": {"include_usage": true}}',
        ),
        response=CaptureResponse(
            200, (("content-type", "text/plain"), ("content-encoding", "gzip")), t=0.2
        ),
        reads=ReadLog(reads),
        end=CaptureEnd("eof", elapsed=reads[-1][0]),
    )


def test_a_capture_and_a_bundle_lint_with_their_headers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sscap = tmp_path / "turn.sscap"
    write_capture(sscap, _capture())
    bundle = write_repro_bundle(tmp_path / "b.zip", _capture(), Turn(), app_version=__version__)
    for path in (sscap, bundle):
        code, out, _ = run(capsys, str(path), "--json")
        assert code == 1
        found = [(f["rule"], f["frame"]) for f in json.loads(out)["findings"]]
        assert found == [("transport.content-encoding", None), ("transport.content-type", None)]
    # the raw body of the same stream has no headers: nothing to say
    body = tmp_path / "body.sse"
    body.write_bytes(b"".join(d for _, d in _capture().reads))
    assert run(capsys, str(body), "--json")[0] == 0


def test_sarif_is_2_1_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(BROKEN), "--sarif")
    assert code == 1
    log: dict[str, Any] = json.loads(out)
    assert log["version"] == "2.1.0"
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    (run_,) = log["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "streamscope"
    assert driver["version"] == __version__
    assert [r["id"] for r in driver["rules"]] == list(RULES)
    for r in driver["rules"]:
        assert r["shortDescription"]["text"] == RULES[r["id"]].message
        assert r["help"]["text"] == RULES[r["id"]].hint
        level = r["defaultConfiguration"]["level"]
        assert (
            level
            == {"error": "error", "warning": "warning", "info": "note"}[RULES[r["id"]].severity]
        )
    results = run_["results"]
    assert [(x["ruleId"], x["level"]) for x in results] == [
        ("sse.truncated-frame", "error"),
        ("stream.terminal-missing", "error"),
    ]
    for x in results:
        assert driver["rules"][x["ruleIndex"]]["id"] == x["ruleId"]
        assert x["message"]["text"]
        (loc,) = x["locations"]
        assert loc["physicalLocation"]["artifactLocation"]["uri"] == artifact_uri(str(BROKEN))[0]
    assert results[0]["locations"][0]["logicalLocations"] == [
        {"name": "frame 2", "fullyQualifiedName": "frames/2", "kind": "element"}
    ]
    assert "logicalLocations" not in results[1]["locations"][0]
    # (validated against the schema and GitHub's requirements: test_lint_sarif.py)


def test_lint_runs_headless_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "streamscope", "lint", str(CLEAN), "--json"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["findings"] == []


def test_the_readme_rule_table_is_made_from_the_rules() -> None:
    from streamscope.core.verdict.catalog import rules_markdown

    readme = (Path(__file__).parents[2] / "README.md").read_text("utf-8")
    begin, end = "<!-- verdict-rules:begin -->\n", "<!-- verdict-rules:end -->"
    table = readme[readme.index(begin) + len(begin) : readme.index(end)]
    assert table == rules_markdown(), "README's rule table is stale: regenerate it (see README)"
    for rule_id in RULES:
        assert table.count(f"`{rule_id}`") == 1
    assert "## Verdicts" in readme
    assert "streamscope lint FILE [--dialect" in readme
