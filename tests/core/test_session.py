"""The session's save clock and what it saves: a fake clock, a fake scheduler, a real SQLite
store — every value pinned."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streamscope.core.redact import Scrubber
from streamscope.core.store.database import Store
from streamscope.core.store.history import ToolResult
from streamscope.core.store.records import StoredMessage
from streamscope.core.store.session import SAVE_INTERVAL, ChatSession, _call_later
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolDefinition

KEY = "sk-session-SECRET-42"


class Timers:
    """A fake clock and scheduler: ``advance(s)`` moves time and fires what is due."""

    def __init__(self) -> None:
        self.now = 100.0
        self.pending: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> object:
        entry = (self.now + delay, callback)
        self.pending.append(entry)
        return _Handle(self, entry)

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = [e for e in self.pending if e[0] <= self.now]
        self.pending = [e for e in self.pending if e[0] > self.now]
        for _at, callback in due:
            callback()


class _Handle:
    def __init__(self, timers: Timers, entry: tuple[float, Callable[[], None]]) -> None:
        self.timers, self.entry = timers, entry

    def cancel(self) -> None:
        if self.entry in self.timers.pending:
            self.timers.pending.remove(self.entry)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "s.db") as db:
        yield db


def _session(store: Store, timers: Timers, interval: float = SAVE_INTERVAL) -> ChatSession:
    session = ChatSession(
        store, save_interval=interval, clock=timers.clock, schedule=timers.schedule
    )
    session.user_sent("hello", endpoint_name="e", model="m")
    return session


def _answer(store: Store, session: ChatSession) -> StoredMessage:
    return store.load_conversation(session.conversation_id or 0).messages[-1]


def test_the_save_interval_is_half_a_second() -> None:
    assert SAVE_INTERVAL == 0.5


def test_a_stream_that_goes_silent_is_saved_by_the_clock(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    timers.advance(0.6)
    assert session.answer_progressed(TurnDelta(text="a")) is True  # the last save is old: now
    assert _answer(store, session).text == "a"
    for i in range(35):  # a burst within the interval, then silence
        timers.advance(0.001)
        assert session.answer_progressed(TurnDelta(text=str(i % 10))) is False
    assert _answer(store, session).text == "a"
    assert len(timers.pending) == 1  # one save scheduled, not one per delta
    assert timers.pending[0][0] == pytest.approx(100.6 + SAVE_INTERVAL)
    timers.advance(0.5)  # nothing more arrives: the clock saves it anyway
    assert _answer(store, session).text == "a" + "".join(str(i % 10) for i in range(35))
    assert timers.pending == []


def test_nothing_new_nothing_saved(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    session.answer_progressed(TurnDelta(text="x"))
    saved: list[str] = []
    original = store.update_assistant_partial
    store.update_assistant_partial = lambda *a, **k: saved.append(a[1]) or original(*a, **k)  # type: ignore[method-assign]
    timers.advance(1.0)
    assert saved == ["x"]
    timers.advance(5.0)
    assert saved == ["x"]  # no timer left behind, no empty saves


def test_reasoning_tool_calls_and_channel_are_saved_partially(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    call = ToolCallState(0, "call_1", "get_weather", '{"city":', position=0)
    timers.advance(1.0)
    session.answer_progressed(
        TurnDelta(text="t", reasoning="r1", reasoning_channel="thinking", tool_calls=(call,))
    )
    answer = _answer(store, session)
    assert (answer.text, answer.reasoning, answer.reasoning_channel) == ("t", "r1", "thinking")
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [
        ("call_1", "get_weather", '{"city":')
    ]
    assert answer.turn is not None and answer.turn.status == "streaming"


def test_what_is_saved_is_scrubbed_and_the_history_is_not(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    session.answer_request(Scrubber([KEY]), None)
    timers.advance(1.0)
    call = ToolCallState(0, "c", "f", f'{{"k":"{KEY}"}}', position=0)
    session.answer_progressed(
        TurnDelta(text=f"key {KEY[:5]}", reasoning=f"r {KEY}", tool_calls=(call,))
    )
    session.answer_progressed(TurnDelta(text=KEY[5:]))  # split across deltas
    timers.advance(1.0)
    stars = "*" * len(KEY)
    saved = _answer(store, session)
    assert (saved.text, saved.reasoning) == (f"key {stars}", f"r {stars}")
    assert saved.tool_calls[0].arguments == f'{{"k":"{stars}"}}'
    turn = Turn(
        text=f"key {KEY}",
        reasoning=f"r {KEY}",
        tool_calls=(call,),
        outcome=Outcome.ERROR,
        reason=f"in-stream error: bad key {KEY}",
        warnings=(f"w {KEY}",),
    )
    assert session.answer_finished(turn) is True  # the saved copy was redacted
    saved = _answer(store, session)
    assert saved.text == f"key {stars}"
    assert saved.turn is not None and saved.turn.reason == f"in-stream error: bad key {stars}"
    assert saved.turn.warnings == (f"w {stars}",)
    answers = [p for kind, p in session.history.entries() if kind == "answers"]
    assert answers[0][0][0].text == f"key {KEY}"  # (memory keeps what came: the context)


def test_a_turn_without_secrets_is_saved_as_is(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    session.answer_request(Scrubber([KEY]), None)
    assert session.answer_finished(Turn(text="fine", outcome=Outcome.COMPLETED)) is False
    assert _answer(store, session).text == "fine"


def test_the_capture_is_linked_when_the_request_starts(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    store.add_capture("cap-1", "cap-1.sscap", 0)
    session.answer_request(Scrubber(), "cap-1")
    answer = _answer(store, session)
    assert answer.turn is not None and answer.turn.capture_id == "cap-1"  # before the end
    assert store.recover_interrupted() == [answer.id]  # (a crash now)
    answer = _answer(store, session)
    assert answer.turn is not None and answer.turn.capture_id == "cap-1"


def test_the_end_cancels_the_pending_save_and_saves_all(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    timers.advance(1.0)
    session.answer_progressed(TurnDelta(text="a"))
    session.answer_progressed(TurnDelta(text="b"))
    assert len(timers.pending) == 1
    store.add_capture("cap-2", "cap-2.sscap", 10)
    session.answer_finished(Turn(text="ab", outcome=Outcome.TRUNCATED, reason="r"), "cap-2")
    assert timers.pending == []
    answer = _answer(store, session)
    assert answer.text == "ab"
    assert answer.turn is not None
    assert (answer.turn.status, answer.turn.outcome, answer.turn.capture_id) == (
        "done", Outcome.TRUNCATED, "cap-2",
    )  # fmt: skip
    timers.advance(1.0)  # a late timer, had it fired, would find no answer
    assert _answer(store, session).text == "ab"


def test_regenerated_answers_are_alternatives_and_the_last_is_chosen(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    for text in ("first", "second"):
        session.answer_started(alternative=text == "second")
        session.answer_finished(Turn(text=text, outcome=Outcome.COMPLETED))
    messages = store.load_conversation(session.conversation_id or 0).messages
    first, second = messages[-2], messages[-1]
    assert first.turn is not None and second.turn is not None
    assert first.turn.alt_group == second.turn.alt_group == first.id
    assert (first.turn.chosen, second.turn.chosen) == (False, True)
    session.choose(0)
    messages = store.load_conversation(session.conversation_id or 0).messages
    assert [m.turn.chosen for m in messages[-2:] if m.turn] == [True, False]


def test_without_a_store_nothing_is_scheduled() -> None:
    timers = Timers()
    session = ChatSession(None, clock=timers.clock, schedule=timers.schedule)
    session.user_sent("hi", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    assert session.answer_progressed(TurnDelta(text="x")) is False
    assert timers.pending == []
    assert session.answer_finished(Turn(text="x", outcome=Outcome.COMPLETED)) is False


# -- the conversation around the answers: what is saved and what opens again ----------------


def test_the_first_message_names_and_creates_the_conversation(store: Store) -> None:
    session = ChatSession(store)
    session.user_sent("  Why is the sky blue?\nmore detail  ", endpoint_name="demo", model="m1")
    summary = store.conversation(session.conversation_id or 0)
    assert summary is not None
    assert (summary.title, summary.endpoint_name, summary.model) == (
        "Why is the sky blue?", "demo", "m1",
    )  # fmt: skip
    assert session.title == "Why is the sky blue?"
    session.user_sent("again", endpoint_name="other", model="m2")  # same conversation
    summary = store.conversation(session.conversation_id or 0)
    assert summary is not None and (summary.endpoint_name, summary.model) == ("other", "m2")
    assert [m.text for m in store.load_messages(session.conversation_id or 0)] == [
        "  Why is the sky blue?\nmore detail  ", "again",
    ]  # fmt: skip
    assert len(store.list_conversations()) == 1


def test_a_long_or_blank_first_message_gives_a_short_title(store: Store) -> None:
    session = ChatSession(store)
    session.user_sent("x" * 100, endpoint_name="e", model="m")
    assert session.title == "x" * 60
    blank = ChatSession(store)
    blank.user_sent("   ", endpoint_name="e", model="m")
    assert blank.title == "Untitled"


def test_tools_and_tool_results_are_kept_and_open_again(store: Store) -> None:
    weather = ToolDefinition("weather", "Weather now", {"type": "object", "properties": {}})
    session = ChatSession(store)
    session.set_tools([weather])  # before the conversation exists: kept in memory
    session.user_sent("weather?", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    call = ToolCallState(0, id="c1", name="weather", arguments='{"c":1}')
    session.answer_finished(Turn(tool_calls=[call], outcome=Outcome.COMPLETED))
    session.tool_results([ToolResult("c1", "weather", "sunny")])
    clock = ToolDefinition("clock")
    session.set_tools([weather, clock])
    reopened = ChatSession.open(store, session.conversation_id or 0)
    assert reopened.tools == (weather, clock)
    assert reopened.title == "weather?"
    assert reopened.has_more is False
    assert [(m.role, m.text) for m in reopened.loaded_messages] == [
        ("user", "weather?"), ("assistant", ""), ("tool", "sunny"),
    ]  # fmt: skip
    context = reopened.history.messages()
    assert [m.role for m in context] == ["user", "assistant", "tool"]
    assert context[1].tool_calls[0].arguments == '{"c":1}'
    assert context[2].tool_call_id == "c1"


def test_an_opened_conversation_knows_its_alternatives_and_captures(store: Store) -> None:
    session = ChatSession(store)
    session.user_sent("hi", endpoint_name="e", model="m")
    store.add_capture("cap-a", "a.sscap", 1)
    for text, capture in (("one", "cap-a"), ("two", None)):
        session.answer_started(alternative=text == "two")
        session.answer_finished(Turn(text=text, outcome=Outcome.COMPLETED), capture)
    reopened = ChatSession.open(store, session.conversation_id or 0)
    assert reopened.capture_ids() == [None, "cap-a", None]
    assert reopened.history.alternatives() == (1, 2)
    reopened.choose(0)  # the first alternative's row becomes the chosen one
    rows = store.load_conversation(session.conversation_id or 0).messages
    assert [m.turn.chosen for m in rows if m.turn] == [True, False]
    reopened.history.regenerate()
    reopened.answer_started(alternative=True)
    reopened.answer_finished(Turn(text="three", outcome=Outcome.COMPLETED))
    rows = store.load_conversation(session.conversation_id or 0).messages
    groups = {m.turn.alt_group for m in rows if m.turn}
    assert len(groups) == 1 and [m.text for m in rows] == ["hi", "one", "two", "three"]


def test_a_conversation_opens_with_its_latest_messages(store: Store) -> None:
    session = ChatSession(store)
    for i in range(3):
        session.user_sent(f"q{i}", endpoint_name="e", model="m")
    reopened = ChatSession.open(store, session.conversation_id or 0, limit=2)
    assert reopened.has_more is True
    assert [m.text for m in reopened.loaded_messages] == ["q1", "q2"]


def _exchange(session: ChatSession, prompt: str, *answers: str) -> None:
    session.user_sent(prompt, endpoint_name="e", model="m")
    for n, text in enumerate(answers):
        session.answer_started(alternative=n > 0)
        session.answer_finished(Turn(text=text, outcome=Outcome.COMPLETED))


def _rows(store: Store, session: ChatSession) -> list[tuple[str, int | None, bool]]:
    """(text, parent's text index, chosen) of every saved message, in order."""
    rows = store.load_conversation(session.conversation_id or 0, limit=None).messages
    index = {m.id: n for n, m in enumerate(rows)}
    return [(m.text, index.get(m.parent_id or -1), m.chosen) for m in rows]


def test_editing_the_last_message_saves_nothing_until_it_is_sent(store: Store) -> None:
    session = ChatSession(store)
    _exchange(session, "first", "a1")
    _exchange(session, "second", "a2", "a2 again")
    before = _rows(store, session)
    assert before == [
        ("first", None, True),
        ("a1", 0, True),
        ("second", 1, True),
        ("a2", 2, False),
        ("a2 again", 2, True),
    ]
    assert session.edit_last() == "second"
    assert _rows(store, session) == before  # the database is untouched while editing
    session.cancel_edit()
    assert _rows(store, session) == before
    assert [m.text for m in session.history.messages()] == ["first", "a1", "second", "a2 again"]
    # leaving mid-edit (another conversation, a crash, quitting) loses nothing
    assert session.edit_last() == "second"
    reopened = ChatSession.open(store, session.conversation_id or 0)
    assert not reopened.history.editing
    assert [m.text for m in reopened.history.messages()] == ["first", "a1", "second", "a2 again"]
    assert reopened.history.alternatives() == (1, 2)


def test_a_sent_edit_branches_beside_the_prompt_it_edits(store: Store) -> None:
    session = ChatSession(store)
    _exchange(session, "first", "a1")
    _exchange(session, "second", "a2", "a2 again")
    session.edit_last()
    _exchange(session, "second, edited", "b1")
    assert _rows(store, session) == [
        ("first", None, True),
        ("a1", 0, True),
        ("second", 1, False),  # the earlier version and its answers stay, not shown
        ("a2", 2, False),
        ("a2 again", 2, True),
        ("second, edited", 1, True),  # beside it: after the same answer
        ("b1", 5, True),
    ]
    assert [m.text for m in session.history.messages()] == ["first", "a1", "second, edited", "b1"]
    # the new answer's alternatives are its own
    session.answer_started(alternative=True)
    session.answer_finished(Turn(text="b2", outcome=Outcome.COMPLETED))
    rows = store.load_conversation(session.conversation_id or 0).messages
    b1, b2 = rows[-2], rows[-1]
    assert b1.turn is not None and b2.turn is not None
    assert b1.turn.alt_group == b2.turn.alt_group == b1.id
    a2 = rows[3]
    assert a2.turn is not None and a2.turn.alt_group == a2.id  # (a2's group is untouched)
    # it opens again as it was left; paging back to the first version is saved too
    reopened = ChatSession.open(store, session.conversation_id or 0)
    entries = reopened.history.path_entries()
    assert [(e.kind, e.chosen, e.count) for e in entries] == [
        ("user", 0, 1), ("answers", 0, 1), ("user", 1, 2), ("answers", 1, 2),
    ]  # fmt: skip
    reopened.choose_at(2, 0)
    again = ChatSession.open(store, session.conversation_id or 0)
    assert [m.text for m in again.history.messages()] == ["first", "a1", "second", "a2 again"]
    # and going on from the first version continues its branch
    again.user_sent("third", endpoint_name="e", model="m")
    rows = store.load_conversation(session.conversation_id or 0, limit=None).messages
    third = rows[-1]
    assert third.text == "third" and third.parent_id == rows[4].id  # after "a2 again"


def test_editing_the_first_message_branches_at_the_root(store: Store) -> None:
    session = ChatSession(store)
    _exchange(session, "hello", "hi")
    session.edit_last()
    _exchange(session, "hello there", "hi there")
    assert _rows(store, session) == [
        ("hello", None, False),
        ("hi", 0, True),
        ("hello there", None, True),
        ("hi there", 2, True),
    ]
    reopened = ChatSession.open(store, session.conversation_id or 0)
    assert [(e.kind, e.chosen, e.count) for e in reopened.history.path_entries()] == [
        ("user", 1, 2), ("answers", 0, 1),
    ]  # fmt: skip


def test_a_long_conversation_opens_its_path_tail_with_the_branches_there(store: Store) -> None:
    session = ChatSession(store)
    for i in range(5):
        _exchange(session, f"q{i}", f"a{i}")
    session.edit_last()
    _exchange(session, "q4, edited", "a4'")
    reopened = ChatSession.open(store, session.conversation_id or 0, limit=3)
    assert reopened.has_more is True
    # the path's last 3 messages (a3, q4', a4') and the branch beside them (q4, a4)
    assert sorted(m.text for m in reopened.loaded_messages) == [
        "a3",
        "a4",
        "a4'",
        "q4",
        "q4, edited",
    ]
    assert [m.text for m in reopened.history.messages()] == ["a3", "q4, edited", "a4'"]
    reopened.edit_last()  # an edit here still finds its parent (a3), which is loaded
    reopened.user_sent("q4, third", endpoint_name="e", model="m")
    rows = store.load_conversation(session.conversation_id or 0, limit=None).messages
    assert rows[-1].parent_id == next(m.id for m in rows if m.text == "a3")
    window = ChatSession.open(store, session.conversation_id or 0, limit=1)
    # (the path's last message with its alternatives: the pager needs them)
    assert [m.text for m in window.loaded_messages] == [
        "q4", "a4", "q4, edited", "a4'", "q4, third",
    ]  # fmt: skip
    assert [m.text for m in window.history.messages()] == ["q4, third"]
    window.edit_last()  # the first message of the window: its parent is not loaded
    window.user_sent("q4, fourth", endpoint_name="e", model="m")
    rows = store.load_conversation(session.conversation_id or 0, limit=None).messages
    assert rows[-1].parent_id == next(m.id for m in rows if m.text == "a3")


# -- the edges of the save clock and the alternatives --------------------------------------


def _count_saves(store: Store) -> list[tuple[str, str]]:
    saved: list[tuple[str, str]] = []
    original = store.update_assistant_partial

    def spy(message_id: int, text: str, reasoning: str, *rest: object) -> None:
        saved.append((text, reasoning))
        original(message_id, text, reasoning, *rest)  # type: ignore[arg-type]

    store.update_assistant_partial = spy  # type: ignore[method-assign]
    return saved


def test_a_fresh_session_is_empty() -> None:
    session = ChatSession()
    assert (session.title, session.has_more, session.conversation_id) == ("", False, None)
    assert (session.loaded_messages, session.capture_ids(), session.tools) == ([], [], ())
    assert session.answer_progressed(TurnDelta(text="x")) is False  # nothing started
    assert session.answer_finished(Turn(text="x", outcome=Outcome.COMPLETED)) is False


def test_a_save_exactly_one_interval_later_is_now(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    timers.now += SAVE_INTERVAL  # (no timer fires: time only moves)
    assert session.answer_progressed(TurnDelta(text="a")) is True
    assert _answer(store, session).text == "a"


def test_the_clock_saves_every_silence_and_only_what_is_new(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    saves = _count_saves(store)
    session.answer_progressed(TurnDelta(text="a", reasoning="r1"))
    timers.advance(0.6)  # the timer saves at 100.5
    assert saves == [("a", "r1")]
    session.answer_progressed(TurnDelta(text="b", reasoning="r2"))  # a new timer: 101.0
    timers.advance(0.6)
    assert saves == [("a", "r1"), ("ab", "r1r2")]
    timers.advance(0.6)  # nothing new, no timer: nothing saved
    assert saves == [("a", "r1"), ("ab", "r1r2")]
    session.answer_progressed(TurnDelta(text="c"))  # the last save is old: now
    session.answer_progressed(TurnDelta(text="d"))  # within the interval: a timer again
    timers.advance(0.6)
    assert saves[2:] == [("abc", "r1r2"), ("abcd", "r1r2")]
    timers.advance(5.0)
    assert len(saves) == 4 and timers.pending == []


def test_the_scrubber_given_at_the_start_masks_partial_saves(store: Store) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False, scrubber=Scrubber([KEY]))
    timers.advance(1.0)
    session.answer_progressed(TurnDelta(text=KEY))
    assert _answer(store, session).text == "*" * len(KEY)


def test_an_answer_without_a_conversation_row_is_never_saved(store: Store) -> None:
    timers = Timers()
    session = ChatSession(store, clock=timers.clock, schedule=timers.schedule)
    session.set_tools([ToolDefinition("f")])  # no conversation yet: nothing written
    session.tool_results([ToolResult("c", "f", "r")])
    session.answer_started(alternative=False)
    session.answer_request(Scrubber(), "cap-x")
    timers.advance(1.0)
    assert session.answer_progressed(TurnDelta(text="x")) is False
    assert timers.pending == []
    assert session.answer_finished(Turn(text="x", outcome=Outcome.COMPLETED)) is False
    assert store.list_conversations() == []


def test_without_a_store_requests_and_choices_stay_in_memory() -> None:
    session = ChatSession()
    session.user_sent("q", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    session.answer_request(Scrubber([KEY]), "cap-1")
    session.answer_finished(Turn(text="one", outcome=Outcome.COMPLETED))
    session.history.regenerate()
    session.answer_started(alternative=True)
    session.answer_finished(Turn(text="two", outcome=Outcome.COMPLETED))
    assert session.choose(0).text == "one"
    assert session.history.alternatives() == (0, 2)


def test_tools_chosen_before_the_first_message_are_saved_with_it(store: Store) -> None:
    session = ChatSession(store)
    session.set_tools([ToolDefinition("clock")])
    session.user_sent("time?", endpoint_name="e", model="m")
    assert ChatSession.open(store, session.conversation_id or 0).tools == (ToolDefinition("clock"),)


def test_alternatives_are_per_step_in_the_session_and_after_opening(store: Store) -> None:
    session = ChatSession(store)

    def rows() -> list[tuple[str, bool]]:
        messages = store.load_conversation(session.conversation_id or 0).messages
        return [(m.text, m.turn.chosen) for m in messages if m.turn]

    session.user_sent("q1", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    session.answer_finished(Turn(text="a1", outcome=Outcome.COMPLETED))
    session.user_sent("q2", endpoint_name="e", model="m")
    session.answer_started(alternative=False)  # a new step, not an alternative of a1
    session.answer_finished(Turn(text="b1", outcome=Outcome.COMPLETED))
    session.history.regenerate()
    session.answer_started(alternative=True)
    session.answer_finished(Turn(text="b2", outcome=Outcome.COMPLETED))
    assert session.choose(0).text == "b1"
    assert rows() == [("a1", True), ("b1", True), ("b2", False)]
    assert session.choose(1).text == "b2"
    assert rows() == [("a1", True), ("b1", False), ("b2", True)]
    reopened = ChatSession.open(store, session.conversation_id or 0)
    assert reopened.choose(0).text == "b1"
    assert rows() == [("a1", True), ("b1", True), ("b2", False)]


def test_a_conversation_opens_whole_or_with_its_latest_messages(store: Store) -> None:
    session = ChatSession(store)
    for i in range(201):
        session.user_sent(f"q{i}", endpoint_name="e", model="m")
    whole = ChatSession.open(store, session.conversation_id or 0)  # (the window's way)
    assert whole.has_more is False
    assert [m.text for m in whole.loaded_messages] == [f"q{i}" for i in range(201)]
    assert len(whole.history) == 201
    latest = ChatSession.open(store, session.conversation_id or 0, limit=200)
    assert latest.has_more is True
    assert len(latest.loaded_messages) == 200
    assert latest.loaded_messages[0].text == "q1"


def test_a_save_made_before_the_timer_fires_leaves_the_timer_nothing_to_save(
    store: Store,
) -> None:
    timers = Timers()
    session = _session(store, timers)
    session.answer_started(alternative=False)
    saves = _count_saves(store)
    assert session.answer_progressed(TurnDelta(text="a")) is False  # a timer for 100.5
    timers.now += SAVE_INTERVAL  # (time moves, the timer has not fired yet)
    assert session.answer_progressed(TurnDelta(text="b")) is True  # saved now
    timers.advance(0.0)  # the timer fires: nothing new since
    assert saves == [("ab", "")]


def test_editing_the_last_of_three_messages_removes_nothing_until_sent(store: Store) -> None:
    session = ChatSession(store)
    for i in range(3):
        session.user_sent(f"q{i}", endpoint_name="e", model="m")
        session.answer_started(alternative=False)
        session.answer_finished(Turn(text=f"a{i}", outcome=Outcome.COMPLETED))
    conv = session.conversation_id or 0
    assert session.edit_last() == "q2"
    texts = ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert [m.text for m in store.load_messages(conv)] == texts
    session.cancel_edit()
    assert [m.text for m in store.load_messages(conv)] == texts


def test_editing_finds_the_last_message_behind_a_hundred_answers(store: Store) -> None:
    session = ChatSession(store)
    session.user_sent("q", endpoint_name="e", model="m")
    for i in range(101):  # an answer regenerated 100 times: 101 rows after the question
        session.answer_started(alternative=i > 0)
        session.answer_finished(Turn(text=f"a{i}", outcome=Outcome.COMPLETED))
    assert session.edit_last() == "q"
    assert len(store.load_messages(session.conversation_id or 0, limit=None)) == 102  # (none gone)


def test_the_real_scheduler_uses_the_running_loop_or_none() -> None:
    assert _call_later(0.0, lambda: None) is None  # no loop (a script)
    fired: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        before = loop.time()
        handle = _call_later(0.05, lambda: fired.append("saved"))
        after = loop.time()
        assert isinstance(handle, asyncio.TimerHandle)
        assert before + 0.05 <= handle.when() <= after + 0.05
        await asyncio.sleep(0.5)

    asyncio.run(main())
    assert fired == ["saved"]
