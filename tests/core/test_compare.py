"""Comparing two turns: captures of the demo's scenarios, word diffs, JSON diffs, frames."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from streamscope.core.capture.compare import (
    Comparison,
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
from streamscope.core.net.client import StreamClient, StreamTimeouts
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
