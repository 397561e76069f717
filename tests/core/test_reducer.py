"""The reducer's side channels, pinned: what counts as progress, TTFT, deltas, byte counts."""

from __future__ import annotations

import json

import pytest

from streamscope.core.turn.assembler import TurnAssembler
from streamscope.core.turn.model import ToolCallState, TurnDelta, apply_tool_calls
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ReasoningSignature,
    ServerError,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)

# The idle timeout watches progress: text, reasoning and argument bytes — nothing else.
PROGRESS_TABLE: list[tuple[StreamEvent, bool]] = [
    (TextDelta("a"), True),
    (ReasoningDelta("r", "thinking"), True),
    (ToolCallDelta(0, "c", "f", '{"a'), True),
    (ToolCallDelta(0, "c", "f", ""), False),
    (ToolCallStarted(0, "c", "f"), False),
    (ToolCallDone(0, "{}"), False),
    (FinishReason("stop"), False),
    (Usage({"output_tokens": 3}, None, 3), False),
    (MessageStarted("m", "x"), False),
    (ReasoningSignature("sig"), False),
    (ServerError("boom"), False),
    (Terminal("[DONE]"), False),
    (KeepAlive("ping"), False),
    (Ignored("content_block_stop"), False),
    (MalformedFrame("invalid JSON", "{"), False),
    (DialectWarning("odd"), False),
]


@pytest.mark.parametrize(("event", "progress"), PROGRESS_TABLE, ids=lambda v: type(v).__name__)
def test_what_counts_as_progress(event: StreamEvent, progress: bool) -> None:
    asm = TurnAssembler(request_sent=0.0)
    assert asm.apply(event, 1.0) is progress
    delta = asm.take_delta()
    assert delta.progress == (1 if progress else 0)
    assert delta.timings.first_token == (1.0 if progress else None)
    assert delta.timings.last_token == (1.0 if progress else None)


def test_every_event_type_is_in_the_progress_table() -> None:
    covered = {type(e) for e, _ in PROGRESS_TABLE}
    assert covered == set(StreamEvent.__args__)  # type: ignore[attr-defined]


def test_ttft_of_a_reasoning_only_turn() -> None:
    asm = TurnAssembler(request_sent=10.0)
    asm.apply(MessageStarted("m", "x"), 10.1)
    asm.apply(KeepAlive("ping"), 10.2)
    asm.apply(ReasoningDelta("hm", "thinking"), 10.35)
    asm.apply(ReasoningDelta("m", "thinking"), 10.5)
    turn = asm.finish(StreamEnd("eof"), 11.0)
    assert turn.timings.ttft == pytest.approx(0.35)
    assert (turn.timings.first_reasoning, turn.timings.first_answer) == (10.35, None)
    assert turn.timings.last_token == 10.5


def test_ttft_of_a_tool_only_turn() -> None:
    asm = TurnAssembler(request_sent=10.0)
    asm.apply(ToolCallStarted(0, "c", "f"), 10.2)  # an announced call is not progress yet
    asm.apply(ToolCallDelta(0, None, None, ""), 10.3)  # nor an empty fragment
    asm.apply(ToolCallDelta(0, None, None, '{"x":'), 10.4)
    asm.apply(ToolCallDelta(0, None, None, "1}"), 10.6)
    turn = asm.finish(StreamEnd("eof"), 11.0)
    assert turn.timings.ttft == pytest.approx(0.4)
    assert (turn.timings.first_reasoning, turn.timings.first_answer) == (None, 10.4)
    assert turn.timings.last_token == 10.6


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


def test_the_closed_connection_reason_counts_the_bytes_the_pipeline_read() -> None:
    body = b"".join(_chunk({"content": "x" * 100}) for _ in range(101))  # 184 bytes each
    body += _chunk({}, "stop")  # 73 bytes
    pipe = StreamPipeline("openai")
    for i in range(0, len(body), 1000):
        pipe.feed(body[i : i + 1000], 0.1)
    assert len(body) == 18_657
    turn = pipe.close(StreamEnd("eof"), 1.0)  # (the end knows no byte count: the reducer's)
    assert turn.outcome is Outcome.TRUNCATED
    assert turn.reason == (
        "connection closed after 18.2 KB, no [DONE] (finish_reason=stop had arrived)"
    )
    assert turn.bytes_received == 18_657


def test_a_delta_says_what_changed_since_the_previous_one() -> None:
    asm = TurnAssembler(request_sent=0.0)
    asm.dialect = "openai"
    asm.apply(TextDelta("Hel"), 0.1)
    asm.apply(ToolCallDelta(0, "a", "f", "{"), 0.2)
    asm.apply(ToolCallDelta(1, "b", "g", "{"), 0.2)
    first = asm.take_delta()
    assert (first.text, [c.position for c in first.tool_calls]) == ("Hel", [0, 1])
    assert (first.dialect, first.progress, first.text_deltas, first.finished) == (
        "openai", 3, 1, False,
    )  # fmt: skip
    asm.apply(TextDelta("lo"), 0.3)
    asm.apply(ToolCallDelta(1, None, None, "}"), 0.4)
    asm.apply(MalformedFrame("bad", "x"), 0.5)
    second = asm.take_delta()
    assert second.text == "lo"
    assert [(c.position, c.arguments, c.parses) for c in second.tool_calls] == [(1, "{}", True)]
    assert second.warnings == ("malformed frame: bad",)
    assert second.tool_calls[0].fragments[-1].text == "}"
    assert asm.take_delta().text == "" and asm.take_delta().tool_calls == ()
    asm.finish(StreamEnd("eof"), 1.0)
    last = asm.take_delta()
    assert last.finished
    assert [(c.position, c.done) for c in last.tool_calls] == [(0, True), (1, True)]
    assert last.warnings == ("tool call 0 (f): arguments are not valid JSON",)


def test_text_compacted_between_deltas_is_handed_out_once() -> None:
    asm = TurnAssembler()
    for i in range(5000):  # past the compaction threshold
        asm.apply(TextDelta(f"{i} "), 0.1)
    first = asm.take_delta().text
    asm.apply(TextDelta("end"), 0.2)
    assert first + asm.take_delta().text == asm.text
    assert asm.text.endswith("4999 end")


def test_merged_deltas_equal_one_delta_over_both_stretches() -> None:
    events = [
        TextDelta("a"),
        ToolCallDelta(0, "c", "f", '{"x"'),
        ReasoningDelta("r", "thinking"),
        ToolCallDelta(0, None, None, ":1}"),
        TextDelta("b"),
        DialectWarning("w"),
    ]
    one, two = TurnAssembler(), TurnAssembler()
    merged = TurnDelta()
    for i, event in enumerate(events):
        one.apply(event, float(i))
        two.apply(event, float(i))
        merged = merged.merge(two.take_delta())
    whole = one.take_delta()
    assert merged == whole


def test_views_put_changed_calls_in_place_by_position() -> None:
    a = ToolCallState(0, "a", "f", "{", position=0)
    b = ToolCallState(0, "b", "g", "{", position=1)
    calls = apply_tool_calls([], [b])  # (a later call may change first)
    assert calls == [b, b]
    apply_tool_calls(calls, [a])
    assert calls == [a, b]
    a2 = ToolCallState(0, "a", "f", "{}", position=0)
    assert apply_tool_calls(calls, [a2]) == [a2, b]


def test_a_fixed_dialect_that_does_not_match_the_frames_is_reported() -> None:
    anthropic = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
    pipe = StreamPipeline("openai", content_type="text/event-stream")
    pipe.feed(anthropic, 0.1)
    delta = pipe.assembler.take_delta()
    assert (delta.dialect, delta.dialect_mismatch) == ("openai", "anthropic")
    same = StreamPipeline("openai")
    same.feed(_chunk({"content": "hi"}), 0.1)
    assert same.assembler.take_delta().dialect_mismatch is None


def test_tool_fragments_remember_their_frame() -> None:
    body = (
        b": keep-alive\n\n"
        + _chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]})
        + _chunk({"content": "x"})
        + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]})
    )
    pipe = StreamPipeline("openai")
    pipe.feed(body, 0.1)
    (call,) = pipe.snapshot().tool_calls
    assert [(f.text, f.frame) for f in call.fragments] == [('{"a":', 2), ("1}", 4)]
