"""HAR in and out: each browser's HAR format imported as captures (outcome by replay,
secrets scrubbed), captures exported as HAR 1.2, and the body kept byte-exact both ways."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    read_capture,
)
from streamscope.core.capture.har import (
    HarError,
    capture_to_har,
    decide,
    dump_har,
    har_exchanges,
    import_har,
    is_har,
    read_har,
)

HAR = Path(__file__).parents[1] / "fixtures" / "har"
KEY = "sk-planted-OPENAI-key-0123456789abcdef"
AKEY = "sk-ant-planted-key-abcdefghijklmnop"
PLANTED = (KEY, AKEY, "planted-cookie-value-42424242", "planted-set-cookie-9999999")
OPENAI_TEXT = "Hello from HAR"
OPENAI_BYTES = 721
ANTHROPIC_BYTES = 848

# browser -> [(entry, dialect, outcome, reason, text, frames, bytes, headers at, end at)]
EXPECTED: dict[str, list[tuple[Any, ...]]] = {
    "chrome": [
        (
            2,
            "openai",
            "completed",
            "[DONE] received (finish_reason=stop)",
            OPENAI_TEXT,
            5,
            OPENAI_BYTES,
            0.4,
            1.4126,
        ),
        (
            3,
            "anthropic",
            "completed",
            "message_stop received (finish_reason=end_turn)",
            "Bonjour à vous",
            7,
            ANTHROPIC_BYTES,
            0.45,
            0.85,
        ),
    ],
    "firefox": [
        (
            2,
            "openai",
            "completed",
            "[DONE] received (finish_reason=stop)",
            OPENAI_TEXT,
            5,
            OPENAI_BYTES,
            0.25,
            1.0,
        ),
        (
            3,
            "anthropic",
            "error",
            "200 application/json body, not an event stream",
            "",
            1,
            0,
            0.62,
            0.62,
        ),
    ],
    "safari": [
        (
            2,
            "openai",
            "completed",
            "[DONE] received (finish_reason=stop)",
            OPENAI_TEXT,
            5,
            OPENAI_BYTES,
            0.3,
            1.3,
        ),
        (
            3,
            "anthropic",
            "completed",
            "message_stop received (finish_reason=end_turn)",
            "Bonjour à vous",
            7,
            ANTHROPIC_BYTES,
            0.1,
            0.9,
        ),
    ],
}
SKIPPED = {
    "chrome": [
        (1, "GET", "http://localhost:3000/", "not an LLM exchange (resource type document)"),
        (
            4,
            "POST",
            "https://api.openai.com/v1/chat/completions",
            "served from the browser's disk cache",
        ),
    ],
    "firefox": [
        (
            1,
            "GET",
            "http://localhost:3000/static/app.js?v=3",
            "not an LLM exchange (no dialect's path, not a stream)",
        ),
    ],
    "safari": [
        (
            1,
            "GET",
            "http://localhost:3000/logo.png",
            "not an LLM exchange (no dialect's path, not a stream)",
        ),
        (
            4,
            "POST",
            "https://api.openai.com/v1/chat/completions",
            "served from the browser's memory cache",
        ),
    ],
}


def _original_bodies(path: Path) -> dict[int, bytes]:
    """Entry number -> the response body as the HAR file holds it (decoded)."""
    out = {}
    for n, entry in enumerate(json.loads(path.read_text())["log"]["entries"], start=1):
        content = entry["response"]["content"]
        text = content.get("text", "")
        raw = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode()
        out[n] = raw
    return out


@pytest.mark.parametrize("browser", sorted(EXPECTED))
def test_each_browser_har_imports_its_llm_exchanges_with_outcomes(
    browser: str, tmp_path: Path
) -> None:
    store = CaptureStore(tmp_path / "captures")
    result = import_har(HAR / f"{browser}.har", store)
    got = [
        (
            ex.entry,
            ex.capture.dialect,
            ex.turn.outcome.value if ex.turn.outcome else None,
            ex.turn.reason,
            ex.turn.text,
            ex.frames,
            ex.turn.bytes_received,
            ex.capture.response.t if ex.capture.response else None,
            ex.capture.end.elapsed if ex.capture.end else None,
        )
        for ex in result.imported
    ]
    assert got == EXPECTED[browser]
    assert [(s.entry, s.method, s.url, s.reason) for s in result.skipped] == SKIPPED[browser]
    # each one is a stored .sscap carrying the outcome the replay decided
    assert len(list((tmp_path / "captures").glob("*.sscap"))) == 2
    for ex, want in zip(result.imported, EXPECTED[browser], strict=True):
        assert ex.capture_id is not None
        stored = read_capture(store.path(ex.capture_id))
        assert stored.end is not None
        assert (stored.end.outcome, stored.end.reason) == (want[2], want[3])
        assert stored.reads == ex.capture.reads


def test_body_sizes_follow_content_not_the_compressed_transfer() -> None:
    """Chrome's br-compressed stream (bodySize 310 < content.size 721) and Firefox's gzip
    JSON (bodySize 160) are whole: the capture holds content.size bytes, ending eof."""
    chrome, _ = har_exchanges(read_har(HAR / "chrome.har"))
    assert chrome[0].capture.reads.size == OPENAI_BYTES
    assert chrome[0].capture.end is not None and chrome[0].capture.end.kind == "eof"
    firefox, _ = har_exchanges(read_har(HAR / "firefox.har"))
    end = firefox[1].capture.end
    assert end is not None and (end.kind, len(end.body or b"")) == ("not_a_stream", 195)


def test_pseudo_headers_dropped_and_secrets_masked_in_the_capture() -> None:
    found, _ = har_exchanges(read_har(HAR / "firefox.har"))
    request = found[0].capture.request
    assert request is not None
    assert request.url == "https://llm.example.test/v1/chat/completions?api_key=***"
    assert request.headers == (
        ("Host", "llm.example.test"),
        ("Authorization", "Bearer ***"),
        ("Content-Type", "application/json"),
        ("Cookie", "***"),
    )
    response = found[0].capture.response
    assert response is not None and response.header("set-cookie") == "***"
    chrome, _ = har_exchanges(read_har(HAR / "chrome.har"))
    assert chrome[0].capture.request is not None
    assert [k for k, _ in chrome[0].capture.request.headers] == [
        "accept",
        "authorization",
        "content-type",
        "origin",
    ]


def _every_form(secret: str) -> list[bytes]:
    raw = secret.encode()
    return [raw, base64.b64encode(raw)[:-4], raw.hex().encode()]


def test_planted_keys_reach_no_file_written(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path / "captures")
    outs = []
    for browser in ("chrome", "firefox", "safari"):
        result = import_har(HAR / f"{browser}.har", store)
        out = tmp_path / f"{browser}-out.har"
        out.write_bytes(dump_har(capture_to_har([ex.capture for ex in result.imported])))
        outs.append(out)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == 6 + 3
    for path in written:
        data = path.read_bytes()
        for secret in PLANTED:
            for form in _every_form(secret):
                assert form not in data, (secret, path.name)
    # (and the fixture really holds them: the check above can fail)
    assert KEY.encode() in (HAR / "firefox.har").read_bytes()


@pytest.mark.parametrize("browser", sorted(EXPECTED))
def test_har_to_capture_to_har_keeps_every_body_byte_exact(browser: str) -> None:
    original = _original_bodies(HAR / f"{browser}.har")
    result = import_har(HAR / f"{browser}.har")
    har = capture_to_har([ex.capture for ex in result.imported])
    for ex, entry in zip(result.imported, har["log"]["entries"], strict=True):
        content = entry["response"]["content"]
        assert "encoding" not in content  # all UTF-8
        assert content["text"].encode() == original[ex.entry]
        assert content["size"] == len(original[ex.entry])


def _non_utf8_har() -> bytes:
    body = (
        b": \xff\xfe not UTF-8 \x80\n\n"
        b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    entry = {
        "startedDateTime": "2026-11-30T10:00:00.000Z",
        "time": 100,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:8765/v1/chat/completions",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Authorization", "value": f"Bearer {KEY}"}],
            "cookies": [],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 2,
            "postData": {"mimeType": "application/json", "text": "{}"},
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Content-Type", "value": "text/event-stream"}],
            "cookies": [],
            "content": {
                "size": len(body),
                "mimeType": "text/event-stream",
                "text": base64.b64encode(body).decode(),
                "encoding": "base64",
            },
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(body),
        },
        "cache": {},
        "timings": {"send": 1, "wait": 20, "receive": 79},
    }
    return orjson.dumps({"log": {"version": "1.2", "creator": {"name": "t"}, "entries": [entry]}})


def test_a_body_that_is_not_utf8_round_trips_as_base64() -> None:
    data = _non_utf8_har()
    body = base64.b64decode(orjson.loads(data)["log"]["entries"][0]["response"]["content"]["text"])
    first = import_har(data)
    (ex,) = first.imported
    assert ex.capture.reads.body() == body
    assert (ex.turn.outcome.value if ex.turn.outcome else None, ex.turn.text) == (
        "completed",
        "ok",
    )
    out = capture_to_har([ex.capture])
    content = out["log"]["entries"][0]["response"]["content"]
    assert content["encoding"] == "base64"
    assert base64.b64decode(content["text"]) == body
    (again,) = import_har(dump_har(out)).imported
    assert again.capture.reads == ex.capture.reads
    assert again.capture.end == ex.capture.end


def test_exported_har_is_1_2_with_timings_from_the_capture() -> None:
    (ex, _) = import_har(HAR / "chrome.har").imported
    har = capture_to_har([ex.capture])
    log = har["log"]
    assert log["version"] == "1.2"
    assert log["creator"]["name"] == "StreamScope"
    (entry,) = log["entries"]
    assert entry["startedDateTime"] == "2026-11-30T10:00:01.250+00:00"
    assert entry["timings"] == {
        "blocked": -1,
        "dns": -1,
        "connect": -1,
        "ssl": -1,
        "send": 0,
        "wait": 400.0,
        "receive": 1012.6,
    }
    assert entry["time"] == 1412.6
    assert entry["request"]["method"] == "POST"
    assert entry["request"]["postData"]["text"] == (
        '{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Say hello"}]}'
    )
    assert entry["response"]["status"] == 200
    assert entry["response"]["statusText"] == "OK"
    assert entry["response"]["content"]["mimeType"] == "text/event-stream; charset=utf-8"
    assert entry["response"]["bodySize"] == -1  # br: the transferred size is not known
    assert entry["_streamscope"]["end"]["outcome"] == "completed"


def _multi_read_capture() -> Capture:
    reads = ReadLog(
        [
            (
                0.21,
                b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}\n',
            ),
            (0.35, b'\ndata: {"choices":[{"index":0,"delta":{"content":"b"},"finish_'),
            (0.5, b'reason":"length"}]}\n\n'),
        ]
    )
    return Capture(
        "openai",
        CaptureRequest("POST", "http://h/v1/chat/completions", (("x", "y"),), b'{"a":1}'),
        CaptureResponse(200, (("content-type", "text/event-stream"),), 0.2),
        reads,
        CaptureEnd("broken", 0.75, detail="peer closed connection"),
        created="2026-11-30T09:00:00+00:00",
    )


def test_capture_to_har_to_capture_keeps_reads_times_and_end() -> None:
    capture = _multi_read_capture()
    (back,) = import_har(dump_har(capture_to_har([capture]))).imported
    assert back.capture.reads == capture.reads
    assert back.capture.dialect == "openai"
    assert back.capture.response == capture.response
    assert back.capture.request == capture.request
    assert back.capture.end is not None
    assert (back.capture.end.kind, back.capture.end.elapsed, back.capture.end.detail) == (
        "broken",
        0.75,
        "peer closed connection",
    )
    assert (back.turn.outcome.value if back.turn.outcome else None, back.turn.text) == (
        "truncated",
        "ab",
    )


def _one(entry: dict[str, Any]) -> bytes:
    base: dict[str, Any] = {
        "startedDateTime": "2026-11-30T10:00:00Z",
        "time": 50,
        "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
        "response": {"status": 200, "content": {"size": 0, "mimeType": "text/event-stream"}},
        "timings": {"send": 0, "wait": 10, "receive": 40},
    }
    base.update(entry)
    return orjson.dumps({"log": {"version": "1.2", "entries": [base]}})


def test_a_body_cut_short_by_the_browser_is_a_broken_stream() -> None:
    text = 'data: {"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}\n\n'
    response = {
        "status": 200,
        "headers": [],
        "content": {"size": 5000, "mimeType": "text/event-stream", "text": text},
    }
    (ex,) = import_har(_one({"response": response})).imported
    assert ex.capture.end is not None
    assert ex.capture.end.kind == "broken"
    assert ex.capture.end.detail == f"the HAR file holds {len(text)} of 5000 bytes of the body"
    assert ex.capture.response is not None
    assert ex.capture.response.header("content-type") == "text/event-stream"  # from mimeType
    assert (ex.turn.outcome.value if ex.turn.outcome else None, ex.turn.text) == (
        "truncated",
        "Hel",
    )


def test_no_response_and_http_errors_and_missing_timings() -> None:
    failed = {
        "response": {"status": 0, "content": {"size": 0}, "_error": "net::ERR_CONNECTION_RESET"},
        "timings": {"blocked": -1, "send": -1, "wait": -1, "receive": -1},
        "time": -1,
    }
    (ex,) = import_har(_one(failed)).imported
    assert ex.capture.response is None
    assert ex.capture.end == CaptureEnd(
        "connect_error",
        0.0,
        detail="net::ERR_CONNECTION_RESET",
        outcome=ex.turn.outcome.value if ex.turn.outcome else None,
        reason=ex.turn.reason,
    )
    assert ex.turn.outcome is not None and ex.turn.outcome.value == "error"
    assert ex.turn.reason == "net::ERR_CONNECTION_RESET"
    body = '{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}'
    denied = {
        "response": {
            "status": 401,
            "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"size": len(body), "mimeType": "application/json", "text": body},
        },
        "timings": {},
        "time": 80,
    }
    (ex,) = import_har(_one(denied)).imported
    assert ex.capture.end is not None
    assert (ex.capture.end.kind, ex.capture.end.body) == ("http_error", body.encode())
    assert (ex.capture.response.t if ex.capture.response else None) == 0.08
    assert ex.turn.outcome is not None and ex.turn.outcome.value == "error"
    assert ex.turn.reason == "401 invalid_request_error · Incorrect API key provided"


def test_decide_uses_the_replay_not_the_recorded_outcome() -> None:
    capture = _multi_read_capture()
    capture.end = CaptureEnd("eof", 0.75, outcome="completed", reason="made up")
    decided, turn, frames = asyncio.run(decide(capture))
    assert decided.end is not None
    assert (decided.end.outcome, decided.end.reason) == (
        "truncated",
        "connection closed after 160 B, no [DONE] (finish_reason=length had arrived)",
    )
    assert decided.end.reason == turn.reason
    assert frames == 2


def test_not_a_har_file() -> None:
    assert is_har(b'{\n  "log": {\n')
    assert not is_har(b'{"format":"streamscope-capture"')
    with pytest.raises(HarError, match=r'not a HAR file: no "log" object'):
        read_har(b'{"entries": []}')
    with pytest.raises(HarError, match=r"not a HAR file: not valid JSON"):
        read_har(b"data: x\n\n")
    with pytest.raises(HarError, match=r'"log.entries" is not a list'):
        read_har(b'{"log": {"entries": {}}}')


def test_a_key_echoed_in_a_body_or_header_is_masked_before_anything_is_written() -> None:
    body = '{"error":{"message":"Incorrect API key provided: ' + KEY + '","type":"x"}}'
    entry = {
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": [{"name": "Authorization", "value": f"Bearer {KEY}"}],
            "postData": {"mimeType": "application/json", "text": '{"k":"' + KEY + '"}'},
        },
        "response": {
            "status": 401,
            "headers": [{"name": "x-echo", "value": KEY}],
            "content": {"size": len(body), "mimeType": "application/json", "text": body},
        },
    }
    (ex,) = import_har(_one(entry)).imported
    masked = "*" * len(KEY)
    assert ex.capture.end is not None and ex.capture.end.body == body.replace(KEY, masked).encode()
    assert ex.capture.request is not None
    assert ex.capture.request.body == ('{"k":"' + masked + '"}').encode()
    assert ex.capture.response is not None
    assert ex.capture.response.headers == (
        ("x-echo", masked),
        ("content-type", "application/json"),  # (from content.mimeType)
    )
    assert KEY not in ex.turn.reason
    assert KEY.encode() not in dump_har(capture_to_har([ex.capture]))


@pytest.mark.parametrize(
    "entry",
    [
        "not an object",
        {"request": [], "response": "x"},
        {"request": {"method": 7, "url": "https://h/v1/chat/completions"}},
        {"response": {"status": "200", "content": {"text": 5, "size": "big"}}, "timings": "x"},
        {"response": {"status": 200, "content": {"text": "@@@", "encoding": "base64"}}},
        {
            "response": {
                "status": 200,
                "headers": [1, {"name": 2}],
                "content": {"text": "data: x\n"},
            }
        },
        {"time": True, "startedDateTime": "yesterday", "_streamscope": {"reads": [[0, -1]]}},
    ],
)
def test_odd_entries_are_imported_or_skipped_never_raise(entry: Any) -> None:
    data = _one(entry) if isinstance(entry, dict) else orjson.dumps({"log": {"entries": [entry]}})
    result = import_har(data)
    assert len(result.imported) + len(result.skipped) == 1
    for ex in result.imported:
        assert ex.turn.outcome is not None


def test_started_date_time_keeps_its_milliseconds_both_ways() -> None:
    """Export writes ``created`` to the millisecond with its zone; import keeps the entry's
    time (which a replay is dated by), not the time of the import."""
    capture = replace(_multi_read_capture(), created="2026-11-30T09:00:00.123+00:00")
    (entry,) = capture_to_har([capture])["log"]["entries"]
    assert entry["startedDateTime"] == "2026-11-30T09:00:00.123+00:00"
    (back,) = import_har(dump_har(capture_to_har([capture]))).imported
    assert back.capture.created == "2026-11-30T09:00:00.123+00:00"
    assert back.capture.started == 1796029200.123
    (z,) = import_har(_one({"startedDateTime": "2026-11-30T10:00:00.045Z"})).imported
    assert (z.capture.created, z.capture.started) == (
        "2026-11-30T10:00:00.045+00:00",
        1796032800.045,
    )
