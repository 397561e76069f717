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


def _texts(h: ChatHistory) -> list[str]:
    return [m.text for m in h.messages()]


def test_editing_changes_nothing_until_the_edit_is_sent() -> None:
    h = ChatHistory()
    h.add_user("a")
    h.add_answer(turn("A"))
    h.add_user("b")
    h.add_answer(turn("B"))
    assert h.begin_edit() == "b"
    assert h.editing and h.editing_depth() == 2
    assert _texts(h) == ["a", "A", "b", "B"]  # everything is still there (and in context)
    h.cancel_edit()
    assert not h.editing and h.editing_depth() is None
    assert _texts(h) == ["a", "A", "b", "B"]
    with pytest.raises(ValueError):
        ChatHistory().regenerate()
    with pytest.raises(ValueError):
        ChatHistory().begin_edit()


def test_a_sent_edit_is_an_alternative_prompt_that_keeps_the_old_branch() -> None:
    h = ChatHistory()
    h.add_user("a")
    h.add_answer(turn("A"))
    h.add_user("b")
    h.add_answer(turn("B1"))
    h.regenerate()
    h.add_answer(turn("B2"))
    h.begin_edit()
    h.add_user("b, edited")
    assert not h.editing
    assert _texts(h) == ["a", "A", "b, edited"]  # the old prompt's answers are not context
    h.add_answer(turn("C"))
    entries = h.path_entries()
    assert [(e.kind, e.chosen, e.count) for e in entries] == [
        ("user", 0, 1),
        ("answers", 0, 1),
        ("user", 1, 2),  # the edited prompt is version 2 of 2
        ("answers", 0, 1),
    ]
    assert h.alternatives() == (0, 1)
    # paging back to the first version brings back its branch, alternatives and all
    h.choose_at(2, 0)
    assert _texts(h) == ["a", "A", "b", "B2"]
    assert h.alternatives() == (1, 2)
    assert [t.text for t in h.path_entries()[3].answers] == ["B1", "B2"]
    # editing the first version again makes a third version, beside both
    assert h.begin_edit() == "b"
    h.add_user("b, third")
    assert [(e.kind, e.chosen, e.count) for e in h.path_entries()] == [
        ("user", 0, 1),
        ("answers", 0, 1),
        ("user", 2, 3),
    ]
    assert len(h) == 3
    with pytest.raises(IndexError):
        h.choose_at(2, 3)
    with pytest.raises(IndexError):
        h.choose_at(7, 0)


def test_paging_ends_an_edit_and_an_edit_ends_a_regenerate() -> None:
    h = ChatHistory()
    h.add_user("a")
    h.add_answer(turn("A"))
    h.regenerate()
    h.begin_edit()
    assert not h.regenerating  # (the next answer is not an alternative of A)
    h.choose_at(0, 0)
    assert not h.editing
    h.add_user("b")  # not beside "a": after A
    assert _texts(h) == ["a", "A", "b"]


def test_unanswered_tool_calls_are_counted_on_the_path() -> None:
    calls = (
        ToolCallState(0, "c1", "get_weather", "{}", ()),
        ToolCallState(1, "c2", "get_time", "{}", ()),
    )
    h = ChatHistory()
    h.add_user("weather?")
    h.add_answer(turn("", tool_calls=calls, finish_reason="tool_calls"))
    assert h.unanswered() == 2
    waiting = h.path_entries()[1]
    assert (waiting.unanswered, waiting.followed, waiting.results) == (2, False, ())
    h.add_tool_results([ToolResult("c2", "get_time", "09:41")])
    partly = h.path_entries()[1]
    assert (partly.unanswered, partly.followed) == (1, False)
    assert [r.text for r in partly.results] == ["09:41"]
    h.add_user("never mind")
    skipped = h.path_entries()[1]
    assert (skipped.unanswered, skipped.followed) == (1, True)
    assert h.unanswered() == 0  # the last message is the user's
