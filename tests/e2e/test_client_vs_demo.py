"""The app's own client against the demo endpoint over a real loopback socket:
every scenario, in every dialect it applies to, ends with the outcome the table promises."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Conversation, Message, ToolCall
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.dialects import (
    dialects_for,
    expected_finish_reason,
    expected_outcome,
    finish_reason,
)
from streamscope.demo.scenarios import SCENARIOS
from streamscope.demo.server import DemoServer

CASES = [
    (name, dialect)
    for name, scenario in SCENARIOS.items()
    for dialect in sorted(dialects_for(scenario))
]


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=200) as server:
        yield server


def run(
    demo: DemoServer,
    model: str,
    dialect: str,
    prompt: str = "Hello there",
    conv: Conversation | None = None,
) -> Turn:
    conv = conv or Conversation(messages=[Message("user", prompt)], max_tokens=None)
    if model == "demo-firehose":
        conv = Conversation(messages=[Message("user", prompt)], max_tokens=2000)
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key="sk-demo"
    )

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(
                spec, dialect=dialect, timeouts=StreamTimeouts(first_byte=10, idle=1.0)
            )
        finally:
            await client.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize(("model", "dialect"), CASES, ids=[f"{m}-{d}" for m, d in CASES])
def test_every_scenario_gets_the_promised_outcome(
    demo: DemoServer, model: str, dialect: str
) -> None:
    scenario = SCENARIOS[model]
    turn = run(demo, model, dialect)
    assert turn.outcome is Outcome(expected_outcome(scenario, dialect)), turn.reason
    assert turn.reason
    assert turn.finish_reason == expected_finish_reason(scenario, dialect)
    # a length stop, whatever the dialect calls it, is flagged (amber in the window)
    assert turn.stopped_at_limit is (model == "demo-length")
    if model == "demo-firehose":
        assert len(turn.text.split()) == 2000  # N = max_tokens deltas, none lost
    elif turn.outcome is Outcome.COMPLETED and scenario.content != "tools":
        assert "Hello there" in turn.text
    if scenario.content == "tools":
        names = sorted(call.name or "" for call in turn.tool_calls)
        assert names == ["get_time", "get_weather"]
        for call in turn.tool_calls:
            json.loads(call.arguments)  # fragments reassembled byte-exact
        weather = next(c for c in turn.tool_calls if c.name == "get_weather")
        assert json.loads(weather.arguments)["city"] == "Zürich"
    if model == "demo-reasoning":
        assert turn.reasoning and turn.reasoning_channel
    if model in ("demo-error-429",):
        assert "429" in turn.reason and "retry after 20 s" in turn.reason
    if model == "demo-html-502":
        assert "502" in turn.reason and "HTML" in turn.reason
    if scenario.expected_outcome == "truncated" and model != "demo-no-done":
        assert turn.text  # the partial answer is kept


@pytest.mark.parametrize("dialect", sorted(dialects_for(SCENARIOS["demo-tools"])))
def test_demo_tools_answers_the_results_with_a_final_text(demo: DemoServer, dialect: str) -> None:
    """A whole tool round trip: the calls, the results sent as the app's dialect sends them,
    then a short final answer that ends the turn normally."""
    first = run(demo, "demo-tools", dialect, "Weather and time in Zürich?")
    assert len(first.tool_calls) == 2
    calls = [ToolCall(c.id, c.name or "", c.arguments) for c in first.tool_calls]
    results = {"get_weather": '{"temp_c": 14, "sky": "light rain"}', "get_time": "15:42"}
    conv = Conversation(
        messages=[
            Message("user", "Weather and time in Zürich?"),
            Message("assistant", first.text, tool_calls=calls),
            *(Message("tool", results[c.name], tool_call_id=c.id, name=c.name) for c in calls),
        ]
    )
    turn = run(demo, "demo-tools", dialect, conv=conv)
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert turn.finish_reason == finish_reason(dialect, "stop")
    assert not turn.tool_calls
    gemini_weather = '{"temp_c": 14, "sky": "light rain"}'  # (an object there: re-serialised)
    assert turn.text == (
        "Thanks — 2 tool results arrived:\n\n"
        f"- **get_weather**: {gemini_weather}\n"
        "- **get_time**: 15:42\n"
        "\nThat completes the round trip: tool calls, your results, this answer."
    )
