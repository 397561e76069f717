"""Frames whose payload is not JSON at all: the pipeline's first-character check gives each the
event the dialect's parser would (a payload that cannot start JSON is parsed once per first
character, not per frame) — in every dialect, frames kept or not."""

from __future__ import annotations

import pytest

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import FrameKind, ProgressEncoder
from streamscope.core.wire.dialects import dialect_names, get_dialect
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

CHUNK = (
    '{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{"content":"hi"},"logprobs":null,"finish_reason":null}]}'
)
X_REASON = "invalid JSON: unexpected character, expected a JSON value: line 1 column 1 (char 0)"
PAYLOADS = [
    "x", "x", "<html>", "", "x", "\ufeff{}", "é", "  x", "y" * 300, "y" * 300, "y" * 299,
    "x", CHUNK, "x", "nope", "[DONE]", "x", ")", "",
]  # fmt: skip


def _body(dialect: str, payloads: list[str]) -> bytes:
    if get_dialect(dialect).framing == "ndjson":
        return "".join(f"{p}\n" for p in payloads if p.strip()).encode()
    return "".join(f"data: {p}\n\n" for p in payloads).encode()


def _reference(dialect: str, payloads: list[str]) -> list[list[StreamEvent]]:
    """Every payload through one parser of the dialect, as it comes."""
    parser = get_dialect(dialect).new_parser()
    if get_dialect(dialect).framing == "ndjson":
        payloads = [p for p in payloads if p.strip()]
    return [parser.parse(SSEEvent("message", p)) for p in payloads]


@pytest.mark.parametrize("dialect", dialect_names())
@pytest.mark.parametrize("step", [7, 1 << 16])
def test_each_frame_gets_the_events_its_parser_gives(dialect: str, step: int) -> None:
    body = _body(dialect, PAYLOADS)
    expected = _reference(dialect, PAYLOADS)
    for keep in (True, False):
        pipe = StreamPipeline(dialect, keep_frames=keep)
        per_frame: list[list[StreamEvent]] = []
        events: list[StreamEvent] = []
        for i in range(0, len(body), step):
            update = pipe.feed(body[i : i + step], 0.1)
            per_frame += [parsed.events for parsed in update.frames if parsed.frame.event]
            events += update.events
        turn = pipe.close(StreamEnd("eof"), 1.0)
        if keep:
            assert per_frame == expected
        assert events == [e for frame in expected for e in frame]
        malformed = [e for e in events if type(e) is MalformedFrame]
        assert turn.malformed_frames == len(malformed) >= 14
        shown = [w for w in turn.warnings if w.startswith("malformed frame: ")]
        assert shown == list(dict.fromkeys(f"malformed frame: {e.reason}" for e in malformed))


def test_a_million_frames_of_x_are_one_warning() -> None:
    pipe = StreamPipeline("openai", keep_frames=False)
    update = pipe.feed(b"data: x\n\n" * 100_000, 0.1)
    assert len(update.events) == 100_000
    assert update.events[0] == MalformedFrame(X_REASON, "x")
    turn = pipe.close(StreamEnd("eof"), 1.0)
    assert turn.malformed_frames == 100_000
    assert turn.warnings == (f"malformed frame: {X_REASON}",)


def test_the_frames_tab_marks_every_frame_that_is_not_json() -> None:
    body = b"data: x\n\n" * 5 + f"data: {CHUNK}\n\n".encode() + b"data: <p>\n\n" * 2
    pipe = StreamPipeline("openai", keep_frames=True)
    encoder = ProgressEncoder()
    log = FrameLog(0.0, bytearray(body))
    encoder.read(body, 0.1)
    encoder.progressed(pipe.feed(body, 0.1), 0.1)
    log.add(encoder.take())
    assert (
        list(log.kinds) == [FrameKind.MALFORMED] * 5 + [FrameKind.TEXT] + [FrameKind.MALFORMED] * 2
    )
    assert [log.events(row) for row in (0, 4, 6)] == [
        [MalformedFrame(X_REASON, "x")],
        [MalformedFrame(X_REASON, "x")],
        [MalformedFrame(X_REASON, "<p>")],
    ]
    assert log.find_malformed(X_REASON, 5) == 6
