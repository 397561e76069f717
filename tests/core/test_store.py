"""The conversations database: schema migrations, the window's calls, crash recovery."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.paths import data_dir
from streamscope.core.store.database import (
    INTERRUPTED_REASON,
    Store,
    to_chat_history,
    turn_from_stored,
)
from streamscope.core.store.history import ToolResult
from streamscope.core.store.schema import SCHEMA_VERSION, SchemaTooNewError, schema_version
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import Timings, ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolCall, ToolDefinition
from streamscope.demo.server import DemoServer


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "test.db", clock=FakeClock())
    yield s
    s.close()


def finished_turn(text: str = "Hello!", **kw: object) -> Turn:
    defaults: dict[str, object] = {
        "text": text,
        "reasoning": "thinking…",
        "reasoning_channel": "reasoning_content",
        "tool_calls": (ToolCallState(0, "call_1", "get_weather", '{"city": "Zürich"}', ()),),
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 3, "completion_tokens": 5},
        "input_tokens": 3,
        "output_tokens": 5,
        "timings": Timings(10.0, 10.1, 10.2, 10.3, 11.0, 11.5),
        "warnings": ("malformed frame: x",),
        "outcome": Outcome.COMPLETED,
        "reason": "[DONE] received (finish_reason=stop)",
        "status": 200,
        "events": 12,
        "bytes_received": 2048,
        "terminal_signal": "[DONE]",
    }
    defaults.update(kw)
    return Turn(**defaults)  # type: ignore[arg-type]


def test_default_path_is_in_the_data_dir_and_uses_wal() -> None:
    with Store() as s:
        assert s.path == data_dir() / "streamscope.db"
        assert Path(s.path).exists()
        mode = s._db.execute("PRAGMA journal_mode").fetchone()[0]
        fks = s._db.execute("PRAGMA foreign_keys").fetchone()[0]
    assert (mode, fks) == ("wal", 1)


def test_a_full_conversation_round_trips(store: Store) -> None:
    tools = [ToolDefinition("get_weather", "Weather", {"type": "object", "properties": {}})]
    conv = store.create_conversation(
        "Weather", endpoint_name="Built-in demo", model="m", tools=tools
    )
    store.add_user_message(conv, "What's the weather in Zürich?")
    msg = store.begin_assistant_message(conv)
    store.update_assistant_partial(msg, "Hel", "thin")
    turn = finished_turn()
    store.add_capture("cap-1", "cap-1.sscap", 100)
    store.finish_assistant_message(msg, turn, "cap-1")
    store.add_tool_results(conv, [ToolResult("call_1", "get_weather", '{"temp": 3}')])

    loaded = store.load_conversation(conv)
    assert loaded.title == "Weather"
    assert loaded.summary.endpoint_name == "Built-in demo"
    assert loaded.tools == tuple(tools)
    assert [m.role for m in loaded.messages] == ["user", "assistant", "tool"]
    assert [m.seq for m in loaded.messages] == [0, 1, 2]
    user, answer, tool = loaded.messages
    assert user.turn is None and user.text == "What's the weather in Zürich?"
    assert answer.text == "Hello!" and answer.reasoning == "thinking…"
    assert answer.tool_calls == (ToolCall("call_1", "get_weather", '{"city": "Zürich"}'),)
    st = answer.turn
    assert st is not None
    assert (st.status, st.outcome, st.finish_reason) == ("done", Outcome.COMPLETED, "stop")
    assert st.usage == {"prompt_tokens": 3, "completion_tokens": 5}
    assert st.timings == turn.timings and st.warnings == turn.warnings
    assert st.capture_id == "cap-1"
    assert (tool.tool_call_id, tool.name, tool.text) == ("call_1", "get_weather", '{"temp": 3}')

    back = turn_from_stored(answer)
    assert (back.text, back.outcome, back.reason, back.output_tokens, back.status) == (
        "Hello!",
        Outcome.COMPLETED,
        turn.reason,
        5,
        200,
    )
    assert back.summary() == turn.summary()


def test_list_search_rename_delete_restore_purge(store: Store) -> None:
    a = store.create_conversation("Alpha")
    b = store.create_conversation("Beta")
    store.add_user_message(a, "tell me about 100% pure_tea")
    assert [c.id for c in store.list_conversations()] == [a, b]  # a updated last
    assert [c.id for c in store.list_conversations("BETA")] == [b]  # title, ASCII-insensitive
    assert [c.id for c in store.list_conversations("100% pure_")] == [a]  # message text, escaped
    assert store.list_conversations("100%% pure") == []
    assert [c.id for c in store.list_conversations(limit=1, offset=1)] == [b]

    store.rename(b, "Gamma")
    assert store.most_recent_conversation() is not None
    assert store.most_recent_conversation().title == "Gamma"  # type: ignore[union-attr]

    store.delete(b)
    assert [c.id for c in store.list_conversations()] == [a]
    with pytest.raises(KeyError):
        store.load_conversation(b)
    store.restore(b)
    assert {c.id for c in store.list_conversations()} == {a, b}

    msg = store.begin_assistant_message(a)
    store.add_capture("cap-a", "cap-a.sscap", 10)
    store.finish_assistant_message(msg, finished_turn(), "cap-a")
    store.delete(a)
    assert store.purge_deleted(older_than=3600) == []  # too recent
    assert store.purge_deleted() == ["cap-a"]
    assert store.capture_path("cap-a") is None
    assert store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    assert [c.id for c in store.list_conversations()] == [b]


def test_long_histories_page_backwards(store: Store) -> None:
    conv = store.create_conversation("Long")
    for i in range(25):
        store.add_user_message(conv, f"message {i}")
    loaded = store.load_conversation(conv, limit=10)
    assert loaded.has_more
    assert [m.text for m in loaded.messages] == [f"message {i}" for i in range(15, 25)]
    older = store.load_messages(conv, before_seq=loaded.messages[0].seq, limit=10)
    assert [m.seq for m in older] == list(range(5, 15))
    oldest = store.load_messages(conv, before_seq=5, limit=10)
    assert [m.seq for m in oldest] == list(range(5))
    assert not store.load_conversation(conv, limit=25).has_more


def test_alternatives_are_kept_and_rebuild_the_chat_history(store: Store) -> None:
    conv = store.create_conversation("Alts")
    store.add_user_message(conv, "Hi")
    first = store.begin_assistant_message(conv)
    store.finish_assistant_message(first, finished_turn("one", tool_calls=()))
    second = store.begin_assistant_message(conv, alternative_of=first)
    store.finish_assistant_message(second, finished_turn("two", tool_calls=()))
    third = store.begin_assistant_message(conv, alternative_of=second)
    store.finish_assistant_message(third, finished_turn("three", tool_calls=()))
    msgs = store.load_conversation(conv).messages
    turns = [m.turn for m in msgs[1:]]
    assert all(t is not None and t.alt_group == first for t in turns)
    assert [t.chosen for t in turns if t is not None] == [False, False, True]

    store.choose_alternative(second)
    msgs = store.load_conversation(conv).messages
    history = to_chat_history(msgs)
    assert history.alternatives() == (1, 3)
    assert [m.text for m in history.messages()] == ["Hi", "two"]

    user = msgs[0].id
    assert [m.parent_id for m in msgs] == [None, user, user, user]  # alternatives: one parent
    assert [m.chosen for m in msgs] == [True, False, True, False]
    assert not hasattr(store, "delete_messages_from")  # nothing takes messages away


def test_recover_interrupted_marks_streaming_turns_truncated_with_their_text(
    store: Store,
) -> None:
    conv = store.create_conversation("Crash")
    store.add_user_message(conv, "Hi")
    msg = store.begin_assistant_message(conv)
    store.update_assistant_partial(
        msg, "partial answ", "", [ToolCall("c1", "f", '{"a"')], reasoning_channel=None
    )
    done = store.begin_assistant_message(conv)
    store.finish_assistant_message(done, finished_turn())
    assert store.recover_interrupted() == [msg]
    assert store.recover_interrupted() == []
    m = store.load_conversation(conv).messages[1]
    assert m.text == "partial answ"
    assert m.tool_calls == (ToolCall("c1", "f", '{"a"'),)
    assert m.turn is not None
    assert (m.turn.status, m.turn.outcome, m.turn.reason) == (
        "done",
        Outcome.TRUNCATED,
        INTERRUPTED_REASON,
    )
    assert turn_from_stored(m).summary() == f"Truncated · {INTERRUPTED_REASON}"


def test_removing_a_capture_keeps_the_turn(store: Store) -> None:
    conv = store.create_conversation()
    msg = store.begin_assistant_message(conv)
    store.add_capture("c", "c.sscap", 5)
    store.finish_assistant_message(msg, finished_turn(), "c")
    store.remove_capture("c")
    m = store.load_conversation(conv).messages[0]
    assert m.turn is not None and m.turn.capture_id is None
    assert m.text == "Hello!" and m.turn.outcome is Outcome.COMPLETED


def test_the_store_can_be_shared_with_an_executor_thread(store: Store) -> None:
    conv = store.create_conversation()
    msg = store.begin_assistant_message(conv)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(50):
                store.update_assistant_partial(msg, "x" * i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(20):
        store.add_user_message(conv, str(i))
    for t in threads:
        t.join()
    assert not errors


# -- migrations ------------------------------------------------------------------------

V1_BY_HAND = """
CREATE TABLE schema_version (version INTEGER NOT NULL, applied REAL);
INSERT INTO schema_version VALUES (1, 0);
CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '',
    endpoint_name TEXT, model TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE messages (id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL DEFAULT '',
    reasoning TEXT NOT NULL DEFAULT '', reasoning_channel TEXT,
    tool_calls TEXT NOT NULL DEFAULT '[]', tool_call_id TEXT, name TEXT,
    created REAL NOT NULL, UNIQUE (conversation_id, seq));
CREATE TABLE captures (id TEXT PRIMARY KEY, size INTEGER NOT NULL, path TEXT NOT NULL,
    created REAL NOT NULL);
CREATE TABLE turns (message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('streaming', 'done')), outcome TEXT,
    reason TEXT NOT NULL DEFAULT '', finish_reason TEXT, usage TEXT, timings TEXT,
    warnings TEXT NOT NULL DEFAULT '[]',
    capture_id TEXT REFERENCES captures(id) ON DELETE SET NULL);
INSERT INTO conversations VALUES (1, 'Old chat', 'OpenAI', 'gpt-x', 100, 200);
INSERT INTO messages VALUES (1, 1, 0, 'user', 'hello', '', NULL, '[]', NULL, NULL, 100);
INSERT INTO messages VALUES (2, 1, 1, 'assistant', 'hi there', 'hmm', 'reasoning', '[]',
    NULL, NULL, 101);
INSERT INTO captures VALUES ('cap', 10, 'cap.sscap', 101);
INSERT INTO turns VALUES (2, 'done', 'completed', '[DONE] received', 'stop',
    '{"total_tokens": 9}', NULL, '[]', 'cap');
INSERT INTO messages VALUES (3, 1, 2, 'assistant', 'half', '', NULL, '[]', NULL, NULL, 102);
INSERT INTO turns VALUES (3, 'streaming', NULL, '', NULL, NULL, NULL, '[]', NULL);
"""


def test_a_version_1_database_migrates_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    db.executescript(V1_BY_HAND)
    db.commit()
    db.close()

    with Store(path) as store:
        assert schema_version(store._db) == SCHEMA_VERSION
        conv = store.load_conversation(1)
        assert (conv.title, conv.summary.model, conv.tools) == ("Old chat", "gpt-x", ())
        user, answer, _half = conv.messages
        assert (user.text, answer.text, answer.reasoning) == ("hello", "hi there", "hmm")
        assert answer.turn is not None
        assert answer.turn.outcome is Outcome.COMPLETED
        assert answer.turn.usage == {"total_tokens": 9}
        assert answer.turn.capture_id == "cap"
        assert answer.turn.alt_group == 2 and answer.turn.chosen
        assert store.recover_interrupted() == [3]
        store.delete(1)  # a v2 feature works on migrated data
        store.restore(1)
    with Store(path) as again:  # reopening does not migrate twice
        assert schema_version(again._db) == SCHEMA_VERSION
        messages = again.load_conversation(1).messages
        assert [(m.id, m.parent_id, m.chosen) for m in messages] == [
            (1, None, True), (2, 1, True), (3, 2, True),
        ]  # fmt: skip
        versions = [r[0] for r in again._db.execute("SELECT version FROM schema_version")]
        assert versions == [1, 2, 3, 4, 5, 6]


V2_PROFILE = Path(__file__).parent / "fixtures" / "store" / "v2-profile.db"
"""A profile database the schema-2 store wrote (tests/core/fixtures/store): conversation 1
regenerated its first answer twice and chose the middle one, then went on; 2 answered two
tool calls; 3 left them unanswered and went on; 4 was killed mid-stream; 5 is deleted."""


def test_a_version_2_profile_opens_as_a_tree_with_nothing_lost(tmp_path: Path) -> None:
    path = tmp_path / "streamscope.db"
    path.write_bytes(V2_PROFILE.read_bytes())
    with Store(path) as store:
        assert schema_version(store._db) == SCHEMA_VERSION == 6
        assert [c.title for c in store.list_conversations()] == [
            "Killed", "Unanswered", "Tools", "Regenerated",
        ]  # fmt: skip
        regenerated = store.load_conversation(1, limit=None).messages
        assert [(m.id, m.parent_id, m.chosen, m.text) for m in regenerated] == [
            (1, None, True, "What is SSE?"),
            (2, 1, False, "answer one"),
            (3, 1, True, "answer two"),
            (4, 1, False, "answer three"),
            (5, 3, True, "And NDJSON?"),  # after the chosen alternative
            (6, 5, True, "NDJSON is lines"),
        ]
        assert [m.turn.alt_group for m in regenerated if m.turn] == [2, 2, 2, 6]
        assert store.path_ids(1) == [1, 3, 5, 6]
        tools = store.load_conversation(2, limit=None).messages
        assert [(m.id, m.parent_id) for m in tools] == [
            (7, None), (8, 7), (9, 8), (10, 9), (11, 10),
        ]  # fmt: skip
        assert store.path_ids(3) == [12, 13, 14, 15]
        assert store.recover_interrupted() == [17]
        assert store.load_conversation(4).messages[1].text == "partial ans"
        with pytest.raises(KeyError):
            store.load_conversation(5)  # still deleted, still restorable
        store.restore(5)
        assert [m.text for m in store.load_conversation(5).messages] == ["bye"]

        session = ChatSession.open(store, 1)
        assert [m.text for m in session.history.messages()] == [
            "What is SSE?", "answer two", "And NDJSON?", "NDJSON is lines",
        ]  # fmt: skip
        session.choose_at(1, 2)  # page the old regenerated answers: the branch follows
        assert [m.text for m in session.history.messages()] == ["What is SSE?", "answer three"]
        session.choose_at(1, 1)
        assert session.edit_last() == "And NDJSON?"  # edit and branch on migrated rows
        session.user_sent("And JSON lines?", endpoint_name="e", model="m")
        rows = store.load_conversation(1, limit=None).messages
        assert (rows[-1].text, rows[-1].parent_id, rows[-1].chosen) == ("And JSON lines?", 3, True)
        assert [m.chosen for m in rows if m.id == 5] == [False]

        unanswered = ChatSession.open(store, 3).history.path_entries()[1]
        assert (unanswered.unanswered, unanswered.followed) == (2, True)
    assert V2_PROFILE.read_bytes() != path.read_bytes()  # (the copy was migrated, not the file)


V2_BY_HAND = """
CREATE TABLE schema_version (version INTEGER NOT NULL, applied REAL);
INSERT INTO schema_version VALUES (1, 0);
INSERT INTO schema_version VALUES (2, 0);
CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '',
    endpoint_name TEXT, model TEXT, created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE messages (id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL, role TEXT NOT NULL, text TEXT NOT NULL DEFAULT '',
    reasoning TEXT NOT NULL DEFAULT '', reasoning_channel TEXT,
    tool_calls TEXT NOT NULL DEFAULT '[]', tool_call_id TEXT, name TEXT,
    created REAL NOT NULL, UNIQUE (conversation_id, seq));
CREATE TABLE captures (id TEXT PRIMARY KEY, size INTEGER NOT NULL, path TEXT NOT NULL,
    created REAL NOT NULL);
CREATE TABLE turns (message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('streaming', 'done')), outcome TEXT,
    reason TEXT NOT NULL DEFAULT '', finish_reason TEXT, usage TEXT, timings TEXT,
    warnings TEXT NOT NULL DEFAULT '[]',
    capture_id TEXT REFERENCES captures(id) ON DELETE SET NULL);
ALTER TABLE conversations ADD COLUMN tools_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE conversations ADD COLUMN deleted_at REAL;
ALTER TABLE turns ADD COLUMN alt_group INTEGER;
ALTER TABLE turns ADD COLUMN chosen INTEGER NOT NULL DEFAULT 1;
ALTER TABLE turns ADD COLUMN input_tokens INTEGER;
ALTER TABLE turns ADD COLUMN output_tokens INTEGER;
ALTER TABLE turns ADD COLUMN http_status INTEGER;
ALTER TABLE turns ADD COLUMN terminal_signal TEXT;
ALTER TABLE turns ADD COLUMN bytes_received INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN events INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN malformed_frames INTEGER NOT NULL DEFAULT 0;
CREATE INDEX conversations_updated ON conversations (deleted_at, updated);
CREATE INDEX turns_status ON turns (status);
CREATE INDEX turns_capture ON turns (capture_id);
INSERT INTO conversations VALUES (1, 'Regenerated', 'OpenAI', 'gpt-x', 100, 200, '[]', NULL);
INSERT INTO conversations VALUES (2, 'Tools', 'OpenAI', 'gpt-x', 100, 190,
    '[{"name": "f", "description": "", "parameters": {"type": "object"}}]', NULL);
INSERT INTO conversations VALUES (3, 'Gone', NULL, NULL, 100, 180, '[]', 150);
INSERT INTO messages VALUES (1, 1, 0, 'user', 'Q1', '', NULL, '[]', NULL, NULL, 100);
INSERT INTO messages VALUES (2, 1, 1, 'assistant', 'first try', '', NULL, '[]', NULL, NULL, 101);
INSERT INTO messages VALUES (3, 1, 2, 'assistant', 'second try', '', NULL, '[]', NULL, NULL, 102);
INSERT INTO messages VALUES (4, 1, 3, 'user', 'Q2', '', NULL, '[]', NULL, NULL, 103);
INSERT INTO messages VALUES (5, 1, 4, 'assistant', 'A2', '', NULL, '[]', NULL, NULL, 104);
INSERT INTO turns (message_id, status, outcome, alt_group, chosen)
    VALUES (2, 'done', 'completed', 2, 0);
INSERT INTO turns (message_id, status, outcome, alt_group, chosen, input_tokens)
    VALUES (3, 'done', 'completed', 2, 1, 7);
INSERT INTO turns (message_id, status, outcome, alt_group, chosen)
    VALUES (5, 'done', 'completed', 5, 1);
INSERT INTO messages VALUES (6, 2, 0, 'user', 'run f', '', NULL, '[]', NULL, NULL, 110);
INSERT INTO messages VALUES (7, 2, 1, 'assistant', '', '', NULL,
    '[{"id": "c1", "name": "f", "arguments": "{}"}]', NULL, NULL, 111);
INSERT INTO turns (message_id, status, outcome, finish_reason, alt_group, chosen)
    VALUES (7, 'done', 'completed', 'tool_calls', 7, 1);
INSERT INTO messages VALUES (8, 2, 2, 'tool', '{"ok": 1}', '', NULL, '[]', 'c1', 'f', 112);
INSERT INTO messages VALUES (9, 2, 3, 'assistant', 'f said ok', '', NULL, '[]', NULL, NULL, 113);
INSERT INTO turns (message_id, status, outcome, alt_group, chosen)
    VALUES (9, 'done', 'completed', 9, 1);
INSERT INTO messages VALUES (10, 3, 0, 'user', 'bye', '', NULL, '[]', NULL, NULL, 120);
"""
"""The schema-2 DDL as the v2 store wrote it (v1's tables, then v2's migration), and rows:
1 regenerated its first answer and chose the second try; 2 ran a tool; 3 is deleted."""


def _write(path: Path, script: str) -> None:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.commit()
    db.close()


def _rows(store: Store, conv_id: int) -> list[tuple[int, int | None, bool, str, str]]:
    return [
        (m.id, m.parent_id, m.chosen, m.role, m.text)
        for m in store.load_conversation(conv_id, limit=None).messages
    ]


def test_a_version_2_database_built_by_hand_keeps_every_message(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    _write(path, V2_BY_HAND)
    with Store(path) as store:
        assert schema_version(store._db) == SCHEMA_VERSION == 6
        assert [c.title for c in store.list_conversations()] == ["Regenerated", "Tools"]
        assert _rows(store, 1) == [
            (1, None, True, "user", "Q1"),
            (2, 1, False, "assistant", "first try"),
            (3, 1, True, "assistant", "second try"),
            (4, 3, True, "user", "Q2"),  # after the chosen try
            (5, 4, True, "assistant", "A2"),
        ]
        assert store.path_ids(1) == [1, 3, 4, 5]
        second = store.load_conversation(1, limit=None).messages[2]
        assert second.turn is not None and second.turn.input_tokens == 7
        tools = store.load_conversation(2, limit=None)
        assert [t.name for t in tools.tools] == ["f"]
        assert _rows(store, 2) == [
            (6, None, True, "user", "run f"),
            (7, 6, True, "assistant", ""),
            (8, 7, True, "tool", '{"ok": 1}'),
            (9, 8, True, "assistant", "f said ok"),
        ]
        assert [c.id for c in tools.messages[1].tool_calls] == ["c1"]
        assert tools.messages[2].tool_call_id == "c1"
        with pytest.raises(KeyError):
            store.load_conversation(3)
        store.restore(3)
        assert _rows(store, 3) == [(10, None, True, "user", "bye")]
        assert store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 10
        indexes = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master")}
        assert {"messages_parent", "turns_alt_group", "turns_capture"} <= indexes


def test_the_version_3_migration_is_additive_and_idempotent(tmp_path: Path) -> None:
    """Run again over a database that already has its columns (as when another build's
    migrations are numbered differently), it adds nothing and re-derives nothing: an edit's
    branch (which the v2 list could not express) keeps its parent."""
    path = tmp_path / "v2.db"
    _write(path, V2_BY_HAND + "ALTER TABLE turns ADD COLUMN model TEXT;")  # (another v3's)
    with Store(path) as store:
        session = ChatSession.open(store, 1)
        assert session.edit_last() == "Q2"
        session.user_sent("Q2, edited", endpoint_name="e", model="m")
        session.answer_started(alternative=False)
        session.answer_finished(Turn(text="A2'", outcome=Outcome.COMPLETED))
        before = _rows(store, 1)
        assert before[3:] == [
            (4, 3, False, "user", "Q2"),
            (5, 4, True, "assistant", "A2"),
            (11, 3, True, "user", "Q2, edited"),  # beside Q2, not after A2
            (12, 11, True, "assistant", "A2'"),
        ]
        store._db.execute("DELETE FROM schema_version WHERE version >= 3")
    with Store(path) as again:  # the v3 and v4 steps run a second time
        versions = [r[0] for r in again._db.execute("SELECT version FROM schema_version")]
        assert versions == [1, 2, 3, 4, 5, 6]
        assert _rows(again, 1) == before
        assert again.path_ids(1) == [1, 3, 11, 12]
        columns = [r[1] for r in again._db.execute("PRAGMA table_info(messages)")]
        assert columns[-2:] == ["chosen", "parent_id"]
        turns = [r[1] for r in again._db.execute("PRAGMA table_info(turns)")]
        assert turns[-3:] == ["model", "verdict", "verdict_rules"]  # (each once)


def test_a_version_2_database_migrates_and_answers_keep_the_model_asked_for(
    tmp_path: Path,
) -> None:
    """Version 4 adds ``turns.model``: older answers have none, new ones keep theirs."""
    from streamscope.core.store.schema import MIGRATIONS

    path = tmp_path / "v2.db"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE schema_version (version INTEGER NOT NULL, applied REAL);"
        + "".join(MIGRATIONS[:2])
        + "INSERT INTO schema_version VALUES (2, 0);"
        + "INSERT INTO conversations (id, title, model, created, updated)"
        " VALUES (1, 'Old', 'gpt-x', 1, 1);"
        + "INSERT INTO messages (id, conversation_id, seq, role, text, created)"
        " VALUES (1, 1, 0, 'assistant', 'hi', 1);"
        + "INSERT INTO turns (message_id, status, outcome) VALUES (1, 'done', 'completed');"
    )
    db.commit()
    db.close()
    with Store(path) as store:
        assert schema_version(store._db) == SCHEMA_VERSION == 6
        (old,) = store.load_conversation(1).messages
        assert old.turn is not None and old.turn.model is None
        assert turn_from_stored(old).model is None
        new = store.begin_assistant_message(1, model="demo-tools")
        store.finish_assistant_message(new, Turn(text="ok", outcome=Outcome.COMPLETED))
        again = store.begin_assistant_message(1, alternative_of=new, model="demo-length")
        _, first, second = store.load_conversation(1).messages
        assert first.turn is not None and first.turn.model == "demo-tools"
        assert turn_from_stored(first).model == "demo-tools"
        assert second.id == again and second.turn is not None
        assert second.turn.model == "demo-length"


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.executescript(
        f"CREATE TABLE schema_version (version INTEGER, applied REAL);"
        f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION + 1}, 0);"
    )
    db.commit()
    db.close()
    with pytest.raises(SchemaTooNewError):
        Store(path)


# -- a real process killed mid-stream ---------------------------------------------------

CHILD = r"""
import asyncio, json, sys, time
from streamscope.core.net.client import StreamClient, StreamTimeouts, TurnObserver
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.core.wire.events import TextDelta
from streamscope.core.store.database import Store

db_path, base_url = sys.argv[1], sys.argv[2]
store = Store(db_path)
conv = store.create_conversation("crash test")
store.add_user_message(conv, "Tell me something slowly")
msg = store.begin_assistant_message(conv)
text = []

class Printer(TurnObserver):
    def progressed(self, update, t):
        for ev in update.events:
            if isinstance(ev, TextDelta):
                text.append(ev.text)
                print(json.dumps({"t": time.monotonic(), "delta": ev.text}), flush=True)

async def save_every(interval):
    saved = 0
    while True:
        await asyncio.sleep(interval)
        if len(text) != saved:
            saved = len(text)
            store.update_assistant_partial(msg, "".join(text))

async def main():
    spec = get_dialect("openai").build_request(
        Conversation(messages=[Message("user", "Tell me something slowly")]),
        base_url=base_url, model="demo-slow", api_key="sk-demo")
    saver = asyncio.create_task(save_every(0.25))
    client = StreamClient()
    print(json.dumps({"message_id": msg}), flush=True)
    await client.run_turn(spec, dialect="openai", timeouts=StreamTimeouts(idle=30),
                          observer=Printer())

asyncio.run(main())
"""


def test_a_process_killed_mid_stream_loses_at_most_a_second_of_text(tmp_path: Path) -> None:
    db_path = tmp_path / "crash.db"
    received: list[tuple[float, str]] = []
    with DemoServer(speed=3) as demo:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(db_path), demo.base_url("openai")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        watchdog = threading.Timer(60, proc.kill)  # never hang the suite
        watchdog.start()
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert first, proc.stderr.read().decode() if proc.stderr else ""
            message_id = json.loads(first)["message_id"]
            while len(received) < 8:  # ~1.3 s of streaming at speed 3
                line = proc.stdout.readline()
                assert line, (proc.stderr.read() if proc.stderr else b"").decode()
                item = json.loads(line)
                received.append((item["t"], item["delta"]))
            t_kill = time.monotonic()
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            for line in proc.stdout.read().splitlines():  # what arrived before the kill
                item = json.loads(line)
                received.append((item["t"], item["delta"]))
        finally:
            watchdog.cancel()
            if proc.poll() is None:  # pragma: no cover
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert proc.returncode == -signal.SIGKILL

    with Store(db_path) as store:
        assert store.recover_interrupted() == [message_id]
        (conv,) = store.list_conversations()
        user, answer = store.load_conversation(conv.id).messages
    assert user.text == "Tell me something slowly"
    assert answer.turn is not None
    assert (answer.turn.outcome, answer.turn.reason) == (Outcome.TRUNCATED, INTERRUPTED_REASON)
    everything = "".join(d for _, d in received)
    saved = answer.text
    assert everything.startswith(saved)
    one_second_before = "".join(d for t, d in received if t <= t_kill - 1.0)
    assert len(saved) >= len(one_second_before), (saved, everything)
    assert saved, "nothing was saved while streaming"
