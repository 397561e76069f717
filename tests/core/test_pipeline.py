"""StreamPipeline and the NDJSON framer: frames, events, auto detection, protocol errors."""

from __future__ import annotations

import pytest

from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline, turn_to_json
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
        (10, b'{"b":2}\r', '{"b":2}', True),
        (18, b'{"c":"\xc3\xbc"}\n', '{"c":"ü"}', True),
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
