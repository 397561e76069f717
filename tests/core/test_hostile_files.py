"""`streamscope replay` and the window's capture readers against damaged and hostile files:
malformed captures, bundles that are zip bombs or no bundles, bodies that are no streams.
Each damage gets one line naming what is wrong and exit code 2, never a traceback."""

from __future__ import annotations

import asyncio
import io
import json
import random
import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamscope.core.capture import bundle
from streamscope.core.capture.bundle import read_repro_bundle
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureResponse,
    read_capture,
)
from streamscope.core.capture.replay import replay_capture
from streamscope.core.turn.model import turn_to_json
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from support.hostile import (
    CAPTURE_HEADER,
    many_members_zip,
    replay,
    sample_capture,
    zip_bomb,
    zip_of,
)

FIXTURES = Path(__file__).parent / "fixtures"
DIALECTS = ["auto", "openai", "anthropic", "gemini", "responses", "ollama"]


def _usage_error(path: Path, message: str) -> None:
    """``replay PATH`` exits 2 with exactly ``PATH: message`` on one line of stderr."""
    code, out, err = replay([str(path), "--json"])
    assert (code, out) == (2, "")
    assert err == f"streamscope replay: error: {path}: {message}\n"


# -- malformed captures --------------------------------------------------------------------


def _lines() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in sample_capture().splitlines()]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def _set(line: int, key_path: str, value: Any) -> Callable[[list[Any]], None]:
    """Set (or, with ``...``, delete) the field at ``a.b.c`` of line ``line`` (1-based)."""

    def edit(lines: list[Any]) -> None:
        *parents, last = key_path.split(".")
        obj = lines[line - 1]
        for key in parents:
            obj = obj[key]
        if value is ...:
            del obj[last]
        else:
            obj[last] = value

    return edit


MALFORMED = [
    (_set(1, "response.status", ...), "line 1: response.status: missing"),
    (
        _set(1, "response.status", "200x"),
        'line 1: response.status: expected an integer, got "200x"',
    ),
    (_set(1, "response.status", [200]), "line 1: response.status: expected an integer, got [200]"),
    (_set(1, "response.status", True), "line 1: response.status: expected an integer, got true"),
    (_set(1, "response.status", None), "line 1: response.status: expected an integer, got null"),
    (
        _set(1, "response.status", 99999),
        "line 1: response.status: expected an HTTP status (100 to 999), got 99999",
    ),
    (
        _set(1, "response.headers", 5),
        "line 1: response.headers: expected a list of [name, value] pairs, got 5",
    ),
    (
        _set(1, "response.headers", [["content-type"]]),
        "line 1: response.headers[0]: expected a [name, value] pair of strings, "
        'got ["content-type"]',
    ),
    (
        _set(1, "request.headers", [["x-n", 1]]),
        'line 1: request.headers[0]: expected a [name, value] pair of strings, got ["x-n",1]',
    ),
    (_set(1, "response.t", "0.01"), 'line 1: response.t: expected a number, got "0.01"'),
    (_set(1, "response", "200"), 'line 1: response: expected an object, got "200"'),
    (_set(1, "request", [1]), "line 1: request: expected an object, got [1]"),
    (_set(1, "request.method", 7), "line 1: request.method: expected a string, got 7"),
    (_set(1, "request.url", {}), "line 1: request.url: expected a string, got {}"),
    (_set(1, "request.body_b64", 5), "line 1: request.body_b64: expected a string, got 5"),
    (
        _set(1, "request.body_b64", "!!"),
        "line 1: request.body_b64: not valid base64 (Only base64 data is allowed)",
    ),
    (_set(1, "version", ...), "line 1: version: missing"),
    (_set(1, "version", "1"), 'line 1: version: expected an integer, got "1"'),
    (_set(1, "version", 0), "line 1: version: expected a positive integer, got 0"),
    (
        _set(1, "version", 2),
        "line 1: version: capture format version 2 is not supported (this app reads version 1)",
    ),
    (_set(1, "dialect", 5), "line 1: dialect: expected a string, got 5"),
    (
        _set(1, "dialect", "klingon"),
        'line 1: dialect: unknown dialect "klingon" (known: openai, anthropic, gemini, '
        "responses, ollama, auto)",
    ),
    (_set(1, "created", 2026), "line 1: created: expected a string, got 2026"),
    (_set(2, "t", "0.02"), 'line 2: t: expected a number, got "0.02"'),
    (_set(2, "t", ...), "line 2: t: missing"),
    (_set(2, "t", None), "line 2: t: expected a number, got null"),
    (_set(3, "b64", 5), "line 3: b64: expected a string, got 5"),
    (_set(3, "b64", None), "line 3: b64: expected a string, got null"),
    (_set(3, "b64", "ZGF0YQ"), "line 3: b64: not valid base64 (Incorrect padding)"),
    (_set(5, "end", "eof"), 'line 5: end: expected an object, got "eof"'),
    (_set(5, "end.kind", ...), "line 5: end.kind: missing"),
    (_set(5, "end.kind", 5), "line 5: end.kind: expected a string, got 5"),
    (_set(5, "end.kind", "meteor"), 'line 5: end.kind: unknown end kind "meteor"'),
    (_set(5, "end.outcome", "great"), 'line 5: end.outcome: unknown outcome "great"'),
    (_set(5, "end.elapsed", "0.1"), 'line 5: end.elapsed: expected a number, got "0.1"'),
    (_set(5, "end.timeout", [1]), "line 5: end.timeout: expected a number, got [1]"),
    (_set(5, "end.reason", 1), "line 5: end.reason: expected a string, got 1"),
    (
        _set(5, "end.body_b64", "*"),
        "line 5: end.body_b64: not valid base64 (Only base64 data is allowed)",
    ),
    (lambda lines: lines.insert(2, [1, 2]), "line 3: expected an object, got [1,2]"),
    (
        lambda lines: lines.insert(2, "x" * 99),
        'line 3: expected an object, got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…',
    ),
]


@pytest.mark.parametrize(("edit", "message"), MALFORMED, ids=[m for _, m in MALFORMED])
def test_a_malformed_capture_is_one_line_naming_the_line_and_field(
    edit: Callable[[list[Any]], None], message: str, tmp_path: Path
) -> None:
    lines = _lines()
    assert len(lines) == 5  # header, three reads, end
    edit(lines)
    path = _write(tmp_path / "capture.sscap", lines)
    with pytest.raises(CaptureError) as info:
        read_capture(path)  # the window's reader
    assert str(info.value) == message
    _usage_error(path, message)


def test_a_line_that_is_not_json_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.sscap"
    path.write_bytes(CAPTURE_HEADER + b'{"t":0.1,"b64":"QQ=="}\n{"t":0.2,"b64":\n')
    _usage_error(path, "line 3: not valid JSON (unexpected end of data at byte 16)")
    path.write_bytes(CAPTURE_HEADER.replace(b"}}\n", b"}\n"))
    _usage_error(path, "line 1: not valid JSON (unexpected end of data at byte 162)")


def test_a_line_of_too_many_json_values_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """(``[],`` takes 3 bytes on disk and ~64 in memory.)"""
    path = tmp_path / "c.sscap"
    path.write_bytes(CAPTURE_HEADER + b'{"t":0,"b64":"","x":[' + b"[]," * (1 << 21) + b"[]]}\n")
    _usage_error(path, "line 2: too many JSON values to read (4,194,313; at most 2,097,152)")


def test_what_captures_may_hold_still_opens(tmp_path: Path) -> None:
    """Unknown keys are ignored, nulls are defaults, headers may be an object (older
    files), a file cut mid-line keeps what came; and a BOM (which ``is_capture`` always
    allowed) now parses too."""
    lines = _lines()
    lines[0]["future"] = {"nested": [1, 2]}
    lines[0]["request"]["headers"] = {"accept": "text/event-stream"}
    lines[0]["created"] = None
    lines[1]["extra"] = True
    lines.insert(3, {"note": "a line of a kind this version does not know"})
    lines[-1]["end"]["body_b64"] = None
    data = (
        b"\xef\xbb\xbf" + _write(tmp_path / "c.sscap", lines).read_bytes() + b'{"t":0.3,"b64":"QU'
    )
    (tmp_path / "c.sscap").write_bytes(data)
    capture = read_capture(tmp_path / "c.sscap")
    assert capture.request is not None
    assert capture.request.headers == (("accept", "text/event-stream"),)
    assert len(capture.reads) == 3 and capture.end is not None
    code, out, _ = replay([str(tmp_path / "c.sscap"), "--json"])
    assert code == 0 and json.loads(out)["text"] == "Hello"


# -- bundles -------------------------------------------------------------------------------


def test_a_zip_bomb_is_refused_early_with_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(zip_bomb(64 << 20))  # 80 KB that inflate ~800x
    tracemalloc.start()
    try:
        with pytest.raises(CaptureError, match="zip bomb"):
            read_repro_bundle(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"{peak / 2**20:.1f} MB"
    _usage_error(
        path, "capture.sscap inflates beyond 200× its compressed size of 80.0 KB (a zip bomb?)"
    )


def test_a_bundle_past_the_absolute_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundle, "MAX_CAPTURE_BYTES", 2 << 20)
    path = tmp_path / "bundle.zip"
    path.write_bytes(zip_bomb(3 << 20))  # (under the ratio's threshold)
    _usage_error(path, "capture.sscap inflates beyond 2 MB (a zip bomb?)")


def test_a_zip_that_lies_about_its_sizes_is_stopped_as_it_inflates(tmp_path: Path) -> None:
    """The directory says the capture is 3 MB of compressed data (ratio 21x): the bytes
    read as it inflates say otherwise."""
    bomb = zipfile.ZipFile(io.BytesIO(zip_bomb(64 << 20))).read("capture.sscap")
    noise = random.Random(0).randbytes(3 << 20)  # (there are 3 MB to read, so no EOF first)
    data = bytearray(zip_of({"capture.sscap": bomb, "noise.bin": noise}))
    struct.pack_into("<L", data, data.index(b"PK\x01\x02") + 20, 3 << 20)  # compressed size
    path = tmp_path / "bundle.zip"
    path.write_bytes(bytes(data))
    code, _, err = replay([str(path)])
    assert code == 2 and "inflates beyond 200×" in err and "(a zip bomb?)" in err


def test_bundles_that_are_not_bundles(tmp_path: Path) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(zip_of({"README.txt": b"hello", "capture.sscap.bak": sample_capture()}))
    _usage_error(path, "not a repro bundle (no capture.sscap)")
    path.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    _usage_error(path, "damaged zip (File is not a zip file)")
    whole = zip_of({"capture.sscap": sample_capture() * 50})
    path.write_bytes(whole[:200] + b"\x55" * 400 + whole[600:])  # corrupt deflate data
    code, _, err = replay([str(path)])
    assert code == 2 and err.startswith(f"streamscope replay: error: {path}: damaged zip (")
    assert err.count("\n") == 1
    path.write_bytes(zip_of({"capture.sscap": b"data: hello\n\n"}))
    _usage_error(
        path, "capture.sscap: not a StreamScope capture (first line does not identify one)"
    )
    path.write_bytes(zip_of({"capture.sscap": CAPTURE_HEADER + b'{"t":"x","b64":""}\n'}))
    _usage_error(path, 'capture.sscap: line 2: t: expected a number, got "x"')
    path.write_bytes(zip_of({"capture.sscap": sample_capture()}, zipfile.ZIP_BZIP2))
    _usage_error(path, "capture.sscap is compressed with method 12, not deflate")


def test_a_zip_of_a_huge_number_of_members_is_refused_before_it_is_listed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(many_members_zip(40_000))
    _usage_error(path, "the zip's directory is 2.0 MB; a repro bundle lists a few files")


def test_a_bundle_read_from_stdin_is_checked_the_same(tmp_path: Path) -> None:
    code, _, err = replay(["-", "--json"], stdin=zip_bomb(64 << 20))
    assert code == 2 and err.startswith("streamscope replay: error: -: capture.sscap inflates")
    good = zip_of({"capture.sscap": sample_capture()})
    code, out, _ = replay(["-", "--json"], stdin=good)
    assert code == 0 and json.loads(out)["text"] == "Hello"


# -- bodies that are not streams -----------------------------------------------------------

NGINX_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
CLOUDFLARE_524 = (
    b'<!DOCTYPE html>\n<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> '
    b'<![endif]-->\n<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->'
    b"\n<head>\n<title>api.example.com | 524: A timeout occurred</title>\n"
    b'<meta charset="UTF-8" />\n<meta http-equiv="Content-Type" content="text/html; '
    b'charset=UTF-8" />\n</head>\n<body><div id="cf-wrapper">The origin web server timed out '
    b"responding to this request.</div></body>\n</html>\n"
)
OPENAI_401 = (
    b'{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API '
    b'key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error",'
    b'"param":null,"code":"invalid_api_key"}}'
)
ANTHROPIC_401 = (
    b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
)
GEMINI_400 = (
    b'{\n  "error": {\n    "code": 400,\n    "message": "API key not valid. Please pass a valid '
    b'API key.",\n    "status": "INVALID_ARGUMENT"\n  }\n}\n'
)
OLLAMA_404 = b'{"error":"model \'x\' not found"}'

NOT_STREAMS = {
    "nginx-502": (NGINX_502, "HTML error page: 502 Bad Gateway"),
    "cloudflare-524": (
        CLOUDFLARE_524,
        "HTML error page: api.example.com | 524: A timeout occurred",
    ),
    "openai-401": (
        OPENAI_401,
        "JSON error body: invalid_api_key: Incorrect API key provided: sk-abc***xyz. You can "
        "find your API key at https://platform.openai.com/account/api-keys.",
    ),
    "anthropic-401": (ANTHROPIC_401, "JSON error body: authentication_error: invalid x-api-key"),
    "gemini-400": (
        GEMINI_400,
        "JSON error body: INVALID_ARGUMENT: API key not valid. Please pass a valid API key.",
    ),
    "ollama-404": (OLLAMA_404, "JSON error body: model 'x' not found"),
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", list(NOT_STREAMS))
def test_a_saved_body_that_is_not_a_stream_replays_as_an_error(
    name: str, dialect: str, tmp_path: Path
) -> None:
    body, reason = NOT_STREAMS[name]
    path = tmp_path / "body"
    path.write_bytes(body)
    code, out, err = replay([str(path), "--dialect", dialect, "--json"])
    result = json.loads(out)
    assert (code, result["outcome"], result["reason"], err) == (4, "error", reason, "")


@pytest.mark.parametrize("name", list(NOT_STREAMS))
def test_a_captured_body_that_is_not_a_stream_replays_as_an_error(name: str) -> None:
    """The window's Open capture: the status and content type were a stream's, the body
    was not (a proxy's page, say); with a status, the reason says so against it."""
    body, reason = NOT_STREAMS[name]
    capture = Capture(
        "auto", response=CaptureResponse(200, (("content-type", "text/event-stream"),))
    )
    for i in range(0, len(body), 40):
        capture.reads.append(0.01 * i, body[i : i + 40])
    capture.end = CaptureEnd("eof", elapsed=1.0, outcome="truncated")
    turn = asyncio.run(replay_capture(capture))
    what, detail = reason.split(": ", 1)
    against = {
        "HTML error page": "200 HTML page, not an event stream: ",
        "JSON error body": "200 text/event-stream body, not an event stream · ",
    }
    assert (turn.outcome, turn.status) == (Outcome.ERROR, 200)
    assert turn.reason == against[what] + detail


STREAMS = {  # (body, dialects, outcome, reason): streams that look a little like error bodies
    "ollama-stream": (
        (FIXTURES / "ollama" / "plain_text.ndjson").read_bytes(),
        ["ollama", "auto"],
        "completed",
        "done:true received (finish_reason=stop)",
    ),
    "ollama-one-frame-no-newline": (
        b'{"model":"m","message":{"role":"assistant","content":"Hi"},"done":true,'
        b'"done_reason":"stop"}',
        ["ollama", "auto"],
        "completed",
        "done:true received (finish_reason=stop)",
    ),
    "ollama-error-frame": (
        b'{"error":"an error was encountered while running the model: unexpected EOF"}\n',
        ["ollama", "auto"],
        "error",
        "in-stream error: an error was encountered while running the model: unexpected EOF",
    ),
    "ollama-error-then-more": (
        b'{"error":"boom"}\n{"model":"m","message":{"role":"assistant","content":"x"},'
        b'"done":false}\n',
        ["ollama", "auto"],
        "error",
        "in-stream error: boom",
    ),
    "openai-error-event-first": (
        b'data: {"error":{"message":"The server had an error","type":"server_error"}}\n\n',
        ["openai", "auto"],
        "error",
        "in-stream error: server_error: The server had an error",
    ),
    "anthropic-error-event-first": (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n',
        ["anthropic", "auto"],
        "error",
        "in-stream error: overloaded_error: Overloaded",
    ),
    "openai-cut": (
        b'data: {"choices":[{"index":0,"delta":{"content":"<html>"}}]}\n\n',
        ["openai", "auto"],
        "truncated",
        "connection closed after 62 B, no [DONE]",
    ),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_streams_keep_their_own_outcome(name: str, tmp_path: Path) -> None:
    body, dialects, outcome, reason = STREAMS[name]
    path = tmp_path / "body"
    path.write_bytes(body)
    for dialect in dialects:
        code, out, _ = replay([str(path), "--dialect", dialect, "--json"])
        result = json.loads(out)
        assert (result["outcome"], result["reason"]) == (outcome, reason), dialect
        assert code == {"completed": 0, "truncated": 3, "error": 4}[outcome]


def test_a_live_http_error_capture_keeps_its_reason() -> None:
    capture = Capture("openai", response=CaptureResponse(502, (("content-type", "text/html"),)))
    capture.end = CaptureEnd("http_error", 0.2, body=NGINX_502, outcome="error")
    turn = asyncio.run(replay_capture(capture))
    assert (turn.outcome, turn.reason) == (
        Outcome.ERROR,
        "502 HTML page, not an event stream: 502 Bad Gateway",
    )


# -- bodies of blank lines, captures of huge reads -----------------------------------------


def test_auto_decides_the_framing_of_a_body_of_blank_lines_without_buffering_it() -> None:
    """(It waited for a non-blank byte: 64 MB of newlines took 8 minutes and 8.6 GB.)"""
    pipeline = StreamPipeline("auto", keep_frames=False)
    blank = b"\r\n" * (1 << 15)
    tracemalloc.start()
    try:
        for _ in range(64):
            pipeline.feed(blank, 0.0)
        assert pipeline.framing == "sse"
        turn = pipeline.close(StreamEnd("eof"), 0.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert turn.outcome is Outcome.TRUNCATED
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MB"


def _capture_of(body: bytes, read: int) -> Capture:
    capture = Capture(
        "openai", response=CaptureResponse(200, (("content-type", "text/event-stream"),))
    )
    for i in range(0, len(body), read):
        capture.reads.append(0.1, body[i : i + read])
    capture.end = CaptureEnd("eof", 0.2)
    return capture


def test_a_huge_read_replays_in_slices_with_little_memory() -> None:
    """(A hand-made capture may hold one 47 MB read; the decoder fed it whole needed 9x.)"""
    body = (b": padding " + b"x" * 117 + b"\n") * (100 << 10)  # 12.5 MB, one read
    tracemalloc.start()
    try:
        turn = asyncio.run(replay_capture(_capture_of(body, len(body)), keep_frames=False))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert turn.bytes_received == len(body) and turn.outcome is Outcome.TRUNCATED
    assert peak < 3 * len(body), f"{peak / 2**20:.0f} MB"


def test_a_huge_read_gives_the_turn_its_reads_would() -> None:
    body = b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"%d "}}]}\n\n' % i for i in range(30_000)
    )
    whole = asyncio.run(replay_capture(_capture_of(body + b"data: [DONE]\n\n", 1 << 30)))
    reads = asyncio.run(replay_capture(_capture_of(body + b"data: [DONE]\n\n", 1 << 16)))
    assert turn_to_json(whole) == turn_to_json(reads)
    assert whole.outcome is Outcome.COMPLETED and whole.text.startswith("0 1 2 ")
