"""Every per-dialect fact, asked of the five built-ins through the Dialect protocol: the
registry, auth headers, the models API, recognition, raw request bodies, frame summaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import streamscope.demo.dialects as demo_dialects
from streamscope.core.capture.format import Capture, CaptureResponse
from streamscope.core.net.raw_request import user_text
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import (
    Evidence,
    detect_dialect,
    dialect_names,
    dialects,
    fallback_for_framing,
    get_dialect,
    register,
    resolve,
)
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    KeepAlive,
    MalformedFrame,
    MessageStarted,
    ReasoningDelta,
    ServerError,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallDone,
    ToolCallStarted,
    Usage,
)
from streamscope.core.wire.ndjson import NDJSONDecoder
from streamscope.core.wire.sse import SSEDecoder, SSEEvent
from streamscope.core.wire.summary import clip, quote, summarize_events

BUILTINS = ("openai", "anthropic", "gemini", "responses", "ollama")
FIXTURES = Path(__file__).parent / "fixtures"

# -- the registry ----------------------------------------------------------------------------


def test_the_registry_lists_the_builtins_in_the_ui_order() -> None:
    assert dialect_names() == BUILTINS
    assert dialect_names(with_auto=True) == (*BUILTINS, "auto")
    assert [d.name for d in dialects()] == list(BUILTINS)
    assert {get_dialect(n).framing for n in BUILTINS} == {"sse", "ndjson"}
    assert get_dialect("ollama").framing == "ndjson"


def test_labels_are_for_people() -> None:
    assert [get_dialect(n).label for n in BUILTINS] == [
        "OpenAI chat completions",
        "Anthropic messages",
        "Google Gemini",
        "OpenAI Responses",
        "Ollama native chat (NDJSON)",
    ]


def test_a_name_is_registered_once_and_auto_is_not_a_dialect() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(get_dialect("openai"))
    with pytest.raises(KeyError, match="unknown dialect 'auto'"):
        get_dialect("auto")


def test_auto_falls_back_by_framing() -> None:
    assert fallback_for_framing("sse").name == "openai"
    assert fallback_for_framing("ndjson").name == "ollama"
    assert resolve("auto").name == "openai"
    assert resolve("gemini").name == "gemini"


def test_every_builtin_is_served_by_the_demo() -> None:
    # the demo's own list (it is an independent oracle and never imports core's dialects)
    served = {d.name for d in demo_dialects.demo_dialects()}
    assert {get_dialect(n).demo_name for n in BUILTINS} <= served
    assert all(get_dialect(n).demo_name is not None for n in BUILTINS)


# -- auth headers and the models API ---------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "with_key"),
    [
        ("openai", {"Authorization": "Bearer k"}),
        ("anthropic", {"anthropic-version": "2023-06-01", "x-api-key": "k"}),
        ("gemini", {"x-goog-api-key": "k"}),
        ("responses", {"Authorization": "Bearer k"}),
        ("ollama", {"Authorization": "Bearer k"}),
    ],
)
def test_auth_headers_are_used_by_the_request_too(name: str, with_key: dict[str, str]) -> None:
    dialect = get_dialect(name)
    assert dialect.auth_headers("k") == with_key
    without = {"anthropic-version": "2023-06-01"} if name == "anthropic" else {}
    assert dialect.auth_headers(None) == without
    spec = dialect.build_request(
        Conversation([Message("user", "hi")]), base_url="https://h/v1", model="m", api_key="k"
    )
    assert with_key.items() <= spec.headers.items()


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("openai", "https://h/v1/models"),
        ("anthropic", "https://h/v1/models?limit=1000"),
        ("gemini", "https://h/v1/models?pageSize=1000"),
        ("responses", "https://h/v1/models"),
        ("ollama", "https://h/v1/api/tags"),
    ],
)
def test_models_url(name: str, url: str) -> None:
    assert get_dialect(name).models_url("https://h/v1/") == url


@pytest.mark.parametrize(
    ("name", "doc", "names"),
    [
        ("openai", {"object": "list", "data": [{"id": "gpt-4o"}, {"id": "o3"}]}, ["gpt-4o", "o3"]),
        (
            "anthropic",
            {"data": [{"id": "claude-x", "type": "model"}], "has_more": False},
            ["claude-x"],
        ),
        (
            "gemini",
            {
                "models": [
                    {
                        "name": "models/gemini-2.5-pro",
                        "supportedGenerationMethods": ["generateContent"],
                    },
                    {
                        "name": "models/text-embedding-004",
                        "supportedGenerationMethods": ["embedContent"],
                    },
                    {"name": "models/gemini-2.5-flash"},
                ]
            },
            ["gemini-2.5-pro", "gemini-2.5-flash"],
        ),
        ("responses", {"data": [{"id": "gpt-4.1"}, {"id": "gpt-4.1"}]}, ["gpt-4.1"]),
        (
            "ollama",
            {"models": [{"name": "llama3.2:latest"}, {"model": "qwen3:8b"}]},
            ["llama3.2:latest", "qwen3:8b"],
        ),
    ],
)
def test_parse_models(name: str, doc: Any, names: list[str]) -> None:
    assert get_dialect(name).parse_models(doc) == names
    assert get_dialect(name).parse_models(["not", "an", "object"]) == []


# -- raw request bodies ------------------------------------------------------------------------

BODIES: dict[str, dict[str, Any]] = {
    "openai": {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "openai question"},
        ]
    },
    "anthropic": {
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "anthropic "}, {"type": "image"}]}
        ],
    },
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "gemini question"}]}]},
    "responses": {
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "responses question"}]},
            {"type": "function_call_output", "call_id": "c", "output": "{}"},
        ]
    },
    "ollama": {"messages": [{"role": "user", "content": "ollama question", "images": []}]},
}
WANT = {
    "openai": "openai question",
    "anthropic": "anthropic ",
    "gemini": "gemini question",
    "responses": "responses question",
    "ollama": "ollama question",
}


@pytest.mark.parametrize("name", BUILTINS)
def test_user_text_of_each_shape(name: str) -> None:
    assert get_dialect(name).user_text(BODIES[name]) == WANT[name]
    assert user_text(BODIES[name]) == WANT[name]  # raw mode: whichever dialect reads it


def test_user_text_reads_only_its_own_shape() -> None:
    assert get_dialect("gemini").user_text(BODIES["openai"]) is None
    assert get_dialect("responses").user_text({"input": "plain"}) == "plain"
    assert get_dialect("openai").user_text(BODIES["responses"]) is None
    assert user_text({"prompt": "x"}) is None


def test_each_dialects_own_request_is_read_back() -> None:
    conv = Conversation([Message("user", "Grüezi")], system="Be brief.")
    for d in dialects():
        body = d.build_request(conv, base_url="https://h/v1", model="m").json
        assert d.user_text(body) == "Grüezi", d.name


# -- recognition (auto) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "data", "name", "evidence"),
    [
        (
            "message",
            '{"object":"chat.completion.chunk","choices":[]}',
            "openai",
            Evidence.TYPE_FIELD,
        ),
        ("message", '{"id":"x","choices":[{"delta":{}}]}', "openai", Evidence.SHAPE),
        ("message_start", '{"type":"message_start"}', "anthropic", Evidence.EVENT_NAME),
        ("message", '{"type":"content_block_delta"}', "anthropic", Evidence.TYPE_FIELD),
        ("message", '{"candidates":[]}', "gemini", Evidence.SHAPE),
        ("message", '{"usageMetadata":{}}', "gemini", Evidence.SHAPE),
        ("response.created", "{}", "responses", Evidence.EVENT_NAME),
        ("message", '{"type":"response.output_text.delta"}', "responses", Evidence.TYPE_FIELD),
        ("message", '{"model":"m","done":false,"message":{}}', "ollama", Evidence.SHAPE),
    ],
)
def test_recognize(event: str, data: str, name: str, evidence: Evidence) -> None:
    ev = SSEEvent(event, data)
    claims = {d.name: d.recognize(None, ev) for d in dialects()}
    assert claims[name] == evidence
    assert {n for n, e in claims.items() if e >= evidence} == {name}
    assert detect_dialect(None, [ev]) == name


def test_an_event_name_beats_a_type_field_and_a_type_field_beats_a_shape() -> None:
    # Anthropic's event name wins over a Responses-looking type field; a type wins over
    # OpenAI's "choices" shape
    assert detect_dialect(None, [SSEEvent("ping", '{"type":"response.x"}')]) == "anthropic"
    assert detect_dialect(None, [SSEEvent("message", '{"type":"ping","choices":[]}')]) == (
        "anthropic"
    )


def test_nothing_decides_an_error_or_done_and_the_next_event_is_asked() -> None:
    error = SSEEvent("message", '{"error":{"message":"boom"}}')
    assert detect_dialect(None, [error]) is None
    assert detect_dialect(None, [SSEEvent("message", "[DONE]")]) is None
    assert detect_dialect(None, [error, SSEEvent("message", '{"candidates":[]}')]) == "gemini"
    assert detect_dialect("application/x-ndjson", []) == "ollama"  # its only NDJSON dialect
    assert detect_dialect("text/event-stream", []) is None


FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in {".sse", ".ndjson"})


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recorded_stream_is_recognized_from_its_first_event(path: Path) -> None:
    decoder = SSEDecoder() if path.suffix == ".sse" else NDJSONDecoder()
    events = decoder.feed(path.read_bytes()) + decoder.close()
    assert detect_dialect(None, events[:1]) == path.parent.name


# -- capture metadata --------------------------------------------------------------------------


def test_capture_framing_comes_from_the_dialect_and_the_content_type() -> None:
    assert [Capture(n).framing() for n in (*BUILTINS, "auto", "gone")] == [
        "sse",
        "sse",
        "sse",
        "sse",
        "ndjson",
        "sse",
        "sse",
    ]
    ndjson = CaptureResponse(200, [("Content-Type", "application/x-ndjson")])
    assert Capture("auto", response=ndjson).framing() == "ndjson"


# -- frame summaries -------------------------------------------------------------------------


def _summaries(name: str, frames: list[tuple[str, str]]) -> list[str]:
    dialect = get_dialect(name)
    parser = dialect.new_parser()
    return [dialect.summarize(parser.parse(SSEEvent(event, data))) for event, data in frames]


def test_openai_summaries() -> None:
    assert _summaries(
        "openai",
        [
            ("message", '{"id":"c1","model":"gpt-4o","choices":[{"delta":{"role":"assistant"}}]}'),
            ("message", '{"choices":[{"delta":{"reasoning_content":"Hmm"}}]}'),
            ("message", '{"choices":[{"delta":{"content":"Hel"}}]}'),
            (
                "message",
                '{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1",'
                '"function":{"name":"get_weather","arguments":""}}]}}]}',
            ),
            (
                "message",
                '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci"}}]}}]}',
            ),
            ("message", '{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}'),
            ("message", '{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":40}}'),
            ("message", '{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}'),
            ("message", "[1, 2]"),
            ("message", "[DONE]"),
        ],
    ) == [
        "message_start c1 gpt-4o",
        'reasoning_content "Hmm"',
        'text "Hel"',
        "tool_calls[0] get_weather call_1",
        'tool_calls[0].arguments +"{\\"ci"',
        "finish_reason=tool_calls",
        "usage in=12 out=40",
        'error rate_limit_exceeded: "Rate limit reached"',
        "malformed: expected a JSON object",
        "[DONE]",
    ]


def test_anthropic_summaries() -> None:
    assert _summaries(
        "anthropic",
        [
            (
                "message_start",
                '{"type":"message_start","message":{"id":"msg_1","model":"claude",'
                '"usage":{"input_tokens":25,"output_tokens":1}}}',
            ),
            ("ping", '{"type":"ping"}'),
            (
                "content_block_start",
                '{"type":"content_block_start","index":1,"content_block":'
                '{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}',
            ),
            (
                "content_block_delta",
                '{"type":"content_block_delta","index":1,"delta":'
                '{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Z"}}',
            ),
            ("content_block_stop", '{"type":"content_block_stop","index":1}'),
            ("content_block_stop", '{"type":"content_block_stop","index":0}'),
            (
                "content_block_delta",
                '{"type":"content_block_delta","index":2,"delta":'
                '{"type":"thinking_delta","thinking":"Let me"}}',
            ),
            (
                "message_delta",
                '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":89}}',
            ),
            (
                "error",
                '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            ),
            ("message_stop", '{"type":"message_stop"}'),
        ],
    ) == [
        "message_start msg_1 claude · usage in=25 out=1",
        "ping",
        "tool_use[1] start get_weather toolu_1",
        'tool_use[1].input +"{\\"city\\": \\"Z"',
        "tool_use[1] done",
        "content_block_stop",
        'thinking "Let me"',
        "stop_reason=tool_use · usage out=89",
        'error overloaded_error: "Overloaded"',
        "message_stop",
    ]


def test_gemini_summaries_put_the_payload_first() -> None:
    assert _summaries(
        "gemini",
        [
            (
                "message",
                '{"candidates":[{"content":{"parts":[{"text":"Thinking…","thought":true}]}}],'
                '"responseId":"r1","modelVersion":"gemini-2.5-flash"}',
            ),
            (
                "message",
                '{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_time","args":{}}}]},'
                '"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":12}}',
            ),
        ],
    ) == [
        'thought "Thinking…" · message_start r1 gemini-2.5-flash',
        'functionCall[0] get_time +"{}" · functionCall[0] done · finishReason=STOP'
        " · usage in=8 out=12",
    ]


def test_responses_summaries() -> None:
    assert _summaries(
        "responses",
        [
            ("response.in_progress", '{"type":"response.in_progress"}'),
            (
                "response.output_item.added",
                '{"type":"response.output_item.added","output_index":1,"item":'
                '{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}',
            ),
            (
                "response.function_call_arguments.delta",
                '{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\\"a"}',
            ),
            (
                "response.reasoning_summary_text.delta",
                '{"type":"response.reasoning_summary_text.delta","delta":"**Plan**"}',
            ),
            (
                "response.completed",
                '{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4}}}',
            ),
        ],
    ) == [
        "response.in_progress",
        "output[1] start f call_1",
        'output[1].arguments +"{\\"a"',
        'summary "**Plan**"',
        "usage in=3 out=4 · finish_reason=completed · response.completed",
    ]


def test_ollama_summaries() -> None:
    assert _summaries(
        "ollama",
        [
            (
                "message",
                '{"model":"llama3.2","message":{"role":"assistant","content":"Hi\\n"},"done":false}',
            ),
            ("message", '{"model":"llama3.2","message":{"thinking":"hmm"},"done":false}'),
            (
                "message",
                '{"model":"llama3.2","message":{"content":""},"done":true,"done_reason":"stop",'
                '"prompt_eval_count":26,"eval_count":12}',
            ),
            ("message", '{"error":"model not found"}'),
        ],
    ) == [
        'text "Hi\\n" · message_start llama3.2',
        'thinking "hmm"',
        "done_reason=stop · usage in=26 out=12 · done:true",
        'error: "model not found"',
    ]


def test_the_summary_formatter_clips_and_quotes() -> None:
    long = "x" * 100
    assert clip(long) == "x" * 59 + "…"
    assert quote('say "hi"\n') == '"say \\"hi\\"\\n"'
    assert quote("Zürich") == '"Zürich"'
    assert summarize_events([TextDelta(long)]) == f'text "{"x" * 59}…"'
    assert summarize_events([]) == ""
    assert (
        summarize_events(
            [
                MessageStarted(None, None),
                Usage({}, None, None),
                FinishReason("length"),
                TextDelta("a"),
                ReasoningDelta("b", "reasoning"),
                ToolCallStarted(None, None, "f"),
                ToolCallDelta(None, None, None, "{"),
                ToolCallDone(2, '{"x":1}'),
                ServerError("boom"),
                MalformedFrame("expected a JSON object", ""),
                KeepAlive("keepalive"),
                Ignored("content_block_stop"),
                DialectWarning("more than one choice"),
                Terminal("done:true"),
            ]
        )
        == 'text "a" · reasoning "b" · tool_calls[?] start f · tool_calls[?].arguments +"{"'
        ' · tool_calls[2] done "{\\"x\\":1}" · usage'
        " · finish_reason=length"
        ' · error: "boom" · malformed: expected a JSON object · keepalive · content_block_stop'
        " · warning: more than one choice · done:true"
    )
