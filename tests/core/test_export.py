"""Exporting conversations as Markdown and JSON, from code and `streamscope export`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamscope.cli import main
from streamscope.core.store.database import Store
from streamscope.core.store.export import conversation_to_json, conversation_to_markdown
from streamscope.core.store.history import ToolResult
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolDefinition


def fill(store: Store) -> int:
    conv = store.create_conversation(
        "Weather test",
        endpoint_name="Built-in demo",
        model="demo-tools",
        tools=[ToolDefinition("get_weather", "Weather by city")],
    )
    store.add_user_message(conv, "What's the weather in Zürich?")
    call = ToolCallState(0, "call_1", "get_weather", '{"city": "Zürich"}', ())
    msg = store.begin_assistant_message(conv)
    store.finish_assistant_message(
        msg,
        Turn(
            text="Let me check.",
            reasoning="The user wants\n\nweather.",
            reasoning_channel="reasoning_content",
            tool_calls=(call,),
            finish_reason="tool_calls",
            outcome=Outcome.COMPLETED,
            reason="[DONE] received",
            output_tokens=7,
        ),
    )
    store.add_tool_results(conv, [ToolResult("call_1", "get_weather", '{"temp": "3 °C"}')])
    first = store.begin_assistant_message(conv)
    store.finish_assistant_message(
        first,
        Turn(
            text="It is 3 °C with ```fences```",
            outcome=Outcome.TRUNCATED,
            reason="connection closed",
        ),
    )
    second = store.begin_assistant_message(conv, alternative_of=first)
    store.finish_assistant_message(
        second, Turn(text="Cold: 3 °C.", outcome=Outcome.COMPLETED, finish_reason="stop")
    )
    return conv


def test_json_export_has_the_documented_shape() -> None:
    with Store() as store:
        conv = store.load_conversation(fill(store))
    data = conversation_to_json(conv)
    assert data["format"] == "streamscope-conversation" and data["version"] == 1
    assert (data["title"], data["endpoint"], data["model"]) == (
        "Weather test",
        "Built-in demo",
        "demo-tools",
    )
    assert data["created"].endswith("+00:00")
    assert data["tools"][0]["name"] == "get_weather"
    roles = [m["role"] for m in data["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "assistant"]
    answer = data["messages"][1]
    assert answer["tool_calls"] == [
        {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Zürich"}'}
    ]
    assert answer["reasoning_channel"] == "reasoning_content"
    assert answer["turn"]["outcome"] == "completed"
    assert answer["turn"]["output_tokens"] == 7
    tool = data["messages"][2]
    assert (tool["tool_call_id"], tool["name"]) == ("call_1", "get_weather")
    alts = data["messages"][3:]
    assert alts[0]["turn"]["alternative_group"] == alts[1]["turn"]["alternative_group"]
    assert [a["turn"]["chosen"] for a in alts] == [False, True]
    json.dumps(data)  # plain JSON types only


def test_markdown_export_reads_like_the_chat() -> None:
    with Store() as store:
        md = conversation_to_markdown(store.load_conversation(fill(store)))
    assert md.startswith("# Weather test\n")
    assert "## You\n\nWhat's the weather in Zürich?" in md
    assert "## Assistant · completed · tool_calls" in md
    assert "<summary>Reasoning (reasoning_content)</summary>" in md
    assert "> The user wants\n>\n> weather." in md
    assert '```json\n{"city": "Zürich"}\n```' in md
    assert "## Tool result · `get_weather`" in md
    assert "Cold: 3 °C." in md
    assert "It is 3 °C" not in md  # the alternative not chosen
    assert "1 other alternative(s) not shown" in md


def _edited(store: Store) -> int:
    """hello → hi; the prompt edited (hello there → hi there), then paged back to it."""
    session = ChatSession(store)
    session.user_sent("hello", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    session.answer_finished(Turn(text="hi", outcome=Outcome.COMPLETED))
    session.edit_last()
    session.user_sent("hello there", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    session.answer_finished(Turn(text="hi there", outcome=Outcome.COMPLETED))
    assert session.conversation_id is not None
    return session.conversation_id


def test_exports_keep_every_branch_and_show_the_chosen_path() -> None:
    with Store() as store:
        conv = store.load_conversation(_edited(store), limit=None)
    data = conversation_to_json(conv)
    assert [(m["seq"], m["text"], m["after"], m["chosen"]) for m in data["messages"]] == [
        (0, "hello", None, False),
        (1, "hi", 0, True),
        (2, "hello there", None, True),  # the edit: beside the first prompt
        (3, "hi there", 2, True),
    ]
    md = conversation_to_markdown(conv)
    assert "## You\n\n_(edited; 1 other version(s) not shown)_\n\nhello there\n" in md
    assert "hi there" in md
    assert "\nhello\n" not in md and "\nhi\n" not in md  # the other branch


def test_cli_export_defaults_to_the_last_conversation_as_markdown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Store() as store:
        first = fill(store)
        other = store.create_conversation("Other")
        store.add_user_message(other, "later message")
    assert main(["export"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Other\n") and "later message" in out
    assert main(["export", "--last", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == other
    assert main(["export", "--conversation", str(first), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "Weather test"


def test_cli_export_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store() as store:
        conv = fill(store)
    target = tmp_path / "out.md"
    assert main(["export", "--conversation", str(conv), "-o", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert target.read_text(encoding="utf-8").startswith("# Weather test")


def test_cli_export_without_conversations_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export"]) == 2
    assert "there is no conversation yet" in capsys.readouterr().err
    with Store() as store:
        fill(store)
    assert main(["export", "--conversation", "999"]) == 2
    assert "no conversation with id 999" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export", "--last", "--conversation", "1"])
    capsys.readouterr()
