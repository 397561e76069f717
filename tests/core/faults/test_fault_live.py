"""LiveFaults: the faults applied read by read, as the tap forwards a live stream, send the
client exactly the bytes apply() makes of the same body — whatever the reads (frames split
across reads, one read, a byte at a time) — end it the same way, and record the same frame and
byte; waits come before the frame they delay."""

from __future__ import annotations

import json

import pytest

from streamscope.core.faults import Playback, Write, apply, parse_fault_spec
from streamscope.core.faults.live import LiveFaults, Send, Stop, Wait

F0 = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'
F1 = b'data: {"choices":[{"delta":{"content":" there"}}]}\n\n'
F2 = b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
F3 = b"data: [DONE]\n\n"
BODY = F0 + F1 + F2 + F3
CTYPE = "text/event-stream"

SPLITS = {
    "recorded": [BODY[:58], BODY[58:157], BODY[157:]],
    "one read": [BODY],
    "bytes": [BODY[i : i + 1] for i in range(len(BODY))],
    "frames": [F0, F1, F2, F3],
}

GEMINI = b"".join(
    b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"
    for obj in [
        {"candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}}]},
        {"candidates": [{"content": {"parts": [{"text": "!"}]}, "finishReason": "STOP"}]},
    ]
)


def live(spec: str, reads: list[bytes], dialect: str = "openai") -> tuple[list[object], LiveFaults]:
    faults = LiveFaults(parse_fault_spec(spec).for_request(1), dialect)
    faults.start(CTYPE)
    steps: list[object] = []
    for i, data in enumerate(reads):
        steps += faults.feed(data, 0.1 * (i + 1))
    steps += faults.finish(9.0)
    return steps, faults


def sent(steps: list[object]) -> bytes:
    return b"".join(s.data for s in steps if isinstance(s, Send))


def ended(steps: list[object]) -> str:
    stops = [s.how for s in steps if isinstance(s, Stop)]
    assert len(stops) <= 1 and (not stops or isinstance(steps[-1], Stop))
    return stops[0] if stops else "upstream's end"


def recorded(spec: str, body: bytes = BODY, dialect: str = "openai") -> Playback:
    playback = Playback(200, (("content-type", CTYPE),), (Write(0.1, body),))
    return apply(parse_fault_spec(spec), playback, dialect, 1)


def place(record: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(f["fault"], f["applied"], f.get("frame"), f.get("byte")) for f in record]


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize(
    ("spec", "end"),
    [
        ("cut@frame:1", "cut"),
        ("cut@frame:3", "cut"),
        ("cut@byte:60", "cut"),
        ("error@frame:2", "close"),
        ("drop-terminal", "close"),
        ("garble@frame:1", "upstream's end"),
        ("garble@frame:2=utf8", "upstream's end"),
        ("stall@frame:2=5", "upstream's end"),
        ("slow=10", "upstream's end"),
        ("merge-reads", "upstream's end"),
        ("split-reads", "upstream's end"),
    ],
)
def test_live_sends_what_apply_makes_of_the_whole_body(split: str, spec: str, end: str) -> None:
    steps, faults = live(spec, SPLITS[split])
    expected = recorded(spec)
    assert sent(steps) == expected.body
    assert ended(steps) == end
    assert place(faults.describe()) == place(expected.describe())


def test_a_stall_waits_once_before_the_frame_and_slow_before_every_frame() -> None:
    steps, faults = live("stall@frame:2=5", SPLITS["frames"])
    assert steps == [Send(F0), Send(F1), Wait(5.0), Send(F2), Send(F3)]
    assert faults.describe()[0]["at"] == 0.3
    steps, _ = live("slow=10", SPLITS["recorded"])
    assert steps == [
        Wait(0.01), Send(F0), Wait(0.01), Send(BODY[48:58]),
        Send(BODY[58:100]), Wait(0.01), Send(F2), Wait(0.01), Send(F3),
    ]  # fmt: skip


def test_split_and_merge_reads_shape_the_writes() -> None:
    steps, _ = live("split-reads", SPLITS["recorded"])
    assert [len(s.data) for s in steps if isinstance(s, Send)] == [1] * len(BODY)
    steps, _ = live("merge-reads", SPLITS["recorded"])
    assert steps == [Send(BODY)]
    steps, _ = live("merge-reads,cut@byte:60", SPLITS["recorded"])
    assert steps == [Send(BODY[:60]), Stop("cut")]


def test_frames_never_reached_say_why_and_the_stream_passes_untouched() -> None:
    steps, faults = live("cut@frame:9,stall@frame:7=1", SPLITS["recorded"])
    assert sent(steps) == BODY and ended(steps) == "upstream's end"
    assert [(f["applied"], f["why"]) for f in faults.describe()] == [
        (False, "the body has 4 frames"),
        (False, "the body has 4 frames"),
    ]


def test_a_cut_frame_the_body_never_finished_is_cut_in_what_came() -> None:
    steps, faults = live("cut@frame:1", [F0, F1[:20]])
    assert steps == [Send(F0), Send(F1[:10]), Stop("cut")]
    assert place(faults.describe()) == [("cut@frame:1", True, 1, 58)]


def test_drop_terminal_on_gemini_drops_from_the_finish_reason_on() -> None:
    first = GEMINI[: GEMINI.index(b"\r\n\r\n") + 4]
    more = GEMINI + b'data: {"usageMetadata": {"totalTokenCount": 3}}\r\n\r\n'
    for body in (GEMINI, more):
        steps, faults = live("drop-terminal", [body[:30], body[30:]], "gemini")
        assert steps == [Send(first), Stop("close")]
        expected = recorded("drop-terminal", body, "gemini")
        assert (expected.body, place(faults.describe())) == (first, place(expected.describe()))
        assert faults.describe()[0]["signal"] == expected.describe()[0]["signal"]


def test_http_replaces_the_response_before_upstream_is_asked() -> None:
    faults = LiveFaults(parse_fault_spec("http=429:retry-after=3,cut@frame:1").for_request(1))
    status, headers, body = faults.replacement("anthropic", 0.001) or (0, (), b"")
    assert (status, dict(headers)["retry-after"]) == (429, "3")
    assert json.loads(body)["error"]["type"] == "rate_limit_error"
    assert [(f["fault"], f["applied"]) for f in faults.describe()] == [
        ("http=429:retry-after=3", True),
        ("cut@frame:1", False),
    ]
    assert (
        LiveFaults(parse_fault_spec("cut@frame:1").for_request(1)).replacement("openai", 0) is None
    )


def test_delay_headers_is_asked_once() -> None:
    faults = LiveFaults(parse_fault_spec("delay-headers=1.5").for_request(1))
    assert (faults.head_delay(0.2), faults.head_delay(0.3)) == (1.5, 0.0)
    assert faults.describe()[0]["at"] == 0.2
