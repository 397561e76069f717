"""Searching conversations on the full-text index: an older database migrated, the triggers
following every write, substrings in every script, literal queries, deleted conversations.

Each search is checked against a brute-force oracle (``support.search_corpus.oracle``) and,
where it matters, against pinned ids; the index itself against one built afresh
(``index_is_exact``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.store.database import Store
from streamscope.core.store.schema import SCHEMA_VERSION, schema_version
from streamscope.core.store.search import INDEX_MIN_CHARS, text_matches
from streamscope.core.store.search_index import index_progress, index_step
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from support.search_corpus import CORPUS, build_v4, drain, index_is_exact, oracle


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "new.db", clock=FakeClock())
    yield s
    s.close()


@pytest.fixture
def old(tmp_path: Path) -> Iterator[Store]:
    """The corpus in a version-4 database, opened (migrated) and not indexed yet."""
    build_v4(tmp_path / "old.db")
    s = Store(tmp_path / "old.db", clock=FakeClock())
    yield s
    s.close()


def ids(store: Store, query: str) -> list[int]:
    return [c.id for c in store.list_conversations(query, limit=None)]


def matched(store: Store, query: str) -> list[int]:
    """What the index alone finds (message ids), bypassing every fallback."""
    phrase = '"' + query.replace('"', '""') + '"'
    rows = store._db.execute(
        "SELECT rowid FROM message_index WHERE message_index MATCH ? ORDER BY rowid", (phrase,)
    )
    return [r[0] for r in rows]


# -- an older database -----------------------------------------------------------------------


def test_an_older_database_gets_an_index_that_finds_its_messages(old: Store) -> None:
    db = old._db
    assert schema_version(db) == SCHEMA_VERSION == 6
    progress = index_progress(db)
    assert (progress.backfilled, progress.percent, progress.backlog) == (False, 0, 0)
    assert matched(old, "Streaming") == []  # nothing indexed by the migration itself …
    assert ids(old, "Streaming") == [1]  # … and the search finds it all the same
    assert ids(old, "needle") == [8]

    assert drain(old._db, rows=3) == 7  # 16 messages, 8 titles: titles first, then 3 a step
    progress = index_progress(db)
    assert (progress.backfilled, progress.percent, progress.fraction) == (True, 100, 1.0)
    assert matched(old, "Streaming") == [1]  # the index holds the old messages
    assert matched(old, "needle") == [16]
    assert index_is_exact(db)
    assert ids(old, "Streaming") == [1]
    assert ids(old, "needle") == [8]
    assert ids(old, "Grüße") == [5]  # a title
    assert ids(old, "the") == [8, 1]  # newest first


def test_migrating_twice_changes_nothing(tmp_path: Path) -> None:
    build_v4(tmp_path / "old.db")
    with Store(tmp_path / "old.db") as store:
        index_step(store._db, rows=4)  # part of the backfill done
        marks = store._db.execute("SELECT * FROM search_backfill ORDER BY source").fetchall()
        store._db.execute("DELETE FROM schema_version WHERE version >= 5")
    with Store(tmp_path / "old.db") as again:  # versions 5 and 6 run a second time
        versions = [r[0] for r in again._db.execute("SELECT version FROM schema_version")]
        assert versions == [1, 2, 3, 4, 5, 6]
        assert again._db.execute("SELECT * FROM search_backfill ORDER BY source").fetchall() == (
            marks
        )
        assert index_is_exact(again._db)
        drain(again._db)
        assert index_is_exact(again._db) and ids(again, "quickly") == [1]


# -- the triggers ------------------------------------------------------------------------------


def check(store: Store, finds: dict[str, list[int]]) -> None:
    """The searches give ``finds``, the index is exact — before and after indexing."""
    for _ in range(2):
        assert {q: ids(store, q) for q in finds} == finds
        assert {q: oracle(store._db, q) for q in finds} == finds
        assert index_is_exact(store._db)
        drain(store._db)


def test_the_index_follows_every_write(store: Store) -> None:
    a = store.create_conversation("First chat")
    b = store.create_conversation("Second chat")
    store.add_user_message(a, "What about Zürich?")
    check(store, {"zürich": [a], "chat": [a, b]})

    answer = store.begin_assistant_message(a)
    store.update_assistant_partial(answer, "Partial draft alpha")
    check(store, {"draft alpha": [a]})  # streaming: found (read, not indexed)
    assert answer in [r[0] for r in store._db.execute("SELECT message_id FROM search_backlog")]
    store.update_assistant_partial(answer, "Partial words beta")  # the text replaced
    check(store, {"draft alpha": [], "words beta": [a]})
    store.finish_assistant_message(answer, Turn(text="Final gamma", outcome=Outcome.COMPLETED))
    check(store, {"words beta": [], "final gamma": [a]})
    assert matched(store, "Final gamma") == [answer]  # indexed once finished
    store.update_assistant_partial(answer, "Edited zeta")  # (an indexed text changes)
    assert matched(store, "Final gamma") == []  # out of the index at once
    check(store, {"final gamma": [], "edited zeta": [a]})

    store.rename(b, "Renamed delta")
    check(store, {"second": [], "renamed delta": [b], "chat": [a]})

    store.add_user_message(b, "epsilon inside b")
    store.delete(b)  # soft delete: hidden from search, kept in the index
    check(store, {"epsilon": [], "renamed": []})
    store.restore(b)
    check(store, {"epsilon": [b], "renamed": [b]})
    store.add_user_message(b, "omicron, not indexed yet")
    store.delete(b)
    assert store.purge_deleted() == []  # gone for good: out of both indexes
    assert index_progress(store._db).backlog == 0  # (and out of the backlog)
    check(store, {"epsilon": [], "renamed": [], "omicron": []})
    assert matched(store, "epsilon") == []
    gone = "SELECT COUNT(*) FROM title_index WHERE title_index MATCH '\"Renamed\"'"
    assert store._db.execute(gone).fetchone() == (0,)


def test_a_streaming_answer_is_indexed_when_it_ends_not_at_each_save(store: Store) -> None:
    conv = store.create_conversation("Long answer")
    store.add_user_message(conv, "go")
    drain(store._db)
    answer = store.begin_assistant_message(conv)
    segments = store._db.execute("SELECT COUNT(*), SUM(length(block)) FROM message_index_data")
    before = segments.fetchone()
    text = ""
    for n in range(30):
        text += f"chunk {n} of the answer. " * 20
        store.update_assistant_partial(answer, text)
        assert index_step(store._db) == 0  # (still streaming: nothing to index)
    after = store._db.execute("SELECT COUNT(*), SUM(length(block)) FROM message_index_data")
    assert after.fetchone() == before  # thirty saves wrote nothing to the index
    assert ids(store, "chunk 29 of") == [conv]
    store.recover_interrupted()  # (as after a crash: the turn ends, truncated)
    assert index_step(store._db) == 1
    assert matched(store, "chunk 29 of") == [answer] and index_is_exact(store._db)


# -- what a query matches ------------------------------------------------------------------------

QUERIES = {
    "eam": [1],  # inside a word
    "STREAMING": [1],  # case, ASCII
    "ПОТОК": [2],  # case, Cyrillic
    "токенов": [2],
    "流式": [3],  # CJK, two characters (shorter than the index answers)
    "令牌流": [3],  # CJK, three
    "🚀": [4],  # one code point
    "⚠️": [4],  # two (a variation selector)
    "🚀 now ✅": [4],
    "ZÜRICH": [5],  # case outside ASCII, one letter
    "GRÜSSE": [],  # (no full case folding: ß is not ss)
    "grüße": [5],
    "αλφα": [5],  # Greek, all four letters cased
    "Ok": [1],  # short, ASCII: "tokens" (the "ок" of "окно" is Cyrillic letters)
    "a": [8, 7, 6, 5, 4, 1],
}


@pytest.mark.parametrize("query", list(QUERIES))
def test_substrings_in_every_script_before_and_after_indexing(old: Store, query: str) -> None:
    assert ids(old, query) == QUERIES[query] == oracle(old._db, query)  # read
    index_step(old._db, rows=7)  # the titles …
    index_step(old._db, rows=7)  # … and the newest seven messages
    assert 0 < index_progress(old._db).fraction < 1
    assert ids(old, query) == QUERIES[query]
    drain(old._db)
    assert ids(old, query) == QUERIES[query]  # from the index (3+ characters)
    assert (len(query) < INDEX_MIN_CHARS) or QUERIES[query] == [] or matched(old, query)


LITERAL = {
    '"quote"': [6],
    '"': [6],
    '""': [],
    'said "': [6],
    "AND NOT": [6],
    "AND": [7, 6, 5, 1],  # (a word like any other: "and" is in four)
    "NOT OR": [6],
    "NEAR(a b)": [6],
    "col:val": [6],
    "^start": [6],
    "x - y": [6],
    "*": [7, 6],
    "a*star": [7],
    "a*": [7],
    "-minus": [7],
    "(paren)": [7],
    "100%": [7],
    "%": [7],
    "0% p": [7],
    "pure_": [7],
    "_": [7],
    "e_t": [7],
    "\\": [7],
    "k\\s": [7],
    "%%": [],
    "e%t": [],
    "'": [],
    "h'": [],
}


@pytest.mark.parametrize("query", list(LITERAL))
def test_query_syntax_means_itself(old: Store, query: str) -> None:
    assert ids(old, query) == LITERAL[query] == oracle(old._db, query)
    drain(old._db)
    assert ids(old, query) == LITERAL[query]


def test_an_id_used_again_after_a_purge_is_indexed_once(old: Store) -> None:
    index_step(old._db)  # (titles)
    old.delete(8)
    old.purge_deleted()  # messages 15 and 16, not indexed yet, are gone …
    again = old.add_user_message(7, "a new needle")  # … and 15 is taken again
    assert again == 15 and index_progress(old._db).backlog == 1
    assert ids(old, "new needle") == [7]
    index_step(old._db, rows=2)  # the backfill passes it (14, 15): it waits in the backlog
    old.update_assistant_partial(again, "a changed pin")
    drain(old._db, rows=2)
    assert index_is_exact(old._db)
    assert matched(old, "new needle") == [] and matched(old, "changed pin") == [15]
    assert ids(old, "needle") == [] and ids(old, "changed pin") == [7]


def test_a_large_backlog_is_read_conversation_by_conversation(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(As in a profile whose history was written by this version in bulk — an import, the
    test profile: every message waits in the backlog.)"""
    from streamscope.core.store import search

    for title, texts in CORPUS:
        conv = store.create_conversation(title)
        for text in texts:
            store.add_user_message(conv, text)
    monkeypatch.setattr(search, "_BACKLOG_AT_ONCE", 4)
    state = search.index_state(store._db)
    assert state == search.IndexState(0, 0, 16)
    sql, _ = search.search_sql("needle", state)
    assert "OR m.id IN (SELECT message_id FROM search_backlog)" not in sql  # (walked)
    assert "(m.id IN (SELECT message_id FROM search_backlog)) AND" in sql
    for query in [*QUERIES, *LITERAL]:
        assert ids(store, query) == oracle(store._db, query), query
    index_step(store._db, rows=10)  # the newest ten indexed, six still waiting
    assert search.index_state(store._db).backlog == 6
    for query in [*QUERIES, *LITERAL]:
        assert ids(store, query) == oracle(store._db, query), query


def test_deleted_conversations_are_never_found(old: Store) -> None:
    drain(old._db)
    old.delete(8)
    assert ids(old, "needle") == [] and ids(old, "Plain") == []
    assert ids(old, "ne") == [6, 4]  # (NEAR, done — not needle)
    assert 8 not in ids(old, "e")
    old.restore(8)
    assert ids(old, "needle") == [8] and ids(old, "Plain") == [8]


def test_the_text_test_without_the_index_folds_case_in_every_script() -> None:
    assert text_matches("t", "ab") == ("t LIKE ? ESCAPE '\\'", ["%ab%"])
    assert text_matches("t", "5%_\\") == ("t LIKE ? ESCAPE '\\'", ["%5\\%\\_\\\\%"])
    sql, params = text_matches("t", "Дa")  # one cased letter outside ASCII: two spellings
    assert (sql, params) == ("(t LIKE ? ESCAPE '\\' OR t LIKE ? ESCAPE '\\')", ["%дa%", "%Дa%"])
    sql, params = text_matches("t", "поток")  # more: LIKE narrows, Python decides
    assert sql == "(t LIKE ? ESCAPE '\\' AND folded_contains(t, ?))"
    assert params == ["%_____%", "поток"]
    assert text_matches("t", "流式") == ("t LIKE ? ESCAPE '\\'", ["%流式%"])  # no case


def test_paging_the_list_by_its_last_row(store: Store) -> None:
    made = [store.create_conversation(f"c{n}") for n in range(7)]
    newest_first = made[::-1]
    assert [c.id for c in store.list_conversations(limit=None)] == newest_first
    page = store.list_conversations(limit=3)
    pages = [c.id for c in page]
    while page:
        page = store.list_conversations(limit=3, after=page[-1])
        pages += [c.id for c in page]
    assert pages == newest_first
    assert [c.id for c in store.list_conversations("c", limit=2, offset=1)] == newest_first[1:3]


def test_the_corpus_is_what_the_tests_think() -> None:
    assert [title for title, _ in CORPUS][-1] == "Plain" and len(CORPUS) == 8
