"""OpenAI chat parser details beyond the fixtures, incl. the hot path's equivalence."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from streamscope.core.wire.dialects.openai_chat import OpenAIChatParser, content_only
from streamscope.core.wire.events import (
    DialectWarning,
    FinishReason,
    Ignored,
    MalformedFrame,
    MessageStarted,
    ServerError,
    Terminal,
    TextDelta,
    Usage,
)
from streamscope.core.wire.sse import SSEEvent


def _chunk(delta: dict[str, object], finish: str | None = None, **extra: object) -> str:
    obj = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _started() -> OpenAIChatParser:
    parser = OpenAIChatParser()
    parser.parse(SSEEvent("message", _chunk({"role": "assistant", "content": ""})))
    return parser


@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_hot_path_equals_the_full_parse(text: str) -> None:
    for ensure_ascii in (False, True):
        data = json.dumps(
            {
                "id": "x",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": text},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            },
            separators=(",", ":"),
            ensure_ascii=ensure_ascii,
        )
        assert content_only(data) == text
        expected = [TextDelta(text)] if text else [Ignored("empty delta")]
        assert _started().parse(SSEEvent("message", data)) == expected


def test_hot_path_accepts_null_usage_and_obfuscation() -> None:
    assert content_only(_chunk({"content": "a"}, usage=None)) == "a"
    assert content_only(_chunk({"content": "a"}, usage=None, obfuscation="xY3")) == "a"
    assert content_only(_chunk({"content": "a"}, obfuscation="x")) == "a"
    assert content_only(_chunk({"content": "a"}, obfuscation='x"y')) is None


def test_hot_path_declines_anything_else() -> None:
    assert content_only(_chunk({"content": "a"}, "stop")) is None
    assert content_only(_chunk({"content": "a", "reasoning": "b"})) is None
    assert content_only(_chunk({"content": "a"}, usage={"prompt_tokens": 1})) is None
    tricky = _chunk({"content": "a"}).replace('"a"', '"a","x":"b"')
    assert content_only(tricky) is None
    assert content_only(_chunk({"content": "a"}, usage={"n": 1})) is None
    assert content_only(_chunk({"content": "a"}, extra=1)) is None
    assert (
        content_only(_chunk({"content": "a"}).replace('"content":"a"', '"content":"a"  ')) is None
    )


def test_first_chunk_starts_the_message() -> None:
    events = OpenAIChatParser().parse(
        SSEEvent("message", _chunk({"role": "assistant", "content": "Hi"}, model="gpt"))
    )
    assert events == [MessageStarted("c", "gpt"), TextDelta("Hi")]


def test_done_sentinel_and_malformed_data() -> None:
    parser = _started()
    assert parser.parse(SSEEvent("message", " [DONE] ")) == [Terminal("[DONE]")]
    (bad,) = parser.parse(SSEEvent("message", '{"choices": ['))
    assert isinstance(bad, MalformedFrame) and bad.excerpt == '{"choices": ['
    (not_object,) = parser.parse(SSEEvent("message", "[1, 2]"))
    assert isinstance(not_object, MalformedFrame)


def test_in_stream_error_object() -> None:
    (err,) = _started().parse(
        SSEEvent("message", '{"error":{"message":"boom","type":"server_error","code":null}}')
    )
    assert isinstance(err, ServerError)
    assert (err.message, err.code) == ("boom", "server_error")


def test_usage_in_one_empty_choice() -> None:
    data = json.dumps(
        {
            "choices": [{"index": 0, "delta": {}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
    )
    assert _started().parse(SSEEvent("message", data)) == [
        Usage({"prompt_tokens": 3, "completion_tokens": 4}, 3, 4)
    ]


def test_null_finish_after_the_finish_is_ignored_and_a_change_warns() -> None:
    parser = _started()
    assert parser.parse(SSEEvent("message", _chunk({}, "stop"))) == [FinishReason("stop")]
    assert parser.parse(SSEEvent("message", _chunk({}))) == [
        Ignored("chunk without content after the finish")
    ]
    assert parser.parse(SSEEvent("message", _chunk({}, "stop"))) == [
        Ignored("chunk without content after the finish")
    ]
    assert parser.parse(SSEEvent("message", _chunk({}, "length"))) == [
        DialectWarning("finish_reason changed from stop to length"),
        FinishReason("length"),
    ]


def test_more_than_one_choice_warns() -> None:
    data = json.dumps(
        {
            "choices": [
                {"index": 0, "delta": {"content": "a"}},
                {"index": 1, "delta": {"content": "b"}},
            ]
        }
    )
    assert _started().parse(SSEEvent("message", data)) == [
        TextDelta("a"),
        DialectWarning("more than one choice: only the first is shown"),
    ]
