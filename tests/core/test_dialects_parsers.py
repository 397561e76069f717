"""Anthropic, Gemini, Responses and Ollama parser details beyond the fixtures."""

from __future__ import annotations

from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.dialects.anthropic import AnthropicParser
from streamscope.core.wire.dialects.gemini import GeminiParser
from streamscope.core.wire.dialects.ollama import OllamaParser
from streamscope.core.wire.dialects.openai_responses import ResponsesParser
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    ServerError,
    Terminal,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
)
from streamscope.core.wire.sse import SSEEvent


def ev(data: str, event: str = "message") -> SSEEvent:
    return SSEEvent(event, data)


def test_anthropic_dispatches_on_the_json_type_over_the_event_name() -> None:
    parser = AnthropicParser()
    assert parser.parse(ev('{"type":"ping"}', "message")) == [KeepAlive("ping")]
    assert parser.parse(ev("{}", "ping")) == [KeepAlive("ping")]
    assert parser.parse(ev('{"type":"something_new"}')) == [Ignored("something_new")]
    assert isinstance(parser.parse(ev("not json"))[0], MalformedFrame)


def test_anthropic_tool_use_without_deltas_reports_its_start_input() -> None:
    parser = AnthropicParser()
    start = (
        '{"type":"content_block_start","index":2,'
        '"content_block":{"type":"tool_use","id":"t","name":"n","input":{"a":1}}}'
    )
    assert parser.parse(ev(start)) == [ToolCallStarted(2, "t", "n")]
    assert parser.parse(ev('{"type":"content_block_stop","index":2}')) == [
        ToolCallDone(2, '{"a":1}')
    ]


def test_anthropic_error_event() -> None:
    data = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    (err,) = AnthropicParser().parse(ev(data, "error"))
    assert isinstance(err, ServerError) and (err.code, err.message) == (
        "overloaded_error",
        "Overloaded",
    )


def test_gemini_terminal_only_after_a_finish_reason() -> None:
    parser = GeminiParser()
    parser.parse(ev('{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}'))
    assert parser.end_of_body() == []
    parser.parse(ev('{"candidates":[{"content":{"parts":[]},"finishReason":"STOP"}]}'))
    assert parser.end_of_body() == [Terminal("finishReason+end")]


def test_gemini_blocked_prompt() -> None:
    events = GeminiParser().parse(ev('{"promptFeedback":{"blockReason":"SAFETY"}}'))
    assert DialectWarning("prompt blocked: SAFETY") in events
    assert FinishReason("SAFETY") in events


def test_responses_done_before_the_terminal_is_not_a_terminal() -> None:
    parser = ResponsesParser()
    assert parser.parse(ev("[DONE]")) == [
        DialectWarning("[DONE] arrived before response.completed; not a terminal")
    ]


def test_responses_arguments_by_item_id_when_output_index_is_missing() -> None:
    parser = ResponsesParser()
    added = (
        '{"type":"response.output_item.added","output_index":3,"item":{"type":"function_call",'
        '"id":"fc_9","call_id":"call_9","name":"f","arguments":""}}'
    )
    assert parser.parse(ev(added)) == [ToolCallStarted(3, "call_9", "f")]
    delta = '{"type":"response.function_call_arguments.delta","item_id":"fc_9","delta":"{}"}'
    assert parser.parse(ev(delta)) == [ToolCallDelta(3, None, None, "{}")]


def test_responses_event_name_used_when_type_is_missing() -> None:
    events = ResponsesParser().parse(ev('{"delta":"hi"}', "response.output_text.delta"))
    assert [type(e).__name__ for e in events] == ["TextDelta"]


def test_ollama_string_arguments_pass_through() -> None:
    line = (
        '{"message":{"tool_calls":[{"function":{"name":"f","arguments":"{\\"a\\": 1}"}}]},'
        '"done":false}'
    )
    events = OllamaParser().parse(ev(line))
    assert ToolCallDelta(0, None, "f", '{"a": 1}') in events


def test_dialect_metadata() -> None:
    assert [
        (d, get_dialect(d).framing, get_dialect(d).terminal)
        for d in ("openai", "anthropic", "gemini", "responses", "ollama")
    ] == [
        ("openai", "sse", "[DONE]"),
        ("anthropic", "sse", "message_stop"),
        ("gemini", "sse", "finishReason"),
        ("responses", "sse", "response.completed"),
        ("ollama", "ndjson", "done:true"),
    ]
