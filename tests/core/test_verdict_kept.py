"""A turn's short verdict line kept with it: the rules' digest, the version 6 migration, saving
and loading it (a stale one reads as "needs a check"), the session's path, and checking a
turn again from its capture — a real capture of the demo endpoint on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.capture.format import Capture, write_capture
from streamscope.core.capture.lint import lint_capture, verdict_line
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.redact import Scrubber
from streamscope.core.store.database import Store, StoredTurn
from streamscope.core.store.schema import SCHEMA_VERSION, migrate, schema_version
from streamscope.core.store.session import ChatSession
from streamscope.core.store.verdicts import recheck
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.verdict import catalog
from streamscope.core.verdict.catalog import RULES, RULES_VERSION, rules_digest
from streamscope.core.verdict.rules import Rule, Severity
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer

# -- the rules' digest -------------------------------------------------------------------------


def test_the_digest_names_the_rules_ids_severities_and_version() -> None:
    text = "\n".join(
        [f"version {RULES_VERSION}", *(f"{r.id} {r.severity}" for r in RULES.values())]
    )
    want = hashlib.sha256(text.encode()).hexdigest()[:16]
    assert rules_digest() == want
    assert rules_digest() == want  # (stable: cached for the registry of the moment)
    assert len(want) == 16 and int(want, 16) >= 0


def test_the_digest_changes_with_a_severity_a_rule_or_the_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = rules_digest()
    rules = dict(catalog.all_rules())
    first = next(iter(rules))
    quieter: Severity = "info" if rules[first].severity != "info" else "warning"
    changed = {**rules, first: Rule(first, quieter, rules[first].message, rules[first].hint)}
    monkeypatch.setattr(catalog, "all_rules", lambda: changed)
    severity = rules_digest()
    added = {**rules, "toy.extra": Rule("toy.extra", "error", "m", "h")}
    monkeypatch.setattr(catalog, "all_rules", lambda: added)
    more = rules_digest()
    monkeypatch.setattr(catalog, "all_rules", lambda: rules)
    same = rules_digest()
    monkeypatch.setattr(catalog, "RULES_VERSION", RULES_VERSION + 1)
    version = rules_digest()
    assert same == now
    assert len({now, severity, more, version}) == 4


# -- the store -----------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "test.db")
    yield s
    s.close()


def answer(store: Store, text: str = "hi", capture_id: str | None = None) -> int:
    conv = store.create_conversation("c")
    store.add_user_message(conv, "hello")
    msg = store.begin_assistant_message(conv)
    store.finish_assistant_message(msg, Turn(text=text, outcome=Outcome.COMPLETED), capture_id)
    return msg


def turn_of(store: Store, message_id: int) -> StoredTurn:
    (found,) = [m for m in store.load_messages(1, limit=None) if m.id == message_id]
    assert found.turn is not None
    return found.turn


def test_a_version_5_database_migrates_and_its_answers_need_a_check(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    db = sqlite3.connect(path, isolation_level=None)
    assert migrate(db, upto=5) == 5
    db.executescript(
        "INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old', 1, 1);"
        "INSERT INTO messages (id, conversation_id, seq, role, text, created)"
        " VALUES (1, 1, 0, 'user', 'hello', 1), (2, 1, 1, 'assistant', 'old answer', 2);"
        "INSERT INTO captures VALUES ('cap', 10, 'cap.sscap', 2);"
        "INSERT INTO turns (message_id, status, outcome, capture_id, model)"
        " VALUES (2, 'done', 'completed', 'cap', 'demo');"
    )
    db.close()
    with Store(path) as store:
        assert schema_version(store._db) == SCHEMA_VERSION == 6
        _, old = store.load_conversation(1).messages
        assert old.text == "old answer" and old.turn is not None
        assert (old.turn.verdict, old.turn.verdict_rules) == (None, None)
        assert old.turn.kept_verdict(rules_digest()) is None  # never checked: check it
        assert (old.turn.capture_id, old.turn.model) == ("cap", "demo")
        store.save_verdict(2, "1 spec error", rules_digest())
    with Store(path) as again:  # reopened: migrated once, the line kept
        versions = [r[0] for r in again._db.execute("SELECT version FROM schema_version")]
        assert versions == [1, 2, 3, 4, 5, 6]
        _, old = again.load_conversation(1).messages
        assert old.turn is not None and old.turn.kept_verdict(rules_digest()) == "1 spec error"


def test_the_version_6_step_is_additive_and_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    with Store(path) as store:
        msg = answer(store)
        store.save_verdict(msg, "stalled", "abc")
        store._db.execute("DELETE FROM schema_version WHERE version = 6")
    with Store(path) as again:  # (the columns are there already: added once, kept)
        assert schema_version(again._db) == 6
        columns = [r[1] for r in again._db.execute("PRAGMA table_info(turns)")]
        assert columns[-2:] == ["verdict", "verdict_rules"]
        assert columns.count("verdict") == 1
        turn = turn_of(again, msg)
        assert (turn.verdict, turn.verdict_rules) == ("stalled", "abc")


def test_a_kept_line_counts_only_under_the_rules_that_made_it(store: Store) -> None:
    msg = answer(store, capture_id=None)
    turn = turn_of(store, msg)
    assert turn.kept_verdict("r1") is None
    store.save_verdict(msg, "2 spec errors · buffered by a proxy", "r1")
    turn = turn_of(store, msg)
    assert turn.verdict == "2 spec errors · buffered by a proxy"
    assert turn.kept_verdict("r1") == "2 spec errors · buffered by a proxy"
    assert turn.kept_verdict("r2") is None  # (other rules)
    store.save_verdict(msg, "", "r2")  # checked again: nothing to say
    turn = turn_of(store, msg)
    assert turn.kept_verdict("r2") == ""  # ("" is not "unchecked")
    assert turn.kept_verdict("r1") is None


def test_a_line_saved_before_the_turn_finishes_stays(store: Store) -> None:
    conv = store.create_conversation("c")
    store.add_user_message(conv, "hello")
    msg = store.begin_assistant_message(conv)
    store.save_verdict(msg, "1 spec error", "r1")  # (the Verdict tab was quicker)
    store.finish_assistant_message(msg, Turn(text="done", outcome=Outcome.COMPLETED))
    turn = turn_of(store, msg)
    assert (turn.verdict, turn.verdict_rules, turn.outcome) == (
        "1 spec error",
        "r1",
        Outcome.COMPLETED,
    )


def test_the_session_keeps_the_line_masked_like_the_answer(store: Store) -> None:
    secret = "sk-live-0123456789abcdef"
    session = ChatSession(store, schedule=lambda *_: None)
    session.user_sent("hello", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    session.answer_request(Scrubber([secret]), None)
    first = session.answer_id
    assert first is not None
    session.answer_checked(first, f"1 spec error {secret}")  # before it finishes
    session.answer_finished(Turn(text="ok", outcome=Outcome.COMPLETED))
    assert session.answer_id is None
    turn = turn_of(store, first)
    assert turn.verdict == "1 spec error " + "*" * len(secret)
    assert turn.verdict_rules == rules_digest()
    session.answer_checked(first, f"stalled {secret}")  # after it finished
    assert turn_of(store, first).verdict == "stalled " + "*" * len(secret)
    without = ChatSession(None)
    without.answer_checked(first, "2 spec errors")  # (no store: nothing to keep, no error)


# -- checking a turn again from its capture ------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(host="127.0.0.1", port=0, speed=1000) as server:
        yield server


def record(demo: DemoServer, model: str, dialect: str = "openai") -> Capture:
    conv = Conversation(messages=[Message("user", "Hello there")], max_tokens=None)
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key="sk-demo"
    )
    recorder = CaptureRecorder(dialect)

    async def main() -> None:
        client = StreamClient()
        try:
            await client.run_turn(
                spec,
                dialect=dialect,
                timeouts=StreamTimeouts(first_byte=10, idle=1.0),
                observer=recorder,
            )
        finally:
            await client.aclose()

    asyncio.run(main())
    return recorder.done.result(timeout=10)


def test_a_turn_is_checked_again_from_its_capture(
    store: Store, demo: DemoServer, tmp_path: Path
) -> None:
    bad = record(demo, "demo-bad-json")
    assert {f.rule for f in lint_capture(bad).findings if f.severity == "error"} == {
        "stream.malformed-frame"
    }
    assert verdict_line(bad) == "1 spec error"
    assert verdict_line(bad, background=True) == "1 spec error"
    path = tmp_path / "bad.sscap"
    write_capture(path, bad)
    msg = answer(store, capture_id=None)
    store.save_verdict(msg, "", "old rules")  # made by other rules: stale
    assert recheck(store, msg, path) == "1 spec error"
    turn = turn_of(store, msg)
    assert (turn.verdict, turn.verdict_rules) == ("1 spec error", rules_digest())
    assert turn.kept_verdict(rules_digest()) == "1 spec error"


def test_a_clean_an_http_error_and_an_unreadable_capture(
    store: Store, demo: DemoServer, tmp_path: Path
) -> None:
    clean, refused = tmp_path / "clean.sscap", tmp_path / "429.sscap"
    write_capture(clean, record(demo, "demo"))
    write_capture(refused, record(demo, "demo-error-429"))
    msg = answer(store)
    assert recheck(store, msg, clean, "r1") == ""  # checked: nothing to say
    assert turn_of(store, msg).kept_verdict("r1") == ""
    assert recheck(store, msg, refused, "r2") == ""  # (no stream: the outcome says it)
    assert turn_of(store, msg).kept_verdict("r2") == ""
    # nothing is kept when the capture cannot be checked: it stays "needs a check"
    assert recheck(store, msg, tmp_path / "gone.sscap", "r3") is None
    damaged = tmp_path / "damaged.sscap"
    damaged.write_bytes(b"not a capture\n")
    assert recheck(store, msg, damaged, "r3") is None
    assert recheck(store, msg, clean, "r3", limit=clean.stat().st_size - 1) is None
    assert turn_of(store, msg).kept_verdict("r3") is None
    assert turn_of(store, msg).verdict_rules == "r2"
