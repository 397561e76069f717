"""`streamscope lint --sarif` as code scanning takes it, and `streamscope lint FILE.har`.

The SARIF of the fixtures is validated against the OASIS SARIF 2.1.0 schema (vendored in
fixtures/sarif, see its NOTICE.md) with format checks on, and against GitHub code scanning's
documented requirements: a ``region.startLine`` in every result (at the frame's line in the
linted file), ``partialFingerprints``, a relative ``uri`` (percent-encoded), one run, its
limits (results, rules, locations, tags).
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamscope.cli import main
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    write_capture,
)
from streamscope.core.capture.har import capture_to_har, dump_har
from streamscope.core.verdict import RULES
from streamscope.core.verdict.locations import har_entry_positions, line_numbers
from streamscope.core.verdict.report import artifact_uri, fingerprint

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = FIXTURES / "sarif" / "sarif-schema-2.1.0.json"
HAR = Path(__file__).parents[1] / "fixtures" / "har"
BROKEN = FIXTURES / "openai/cut_mid_frame.sse"


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


def sarif(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = lint(capsys, *args, "--sarif")
    assert code in (0, 1), err
    log: dict[str, Any] = json.loads(out)
    assert_valid(log)
    return log


# -- the two validators ---------------------------------------------------------------------


def assert_valid(log: dict[str, Any]) -> None:
    """The OASIS schema (format checks on) and GitHub's documented requirements."""
    import jsonschema

    checker = jsonschema.FormatChecker()  # (every format: the schema is draft-04 but uses
    assert {"uri", "uri-reference", "date-time"} <= set(checker.checkers)  # uri-reference)
    schema = json.loads(SCHEMA.read_text("utf-8"))
    validator = jsonschema.Draft4Validator(schema, format_checker=checker)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []
    assert github_problems(log) == []


def github_problems(log: dict[str, Any]) -> list[str]:
    """What GitHub code scanning's "SARIF support" page requires or refuses."""
    problems = []
    if log.get("version") != "2.1.0":
        problems.append("version is not 2.1.0")
    runs = log.get("runs", [])
    if not 1 <= len(runs) <= 1:  # (≤ 20 allowed; several runs of one tool are refused)
        problems.append(f"{len(runs)} runs")
    for run in runs:
        driver = run["tool"]["driver"]
        if not driver.get("name"):
            problems.append("no tool.driver.name")
        rules = {r["id"]: r for r in driver.get("rules", [])}
        if len(rules) > 25_000 or len(run["results"]) > 25_000:
            problems.append("over the rules or results limit")
        for r in rules.values():
            if not r.get("shortDescription", {}).get("text") or not r.get("help", {}).get("text"):
                problems.append(f"rule {r['id']} without a description or help")
            if len(r.get("properties", {}).get("tags", [])) > 20:
                problems.append(f"rule {r['id']} has over 20 tags")
        for i, res in enumerate(run["results"]):
            where = f"result {i}"
            if res.get("ruleId") not in rules:
                problems.append(f"{where}: ruleId not a rule of the driver")
            if not res.get("message", {}).get("text"):
                problems.append(f"{where}: no message.text")
            if not res.get("partialFingerprints"):
                problems.append(f"{where}: no partialFingerprints")
            locations = res.get("locations", [])
            if not 1 <= len(locations) <= 1000:
                problems.append(f"{where}: {len(locations)} locations")
            for loc in locations:
                phys = loc.get("physicalLocation", {})
                uri = phys.get("artifactLocation", {}).get("uri", "")
                if not uri or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri) or uri.startswith("/"):
                    problems.append(f"{where}: uri {uri!r} is not relative")
                if re.search(r"[^A-Za-z0-9\-._~/%!$&'()*+,;=:@]", uri):
                    problems.append(f"{where}: uri {uri!r} is not percent-encoded")
                start = phys.get("region", {}).get("startLine")
                if not isinstance(start, int) or start < 1:
                    problems.append(f"{where}: no region.startLine")
    return problems


def results(log: dict[str, Any]) -> list[tuple[str, str, int, int | None]]:
    """(rule, message, startLine, startColumn) of each result."""
    out = []
    for res in log["runs"][0]["results"]:
        region = res["locations"][0]["physicalLocation"]["region"]
        out.append(
            (res["ruleId"], res["message"]["text"], region["startLine"], region.get("startColumn"))
        )
    return out


# -- every fixture ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", sorted(p for p in FIXTURES.glob("*/*") if p.suffix in (".sse", ".ndjson", ".txt"))
)
def test_every_fixture_gives_valid_sarif(
    capsys: pytest.CaptureFixture[str], path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FIXTURES.parents[2])
    log = sarif(capsys, str(path.relative_to(FIXTURES.parents[2])))
    lines = path.read_bytes().count(b"\n") + 1
    for res in log["runs"][0]["results"]:
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {
            "uri": path.relative_to(FIXTURES.parents[2]).as_posix(),
            "index": 0,
            "uriBaseId": "SRCROOT",
        }
        assert 1 <= loc["region"]["startLine"] <= lines
        frame = res["properties"]["frame"]
        if frame is not None:
            assert res["message"]["text"].startswith(f"frame {frame}: ")


# -- where a finding points ------------------------------------------------------------------


def test_a_body_finding_is_at_its_frames_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    log = sarif(capsys, str(BROKEN), "--dialect", "openai")
    assert [(r, line) for r, _, line, _ in results(log)] == [
        ("sse.truncated-frame", 5),  # frame 2 starts on line 5 (frames 0 and 1: lines 1-4)
        ("stream.terminal-missing", 1),  # the whole stream: line 1
    ]
    assert results(log)[0][1] == (
        "frame 2: the body ended inside a frame (no blank line after it): 121 bytes"
    )
    res = log["runs"][0]["results"][0]
    assert res["locations"][0]["logicalLocations"] == [
        {"name": "frame 2", "fullyQualifiedName": "frames/2", "kind": "element"}
    ]
    assert log["runs"][0]["properties"] == {"dialect": "openai", "outcome": "truncated"}


def test_line_numbers_count_lf_crlf_and_cr() -> None:
    data = b"a\r\nb\rc\nd\r\n\r\ne"
    assert line_numbers(data, [0, 3, 5, 7, 12, 11, 10, 99]) == {
        0: 1,
        3: 2,
        5: 3,
        7: 4,
        10: 5,
        11: 5,  # (inside a CRLF)
        12: 6,
        99: 6,
    }


def _broken_capture(*, name: str = "cut") -> Capture:
    body = BROKEN.read_bytes()
    third = body.index(b"data:", body.index(b"data:", 1) + 1)  # frame 2's first byte
    reads = [body[:third], body[third : third + 10], body[third + 10 :]]
    return Capture(
        dialect="openai",
        request=CaptureRequest("POST", f"http://127.0.0.1/{name}/v1/chat/completions", (), b"{}"),
        response=CaptureResponse(200, (("content-type", "text/event-stream"),), t=0.1),
        reads=ReadLog([(0.2 + 0.1 * i, r) for i, r in enumerate(reads)]),
        end=CaptureEnd("eof", elapsed=0.6),
    )


def test_a_capture_finding_is_at_the_read_its_frame_starts_in(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_capture(tmp_path / "turn.sscap", _broken_capture())
    log = sarif(capsys, "turn.sscap")
    # line 1 the header, lines 2-4 the three reads: frame 2 starts in the second read
    assert [(r, line) for r, _, line, _ in results(log)] == [
        ("sse.truncated-frame", 3),
        ("stream.terminal-missing", 1),
    ]
    assert log["runs"][0]["artifacts"] == [
        {"location": {"uri": "turn.sscap", "uriBaseId": "SRCROOT"}}
    ]


def _exported_har(tmp_path: Path, *, pretty: bool = True) -> Path:
    """A HAR as the app exports it: a clean exchange, then the cut one."""
    clean_body = (FIXTURES / "openai/plain_text.sse").read_bytes()
    clean = Capture(
        dialect="openai",
        request=CaptureRequest(
            "POST",
            "http://127.0.0.1/v1/chat/completions",
            (),
            b'{"stream": true, "stream_options": {"include_usage": true}}',
        ),
        response=CaptureResponse(200, (("content-type", "text/event-stream"),), t=0.1),
        reads=ReadLog([(0.2, clean_body)]),
        end=CaptureEnd("eof", elapsed=0.3),
    )
    har = capture_to_har([clean, _broken_capture()])
    path = tmp_path / ("turns.har" if pretty else "one line.har")
    path.write_bytes(dump_har(har) if pretty else orjson.dumps(har))
    return path


def test_a_har_finding_is_at_its_entrys_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _exported_har(tmp_path)
    text = path.read_text("utf-8").splitlines()
    starts = [i + 1 for i, line in enumerate(text) if line == "      {"]  # (entries: depth 3)
    assert len(starts) == 2
    log = sarif(capsys, "turns.har")
    assert results(log) == [
        (
            "sse.truncated-frame",
            "entry 2, frame 2: the body ended inside a frame (no blank line after it): 121 bytes",
            starts[1],
            7,
        ),
        (
            "stream.terminal-missing",
            "entry 2: the body ended without the dialect's terminal signal: [DONE] "
            "(connection closed mid-frame after 633 B, no [DONE])",
            starts[1],
            7,
        ),
    ]
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    res = log["runs"][0]["results"][0]
    assert res["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == (
        "entries/2/frames/2"
    )
    assert res["properties"]["entry"] == 2


def test_a_one_line_har_points_at_line_1_and_the_entrys_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _exported_har(tmp_path, pretty=False)
    data = path.read_bytes()
    second = json.loads(data)["log"]["entries"][1]
    column = data.index(orjson.dumps(second)) + 1  # (ASCII: bytes are code points)
    assert har_entry_positions(data)[1] == (1, column)
    log = sarif(capsys, "one line.har")
    assert {(line, col) for _, _, line, col in results(log)} == {(1, column)}
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "one%20line.har"


def test_har_entry_positions_skip_nested_arrays_and_strings() -> None:
    data = (
        b'{"log": {"pages": [{"x": "[{\\"entries\\": ["}], "entries": [\n'
        b'  {"a": [{"b": 1}], "s": "}]"},\n  7,\n  {"c": "\xc3\xa9"}, {"d": 2}\n]}}'
    )
    assert har_entry_positions(data) == [(2, 3), (3, 3), (4, 3), (4, 15)]


# -- uri and fingerprints --------------------------------------------------------------------


def test_uris_are_relative_and_percent_encoded(tmp_path: Path) -> None:
    path = tmp_path / "my dir" / "réponse #1.sse"
    assert artifact_uri(str(path), str(tmp_path)) == (
        "my%20dir/r%C3%A9ponse%20%231.sse",
        "SRCROOT",
    )
    assert artifact_uri(str(tmp_path / "x.sse"), str(tmp_path / "sub")) == ("../x.sse", "SRCROOT")


def test_a_non_ascii_path_lints_to_valid_sarif(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "réponses du jour").mkdir()
    (tmp_path / "réponses du jour" / "coupé.sse").write_bytes(BROKEN.read_bytes())
    log = sarif(capsys, "réponses du jour/coupé.sse")
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc["uri"] == "r%C3%A9ponses%20du%20jour/coup%C3%A9.sse"


def test_fingerprints_survive_a_stream_that_moved(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep-alives before it move the broken frame (another frame number, another line, other
    byte counts): the same finding keeps its fingerprint; another finding has another."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.sse").write_bytes(BROKEN.read_bytes())
    (tmp_path / "b.sse").write_bytes(b": ping\n\n: ping\n\n" + BROKEN.read_bytes())
    a = sarif(capsys, "a.sse", "--dialect", "openai")["runs"][0]["results"]
    b = sarif(capsys, "b.sse", "--dialect", "openai")["runs"][0]["results"]
    assert [x["ruleId"] for x in a] == [x["ruleId"] for x in b]
    assert a[0]["message"]["text"].startswith("frame 2: ")
    assert b[0]["message"]["text"].startswith("frame 4: ")
    lines = [x["locations"][0]["physicalLocation"]["region"]["startLine"] for x in (a[0], b[0])]
    assert lines == [5, 9]
    for x, y in zip(a, b, strict=True):
        assert x["partialFingerprints"] == y["partialFingerprints"]
        assert set(x["partialFingerprints"]) == {"streamscopeFinding/v1", "primaryLocationLineHash"}
    assert a[0]["partialFingerprints"] != a[1]["partialFingerprints"]


def test_fingerprint_is_rule_dialect_message_and_frame() -> None:
    base = fingerprint("sse.truncated-frame", "openai", "x: 121 bytes", b"data: {")
    assert base == fingerprint("sse.truncated-frame", "openai", "x: 99 bytes", b"data: {")
    assert (
        len(
            {
                base,
                fingerprint("sse.invalid-utf8", "openai", "x: 121 bytes", b"data: {"),
                fingerprint("sse.truncated-frame", "anthropic", "x: 121 bytes", b"data: {"),
                fingerprint("sse.truncated-frame", "openai", "y: 121 bytes", b"data: {"),
                fingerprint("sse.truncated-frame", "openai", "x: 121 bytes", b"data: ["),
            }
        )
        == 5
    )


def test_a_finding_repeated_on_several_frames_is_one_result_with_its_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.sse").write_bytes(b"data: nope\n\n" * 3 + b"data: [DONE]\n\n")
    log = sarif(capsys, "s.sse", "--dialect", "openai")
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "stream.malformed-frame"]
    assert result["message"]["text"].startswith("frame 0: ")
    assert result["message"]["text"].endswith(" (3 times: frames 0, 1, 2)")
    assert (result["properties"]["count"], result["properties"]["frames"]) == (3, [0, 1, 2])
    assert result["partialFingerprints"]["streamscopeFinding/v1"].endswith(":1")


def test_the_driver_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    log = sarif(capsys, str(BROKEN))
    assert [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]] == list(RULES)


# -- streamscope lint FILE.har ---------------------------------------------------------------


def test_lint_har_lints_every_exchange(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _exported_har(tmp_path)
    code, out, err = lint(capsys, str(path))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "entry 1: POST http://127.0.0.1/v1/chat/completions"
    assert lines[1] == "openai · completed · 0 errors, 0 warnings, 0 notes"
    assert lines[2] == "entry 2: POST http://127.0.0.1/cut/v1/chat/completions"
    assert lines[3].split()[:5] == ["✖", "error", "frame", "2", "sse.truncated-frame"]
    assert lines[-1] == "openai · truncated · 2 errors, 0 warnings, 0 notes"
    assert err == "2 LLM exchange(s) linted, 0 other entries skipped\n"


def test_lint_har_json_is_one_line_per_exchange(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = lint(capsys, str(HAR / "chrome.har"), "--json")
    objs = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(o["entry"], o["method"], o["dialect"], o["outcome"]) for o in objs] == [
        (2, "POST", "openai", "completed"),
        (3, "POST", "anthropic", "completed"),
    ]
    assert [(f["rule"], f["frame"]) for f in objs[0]["findings"]] == [
        ("transport.content-encoding", None)
    ]
    assert list(objs[1]) == ["entry", "method", "url", "dialect", "outcome", "findings", "summary"]
    assert err == "2 LLM exchange(s) linted, 2 other entries skipped\n"


def test_lint_har_entry_is_like_a_capture(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _exported_har(tmp_path)
    code, out, err = lint(capsys, str(path), "--entry", "2", "--json")
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert list(doc) == ["dialect", "outcome", "findings", "summary"]
    assert [(f["rule"], f["frame"]) for f in doc["findings"]] == [
        ("sse.truncated-frame", 2),
        ("stream.terminal-missing", None),
    ]
    code, out, _ = lint(capsys, str(path), "--entry", "1")
    assert (code, out) == (0, "openai · completed · 0 errors, 0 warnings, 0 notes\n")


def test_lint_har_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = lint(capsys, str(HAR / "chrome.har"), "--entry", "4")
    assert (code, err) == (
        2,
        "streamscope lint: error: entry 4 is not replayed: served from the browser's disk cache\n",
    )
    code, _, err = lint(capsys, str(HAR / "chrome.har"), "--entry", "9")
    assert (code, err) == (2, "streamscope lint: error: no entry 9 (the HAR file has 4)\n")
    code, _, err = lint(capsys, str(BROKEN), "--entry", "1")
    assert (code, err) == (2, "streamscope lint: error: --entry applies to a HAR file only\n")
    empty = tmp_path / "empty.har"
    empty.write_text('{"log": {"version": "1.2", "entries": []}}')
    code, _, err = lint(capsys, str(empty))
    assert code == 2
    assert "no LLM exchange in the HAR file (0 entries" in err


def test_lint_har_from_stdin_with_sarif(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (HAR / "firefox.har").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    log = sarif(capsys, "-")
    positions = har_entry_positions(data)
    found = {(r["properties"]["entry"], r["ruleId"]) for r in log["runs"][0]["results"]}
    assert (3, "transport.not-a-stream") in found
    for r in log["runs"][0]["results"]:
        region = r["locations"][0]["physicalLocation"]["region"]
        assert (region["startLine"], region["startColumn"]) == positions[
            r["properties"]["entry"] - 1
        ]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "stdin"
