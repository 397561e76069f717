"""Frames as JSON Lines: one line per frame, from a capture or from each frame's bytes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.capture.frames_export import (
    FrameRecord,
    capture_frames,
    records_from_bytes,
    to_jsonl,
    write_jsonl,
)
from streamscope.core.turn.outcome import Outcome

SSE = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":"Hel"}}]}\n\n'
    b": keep-alive\n\n"
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":"lo \xe2\x80\x9cw\xe2\x80\x9d"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def sse_capture(chunks: list[bytes]) -> Capture:
    reads = ReadLog([(0.1 * (i + 1), c) for i, c in enumerate(chunks)])
    return Capture(
        "openai",
        response=CaptureResponse(200, (("content-type", "text/event-stream"),), 0.05),
        reads=reads,
        end=CaptureEnd("eof", elapsed=1.0),
    )


def test_capture_frames_gives_one_record_per_frame_and_the_turn() -> None:
    capture = sse_capture([SSE[:30], SSE[30:140], SSE[140:]])
    records, turn = asyncio.run(capture_frames(capture))
    assert turn.outcome is Outcome.COMPLETED
    assert turn.text == "Hello “w”"
    assert [r.event for r in records] == ["message", None, "message", "message"]
    assert records[1].comments == (" keep-alive",)
    assert records[3].data == "[DONE]"
    assert b"".join(r.raw for r in records) == SSE
    assert [r.t for r in records] == sorted(r.t for r in records)


def test_jsonl_has_one_object_per_line(tmp_path: Path) -> None:
    records, _ = asyncio.run(capture_frames(sse_capture([SSE])))
    path = tmp_path / "frames.jsonl"
    assert write_jsonl(path, records) == len(records) == 4
    lines = path.read_bytes().splitlines()
    objs = [orjson.loads(line) for line in lines]
    assert [o["i"] for o in objs] == [0, 1, 2, 3]
    assert objs[0]["event"] == "message" and "Hel" in objs[0]["data"]
    assert objs[1] == {"i": 1, "t": 0.1, "event": None, "data": None, "comments": ["keep-alive"]}
    assert "“w”" in path.read_text("utf-8")  # non-ASCII kept
    assert to_jsonl([]) == b""


def test_records_from_bytes_match_the_pipeline() -> None:
    records, _ = asyncio.run(capture_frames(sse_capture([SSE])))
    again = records_from_bytes([(r.raw, r.t) for r in records], "sse")
    assert again == records


def test_ndjson_lines() -> None:
    lines = [b'{"message":{"content":"a"},"done":false}\n', b'{"done":true}\n']
    records = records_from_bytes([(line, 0.5) for line in lines], "ndjson")
    assert [(r.event, r.data) for r in records] == [
        ("message", '{"message":{"content":"a"},"done":false}'),
        ("message", '{"done":true}'),
    ]


def test_an_unterminated_frame_is_marked_incomplete() -> None:
    (record,) = records_from_bytes([(b'data: {"a"', 0.2)], "sse")
    assert record == FrameRecord(0.2, None, None, (), b'data: {"a"', complete=False)
    assert record.to_json(0)["incomplete"] is True


def test_a_run_of_blank_lines_is_one_record() -> None:
    end = SSE.index(b": keep-alive\n\n") + 14
    body = SSE[:end] + b"\r\n" * 1000 + b"\n\n" + SSE[end:]
    capture = sse_capture([body[i : i + 100] for i in range(0, len(body), 100)])
    records, turn = asyncio.run(capture_frames(capture))
    assert turn.text == "Hello “w”"
    assert [r.event for r in records] == ["message", None, None, "message", "message"]
    assert records[2] == FrameRecord(records[2].t, None, None, (), b"\r\n" * 1000 + b"\n\n")
    assert b"".join(r.raw for r in records) == body
    assert records_from_bytes([(r.raw, r.t) for r in records], "sse") == records
    assert to_jsonl(records[2:3]).count(b"\n") == 1
    ndjson = [b"\n \r\n\r", b'{"done":true}\n', b"\n" * 1000]
    assert [
        (r.event, r.data, r.raw) for r in records_from_bytes([(b, 0.5) for b in ndjson], "ndjson")
    ] == [
        (None, None, b"\n \r\n\r"),
        ("message", '{"done":true}', b'{"done":true}\n'),
        (None, None, b"\n" * 1000),
    ]
