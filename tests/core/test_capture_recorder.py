"""The capture recorder: written as the turn goes, off the caller's thread, every value
through the request's scrubber."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from streamscope.core.capture.format import dump_capture, read_capture
from streamscope.core.capture.recorder import RELEASE_AFTER_S, CaptureRecorder, end_from_turn
from streamscope.core.redact import Scrubber
from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.wire.dialects.base import RequestSpec
from support.echo_streams import AROUND, ENCODINGS, cut, echo_stream

KEY = "sk-recorder-CANARY-99"
STARS = "*" * len(KEY)


def _spec() -> RequestSpec:
    return RequestSpec(
        "POST",
        "http://127.0.0.1:9/v1/chat/completions?key=querykey-123",
        {"Authorization": f"Bearer {KEY}", "X-Trace": "t"},
        {"model": "m"},
    )


def _wait_for(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_reads_reach_the_file_as_they_arrive(tmp_path: Path) -> None:
    path = tmp_path / "turn.sscap"
    rec = CaptureRecorder("openai", path=path)
    rec.request_started(_spec(), b'{"model":"m","echo":"' + KEY.encode() + b'"}', 10.0)
    rec.response_started(200, [("content-type", "text/event-stream"), ("x-echo", KEY)], 10.1)
    rec.read(b"data: one\n\n", 10.2)
    rec.read(b"data: two\n\n", 10.3)
    _wait_for(lambda: path.exists() and path.read_bytes().count(b"\n") >= 3)
    early = read_capture(path)  # no end line yet: what a crash would leave
    assert [d for _t, d in early.reads] == [b"data: one\n\n", b"data: two\n\n"]
    assert [round(t, 3) for t, _d in early.reads] == [0.2, 0.3]
    assert early.end is None
    assert early.response is not None and ("x-echo", STARS) in early.response.headers
    assert early.request is not None
    assert dict(early.request.headers)["Authorization"] == "Bearer ***"
    assert "key=***" in early.request.url
    assert KEY.encode() not in early.request.body and STARS.encode() in early.request.body
    turn = Turn(text="onetwo", outcome=Outcome.COMPLETED, reason="[DONE] received")
    rec.ended(StreamEnd("eof", elapsed=0.4))
    rec.finished(turn)
    capture = rec.done.result(5)
    out = io.BytesIO()
    dump_capture(capture, out)
    assert path.read_bytes() == out.getvalue()  # the file is the capture, line for line
    assert capture.end is not None
    assert (capture.end.kind, capture.end.outcome, capture.end.reason) == (
        "eof", "completed", "[DONE] received",
    )  # fmt: skip


def test_a_key_split_across_reads_is_masked_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "turn.sscap"
    rec = CaptureRecorder("openai", path=path)
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    body = f'data: {{"text":"{KEY}"}}\n\n'.encode()
    cut = body.index(KEY.encode()) + 7
    rec.read(body[:cut], 0.1)
    rec.read(body[cut:], 0.2)
    rec.finished(Turn(outcome=Outcome.COMPLETED))
    capture = rec.done.result(5)
    assert [len(d) for _t, d in capture.reads] == [cut, len(body) - cut]  # boundaries kept
    assert capture.reads.body() == body.replace(KEY.encode(), STARS.encode())
    assert KEY.encode() not in path.read_bytes()


def test_held_reads_are_written_when_the_stream_goes_quiet(tmp_path: Path) -> None:
    path = tmp_path / "turn.sscap"
    rec = CaptureRecorder("openai", path=path)
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    rec.read(b"data: quiet before sk-rec", 0.1)  # ends with what may begin the key
    _wait_for(lambda: path.exists() and b'"b64"' in path.read_bytes(), RELEASE_AFTER_S * 8)
    assert read_capture(path).reads.body() == b"data: quiet before "
    rec.finished(Turn(outcome=Outcome.TRUNCATED))
    assert rec.done.result(5).reads.body() == b"data: quiet before sk-rec"


def test_an_error_body_and_the_reason_are_scrubbed() -> None:
    rec = CaptureRecorder("openai")
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(401, [("content-type", "application/json")], 0.01)
    body = f'{{"error":{{"message":"bad key {KEY}"}}}}'.encode()
    rec.ended(StreamEnd("http_error", elapsed=0.1, status=401, body=body, detail=f"d {KEY}"))
    rec.finished(Turn(outcome=Outcome.ERROR, reason=f"401 invalid · bad key {KEY}"))
    capture = rec.done.result(5)
    assert capture.end is not None
    assert capture.end.body == body.replace(KEY.encode(), STARS.encode())
    assert (capture.end.detail, capture.end.reason) == (
        f"d {STARS}",
        f"401 invalid · bad key {STARS}",
    )
    assert capture.end.kind == "http_error"


def test_a_turn_the_transport_could_not_end_keeps_its_reason_scrubbed() -> None:
    rec = CaptureRecorder("openai")
    rec.request_started(_spec(), b"{}", 0.0)
    lost = Turn(
        outcome=Outcome.ERROR,
        reason=f"stream worker error: {KEY}",
        timings=Timings(request_sent=1.0, end=3.5),
    )
    rec.finished(lost)
    end = rec.done.result(5).end
    assert end is not None
    assert (end.kind, end.elapsed, end.detail, end.outcome) == (
        "broken", 2.5, f"stream worker error: {STARS}", "error",
    )  # fmt: skip
    cancelled = end_from_turn(
        Turn(outcome=Outcome.CANCELLED, reason="Cancelled by you"), Scrubber()
    )
    assert (cancelled.kind, cancelled.detail, cancelled.reason) == (
        "cancelled", "", "Cancelled by you",
    )  # fmt: skip


def test_a_file_that_cannot_be_written_fails_the_recording_not_the_turn(tmp_path: Path) -> None:
    rec = CaptureRecorder("openai", path=tmp_path / "missing-dir" / "turn.sscap")
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [], 0.01)
    rec.read(b"data: x\n\n", 0.1)
    rec.finished(Turn(outcome=Outcome.COMPLETED))
    with pytest.raises(OSError):
        rec.done.result(5)


def test_without_keep_reads_the_reads_go_to_the_file_only(tmp_path: Path) -> None:
    path = tmp_path / "endless.sscap"
    rec = CaptureRecorder("openai", path=path, keep_reads=False)
    rec.request_started(_spec(), b"{}", 0.0)
    rec.response_started(200, [("content-type", "text/event-stream")], 0.1)
    reads = [f"data: {i} {KEY}\n\n".encode() for i in range(300)]
    for i, data in enumerate(reads):
        rec.read(data, 0.2 + i / 1000)
    rec.ended(StreamEnd("eof", elapsed=1.0))
    rec.finished(Turn(outcome=Outcome.COMPLETED, reason="[DONE] received"))
    capture = rec.done.result(5)
    assert (len(capture.reads), capture.reads.size) == (0, 0)  # nothing kept in memory
    on_disk = read_capture(path)
    assert [d for _t, d in on_disk.reads] == [
        d.replace(KEY.encode(), STARS.encode()) for d in reads
    ]
    assert on_disk.end is not None and on_disk.end.outcome == "completed"


@pytest.mark.parametrize("to_file", [True, False])
def test_a_key_a_chat_answer_spells_out_in_pieces_is_masked_in_the_capture(
    tmp_path: Path, to_file: bool
) -> None:
    """The chat turns' captures (reads kept in memory, and in the file): a key the model
    repeats token by token is masked piece by piece, each read keeping its length."""
    pieces = [KEY[i : i + 4] for i in range(0, len(KEY), 4)]
    reads = [
        b'data: {"choices":[{"index":0,"delta":{"content":"' + p.encode() + b'"}}]}\n\n'
        for p in ["key ", *pieces]
    ]
    path = tmp_path / "echo.sscap" if to_file else None
    recorder = CaptureRecorder("openai", path=path)
    recorder.request_started(_spec(), b"{}", 1.0)
    recorder.response_started(200, [("content-type", "text/event-stream")], 1.1)
    for i, data in enumerate(reads):
        recorder.read(data, 1.2 + i / 100)
    turn = Turn(text="key " + KEY, outcome=Outcome.TRUNCATED, dialect="openai")
    recorder.ended(StreamEnd("eof", elapsed=1.0))
    recorder.finished(turn)
    capture = recorder.done.result(timeout=10)
    stars = [b"*" * len(p) for p in pieces]
    expected = [
        reads[0],
        *(r.replace(p.encode(), s) for r, p, s in zip(reads[1:], pieces, stars, strict=True)),
    ]
    assert [data for _t, data in capture.reads] == expected
    if path is not None:
        assert [data for _t, data in read_capture(path).reads] == expected
        assert not list(tmp_path.glob(".tmp-*"))  # (written again through a temporary file)


@pytest.mark.parametrize(("size", "to_file"), [(7, True), (61, False)])
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("around", sorted(AROUND))
def test_a_key_spelled_out_in_pieces_among_non_ascii_text_is_masked_in_the_capture(
    tmp_path: Path, around: str, encoding: str, size: int, to_file: bool
) -> None:
    """Pieces of the key next to Cyrillic, CJK or emoji in the same deltas (raw UTF-8 or
    ``\\u`` escapes as each kind of server writes them; the reads cut through characters,
    escapes and the key): exactly the key's bytes are masked, in the reads kept and in the
    file."""
    from streamscope.headless import replay_body

    stream = echo_stream(KEY, around, encoding)
    reads = cut(stream.body, size)
    path = tmp_path / "echo.sscap" if to_file else None
    recorder = CaptureRecorder("openai", path=path)
    recorder.request_started(_spec(), b"{}", 1.0)
    recorder.response_started(200, [("content-type", "text/event-stream")], 1.1)
    for i, data in enumerate(reads):
        recorder.read(data, 1.2 + i / 1000)
    recorder.ended(StreamEnd("eof", elapsed=2.0))
    recorder.finished(replay_body(stream.body, "openai"))
    capture = recorder.done.result(timeout=10)
    kept = [capture] if path is None else [capture, read_capture(path)]
    for each in kept:
        assert [len(d) for _t, d in each.reads] == [len(r) for r in reads]
        assert each.reads.body() == stream.masked
    replayed = replay_body(kept[-1].reads.body(), "openai")
    assert (replayed.text, [c.arguments for c in replayed.tool_calls]) == (
        stream.text,
        [stream.arguments],
    )
    assert path is None or KEY.encode() not in path.read_bytes()
