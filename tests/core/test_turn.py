"""TurnAssembler: tool-call merging, reasoning channels, usage, and the outcome rules."""

from __future__ import annotations

import pytest

from streamscope.core.turn.assembler import TurnAssembler
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd, describe_http_error, format_bytes
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    ReasoningDelta,
    ServerError,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)


def _asm(*events: object, expected: str = "[DONE]") -> TurnAssembler:
    asm = TurnAssembler(expected_terminal=expected, request_sent=0.0)
    for i, ev in enumerate(events):
        asm.apply(ev, 1.0 + i)  # type: ignore[arg-type]
    return asm


# -- reducing -------------------------------------------------------------------------------


def test_text_is_joined_and_progress_reported() -> None:
    asm = TurnAssembler()
    assert asm.apply(TextDelta("Hel"), 1.0) is True
    assert asm.text == "Hel"
    assert asm.apply(TextDelta("lo"), 2.0) is True
    assert asm.apply(KeepAlive("ping"), 3.0) is False
    assert asm.apply(Ignored("x"), 3.5) is False
    turn = asm.snapshot()
    assert turn.text == "Hello"
    assert turn.timings.first_token == 1.0
    assert turn.timings.last_token == 2.0
    assert turn.outcome is None


def test_interleaved_parallel_tool_calls_merge_by_index() -> None:
    asm = _asm(
        ToolCallDelta(0, "call_a", "f", ""),
        ToolCallDelta(1, "call_b", "g", '{"x"'),  # name and first bytes together
        ToolCallDelta(0, None, None, '{"y":'),
        ToolCallDelta(1, None, None, ":1}"),
        ToolCallDelta(0, None, None, "2}"),
    )
    calls = asm.snapshot().tool_calls
    assert [(c.index, c.id, c.name, c.arguments) for c in calls] == [
        (0, "call_a", "f", '{"y":2}'),
        (1, "call_b", "g", '{"x":1}'),
    ]
    assert [f.text for f in calls[0].fragments] == ['{"y":', "2}"]
    assert calls[1].arguments_parse()


def test_id_and_name_taken_from_whichever_fragment_carries_them() -> None:
    asm = _asm(ToolCallDelta(0, None, None, "{"), ToolCallDelta(0, "call_late", "late", "}"))
    (call,) = asm.snapshot().tool_calls
    assert (call.id, call.name, call.arguments) == ("call_late", "late", "{}")


def test_missing_index_places_by_position_and_warns() -> None:
    asm = _asm(
        ToolCallDelta(None, "c1", "f", '{"a":1}'),
        ToolCallDelta(None, "c2", "f", '{"a":'),
        ToolCallDelta(None, None, None, "2}"),  # continuation of the last call
    )
    turn = asm.snapshot()
    assert [(c.index, c.id, c.arguments) for c in turn.tool_calls] == [
        (0, "c1", '{"a":1}'),
        (1, "c2", '{"a":2}'),
    ]
    assert turn.warnings == ("tool call without index: placed by position",)


def test_index_reused_for_a_different_id_keeps_both_and_warns() -> None:
    asm = _asm(
        ToolCallDelta(0, "a", "f", "{}"),
        ToolCallDelta(0, "b", "g", "{"),
        ToolCallDelta(0, None, None, "}"),
    )
    turn = asm.snapshot()
    assert [(c.id, c.arguments) for c in turn.tool_calls] == [("a", "{}"), ("b", "{}")]
    assert "reused" in turn.warnings[0]


def test_tool_call_done_supplies_arguments_when_no_fragments_came() -> None:
    asm = _asm(ToolCallStarted(1, "toolu", "t"), ToolCallDone(1, "{}"))
    (call,) = asm.snapshot().tool_calls
    assert call.arguments == "{}" and call.done


def test_tool_call_done_that_disagrees_with_fragments_keeps_fragments() -> None:
    asm = _asm(
        ToolCallStarted(0, "c", "t"),
        ToolCallDelta(0, None, None, '{"a":1}'),
        ToolCallDone(0, '{"a":2}'),
    )
    turn = asm.snapshot()
    assert turn.tool_calls[0].arguments == '{"a":1}'
    assert "differ" in turn.warnings[0]


def test_arguments_are_kept_raw_and_invalid_json_warns_at_finish() -> None:
    asm = _asm(ToolCallDelta(0, "c", "f", '{"a": [1,'), Terminal("[DONE]"))
    turn = asm.finish(StreamEnd("eof"), 9.0)
    assert turn.tool_calls[0].arguments == '{"a": [1,'
    assert "tool call 0 (f): arguments are not valid JSON" in turn.warnings
    assert turn.outcome is Outcome.COMPLETED


def test_reasoning_channel_recorded_and_mixed_channels_joined() -> None:
    asm = _asm(ReasoningDelta("a", "reasoning_content"), ReasoningDelta("b", "reasoning"))
    turn = asm.snapshot()
    assert turn.reasoning == "ab"
    assert turn.reasoning_channel == "reasoning_content+reasoning"


def test_usage_pieces_merge_and_later_values_win() -> None:
    asm = _asm(
        Usage({"input_tokens": 25, "output_tokens": 1}, 25, 1),
        Usage({"output_tokens": 15}, None, 15),
    )
    turn = asm.snapshot()
    assert turn.usage == {"input_tokens": 25, "output_tokens": 15}
    assert (turn.input_tokens, turn.output_tokens) == (25, 15)


def test_malformed_frames_are_counted_not_fatal() -> None:
    asm = _asm(
        TextDelta("a"), MalformedFrame("invalid JSON", "{"), TextDelta("b"), Terminal("[DONE]")
    )
    turn = asm.finish(StreamEnd("eof"), 9.0)
    assert turn.malformed_frames == 1
    assert turn.text == "ab"
    assert turn.outcome is Outcome.COMPLETED
    assert turn.summary() == "Completed · TTFT 1.00 s · 1 malformed frame"


def test_dialect_warnings_are_deduplicated() -> None:
    asm = _asm(DialectWarning("w"), DialectWarning("w"))
    assert asm.snapshot().warnings == ("w",)


def test_finish_is_idempotent_first_end_wins() -> None:
    asm = _asm(TextDelta("x"))
    first = asm.finish(StreamEnd("cancelled", elapsed=1.0), 2.0)
    assert asm.finish(StreamEnd("eof"), 3.0) is first
    assert asm.snapshot() is first


# -- outcome rules ---------------------------------------------------------------------------


def _finish(end: StreamEnd, *events: object, expected: str = "[DONE]") -> Turn:
    asm = _asm(*events, expected=expected)
    return asm.finish(end, 10.0)


def test_terminal_signal_means_completed() -> None:
    turn = _finish(
        StreamEnd("eof", bytes_received=100),
        TextDelta("hi"),
        FinishReason("stop"),
        Terminal("[DONE]"),
    )
    assert turn.outcome is Outcome.COMPLETED
    assert turn.reason == "[DONE] received (finish_reason=stop)"
    assert turn.summary().startswith("Completed · stop")


def test_length_stop_is_completed_with_its_finish_reason() -> None:
    turn = _finish(StreamEnd("eof"), TextDelta("a"), FinishReason("length"), Terminal("[DONE]"))
    assert turn.outcome is Outcome.COMPLETED
    assert turn.finish_reason == "length"


def test_finish_reason_without_terminal_is_truncated() -> None:
    end = StreamEnd("eof", bytes_received=18637)
    turn = _finish(end, TextDelta("partial"), FinishReason("stop"))
    assert turn.outcome is Outcome.TRUNCATED
    assert (
        turn.reason == "connection closed after 18.2 KB, no [DONE] (finish_reason=stop had arrived)"
    )
    assert turn.text == "partial"
    assert turn.summary() == f"Truncated · {turn.reason}"


def test_broken_connection_is_truncated_and_names_the_missing_terminal() -> None:
    end = StreamEnd("broken", bytes_received=4200, detail="peer closed connection")
    turn = _finish(end, TextDelta("x"), expected="message_stop")
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.reason == "connection broken after 4.1 KB, no message_stop: peer closed connection"


def test_terminal_then_broken_connection_is_still_completed() -> None:
    turn = _finish(StreamEnd("broken"), TextDelta("x"), Terminal("[DONE]"))
    assert turn.outcome is Outcome.COMPLETED


def test_idle_timeout_is_truncated() -> None:
    turn = _finish(StreamEnd("idle_timeout", timeout=30, bytes_received=2048), TextDelta("x"))
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.reason == "idle timeout after 30 s with no progress (2.0 KB received), no [DONE]"


def test_first_byte_timeout_is_truncated() -> None:
    turn = _finish(StreamEnd("first_byte_timeout", timeout=300))
    assert turn.outcome is Outcome.TRUNCATED
    assert "no response body within 300 s" in turn.reason


def test_cancelled_keeps_partial_text() -> None:
    turn = _finish(
        StreamEnd("cancelled", elapsed=2.1), TextDelta("half"), ToolCallDelta(0, "c", "f", "{")
    )
    assert turn.outcome is Outcome.CANCELLED
    assert turn.reason == "Cancelled by you after 2.1 s"
    assert turn.text == "half" and turn.tool_calls[0].arguments == "{"


def test_cancelled_elapsed_falls_back_to_request_time() -> None:
    asm = TurnAssembler(request_sent=5.0)
    assert asm.finish(StreamEnd("cancelled"), 7.5).reason == "Cancelled by you after 2.5 s"


def test_in_stream_error_wins_over_terminal_and_keeps_text() -> None:
    turn = _finish(
        StreamEnd("eof"),
        TextDelta("Partial"),
        ServerError("Overloaded", "overloaded_error"),
        Terminal("message_stop"),
    )
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == "in-stream error: overloaded_error: Overloaded"
    assert turn.text == "Partial"
    assert turn.server_error == ServerError("Overloaded", "overloaded_error")


def test_protocol_error_is_error() -> None:
    turn = _finish(
        StreamEnd("protocol_error", bytes_received=1 << 21, detail="line longer than 1048576 bytes")
    )
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == "protocol error after 2.0 MB: line longer than 1048576 bytes"


@pytest.mark.parametrize(
    ("detail", "reason"),
    [
        # the client's sentence (core/net/connect_errors.py) is the reason as it is
        (
            "Connection refused by 127.0.0.1:9 — is the server running?",
            "Connection refused by 127.0.0.1:9 — is the server running?",
        ),
        # a bare exception text (what older captures hold) says what it is
        (
            "ConnectError: [Errno 111] Connection refused",
            "could not connect: ConnectError: [Errno 111] Connection refused",
        ),
        ("", "could not connect: no response"),
    ],
)
def test_connect_error_is_error(detail: str, reason: str) -> None:
    turn = _finish(StreamEnd("connect_error", detail=detail))
    assert (turn.outcome, turn.reason) == (Outcome.ERROR, reason)


@pytest.mark.parametrize(
    ("status", "body", "headers", "reason"),
    [
        (
            429,
            b'{"error":{"message":"Rate limit reached","type":"requests",'
            b'"code":"rate_limit_exceeded"}}',
            {"Retry-After": "20"},
            "429 rate_limit_exceeded · Rate limit reached · retry after 20 s",
        ),
        (
            401,
            b'{"type":"error","error":{"type":"authentication_error",'
            b'"message":"invalid x-api-key"}}',
            {},
            "401 authentication_error · invalid x-api-key",
        ),
        (
            400,
            b'{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}',
            {},
            "400 INVALID_ARGUMENT · API key not valid.",
        ),
        (
            404,
            b'{"error":"model \\"llama9\\" not found"}',
            {},
            '404 Not Found · model "llama9" not found',
        ),
        (
            500,
            b"",
            {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"},
            "500 Internal Server Error · empty body · retry after Wed, 21 Oct 2026 07:28:00 GMT",
        ),
        (
            502,
            b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            {"content-type": "text/html"},
            "502 HTML page, not an event stream: 502 Bad Gateway",
        ),
    ],
)
def test_http_error_reasons(status: int, body: bytes, headers: dict[str, str], reason: str) -> None:
    end = StreamEnd("http_error", status=status, body=body, headers=headers)
    assert describe_http_error(end) == reason
    turn = _finish(end)
    assert (turn.outcome, turn.reason, turn.status) == (Outcome.ERROR, reason, status)


def test_not_a_stream_html_page() -> None:
    end = StreamEnd(
        "not_a_stream",
        status=200,
        content_type="text/html; charset=utf-8",
        body=b"<!DOCTYPE html>\n<html><title>Sign in \xe2\x80\x94 Portal</title></html>",
    )
    turn = _finish(end)
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == "200 HTML page, not an event stream: Sign in — Portal"


def test_not_a_stream_plain_json_error() -> None:
    end = StreamEnd(
        "not_a_stream",
        status=200,
        content_type="application/json",
        body=b'{"error":{"message":"stream not supported","code":"bad_request"}}',
    )
    reason = _finish(end).reason
    assert (
        reason
        == "200 application/json body, not an event stream · bad_request: stream not supported"
    )


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0 B"), (1023, "1023 B"), (18637, "18.2 KB"), (19 << 20, "19.0 MB")]
)
def test_format_bytes(n: int, text: str) -> None:
    assert format_bytes(n) == text


def test_summary_of_completed_turn() -> None:
    asm = TurnAssembler(expected_terminal="[DONE]", request_sent=0.0)
    asm.apply(TextDelta("a"), 0.31)
    asm.apply(TextDelta("b"), 7.31)
    asm.apply(Usage({"completion_tokens": 412}, None, 412), 7.4)
    asm.apply(FinishReason("stop"), 7.4)
    asm.apply(Terminal("[DONE]"), 7.5)
    turn = asm.finish(StreamEnd("eof"), 7.6)
    assert turn.summary() == "Completed · stop · 412 tokens · TTFT 0.31 s · 59 tok/s"


def test_status_line_for_each_outcome() -> None:
    """The status bar's words, one per outcome (text alone must be enough)."""
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import StreamPipeline

    chunk = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    finish = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'

    def turn_for(body: bytes, end: StreamEnd) -> str:
        pipe = StreamPipeline("openai", request_sent=0.0)
        pipe.feed(body, 0.3)
        return pipe.close(end, 2.1).summary()

    done = turn_for(chunk + finish + b"data: [DONE]\n\n", StreamEnd("eof"))
    assert done.startswith("Completed · stop") and "TTFT 0.30 s" in done
    cut = turn_for(chunk + finish, StreamEnd("eof"))
    assert cut.startswith("Truncated · connection closed after")
    assert "no [DONE] (finish_reason=stop had arrived)" in cut
    assert turn_for(chunk, StreamEnd("cancelled", elapsed=2.1)) == "Cancelled by you after 2.1 s"
    err = turn_for(
        b"",
        StreamEnd(
            "http_error",
            status=429,
            headers={"retry-after": "20"},
            body=b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}',
        ),
    )
    assert err.startswith("Error · 429 rate_limit_exceeded") and err.endswith("retry after 20 s")


@pytest.mark.parametrize(
    ("finish", "outcome", "limit"),
    [
        ("length", Outcome.COMPLETED, True),  # OpenAI chat, Ollama
        ("max_tokens", Outcome.COMPLETED, True),  # Anthropic
        ("MAX_TOKENS", Outcome.COMPLETED, True),  # Gemini
        ("max_output_tokens", Outcome.COMPLETED, True),  # Responses (incomplete)
        ("stop", Outcome.COMPLETED, False),
        ("end_turn", Outcome.COMPLETED, False),
        ("STOP", Outcome.COMPLETED, False),
        ("tool_calls", Outcome.COMPLETED, False),
        (None, Outcome.COMPLETED, False),
        ("length", Outcome.TRUNCATED, False),  # (truncated says more than "at the limit")
    ],
)
def test_stopped_at_limit(finish: str | None, outcome: Outcome, limit: bool) -> None:
    assert Turn(finish_reason=finish, outcome=outcome).stopped_at_limit is limit
