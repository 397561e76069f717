"""The ``.sscap`` format byte for byte: what the writer puts in each line, what the reader
accepts, defaults and refuses (with the exact message), and the read log's offsets. The format
is an interface (files outlive the app that wrote them), so every value here is pinned.
(Found wanting by mutation testing: see tests/MUTATION.md.)"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import streamscope.core.capture.format.model as fmt_model
import streamscope.core.capture.format.read as fmt
import streamscope.core.capture.format.write as fmt_write
from streamscope import __version__
from streamscope.core.capture.format import (
    CAPTURE_SUFFIX,
    FORMAT,
    FORMAT_VERSION,
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    dump_capture,
    end_line,
    header_line,
    is_capture,
    now_iso,
    read_capture,
    read_line,
    write_capture,
)
from streamscope.core.capture.format.read import MAX_LINE_VALUES, YIELD_EVERY_LINES

HEAD = b'{"format":"streamscope-capture","version":1'


def _capture() -> Capture:
    capture = Capture(
        "anthropic",
        CaptureRequest(
            "PUT",
            "https://h/v1/messages?key=***",
            (("x-api-key", "***"), ("accept", "text/event-stream")),
            b'{"model":"m","stream":true}',
        ),
        CaptureResponse(201, (("Content-Type", "text/event-stream"),), 0.125),
        created="2026-11-29T21:30:00+00:00",
        app_version="9.8.7",
    )
    capture.reads.append(0.5, b"data: a\n\n")
    capture.reads.append(1.0, b"")
    capture.reads.append(2, b"\xff\x00")
    capture.end = CaptureEnd("http_error", 2.5, "d", 30.0, b"{}", "error", "r")
    return capture


FILE = (
    b'{"format":"streamscope-capture","version":1,"created":"2026-11-29T21:30:00+00:00",'
    b'"app_version":"9.8.7","dialect":"anthropic","request":{"method":"PUT",'
    b'"url":"https://h/v1/messages?key=***","headers":[["x-api-key","***"],'
    b'["accept","text/event-stream"]],"body":{"model":"m","stream":true}},'
    b'"response":{"status":201,"headers":[["Content-Type","text/event-stream"]],"t":0.125}}\n'
    b'{"t":0.5,"b64":"ZGF0YTogYQoK"}\n'
    b'{"t":1.0,"b64":""}\n'
    b'{"t":2.0,"b64":"/wA="}\n'
    b'{"end":{"kind":"http_error","elapsed":2.5,"detail":"d","timeout":30.0,'
    b'"outcome":"error","reason":"r","body_b64":"e30="}}\n'
)


# -- writing ---------------------------------------------------------------------------------


def test_the_constants_of_the_format() -> None:
    assert (FORMAT, FORMAT_VERSION, CAPTURE_SUFFIX) == ("streamscope-capture", 1, ".sscap")
    assert (MAX_LINE_VALUES, YIELD_EVERY_LINES) == (2_097_152, 32)


def test_a_capture_is_written_byte_for_byte() -> None:
    out = io.BytesIO()
    assert dump_capture(_capture(), out) == len(FILE)
    assert out.getvalue() == FILE


def test_each_line_on_its_own() -> None:
    capture = _capture()
    lines = FILE.splitlines(keepends=True)
    assert header_line(capture) == lines[0]
    assert [read_line(t, d) for t, d in capture.reads] == lines[1:4]
    assert capture.end is not None and end_line(capture.end) == lines[4]
    assert read_line(0.1 + 0.2, b"\x00") == b'{"t":0.30000000000000004,"b64":"AA=="}\n'


def test_what_the_header_holds_when_parts_are_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt_write, "now_iso", lambda: "NOW")
    bare = Capture("openai")
    assert header_line(bare) == (
        b'{"format":"streamscope-capture","version":1,"created":"NOW",'
        b'"app_version":"' + __version__.encode() + b'","dialect":"openai",'
        b'"request":null,"response":null}\n'
    )
    empty_body = Capture("auto", CaptureRequest("POST", "u", (), b""), created="c")
    assert header_line(empty_body) == (
        b'{"format":"streamscope-capture","version":1,"created":"c",'
        b'"app_version":"' + __version__.encode() + b'","dialect":"auto",'
        b'"request":{"method":"POST","url":"u","headers":[],"body":null},"response":null}\n'
    )
    not_json = Capture("openai", CaptureRequest("POST", "u", (), b"\x00{"), created="c")
    assert b'"request":{"method":"POST","url":"u","headers":[],"body_b64":"AHs="}' in (
        header_line(not_json)
    )


def test_an_end_without_a_body_or_outcome() -> None:
    assert end_line(CaptureEnd("eof")) == (
        b'{"end":{"kind":"eof","elapsed":null,"detail":"","timeout":null,'
        b'"outcome":null,"reason":""}}\n'
    )
    assert end_line(CaptureEnd("not_a_stream", body=b"")).endswith(b',"body_b64":""}}\n')


def test_faults_on_cue_are_kept_in_the_end_line_and_read_back() -> None:
    fault = {"fault": "cut@frame:5", "kind": "cut", "when": "always", "applied": True, "at": 0.5}
    line = end_line(CaptureEnd("broken", 1.0, faults=(fault,)))
    assert line.endswith(
        b',"faults":[{"fault":"cut@frame:5","kind":"cut","when":"always","applied":true,'
        b'"at":0.5}]}}\n'
    )
    capture = _capture()
    capture.end = CaptureEnd("broken", 1.0, faults=(fault,))
    out = io.BytesIO()
    dump_capture(capture, out)
    back = read_capture(io.BytesIO(out.getvalue()))
    assert back.end is not None and back.end.faults == (fault,)
    assert read_capture(io.BytesIO(FILE)).end.faults == ()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        ('{"cut": 1}', "expected an array"),
        ('[{"kind": "cut"}]', "item 0: expected an object with a fault"),
        ('[{"fault": "cut@frame:1"}, 3]', "item 1: expected an object with a fault, got 3"),
    ],
)
def test_a_faults_value_that_is_not_an_array_of_faults_is_refused(
    faults: str, message: str
) -> None:
    bad = FILE[: FILE.index(b'{"end"')] + b'{"end":{"kind":"eof","faults":%s}}\n' % faults.encode()
    with pytest.raises(CaptureError, match=re.escape(message)):
        read_capture(io.BytesIO(bad))


def test_a_capture_without_an_end_has_no_end_line() -> None:
    capture = _capture()
    capture.end = None
    out = io.BytesIO()
    written = dump_capture(capture, out)
    assert out.getvalue() == FILE[: FILE.index(b'{"end"')]
    assert written == len(out.getvalue())


def test_now_iso_is_utc_to_the_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    text = now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", text)
    assert abs((datetime.now(UTC) - datetime.fromisoformat(text)).total_seconds()) < 60

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Frozen:
            return cls(2026, 12, 2, 22, 3, 58, 123456, tzinfo=tz)

    monkeypatch.setattr(fmt_model, "datetime", Frozen)
    assert now_iso() == "2026-12-02T22:03:58.123+00:00"  # (a HAR's startedDateTime)


@pytest.mark.parametrize(
    ("created", "started"),
    [
        ("2026-11-30T10:00:01.250+00:00", 1796032801.25),
        ("2026-11-30T11:00:01.250+01:00", 1796032801.25),
        ("2026-11-30T10:00:01.250Z", 1796032801.25),
        ("2026-11-30T10:00:01", 1796032801.0),  # (no zone: UTC)
        ("", None),
        ("c", None),
    ],
)
def test_a_captures_start_as_a_unix_time(created: str, started: float | None) -> None:
    assert Capture("openai", created=created).started == started


class _Watching:
    """Reads for ``dump_capture`` that look at the directory while the file is written."""

    def __init__(self, directory: Path, fail: bool = False) -> None:
        self.directory = directory
        self.fail = fail
        self.seen: list[str] = []

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        self.seen = sorted(p.name for p in self.directory.iterdir())
        yield 0.5, b"x"
        if self.fail:
            raise OSError("disk full")


def test_write_capture_is_atomic_through_a_hidden_file_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "t.sscap"
    capture = Capture("openai", created="c", app_version="v")
    reads = _Watching(tmp_path)
    capture.reads = reads  # type: ignore[assignment]
    size = write_capture(str(path), capture)
    assert len(reads.seen) == 1
    assert reads.seen[0].startswith(".tmp-") and reads.seen[0].endswith(".sscap")
    assert path.read_bytes().endswith(b'\n{"t":0.5,"b64":"eA=="}\n')
    assert size == path.stat().st_size
    assert sorted(os.listdir(tmp_path)) == ["t.sscap"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "t.sscap"
    path.write_bytes(b"old")
    capture = Capture("openai")
    capture.reads = _Watching(tmp_path, fail=True)  # type: ignore[assignment]
    with pytest.raises(OSError, match="disk full"):
        write_capture(path, capture)
    assert path.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["t.sscap"]


# -- the data types ------------------------------------------------------------------------------


def test_the_read_log_keeps_offsets_and_times() -> None:
    log = ReadLog()
    assert (len(log), log.size, log.body(), list(log)) == (0, 0, b"", [])
    log.append(0.25, b"abc")
    log.append(0.5, b"")
    log.append(1, b"de")
    assert list(log) == [(0.25, b"abc"), (0.5, b""), (1.0, b"de")]
    assert (len(log), log.size, log.body()) == (3, 5, b"abcde")
    assert log.buffer() is log.buffer() and log.buffer() == bytearray(b"abcde")
    assert log == ReadLog([(0.25, b"abc"), (0.5, b""), (1.0, b"de")])
    assert log != ReadLog([(0.25, b"ab"), (0.5, b"c"), (1.0, b"de")])  # same bytes, cut apart
    assert log != ReadLog([(0.25, b"abc"), (0.5, b""), (1.5, b"de")])  # same cuts, other time
    assert log != ReadLog([(0.25, b"abc"), (0.5, b""), (1.0, b"dx")])
    assert log.__eq__(object()) is NotImplemented
    assert ReadLog.__hash__ is None


def test_a_response_header_is_found_by_any_case() -> None:
    response = CaptureResponse(200, (("X-A", "1"), ("x-a", "2"), ("B", "3")))
    assert (response.header("x-a"), response.header("X-A"), response.header("b")) == (
        "1", "1", "3",
    )  # fmt: skip
    assert response.header("c") is None
    assert response.t == 0.0


@pytest.mark.parametrize(
    ("dialect", "ctype", "framing"),
    [
        ("openai", None, "sse"),
        ("openai", "application/x-ndjson", "ndjson"),
        ("openai", "application/jsonl; charset=utf-8", "ndjson"),
        ("ollama", None, "ndjson"),
        ("ollama", "text/event-stream", "ndjson"),
        ("auto", "text/event-stream", "sse"),
        ("auto", "application/x-ndjson", "ndjson"),
        ("gone", None, "sse"),
    ],
)
def test_the_framing_of_a_captured_body(dialect: str, ctype: str | None, framing: str) -> None:
    headers = (("Content-Type", ctype),) if ctype else ()
    capture = Capture(dialect, response=CaptureResponse(200, headers))
    assert capture.framing() == framing
    if ctype is None:
        assert Capture(dialect).framing() == framing  # no response at all


def test_a_capture_knows_its_size_and_defaults() -> None:
    capture = Capture("openai")
    assert (capture.size, capture.created, capture.app_version) == (0, "", __version__)
    capture.reads.append(0.0, b"12345")
    assert capture.size == 5


# -- reading -------------------------------------------------------------------------------------


def test_a_written_capture_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "c.sscap"
    path.write_bytes(FILE)
    for source in (path, str(path), io.BytesIO(FILE)):
        capture = read_capture(source)
        assert capture == _capture()
        assert [type(t) for t, _ in capture.reads] == [float, float, float]


def test_is_capture_allows_a_bom_and_whitespace_only() -> None:
    assert is_capture(b'\xef\xbb\xbf \n{ "format"\t:\n"streamscope-capture"')
    assert not is_capture(b'\xef\xbb\xbf\xef\xbb\xbf{"format":"streamscope-capture"')
    assert not is_capture(b'x{"format":"streamscope-capture"')
    assert not is_capture(b'{"format":"streamscope-captur"')
    assert not is_capture(b'{"version":1,"format":"streamscope-capture"')
    assert not is_capture(b"")


def _read(data: bytes) -> Capture:
    return read_capture(io.BytesIO(data))


def _error(data: bytes) -> str:
    with pytest.raises(CaptureError) as info:
        _read(data)
    return str(info.value)


LINE1 = b'{"format":"streamscope-capture","version":1}\n'


def test_the_defaults_of_a_minimal_capture() -> None:
    capture = _read(LINE1)
    assert capture == Capture("auto", None, None, ReadLog(), None, "", "")
    nulls = _read(
        b'{"format":"streamscope-capture","version":1,"dialect":null,"created":null,'
        b'"app_version":null,"request":null,"response":null}\n'
    )
    assert nulls == capture
    request = _read(
        b'{"format":"streamscope-capture","version":1,"request":{},"response":{"status":100}}\n'
    )
    assert request.request == CaptureRequest("POST", "", (), b"")
    assert request.response == CaptureResponse(100, (), 0.0)
    assert type(request.response.t) is float


@pytest.mark.parametrize(
    ("request_json", "expected"),
    [
        (b'{"body":{"a":[1, 2]}}', CaptureRequest("POST", "", (), b'{"a":[1,2]}')),
        (b'{"body":0}', CaptureRequest("POST", "", (), b"0")),
        (b'{"body":false,"method":""}', CaptureRequest("", "", (), b"false")),
        (b'{"body":null,"url":null,"method":null}', CaptureRequest("POST", "", (), b"")),
        (b'{"body":{"a":1},"body_b64":"eA=="}', CaptureRequest("POST", "", (), b"x")),
        (b'{"body":{"a":1},"body_b64":null}', CaptureRequest("POST", "", (), b'{"a":1}')),
        (b'{"body_b64":""}', CaptureRequest("POST", "", (), b"")),
        (
            b'{"headers":{"a":"1","b":"2"},"url":"u"}',
            CaptureRequest("POST", "u", (("a", "1"), ("b", "2")), b""),
        ),
        (b'{"headers":null}', CaptureRequest("POST", "", (), b"")),
        (b'{"headers":[]}', CaptureRequest("POST", "", (), b"")),
    ],
)
def test_how_a_request_is_read(request_json: bytes, expected: CaptureRequest) -> None:
    line = b'{"format":"streamscope-capture","version":1,"request":' + request_json + b"}\n"
    assert _read(line).request == expected


@pytest.mark.parametrize(
    ("response_json", "expected"),
    [
        (b'{"status":999,"t":1}', CaptureResponse(999, (), 1.0)),
        (b'{"status":100,"t":null,"headers":[["a","b"]]}', CaptureResponse(100, (("a", "b"),))),
    ],
)
def test_how_a_response_is_read(response_json: bytes, expected: CaptureResponse) -> None:
    line = b'{"format":"streamscope-capture","version":1,"response":' + response_json + b"}\n"
    response = _read(line).response
    assert response == expected
    assert response is not None and type(response.t) is float


@pytest.mark.parametrize(
    ("end_json", "expected"),
    [
        (b'{"kind":"eof"}', CaptureEnd("eof")),
        (
            b'{"kind":"idle_timeout","elapsed":3,"timeout":2,"detail":null,"outcome":null,'
            b'"reason":null,"body_b64":null}',
            CaptureEnd("idle_timeout", 3.0, "", 2.0),
        ),
        (
            b'{"kind":"cancelled","outcome":"cancelled","reason":"R","detail":"D","body_b64":""}',
            CaptureEnd("cancelled", None, "D", None, b"", "cancelled", "R"),
        ),
    ],
)
def test_how_an_end_is_read(end_json: bytes, expected: CaptureEnd) -> None:
    end = _read(LINE1 + b'{"end":' + end_json + b"}\n").end
    assert end == expected
    assert end is not None
    assert end.elapsed is None or type(end.elapsed) is float
    assert end.timeout is None or type(end.timeout) is float


@pytest.mark.parametrize("outcome", ["completed", "truncated", "cancelled", "error"])
def test_every_outcome_is_read(outcome: str) -> None:
    end = _read(LINE1 + b'{"end":{"kind":"eof","outcome":"%s"}}\n' % outcome.encode()).end
    assert end is not None and end.outcome == outcome


@pytest.mark.parametrize(
    "kind",
    [
        "eof",
        "broken",
        "idle_timeout",
        "first_byte_timeout",
        "cancelled",
        "http_error",
        "not_a_stream",
        "protocol_error",
        "connect_error",
    ],
)
def test_every_end_kind_is_read(kind: str) -> None:
    end = _read(LINE1 + b'{"end":{"kind":"%s"}}\n' % kind.encode()).end
    assert end is not None and end.kind == kind


@pytest.mark.parametrize(
    "dialect", ["openai", "anthropic", "gemini", "responses", "ollama", "auto"]
)
def test_every_dialect_is_read(dialect: str) -> None:
    line = b'{"format":"streamscope-capture","version":1,"dialect":"%s"}\n' % dialect.encode()
    assert _read(line).dialect == dialect


def test_which_lines_are_reads_ends_or_ignored() -> None:
    capture = _read(
        b"\xef\xbb\xbf" + LINE1 + b"\n"  # a blank line
        b"  \r\n"
        b'{"t":0,"b64":"YQ==","end":{"kind":"broken"}}\n'  # a read: b64 comes first
        b'{"t":1.5}\n'  # neither: ignored
        b'{"note":"later"}\n'
        b'{"end":{"kind":"eof"}}\n'
        b'{"end":{"kind":"broken"}}\n'  # the last end wins
        b'{"t":3,"b64":"Yg=="}\n'  # a read after the end is still a read
        b"   "
    )
    assert list(capture.reads) == [(0.0, b"a"), (3.0, b"b")]
    assert capture.end == CaptureEnd("broken")


def test_a_last_line_cut_short_ends_the_reads_but_a_damaged_one_before_it_is_named() -> None:
    assert list(_read(LINE1 + b'{"t":1,"b64":"YQ=="}\n{"t":2,"b64":"Y').reads) == [(1.0, b"a")]
    assert _error(LINE1 + b'{"t":2,"b64":"Y\n{"t":1,"b64":"YQ=="}\n') == (
        "line 2: not valid JSON (unexpected control character in string at byte 15)"
    )


def test_a_background_read_yields_every_32_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    monkeypatch.setattr(fmt.time, "sleep", sleeps.append)
    data = LINE1 + b'{"t":0,"b64":""}\n' * 62  # lines 2 to 63: one multiple of 32
    assert len(read_capture(io.BytesIO(data), background=True).reads) == 62
    assert sleeps == [0]
    assert len(read_capture(io.BytesIO(data + b'{"t":0,"b64":""}\n'), background=True).reads)
    assert sleeps == [0, 0, 0]  # line 64 too
    read_capture(io.BytesIO(data))
    assert sleeps == [0, 0, 0]


MALFORMED = [
    (b"", "not a StreamScope capture (first line does not identify one)"),
    (
        b'{"format":"streamscope-capture"',
        "line 1: not valid JSON (unexpected end of data at byte 31)",
    ),
    (
        b'{"format":"streamscope-capture","format":"other","version":1}\n',
        'line 1: format: expected "streamscope-capture", got "other"',
    ),
    (
        b'{"format":"streamscope-capture","format":null,"version":1}\n',
        'line 1: format: expected "streamscope-capture", got null',
    ),
    (
        b'{"format":"streamscope-capture","version":-3}\n',
        "line 1: version: expected a positive integer, got -3",
    ),
    (
        b'{"format":"streamscope-capture","version":1.0}\n',
        "line 1: version: expected an integer, got 1.0",
    ),
    (
        b'{"format":"streamscope-capture","version":true}\n',
        "line 1: version: expected an integer, got true",
    ),
    (
        b'{"format":"streamscope-capture","version":null}\n',
        "line 1: version: expected an integer, got null",
    ),
    (
        b'{"format":"streamscope-capture","version":1,"app_version":1}\n',
        "line 1: app_version: expected a string, got 1",
    ),
    (
        b'{"format":"streamscope-capture","version":1,"response":{"status":99}}\n',
        "line 1: response.status: expected an HTTP status (100 to 999), got 99",
    ),
    (
        b'{"format":"streamscope-capture","version":1,"response":{"status":1000}}\n',
        "line 1: response.status: expected an HTTP status (100 to 999), got 1000",
    ),
    (
        b'{"format":"streamscope-capture","version":1,"response":{"status":200,"t":true}}\n',
        "line 1: response.t: expected a number, got true",
    ),
    (
        b'{"format":"streamscope-capture","version":1,"response":{"status":200,"headers":"a"}}\n',
        'line 1: response.headers: expected a list of [name, value] pairs, got "a"',
    ),
    (
        b'{"format":"streamscope-capture","version":1,"request":{"headers":[["a","b"],'
        b'["a","b","c"]]}}\n',
        'line 1: request.headers[1]: expected a [name, value] pair of strings, got ["a","b","c"]',
    ),
    (
        b'{"format":"streamscope-capture","version":1,"request":{"headers":[[1,"b"]]}}\n',
        'line 1: request.headers[0]: expected a [name, value] pair of strings, got [1,"b"]',
    ),
    (
        b'{"format":"streamscope-capture","version":1,"request":{"headers":["ab"]}}\n',
        'line 1: request.headers[0]: expected a [name, value] pair of strings, got "ab"',
    ),
    (
        b'{"format":"streamscope-capture","version":1,"request":{"headers":{"a":1}}}\n',
        'line 1: request.headers[0]: expected a [name, value] pair of strings, got ["a",1]',
    ),
    (
        b'{"format":"streamscope-capture","version":1,"request":{"body_b64":"ZGF0YQ==x"}}\n',
        "line 1: request.body_b64: not valid base64 (Excess data after padding)",
    ),
    (LINE1 + b"[]\n", "line 2: expected an object, got []"),
    (LINE1 + b"nope\n", "line 2: not valid JSON (invalid literal, expected 'null' at byte 0)"),
    (LINE1 + b'{"t":true,"b64":""}\n', "line 2: t: expected a number, got true"),
    (
        LINE1 + b'{"t":1,"b64":"\xc3\xa9"}\n',
        "line 2: b64: not valid base64 (string argument should contain only ASCII characters)",
    ),
    (LINE1 + b'{"t":1,"b64":["YQ=="]}\n', 'line 2: b64: expected a string, got ["YQ=="]'),
    (LINE1 + b"\n" + b'{"end":null}\n', "line 3: end: expected an object, got null"),
    (LINE1 + b'{"end":{"kind":null}}\n', "line 2: end.kind: expected a string, got null"),
    (
        LINE1 + b'{"end":{"kind":"eof","outcome":1}}\n',
        "line 2: end.outcome: expected a string, got 1",
    ),
    (
        LINE1 + b'{"end":{"kind":"eof","outcome":"Completed"}}\n',
        'line 2: end.outcome: unknown outcome "Completed"',
    ),
    (
        LINE1 + b'{"end":{"kind":"eof","detail":false}}\n',
        "line 2: end.detail: expected a string, got false",
    ),
    (
        LINE1 + b'{"end":{"kind":"' + b"k" * 38 + b'"}}\n',
        'line 2: end.kind: unknown end kind "' + "k" * 38 + '"',
    ),
    (
        LINE1 + b'{"end":{"kind":"' + b"k" * 39 + b'"}}\n',
        'line 2: end.kind: unknown end kind "' + "k" * 38 + "…",
    ),
]


@pytest.mark.parametrize(("data", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_what_is_refused_and_how_it_is_named(data: bytes, message: str) -> None:
    assert _error(data) == message


def test_a_long_line_of_few_values_is_read_and_one_of_too_many_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Values are counted as commas, ``[``, ``{`` and pairs of quotes, only on lines longer
    than :data:`MAX_LINE_VALUES` bytes; exactly that many are allowed. (With the limit at 64
    here; tests/core/test_hostile_files.py has a line past the real one.)"""
    monkeypatch.setattr(fmt, "MAX_LINE_VALUES", 64)
    # 8 values before the list ('0,' '"",' '{' '[' and four pairs of quotes), two per "[],"
    prefix = b'{"t":0,"b64":"","x":['
    line = prefix + b"[]," * 27 + b"[[]]]}\n"  # then two "[": 64 values in all
    assert len(line) == 109
    assert len(_read(LINE1 + line).reads) == 1
    over = prefix + b"[]," * 27 + b"[[[]]]]}\n"  # one "[" more
    assert _error(LINE1 + over) == "line 2: too many JSON values to read (65; at most 64)"
    quoted = prefix + b"[]," * 27 + b'"\\"",[]]}\n'  # 3 quotes: one pair; and 1 comma, 1 "["
    assert _error(LINE1 + quoted) == "line 2: too many JSON values to read (65; at most 64)"
    braced = prefix + b"[]," * 27 + b"{},{}]}\n"  # two "{" and a comma
    assert _error(LINE1 + braced) == "line 2: too many JSON values to read (65; at most 64)"
    long_head = b'{"format":"streamscope-capture","version":1,"x":"' + b"y" * 64 + b'"}\n'
    assert _read(long_head + line).reads.size == 0  # long, but few values
    crowded = b'{"format":"streamscope-capture","version":1,"x":[' + b"[]," * 32 + b"[]]}\n"
    assert _error(crowded) == "line 1: too many JSON values to read (73; at most 64)"
    big = b'{"format":"streamscope-capture","version":1,"x":[' + b"[]," * 999 + b"[]]}\n"
    assert _error(big) == "line 1: too many JSON values to read (2,007; at most 64)"
