"""The capture recorder's values pinned exactly: the redacted request and its default headers,
times relative to the request, which ends keep their body, the lines of the file in order,
the writer thread, and when held reads are released (on a clock the test moves). (Found
wanting by mutation testing: see tests/MUTATION.md.)"""

from __future__ import annotations

import logging
import re
import threading
import time
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

import streamscope.core.capture.recorder as recorder_module
from streamscope.core.capture.format import (
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    read_capture,
)
from streamscope.core.capture.recorder import (
    RELEASE_AFTER_S,
    CaptureRecorder,
    end_from_turn,
    redact_request,
)
from streamscope.core.redact import LOG_FILTER, Scrubber
from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.wire.dialects.base import RequestSpec

KEY = "sk-values-CANARY-4242"
STARS = "*" * len(KEY)
URL = "https://h.example/v1/chat?key=querykey-123&x=1"
RED_URL = "https://h.example/v1/chat?key=***&x=1"


def _spec(**headers: str) -> RequestSpec:
    return RequestSpec("PATCH", URL, {"Authorization": f"Bearer {KEY}", **headers})


def _wait_for(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- the request -----------------------------------------------------------------------------


def test_the_request_as_sent_with_its_default_headers_redacted() -> None:
    spec = _spec(**{"X-Trace": "t"})
    body = b'{"echo":"' + KEY.encode() + b'"}'
    request = redact_request(spec, body, Scrubber.for_request(spec.headers, spec.url))
    assert request == CaptureRequest(
        "PATCH",
        RED_URL,
        (
            ("accept-encoding", "identity"),
            ("content-type", "application/json"),
            ("Authorization", "Bearer ***"),
            ("X-Trace", "t"),
        ),
        b'{"echo":"' + STARS.encode() + b'"}',
    )


def test_the_request_s_own_headers_replace_the_defaults_in_place() -> None:
    spec = _spec(**{"content-type": "text/plain", "accept-encoding": "gzip"})
    request = redact_request(spec, b"", Scrubber())
    assert request.headers == (
        ("accept-encoding", "gzip"),
        ("content-type", "text/plain"),
        ("Authorization", "Bearer ***"),
    )
    assert request.body == b""


# -- recording without a file ----------------------------------------------------------------


def test_a_recording_in_memory_holds_every_value_relative_to_the_request() -> None:
    rec = CaptureRecorder("gemini", app_version="1.2.3")
    assert (rec.capture.dialect, rec.capture.app_version, rec.path, rec.turn) == (
        "gemini", "1.2.3", None, None,
    )  # fmt: skip
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", rec.capture.created)
    assert not rec.done.done()
    rec.request_started(_spec(), b"{}", 10.0)
    assert rec.capture.request == CaptureRequest(
        "PATCH",
        RED_URL,
        (
            ("accept-encoding", "identity"),
            ("content-type", "application/json"),
            ("Authorization", "Bearer ***"),
        ),
        b"{}",
    )
    rec.response_started(206, [("X-Echo", f"k={KEY}"), ("Authorization", "Basic abc")], 10.5)
    assert rec.capture.response == CaptureResponse(
        206, (("X-Echo", f"k={STARS}"), ("Authorization", "Basic ***")), 0.5
    )
    rec.read(b"data: one\n\n", 10.75)
    rec.read(b"data: " + KEY.encode() + b"\n\n", 11.0)
    assert list(rec.capture.reads) == [
        (0.75, b"data: one\n\n"),
        (1.0, b"data: " + STARS.encode() + b"\n\n"),
    ]
    rec.ended(StreamEnd("eof", elapsed=1.25, detail=f"d {KEY}", timeout=5.0, body=b"B"))
    assert rec.capture.end is None  # not before the turn is finished
    turn = Turn(outcome=Outcome.COMPLETED, reason=f"done {KEY}")
    rec.finished(turn)
    assert rec.turn is turn
    assert rec.done.result(0) is rec.capture
    assert rec.capture.end == CaptureEnd(
        "eof", 1.25, f"d {STARS}", 5.0, None, "completed", f"done {STARS}"
    )


def test_a_key_in_the_url_is_masked_where_a_server_echoes_it() -> None:
    rec = CaptureRecorder("openai")
    rec.request_started(RequestSpec("POST", URL, {}), b'{"q":"querykey-123"}', 0.0)
    rec.response_started(200, [("x-echo", "querykey-123")], 0.1)
    rec.read(b"data: querykey-123\n\n", 0.2)
    rec.finished(Turn(outcome=Outcome.COMPLETED))
    capture = rec.done.result(0)
    assert capture.request is not None and capture.request.body == b'{"q":"************"}'
    assert capture.response == CaptureResponse(200, (("x-echo", "************"),), 0.1)
    assert capture.reads.body() == b"data: ************\n\n"


def test_without_a_request_times_are_the_caller_s_and_nothing_is_masked() -> None:
    """(A recorder fed a response only: a replay, a raw request.)"""
    rec = CaptureRecorder("openai")
    rec.response_started(200, [("x-a", KEY)], 0.5)
    rec.read(b"data: " + KEY.encode() + b"\n\n", 1.25)
    rec.finished(Turn(outcome=Outcome.COMPLETED))
    capture = rec.done.result(0)
    assert capture.request is None
    assert capture.response == CaptureResponse(200, (("x-a", KEY),), 0.5)
    assert list(capture.reads) == [(1.25, b"data: " + KEY.encode() + b"\n\n")]


@pytest.mark.parametrize(
    ("kind", "keeps_body"),
    [
        ("http_error", True),
        ("not_a_stream", True),
        ("eof", False),
        ("broken", False),
        ("protocol_error", False),
        ("connect_error", False),
        ("cancelled", False),
        ("idle_timeout", False),
        ("first_byte_timeout", False),
    ],
)
def test_only_an_error_response_keeps_its_body(kind: str, keeps_body: bool) -> None:
    rec = CaptureRecorder("openai")
    rec.request_started(_spec(), b"{}", 0.0)
    rec.ended(StreamEnd(kind, body=b"<p>" + KEY.encode()))  # type: ignore[arg-type]
    rec.finished(Turn())  # no outcome: none recorded
    end = rec.done.result(0).end
    assert end is not None
    assert (end.kind, end.body, end.outcome, end.reason) == (
        kind, b"<p>" + STARS.encode() if keeps_body else None, None, "",
    )  # fmt: skip


def test_a_key_learnt_from_a_request_is_masked_in_log_lines() -> None:
    key = "sk-log-filter-CANARY-777"
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "got %s", (key,), None)
    rec = CaptureRecorder("openai")
    rec.request_started(RequestSpec("POST", "http://h/v1", {"x-api-key": key}), b"", 0.0)
    assert LOG_FILTER.filter(record) is True
    assert record.getMessage() == "got " + "*" * len(key)


# -- the transport could not say how it ended ----------------------------------------------------


@pytest.mark.parametrize(
    ("timings", "elapsed"),
    [
        (Timings(request_sent=1.0, end=3.5), 2.5),
        (Timings(request_sent=0.0, end=1.5), 1.5),
        (Timings(request_sent=-0.5, end=0.0), 0.5),
        (Timings(request_sent=None, end=3.0), None),
        (Timings(request_sent=1.0, end=None), None),
    ],
)
def test_end_from_turn_elapsed(timings: Timings, elapsed: float | None) -> None:
    turn = Turn(outcome=Outcome.TRUNCATED, reason="r", timings=timings)
    assert end_from_turn(turn) == CaptureEnd("broken", elapsed, "r", None, None, "truncated", "r")


def test_end_from_turn_cancelled_or_broken_with_or_without_a_scrubber() -> None:
    scrubber = Scrubber([KEY])
    cancelled = Turn(outcome=Outcome.CANCELLED, reason=f"stop {KEY}")
    assert end_from_turn(cancelled, scrubber) == CaptureEnd(
        "cancelled", None, "", None, None, "cancelled", f"stop {STARS}"
    )
    assert end_from_turn(cancelled) == CaptureEnd(
        "cancelled", None, "", None, None, "cancelled", f"stop {KEY}"
    )
    error = Turn(outcome=Outcome.ERROR, reason=f"worker died {KEY}")
    assert end_from_turn(error, scrubber) == CaptureEnd(
        "broken", None, f"worker died {STARS}", None, None, "error", f"worker died {STARS}"
    )
    assert end_from_turn(Turn()) == CaptureEnd("broken", None, "", None, None, None, "")


# -- recording to a file ---------------------------------------------------------------------


def _header(rec: CaptureRecorder, response: bytes) -> bytes:
    return (
        b'{"format":"streamscope-capture","version":1,"created":"'
        + rec.capture.created.encode()
        + b'","app_version":"0.0.9","dialect":"openai","request":{"method":"PATCH",'
        b'"url":"' + RED_URL.encode() + b'","headers":[["accept-encoding","identity"],'
        b'["content-type","application/json"],["Authorization","Bearer ***"]],'
        b'"body":{"k":"' + STARS.encode() + b'"}},"response":' + response + b"}\n"
    )


class _SpyThread(threading.Thread):
    started: ClassVar[list[threading.Thread]] = []

    def start(self) -> None:
        _SpyThread.started.append(self)
        super().start()


def test_the_file_line_by_line_and_its_writer_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _SpyThread.started = []
    monkeypatch.setattr(recorder_module.threading, "Thread", _SpyThread)
    path = tmp_path / "t.sscap"
    rec = CaptureRecorder("openai", path=path, app_version="0.0.9")
    rec.request_started(_spec(), b'{"k":"' + KEY.encode() + b'"}', 100.0)
    assert not path.exists() and _SpyThread.started == []  # nothing before the response
    rec.response_started(200, [("content-type", "text/event-stream")], 100.5)
    rec.read(b"data: a\n\n", 100.75)
    header = _header(
        rec, b'{"status":200,"headers":[["content-type","text/event-stream"]],"t":0.5}'
    )
    first_read = b'{"t":0.75,"b64":"ZGF0YTogYQoK"}\n'
    assert _wait_for(lambda: path.exists() and path.read_bytes() == header + first_read)
    rec.read(b"data: b\n\n", 101.0)
    rec.ended(StreamEnd("eof", elapsed=1.5))
    rec.finished(Turn(outcome=Outcome.COMPLETED, reason="[DONE] received"))
    capture = rec.done.result(5)
    assert path.read_bytes() == header + first_read + (
        b'{"t":1.0,"b64":"ZGF0YTogYgoK"}\n'
        b'{"end":{"kind":"eof","elapsed":1.5,"detail":"","timeout":null,'
        b'"outcome":"completed","reason":"[DONE] received"}}\n'
    )
    assert read_capture(path) == capture
    [writer] = _SpyThread.started  # one writer for the whole turn
    assert (writer.name, writer.daemon) == ("capture-writer", True)
    writer.join(5)
    assert not writer.is_alive()  # it ends with the turn


def test_a_turn_that_never_got_a_response_still_leaves_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t.sscap"
    rec = CaptureRecorder("openai", path=path, app_version="0.0.9")
    rec.request_started(_spec(), b'{"k":"' + KEY.encode() + b'"}', 5.0)
    rec.ended(StreamEnd("connect_error", elapsed=0.25, detail="refused"))
    rec.finished(Turn(outcome=Outcome.ERROR, reason="could not connect: refused"))
    rec.done.result(5)
    assert path.read_bytes() == _header(rec, b"null") + (
        b'{"end":{"kind":"connect_error","elapsed":0.25,"detail":"refused","timeout":null,'
        b'"outcome":"error","reason":"could not connect: refused"}}\n'
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_disk_that_fills_up_fails_the_recording_not_the_turn() -> None:
    rec = CaptureRecorder("openai", path=Path("/dev/full"))
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    rec.read(b"data: x\n\n", 0.1)
    rec.finished(Turn(outcome=Outcome.COMPLETED))
    with pytest.raises(OSError, match="No space left"):
        rec.done.result(5)
    assert rec.capture.end is not None and rec.turn is not None  # the turn went on


def test_held_reads_are_released_once_quiet_for_exactly_the_release_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's quiet clock is replaced by one the test moves: frozen, nothing held is
    written (however long the real wait); moved on by exactly RELEASE_AFTER_S, it is."""
    assert RELEASE_AFTER_S == 0.25
    now = [100.0]
    monkeypatch.setattr(recorder_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    path = tmp_path / "t.sscap"
    rec = CaptureRecorder("openai", path=path)
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    rec.read(b"data: quiet before sk-val", 0.1)  # ends with what may begin the key
    assert _wait_for(path.exists)
    time.sleep(4 * RELEASE_AFTER_S)  # several real timeouts, no time on the writer's clock
    assert b'"b64"' not in path.read_bytes()
    now[0] = 100.0 + RELEASE_AFTER_S
    assert _wait_for(lambda: b'"b64"' in path.read_bytes())
    assert read_capture(path).reads.body() == b"data: quiet before "
    rec.read(b"ues", 0.2)  # not the key after all
    rec.finished(Turn(outcome=Outcome.TRUNCATED))
    assert list(rec.done.result(5).reads) == [
        (0.1, b"data: quiet before "),
        (0.1, b"sk-val"),
        (0.2, b"ues"),
    ]


def test_a_flood_faster_than_the_writer_waits_instead_of_piling_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reads queued for the writer thread stay under MAX_PENDING (plus the read that waits):
    a slow disk or scrubber makes the caller wait, it does not fill memory."""
    assert recorder_module.MAX_PENDING == 1024 * 1024
    monkeypatch.setattr(recorder_module, "MAX_PENDING", 64 * 1024)
    rec = CaptureRecorder("openai", path=tmp_path / "t.sscap", keep_reads=False)
    handle = rec._handle

    def slow(item: tuple[Any, ...]) -> bool:
        time.sleep(0.002)  # a slow disk
        return handle(item)

    monkeypatch.setattr(rec, "_handle", slow)
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    read = b"data: x\n\n" * 1000  # 9 KB
    most = 0
    for i in range(200):  # 1.8 MB
        rec.read(read, 0.1 + i / 1000)
        most = max(most, rec._pending)
    rec.finished(Turn(outcome=Outcome.TRUNCATED))
    rec.done.result(30)
    assert read_capture(tmp_path / "t.sscap").reads.body() == read * 200  # nothing lost
    assert 64 * 1024 < most <= 64 * 1024 + 2 * len(read), most
    assert rec._pending == 0
