"""Each dialect's injected error frame is what that API sends mid-stream, byte for byte, and
StreamScope's own parser reads it as an in-stream error: a replay of what the client got ends
``error`` (with the dialect named, and with ``auto``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamscope.core.faults import Playback, Write, apply, parse_fault_spec
from streamscope.core.turn.model import turn_to_json
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _frame(text: str) -> bytes:
    return text.encode()


CASES = [
    (
        "openai/plain_text.sse",
        "openai",
        4,
        'data: {"error":{"message":"injected by StreamScope: error@frame:4",'
        '"type":"server_error","param":null,"code":null}}\n\n',
    ),
    (
        "anthropic/plain_text.sse",
        "anthropic",
        3,
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        '"message":"injected by StreamScope: error@frame:3"}}\n\n',
    ),
    (
        "responses/plain_text.sse",
        "responses",
        2,
        'event: error\ndata: {"type":"error","code":"server_error",'
        '"message":"injected by StreamScope: error@frame:2","param":null,"sequence_number":3}\n\n',
    ),
    (
        "gemini/plain_text.sse",
        "gemini",
        1,
        'data: {"error":{"code":500,"message":"injected by StreamScope: error@frame:1",'
        '"status":"INTERNAL"}}\n\n',
    ),
    (
        "gemini/multibyte_crlf.sse",
        "gemini",
        1,
        'data: {"error":{"code":500,"message":"injected by StreamScope: error@frame:1",'
        '"status":"INTERNAL"}}\r\n\r\n',
    ),
    (
        "ollama/plain_text.ndjson",
        "ollama",
        1,
        '{"error":"injected by StreamScope: error@frame:1"}\n',
    ),
]


def _replay(body: bytes, dialect: str, content_type: str) -> dict[str, object]:
    pipe = StreamPipeline(dialect, content_type=content_type)
    pipe.feed(body, 0.1)
    return turn_to_json(pipe.close(StreamEnd("eof", elapsed=0.2), 0.2))


@pytest.mark.parametrize(("fixture", "dialect", "frame", "error"), CASES)
def test_error_frame_is_the_dialect_s_own_and_replays_as_error(
    fixture: str, dialect: str, frame: int, error: str
) -> None:
    path = FIXTURES / fixture
    ctype = "application/x-ndjson" if path.suffix == ".ndjson" else "text/event-stream"
    recorded = Playback(200, (("content-type", ctype),), (Write(0.1, path.read_bytes()),))
    out = apply(parse_fault_spec(f"error@frame:{frame}"), recorded, dialect, 1)
    start = out.describe()[0]["byte"]
    assert out.body == recorded.body[:start] + _frame(error)
    before = _replay(recorded.body[:start], dialect, ctype)
    assert before["outcome"] != "error"
    for name in (dialect, "auto"):
        result = _replay(out.body, name, ctype)
        assert result["outcome"] == "error", (name, result["reason"])
        assert f"injected by StreamScope: error@frame:{frame}" in str(result["reason"])


@pytest.mark.parametrize(
    ("fixture", "dialect", "frame", "byte", "signal"),
    [
        ("openai/plain_text.sse", "openai", 10, 2444, "[DONE]"),
        ("anthropic/plain_text.sse", "anthropic", 8, 994, "message_stop"),
        ("responses/plain_text.sse", "responses", 9, 1786, "response.completed"),
        # Gemini has no sentinel: the chunk with finishReason goes, with any text it carried
        ("gemini/plain_text.sse", "gemini", 2, 331, "finishReason+end"),
        ("gemini/multibyte_crlf.sse", "gemini", 1, 152, "finishReason+end"),
        ("ollama/plain_text.ndjson", "ollama", 3, 379, "done:true"),
    ],
)
def test_drop_terminal_finds_each_dialect_s_terminal_and_replays_truncated(
    fixture: str, dialect: str, frame: int, byte: int, signal: str
) -> None:
    path = FIXTURES / fixture
    ctype = "application/x-ndjson" if path.suffix == ".ndjson" else "text/event-stream"
    recorded = Playback(200, (("content-type", ctype),), (Write(0.1, path.read_bytes()),))
    assert _replay(recorded.body, dialect, ctype)["outcome"] == "completed"
    out = apply(parse_fault_spec("drop-terminal"), recorded, dialect, 1)
    record = out.describe()[0]
    assert (record["frame"], record["byte"], record["signal"]) == (frame, byte, signal)
    assert out.body == recorded.body[:byte]
    assert (out.end, out.end_at) == ("close", 0.1)
    for name in (dialect, "auto"):
        assert _replay(out.body, name, ctype)["outcome"] == "truncated"
