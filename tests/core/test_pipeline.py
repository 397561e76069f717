"""StreamPipeline and the NDJSON framer: frames, events, auto detection, protocol errors."""

from __future__ import annotations

import re
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import turn_to_json
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import FLAG_DETACHED, FrameKind, ProgressEncoder
from streamscope.core.wire.dialects import detect_dialect, get_dialect
from streamscope.core.wire.events import DialectWarning, Terminal, TextDelta
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import SSEEvent, SSEProtocolError

CHUNK = (
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":"%s"},"logprobs":null,"finish_reason":null}]}\n\n'
)


def _openai(*texts: str, done: bool = True) -> bytes:
    body = b"".join(CHUNK % t.encode() for t in texts)
    return body + (b"data: [DONE]\n\n" if done else b"")


# -- NDJSON framing ---------------------------------------------------------------------------


def _ndjson_frames(data: bytes, step: int) -> list[tuple[int, bytes, str | None, bool]]:
    dec = NDJSONDecoder()
    frames = []
    for i in range(0, len(data), step):
        frames += dec.feed_frames(data[i : i + step])
    frames += dec.close_frames()
    return [(f.offset, f.raw, f.event.data if f.event else None, f.complete) for f in frames]


@pytest.mark.parametrize("step", [1, 2, 3, 1000])
def test_ndjson_line_ends_and_final_line(step: int) -> None:
    data = b'{"a":1}\r\n\n{"b":2}\r{"c":"\xc3\xbc"}\n   \n{"d":4}'
    assert _ndjson_frames(data, step) == [
        (0, b'{"a":1}\r\n', '{"a":1}', True),
        (9, b"\n", None, True),  # blank lines are frames with no event: the frames tile
        (10, b'{"b":2}\r', '{"b":2}', True),
        (18, b'{"c":"\xc3\xbc"}\n', '{"c":"ü"}', True),
        (29, b"   \n", None, True),
        (33, b'{"d":4}', '{"d":4}', True),
    ]


def test_ndjson_events_are_sse_events() -> None:
    dec = NDJSONDecoder()
    assert dec.feed(b'{"x":1}\n{"y"') == [SSEEvent("message", '{"x":1}', None, None)]
    assert dec.close() == [SSEEvent("message", '{"y"', None, None)]


def test_ndjson_invalid_utf8_is_flagged() -> None:
    (frame,) = NDJSONDecoder().feed_frames(b'{"a":"\xff"}\n')
    assert frame.invalid_utf8
    assert frame.event is not None and frame.event.data == '{"a":"\ufffd"}'


def test_ndjson_line_cap_raises_with_earlier_frames() -> None:
    dec = NDJSONDecoder(max_line_bytes=10)
    with pytest.raises(SSEProtocolError) as info:
        dec.feed_frames(b'{"a":1}\n' + b"x" * 11 + b"\n")
    assert [f.raw for f in info.value.frames] == [b'{"a":1}\n']
    assert [e.data for e in info.value.events] == ['{"a":1}']
    with pytest.raises(SSEProtocolError):
        dec.feed_frames(b"{}\n")


def test_ndjson_unterminated_line_over_the_cap_raises() -> None:
    dec = NDJSONDecoder(max_line_bytes=8)
    dec.feed_frames(b"12345")
    with pytest.raises(SSEProtocolError):
        dec.feed_frames(b"67890")


def test_ndjson_closed_decoder_refuses_input() -> None:
    dec = NDJSONDecoder()
    dec.close_frames()
    with pytest.raises(RuntimeError):
        dec.feed_frames(b"{}\n")


def test_ndjson_modes_cannot_be_mixed() -> None:
    dec = NDJSONDecoder()
    dec.feed(b"{}\n")
    with pytest.raises(RuntimeError):
        dec.feed_frames(b"{}\n")
    with pytest.raises(RuntimeError):
        dec.close_frames()
    dec = NDJSONDecoder()
    dec.feed_frames(b"{}\n")
    with pytest.raises(RuntimeError):
        dec.feed(b"{}\n")
    with pytest.raises(RuntimeError):
        dec.close()


BOM = b"\xef\xbb\xbf"
NDFrame = tuple[int, bytes, str | None]


def ndjson_reference(data: bytes) -> list[NDFrame]:
    """A naive transcription of the NDJSON framing: each line (the last may lack a line end)
    is a frame, but blank lines (only whitespace, after the BOM on the first), however many in
    a row, are one frame with no event."""
    parts = re.split(rb"(\r\n|\r|\n)", data)
    lines = [(parts[i], parts[i] + parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    if parts[-1]:
        lines.append((parts[-1], parts[-1]))
    out: list[NDFrame] = []
    offset = 0
    run = b""
    for i, (text, raw) in enumerate(lines):
        if i == 0:
            text = text.removeprefix(BOM)
        if text.strip():
            if run:
                out.append((offset - len(run), run, None))
                run = b""
            out.append((offset, raw, text.decode("utf-8", "replace").rstrip()))
        else:
            run += raw
        offset += len(raw)
    if run:
        out.append((offset - len(run), run, None))
    return out


def ndjson_frames(data: bytes, sizes: list[int]) -> list[NDFrame]:
    dec = NDJSONDecoder()
    frames = []
    pos = 0
    for size in [*sizes, len(data)]:
        frames += dec.feed_frames(data[pos : pos + size])
        pos += size
    frames += dec.close_frames()
    assert all(f.complete and not f.comments for f in frames)
    return [(f.offset, f.raw, f.event.data if f.event else None) for f in frames]


def ndjson_events(data: bytes, sizes: list[int]) -> list[str]:
    dec = NDJSONDecoder()
    events = []
    pos = 0
    for size in [*sizes, len(data)]:
        events += dec.feed(data[pos : pos + size])
        pos += size
    return [e.data for e in events + dec.close()]


def every_chunking(data: bytes) -> list[list[int]]:
    n = len(data)
    cuts = [[], [1] * n]
    cuts += [[i] for i in range(n + 1)]
    cuts += [[i, j] for i in range(n + 1) for j in range(n + 1 - i)]
    return cuts


def test_ndjson_a_run_of_blank_lines_is_one_frame_with_every_chunking() -> None:
    run = b"\n \r\n\t\r\r\n\x0b\n"
    data = b'{"a":1}\n' + run + b'  {"b":2}\r\n'
    expected = [
        (0, b'{"a":1}\n', '{"a":1}'),
        (8, run, None),  # (the spaces before {"b":2} are its own)
        (8 + len(run), b'  {"b":2}\r\n', '  {"b":2}'),
    ]
    assert ndjson_reference(data) == expected
    for sizes in every_chunking(data):
        assert ndjson_frames(data, sizes) == expected
        assert ndjson_events(data, sizes) == ['{"a":1}', '  {"b":2}']


def test_ndjson_runs_at_the_start_after_a_bom_and_at_the_end() -> None:
    data = BOM + b" \n\r\n" + b'{"a":1}' + b"\r\r\n\n  "
    expected = [
        (0, BOM + b" \n\r\n", None),
        (7, b'{"a":1}\r', '{"a":1}'),
        (15, b"\r\n\n  ", None),  # (the last blank line has no line end)
    ]
    assert ndjson_reference(data) == expected
    for sizes in every_chunking(data):
        assert ndjson_frames(data, sizes) == expected


def test_ndjson_the_line_cap_does_not_apply_to_a_run() -> None:
    data = b'{"a":1}\n' + b"\n" * 50 + b"\r" * 50 + b"  \n" * 50 + b'{"b":2}\n'
    dec = NDJSONDecoder(max_line_bytes=8)
    frames = [f for i in range(0, len(data), 7) for f in dec.feed_frames(data[i : i + 7])]
    assert [len(f.raw) for f in frames] == [8, 250, 8]
    # a blank line over the cap is a line over the cap
    with pytest.raises(SSEProtocolError) as info:
        NDJSONDecoder(max_line_bytes=8).feed_frames(b"\n\n" + b" " * 9 + b"\n{}\n")
    assert info.value.frames == []


NDJSON_TOKENS = [
    b"{}",
    b'{"a":1}',
    b" ",
    b"\t",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n\n",
    BOM,
    b"\xff",
    b"\x0b",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(NDJSON_TOKENS), max_size=30).map(b"".join),
    st.lists(st.integers(0, 40), max_size=8),
)
def test_ndjson_frames_match_the_reference_with_any_chunking(data: bytes, sizes: list[int]) -> None:
    expected = ndjson_reference(data)
    assert ndjson_frames(data, sizes) == expected
    assert ndjson_frames(data, [1] * len(data)) == expected
    assert b"".join(raw for _, raw, _ in expected) == data
    assert ndjson_events(data, sizes) == [text for _, _, text in expected if text is not None]


def test_ndjson_rows_after_blank_lines_index_the_reads() -> None:
    """Frames tile the stream, so no row after a blank line keeps its own copy."""
    line = b'{"message":{"role":"assistant","content":"hi"},"done":false}\n'
    data = b"\n" + line * 50 + b"\r\n\r\n" + line * 50
    pipe = StreamPipeline("ollama", keep_frames=True)
    encoder = ProgressEncoder()
    encoder.read(data, 1.0)
    encoder.progressed(pipe.feed(data, 1.0), 1.0)
    rows = encoder.take().rows
    assert len(rows) == 102
    assert not any(flag & FLAG_DETACHED for flag in rows.flags) and not rows.detached
    assert [rows.kinds[0], rows.kinds[51]] == [FrameKind.COMMENT, FrameKind.COMMENT]


# -- pipeline ---------------------------------------------------------------------------------


def test_frames_carry_their_events_and_progress() -> None:
    pipe = StreamPipeline("openai")
    update = pipe.feed(b": keep-alive\n\n" + _openai("Hi", done=False), 0.5)
    assert [pf.frame.event is None for pf in update.frames] == [True, False]
    assert [pf.frame.offset for pf in update.frames] == [0, 14]
    assert update.frames[1].events[-1] == TextDelta("Hi")
    assert update.progress and not update.terminal
    assert pipe.assembler.events == 1
    update = pipe.feed(b"data: [DONE]\n\n", 0.6)
    assert update.events == [Terminal("[DONE]")]
    assert update.terminal and not update.progress
    turn = pipe.close(StreamEnd("eof"), 0.7)
    assert turn.outcome is Outcome.COMPLETED
    assert turn.timings.first_byte == 0.5
    assert turn.bytes_received == 14 + len(_openai("Hi"))


def test_keep_frames_off_gives_events_only() -> None:
    pipe = StreamPipeline("openai", keep_frames=False)
    update = pipe.feed(_openai("a", "b"), 1.0)
    assert update.frames == []
    assert [e for e in update.events if isinstance(e, TextDelta)] == [
        TextDelta("a"),
        TextDelta("b"),
    ]
    assert pipe.close(StreamEnd("eof"), 2.0).text == "ab"


@pytest.mark.parametrize("keep", [True, False])
def test_line_too_long_is_an_error_outcome_with_the_partial_turn(keep: bool) -> None:
    pipe = StreamPipeline("openai", keep_frames=keep, max_line_bytes=1024)
    update = pipe.feed(_openai("kept", done=False) + b"data: " + b"x" * 2000 + b"\n\n", 1.0)
    assert update.protocol_error is not None
    assert pipe.feed(_openai("ignored"), 1.1).events == []
    turn = pipe.close(StreamEnd("eof"), 2.0)
    assert turn.outcome is Outcome.ERROR
    assert turn.reason.startswith("protocol error after")
    assert "1024" in turn.reason
    assert turn.text == "kept"


def test_cancel_overrides_a_protocol_error() -> None:
    pipe = StreamPipeline("openai", max_line_bytes=16)
    pipe.feed(b"data: " + b"x" * 40, 1.0)
    assert pipe.close(StreamEnd("cancelled", elapsed=1.0), 1.0).outcome is Outcome.CANCELLED


def test_http_error_needs_no_body_feed() -> None:
    pipe = StreamPipeline("anthropic")
    end = StreamEnd(
        "http_error",
        status=529,
        body=b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    )
    turn = pipe.close(end, 1.0)
    assert (turn.outcome, turn.reason) == (Outcome.ERROR, "529 overloaded_error · Overloaded")


def test_gemini_terminal_needs_a_clean_end_of_body() -> None:
    body = b'data: {"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]}\n\n'
    clean = StreamPipeline("gemini")
    clean.feed(body, 1.0)
    assert clean.close(StreamEnd("eof"), 2.0).outcome is Outcome.COMPLETED
    assert clean.snapshot().terminal_signal == "finishReason+end"
    broken = StreamPipeline("gemini")
    broken.feed(body, 1.0)
    assert broken.close(StreamEnd("broken"), 2.0).outcome is Outcome.TRUNCATED


def test_flush_returns_the_tail_frames_once() -> None:
    pipe = StreamPipeline("ollama")
    pipe.feed(b'{"message":{"content":"a"},"done":false}\n{"done":true,"done_reason":"stop"}', 1.0)
    tail = pipe.flush(2.0)
    assert len(tail.frames) == 1 and tail.terminal
    assert pipe.flush(2.0).frames == []
    assert pipe.close(StreamEnd("eof"), 2.0).outcome is Outcome.COMPLETED


BIG_BLANK_RUNS = [
    ("openai", b"\n" * 4_000_000),
    ("openai", b"\r" * 20_000_000),
    ("ollama", b"\n" * 4_000_000),
    ("ollama", b"\r" * 20_000_000),
]
BIG_IDS = ["sse-4MB-of-LF", "sse-20MB-of-CR", "ndjson-4MB-of-LF", "ndjson-20MB-of-CR"]


@pytest.mark.parametrize(("dialect", "data"), BIG_BLANK_RUNS, ids=BIG_IDS)
def test_megabytes_of_blank_lines_replay_as_one_row_in_little_memory(
    dialect: str, data: bytes
) -> None:
    """The replay path: pipeline with frames, the batches, the inspector's frame log."""
    reads = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    recorded = bytearray(data)  # (a replay's log indexes the capture's buffer)
    tracemalloc.start()
    try:
        pipe = StreamPipeline(dialect, keep_frames=True, request_sent=0.0)
        encoder = ProgressEncoder()
        log = FrameLog(0.0, recorded)
        frames = 0
        for i, read in enumerate(reads):
            t = 0.001 * i
            encoder.read(read, t)
            update = pipe.feed(read, t)
            frames += len(update.frames)
            encoder.progressed(update, t)
            log.add(encoder.take())
        update = pipe.flush(1.0)
        frames += len(update.frames)
        encoder.progressed(update, 1.0)
        log.add(encoder.take())
        pipe.close(StreamEnd("eof"), 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert frames == len(log) == 1
    assert (log.offsets[0], log.lengths[0], log.flags[0], log.kinds[0]) == (
        0,
        len(data),
        0,
        FrameKind.COMMENT,
    )
    assert (log.label(0), log.summary(0)) == ("", f"(blank lines ×{len(data)})")
    assert peak < 3 * len(data)


@pytest.mark.parametrize("read", [1 << 16, None], ids=["64KiB-reads", "one-read"])
@pytest.mark.parametrize(("dialect", "data"), BIG_BLANK_RUNS, ids=BIG_IDS)
def test_megabytes_of_blank_lines_cost_nothing_on_the_events_path(
    dialect: str, data: bytes, read: int | None
) -> None:
    step = read or len(data)
    reads = [data[i : i + step] for i in range(0, len(data), step)]
    tracemalloc.start()
    try:
        pipe = StreamPipeline(dialect, keep_frames=False)
        events = [e for i, read in enumerate(reads) for e in pipe.feed(read, 0.001 * i).events]
        turn = pipe.close(StreamEnd("eof"), 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert events == [] and turn.bytes_received == len(data)
    assert peak < len(data) // 4


@pytest.mark.parametrize(
    ("content_type", "body", "dialect"),
    [
        (None, b'{"model":"m","message":{"content":"x"},"done":true}\n', "ollama"),
        (
            "application/x-ndjson",
            b'{"model":"m","message":{"content":"x"},"done":true}\n',
            "ollama",
        ),
        (None, b"\n\n" + _openai("x"), "openai"),
        (
            "text/event-stream",
            b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n',
            "anthropic",
        ),
        (None, b'data: {"type":"response.created","response":{}}\n\n', "responses"),
        (None, b'data: {"candidates":[]}\n\n', "gemini"),
    ],
)
def test_auto_picks_framing_and_dialect(
    content_type: str | None, body: bytes, dialect: str
) -> None:
    pipe = StreamPipeline("auto", content_type=content_type)
    assert pipe.dialect_name is None
    for i in range(len(body)):
        pipe.feed(body[i : i + 1], 1.0)
    pipe.flush(2.0)
    assert pipe.dialect_name == dialect
    assert pipe.framing == get_dialect(dialect).framing


def test_auto_falls_back_to_openai_with_a_warning() -> None:
    pipe = StreamPipeline("auto")
    update = pipe.feed(b'data: {"hello":1}\n\n', 1.0)
    assert pipe.dialect_name == "openai"
    assert isinstance(update.events[0], DialectWarning)


def test_auto_error_object_first_is_not_a_warning() -> None:
    pipe = StreamPipeline("auto")
    pipe.feed(b'data: {"error":{"message":"boom","type":"server_error"}}\n\n', 1.0)
    turn = pipe.close(StreamEnd("eof"), 1.0)
    assert turn.outcome is Outcome.ERROR
    assert turn.warnings == ()


def test_empty_body_is_truncated() -> None:
    pipe = StreamPipeline("auto")
    turn = pipe.close(StreamEnd("eof"), 1.0)
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.reason == "connection closed after 0 B, no terminal signal"


@pytest.mark.parametrize(
    ("content_type", "data", "name"),
    [
        ("application/x-ndjson; charset=utf-8", "", "ollama"),
        (None, '{"type":"message_start"}', "anthropic"),
        (None, '{"object":"chat.completion.chunk","choices":[]}', "openai"),
        (None, '{"usageMetadata":{}}', "gemini"),
        (None, '{"type":"response.output_text.delta"}', "responses"),
        (None, '{"model":"x","done":false,"message":{}}', "ollama"),
        (None, '{"error":{}}', None),
        (None, "[DONE]", None),
        (None, "not json", None),
    ],
)
def test_detect_dialect(content_type: str | None, data: str, name: str | None) -> None:
    assert detect_dialect(content_type, [SSEEvent("message", data)]) == name


def test_detect_dialect_by_event_name() -> None:
    assert detect_dialect(None, [SSEEvent("ping", "{}")]) == "anthropic"
    assert detect_dialect(None, [SSEEvent("response.created", "{}")]) == "responses"


def test_get_dialect_unknown_name() -> None:
    with pytest.raises(KeyError, match="unknown dialect 'nope'"):
        get_dialect("nope")


def test_turn_to_json_has_exactly_the_cli_keys() -> None:
    pipe = StreamPipeline("openai")
    pipe.feed(_openai("x"), 1.0)
    result = turn_to_json(pipe.close(StreamEnd("eof"), 1.0))
    assert list(result) == [
        "outcome",
        "reason",
        "text",
        "reasoning",
        "reasoning_channel",
        "tool_calls",
        "finish_reason",
        "usage",
        "events",
        "warnings",
    ]
    assert result["outcome"] == "completed" and result["events"] == 2
