"""Comparing two turns: captures of the demo's scenarios, word diffs, JSON diffs, frames."""

from __future__ import annotations

import asyncio
import difflib
import random
from collections.abc import Iterator

import orjson
import pytest

from streamscope.core.capture import text_diff as text_diff_module
from streamscope.core.capture.compare import (
    Comparison,
    TurnSide,
    align_frames,
    compare_turns,
    gap_stats,
    json_diff,
    load_side,
    word_diff,
)
from streamscope.core.capture.format import Capture
from streamscope.core.capture.frames_export import FrameRecord
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.capture.text_diff import text_diff
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.turn.model import Turn
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=200) as server:
        yield server


def record(demo: DemoServer, model: str, dialect: str = "openai", text: str = "Hi") -> Capture:
    conv = Conversation(messages=[Message("user", text)])
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key="sk-compare-0000000"
    )
    recorder = CaptureRecorder(dialect)

    async def main() -> None:
        client = StreamClient()
        try:
            await client.run_turn(
                spec, dialect=dialect, timeouts=StreamTimeouts(idle=5), observer=recorder
            )
        finally:
            await client.aclose()

    asyncio.run(main())
    return recorder.capture


def compare(a: Capture, b: Capture) -> Comparison:
    async def main() -> Comparison:
        return compare_turns(await load_side(a, "A"), await load_side(b, "B"))

    return asyncio.run(main())


def test_two_captures_of_the_same_scenario_do_not_differ(demo: DemoServer) -> None:
    result = compare(record(demo, "demo"), record(demo, "demo"))
    assert result.differences() == []
    assert result.text_identical
    rows = align_frames(result.a.frames, result.b.frames)
    assert all(r.a is not None and r.b is not None and r.a.event == r.b.event for r in rows)
    timing = {m.name for m in result.metrics if m.timing}
    assert {"TTFT", "tokens/s", "gap p95"} <= timing
    assert len(result.a.frames) == len(result.b.frames) > 5


def test_demo_against_demo_length_shows_finish_reason_and_text(demo: DemoServer) -> None:
    result = compare(record(demo, "demo"), record(demo, "demo-length"))
    diffs = result.differences()
    assert "finish reason: stop → length" in diffs
    assert any(d.startswith("text: ") and "differ" in d for d in diffs)
    assert not result.text_identical
    ops = result.text_ops
    assert "".join(op.a for op in ops) == result.a.turn.text
    assert "".join(op.b for op in ops) == result.b.turn.text


def test_demo_tools_twice_has_identical_tool_calls(demo: DemoServer) -> None:
    result = compare(record(demo, "demo-tools"), record(demo, "demo-tools"))
    assert len(result.tool_calls) == 2
    assert all(c.identical and c.structural for c in result.tool_calls)
    assert result.differences() == []


def test_tool_calls_are_compared_structurally(demo: DemoServer) -> None:
    a = record(demo, "demo-tools")
    b = record(demo, "demo-tools", dialect="anthropic")  # same calls, another wire shape
    result = compare(a, b)
    assert [(c.name_a, c.name_b) for c in result.tool_calls] == [
        (c.name_a, c.name_a) for c in result.tool_calls
    ]
    assert all(not c.changes for c in result.tool_calls)


def test_word_diff_and_json_diff() -> None:
    ops = word_diff("the quick brown fox", "the slow brown fox jumps")
    assert [(op.tag, op.a.strip(), op.b.strip()) for op in ops if op.tag != "equal"] == [
        ("replace", "quick", "slow"),
        ("insert", "", "jumps"),
    ]
    changes = json_diff(
        {"city": "Zürich", "days": [1, 2], "unit": "C"},
        {"days": [1, 3, 4], "city": "Zürich", "lang": "de"},
    )
    assert [c.describe() for c in changes] == [
        "$.days[1]: 2 → 3",
        "$.days[2]: added 4",
        '$.unit: removed "C"',
        '$.lang: added "de"',
    ]
    assert json_diff({"a": 1}, {"a": 1.0}) == json_diff({"a": 1}, {"a": 1.0})  # int vs float
    assert json_diff({"a": 1}, {"a": 1.0})[0].kind == "changed"


def test_frames_align_by_index_and_by_time() -> None:
    a = [FrameRecord(0.10, "message", "x"), FrameRecord(0.20, "message", "y")]
    b = [FrameRecord(0.101, "message", "x"), FrameRecord(0.15, "message", "z"),
         FrameRecord(0.202, "message", "y")]  # fmt: skip
    by_index = align_frames(a, b)
    assert [(r.ia, r.ib, r.same) for r in by_index] == [
        (0, 0, True), (1, 1, False), (None, 2, False)
    ]  # fmt: skip
    by_time = align_frames(a, b, by="time")
    assert [(r.ia, r.ib, r.same) for r in by_time] == [
        (0, 0, True), (None, 1, False), (1, 2, True)
    ]  # fmt: skip
    stats = gap_stats(b)
    assert stats.count == 2 and stats.max == pytest.approx(0.052)


def long_text(n: int, changed_every: int = 0, seed: int = 7, line: int = 40) -> str:
    """``n`` words of a small vocabulary (so common words repeat, as in prose), a paragraph
    break every ``line`` words; every ``changed_every``-th word replaced by ``CHANGED``."""
    rng = random.Random(seed)
    vocab = ["the", "a", "of", "and", "to", "in", *(f"w{i}" for i in range(2000))]
    out = []
    for i in range(n):
        word = rng.choice(vocab)
        if changed_every and i % changed_every == 5:
            word = "CHANGED"
        out.append(word + ("\n\n" if i % line == line - 1 else " "))
    return "".join(out)


def test_a_changed_stretch_keeps_the_whole_words_at_its_ends() -> None:
    # tokens are words with their trailing space: "fox" and "fox " differ, yet fox is kept
    assert [(op.tag, op.a, op.b) for op in text_diff("a fox", "a fox jumps").ops] == [
        ("equal", "a fox", "a fox"),
        ("insert", "", " jumps"),
    ]
    assert [(op.tag, op.a, op.b) for op in text_diff("x final word.", "x final").ops] == [
        ("equal", "x final", "x final"),
        ("delete", " word.", ""),
    ]
    assert [op.tag for op in text_diff("a quick", "a quack").ops] == ["equal", "replace"]
    assert text_diff("", "").ops == () and text_diff("same", "same").unit == "word"


def test_a_10000_word_answer_is_diffed_word_by_word() -> None:
    a, b = long_text(10_000), long_text(10_000, changed_every=100)
    diff = text_diff(a, b)
    assert diff.unit == "word" and not diff.coarsened
    assert "".join(op.a for op in diff.ops) == a and "".join(op.b for op in diff.ops) == b
    changed = [op for op in diff.ops if op.tag != "equal"]
    assert len(changed) == 100
    assert all(op.b.strip() == "CHANGED" and op.a.strip() for op in changed)


def test_the_word_diff_work_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """difflib never sees more than MAX_TOKENS items a side, with autojunk on."""
    seen: list[tuple[int, int, bool]] = []
    real = difflib.SequenceMatcher

    class Spy(real):  # type: ignore[misc,valid-type]
        def __init__(self, isjunk: None, a: list[str], b: list[str], autojunk: bool = True):
            seen.append((len(a), len(b), autojunk))
            super().__init__(isjunk, a, b, autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", Spy)
    monkeypatch.setattr(text_diff_module, "MAX_TOKENS", 2_000)
    a, b = long_text(30_000, seed=1), long_text(30_000, seed=2)  # differ from end to end
    diff = text_diff(a, b)
    assert seen and all(max(na, nb) <= 2_000 and junk for na, nb, junk in seen)
    assert diff.coarsened and diff.unit == "line"
    assert "".join(op.a for op in diff.ops) == a and "".join(op.b for op in diff.ops) == b
    seen.clear()
    a, b = long_text(30_000, seed=1, line=5), long_text(30_000, seed=2, line=5)
    diff = text_diff(a, b)  # 12,000 lines a side: not even the lines are compared
    assert diff.unit == "text" and seen == []
    assert [op.tag for op in diff.ops] == ["replace", "equal"]  # (both end with "\n\n")


def test_a_coarsened_diff_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_diff_module, "MAX_TOKENS", 30)  # < a 40-word paragraph
    turn_a, turn_b = Turn(text=long_text(400, seed=1)), Turn(text=long_text(400, seed=2))
    result = compare_turns(TurnSide("A", turn_a), TurnSide("B", turn_b))
    assert result.text.coarsened
    text_line = next(d for d in result.differences() if d.startswith("text: "))
    assert text_line.endswith("differ (compared line by line: too long to compare word by word)")


def _chat_capture(run_id: str, created: int, fingerprint: str = "fp_1") -> Capture:
    """An OpenAI chat stream whose chunks carry ``id``, ``created`` and a tool call id."""
    from streamscope.core.capture.format import CaptureEnd, CaptureResponse, ReadLog

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        obj = {
            "id": run_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": "m",
            "system_fingerprint": fingerprint,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    frames = [
        chunk({"role": "assistant", "content": "Hello"}),
        chunk({"content": " world"}),
        chunk({"tool_calls": [{"index": 0, "id": f"call_{run_id}", "type": "function",
                               "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]  # fmt: skip
    reads = ReadLog()
    for i, frame in enumerate(frames):
        reads.append(0.01 * (i + 1), frame)
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", None, response, reads, CaptureEnd("eof", elapsed=0.1))


def test_ids_and_timestamps_can_be_ignored() -> None:
    from streamscope.core.capture.compare import compare_captures, volatile_key

    a = _chat_capture("chatcmpl-AAA", 1_700_000_000)
    b = _chat_capture("chatcmpl-BBB", 1_700_000_042)
    same = compare_captures(a, b, ignore_volatile=True)
    assert same.differences() == [] and same.changed_frames == 0
    assert all(row.same for row in same.frame_rows()[:4])
    strict = compare_captures(a, b, ignore_volatile=False)
    assert strict.differences() == ["frames: 4 of 5 differ in content"]
    assert [row.same for row in strict.frame_rows()] == [False, False, False, False, True]
    # what is not an id or a time still counts
    other = compare_captures(a, _chat_capture("x", 1, fingerprint="fp_2"), ignore_volatile=True)
    assert other.differences() == ["frames: 4 of 5 differ in content (ids and timestamps aside)"]
    ignored = ["id", "created", "created_at", "tool_call_id", "responseId", "createTime",
               "eval_duration", "timestamp"]  # fmt: skip
    kept = ["index", "model", "system_fingerprint", "identity", "content", "finish_reason"]
    assert [k for k in ignored + kept if volatile_key(k)] == ignored
