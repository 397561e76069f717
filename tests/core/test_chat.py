from __future__ import annotations

import pytest

from streamscope.core.store.history import ChatHistory, ToolResult
from streamscope.core.turn.model import ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome


def turn(text: str, outcome: Outcome = Outcome.COMPLETED, **kw: object) -> Turn:
    return Turn(text=text, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_context_keeps_partial_answers_and_skips_empty_errors() -> None:
    h = ChatHistory()
    h.add_user("one")
    h.add_answer(turn("partial", Outcome.TRUNCATED))
    h.add_user("two")
    h.add_answer(turn("", Outcome.ERROR))
    h.add_user("three")
    msgs = h.messages()
    assert [(m.role, m.text) for m in msgs] == [
        ("user", "one"),
        ("assistant", "partial"),
        ("user", "two"),
        ("user", "three"),
    ]


def test_regenerate_keeps_alternatives_and_choose_switches() -> None:
    h = ChatHistory()
    h.add_user("hi")
    h.add_answer(turn("first"))
    assert h.regenerate() == "hi"
    assert [m.text for m in h.messages()] == ["hi"]  # the old answer is not context
    h.add_answer(turn("second"))
    assert h.alternatives() == (1, 2)
    assert [m.text for m in h.messages()] == ["hi", "second"]
    assert h.choose(0).text == "first"
    assert [m.text for m in h.messages()] == ["hi", "first"]
    with pytest.raises(IndexError):
        h.choose(5)


def test_tool_calls_and_results_continue_the_conversation() -> None:
    call = ToolCallState(0, "call_1", "get_weather", '{"city":"Zürich"}', ())
    h = ChatHistory()
    h.add_user("weather?")
    h.add_answer(turn("", tool_calls=(call,), finish_reason="tool_calls"))
    h.add_tool_results([ToolResult("call_1", "get_weather", '{"temp": 21}')])
    conv = h.conversation(system="be brief", max_tokens=50)
    roles = [m.role for m in conv.messages]
    assert roles == ["user", "assistant", "tool"]
    assert conv.messages[1].tool_calls[0].arguments == '{"city":"Zürich"}'
    assert conv.messages[2].tool_call_id == "call_1"
    assert conv.system == "be brief" and conv.max_tokens == 50


def test_edit_last_user_message_drops_what_followed() -> None:
    h = ChatHistory()
    h.add_user("a")
    h.add_answer(turn("A"))
    h.add_user("b")
    h.add_answer(turn("B"))
    assert h.edit_last_user() == "b"
    assert [m.text for m in h.messages()] == ["a", "A"]
    with pytest.raises(ValueError):
        ChatHistory().regenerate()
