"""The search index's backfill and its threads: searches during the backfill are complete, the
backfill resumes after the app is killed midway, the indexer thread reports its progress,
and the search thread hands rows over in batches and drops a search the user moved on from."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.store.database import ConversationSummary, Store
from streamscope.core.store.history import ToolResult
from streamscope.core.store.search import SearchWorker, search_cursor
from streamscope.core.store.search_index import (
    IndexProgress,
    SearchIndexer,
    index_progress,
    index_step,
)
from support.search_corpus import build_v4, drain, index_is_exact, oracle

WORDS = ["stream", "Поток", "令牌", "🚀", "Zürich", "needle", "frame", "окно", "x%_y"]
QUERIES = ["stream", "STR", "поток", "令牌", "🚀", "zür", "needle", "ne", "x%_", "%", "окно"]


def corpus(conversations: int, messages: int, seed: int = 3) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    return [
        (
            f"Chat {n} {rng.choice(WORDS)}",
            [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(messages)],
        )
        for n in range(conversations)
    ]


@pytest.fixture
def old(tmp_path: Path) -> Iterator[Store]:
    build_v4(tmp_path / "old.db", corpus(40, 6))
    s = Store(tmp_path / "old.db")
    yield s
    s.close()


def searches(store: Store) -> dict[str, list[int]]:
    return {q: [c.id for c in store.list_conversations(q, limit=None)] for q in QUERIES}


def expected(store: Store) -> dict[str, list[int]]:
    return {q: oracle(store._db, q) for q in QUERIES}


def test_searches_during_the_backfill_are_complete(old: Store) -> None:
    truth = expected(old)
    assert all(truth.values()) and len(set(map(tuple, truth.values()))) > 5  # (varied)
    old.delete(3)  # (and never list a deleted one, indexed or not)
    truth = expected(old)
    fractions = []
    while not index_progress(old._db).backfilled:
        assert searches(old) == truth
        index_step(old._db, rows=17)
        fractions.append(index_progress(old._db).fraction)
        conv = len(fractions) % 40 + 1  # meanwhile the app writes (the backlog goes first)
        old.add_user_message(conv, f"new needle {conv}")
        truth = expected(old)
    assert searches(old) == truth
    assert fractions == sorted(fractions) and len(set(fractions)) == len(fractions) == 16
    assert fractions[0] == 0.0 and fractions[-1] == 1.0  # (titles, then 240 messages by 17)
    assert index_is_exact(old._db)


RESUME = """
import sqlite3, sys, time
from streamscope.core.store.search_index import index_step
db = sqlite3.connect(sys.argv[1], isolation_level=None)
for _ in range(20):
    index_step(db, 3)
    print("step", flush=True)
db.execute("BEGIN IMMEDIATE")  # the next batch half done when the kill comes
db.execute("INSERT INTO message_index (rowid, text) SELECT id, text FROM messages"
           " WHERE id <= (SELECT below FROM search_backfill WHERE source = 'messages')"
           " ORDER BY id DESC LIMIT 2")
print("inside", flush=True)
time.sleep(60)
"""


def test_the_backfill_resumes_after_the_app_is_killed_midway(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_v4(path, corpus(30, 40))  # 1,200 messages
    Store(path).close()  # migrated, nothing indexed
    proc = subprocess.Popen(
        [sys.executable, "-c", RESUME, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        for _ in range(20):  # some steps, then kill -9 inside a transaction
            assert proc.stdout.readline() == "step\n"
        assert proc.stdout.readline() == "inside\n"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:  # pragma: no cover
            proc.kill()
            proc.wait()
        proc.stdout.close()
    with Store(path) as store:
        progress = index_progress(store._db)  # where it stopped: titles, then 19 steps of 3
        assert (progress.fraction, progress.backfilled) == (57 / 1200, False)
        assert index_is_exact(store._db)  # … consistently (the half-done batch: not at all)
        assert searches(store) == expected(store)
        assert drain(store._db, rows=100) == 12  # … and on from there: 1,143 left
        assert index_progress(store._db).backfilled and index_is_exact(store._db)
        assert searches(store) == expected(store)


def test_the_indexer_thread_backfills_reports_and_stops(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_v4(path, corpus(30, 40))
    store = Store(path)
    reports: list[IndexProgress] = []
    asked: list[threading.Thread] = []

    niceness: list[int] = []

    def report(progress: IndexProgress) -> None:  # stop it a fifth of the way in
        reports.append(progress)
        if sys.platform.startswith("linux"):  # (the window's thread gets the cores first)
            niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        if progress.fraction > 0.2 and not asked:
            asked.append(threading.Thread(target=stopped.stop))
            asked[0].start()

    stopped = SearchIndexer(path, on_progress=report, batch_seconds=0.0005, report_seconds=0)
    stopped.start()
    stopped._thread.join(30)
    assert not stopped.running and stopped.error is None
    part = index_progress(store._db)
    assert 0.2 < part.fraction < 0.5 and index_is_exact(store._db)
    if sys.platform.startswith("linux"):
        assert set(niceness) == {min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)}
    assert reports[0] == IndexProgress(0.0, False, 0) and reports[-1].fraction == part.fraction

    indexer = SearchIndexer(path, on_progress=reports.append, idle_seconds=0.05)
    indexer.start()
    try:
        deadline = time.monotonic() + 30
        while not (reports[-1].backfilled) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reports[-1] == IndexProgress(1.0, True, 0)
        assert [r.fraction for r in reports] == sorted(r.fraction for r in reports)
        assert [r.percent for r in reports][-1] == 100
        assert all(r.percent <= 99 for r in reports[:-1])
        assert index_is_exact(store._db)
        conv = store.create_conversation("after")  # the backlog, once it is there
        store.add_user_message(conv, "fresh words")
        indexer.wake()
        deadline = time.monotonic() + 10
        while index_progress(store._db).backlog and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index_progress(store._db).backlog == 0 and index_is_exact(store._db)
    finally:
        indexer.stop()
        store.close()


def test_the_indexer_waits_while_a_search_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_v4(path, corpus(10, 10))
    store = Store(path)
    searching = [True]
    indexer = SearchIndexer(path, busy=lambda: searching[0], idle_seconds=0.05)
    indexer.start()
    try:
        time.sleep(0.3)
        marks = store._db.execute("SELECT below FROM search_backfill ORDER BY source")
        assert marks.fetchall() == [(10,), (100,)]  # not a batch while searching
        searching[0] = False
        deadline = time.monotonic() + 30
        while not index_progress(store._db).backfilled and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index_progress(store._db).backfilled and index_is_exact(store._db)
    finally:
        indexer.stop()
        store.close()


def test_the_indexer_waits_out_a_writer_that_keeps_the_database_locked(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_v4(path, corpus(5, 4))
    store = Store(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # (another process writing, for longer than the timeout)
    indexer = SearchIndexer(path, lock_timeout=0.05, idle_seconds=0.05)
    indexer.start()
    try:
        time.sleep(0.3)
        assert indexer.running and not index_progress(store._db).backfilled
        other.execute("COMMIT")
        deadline = time.monotonic() + 20
        while not index_progress(store._db).backfilled and time.monotonic() < deadline:
            time.sleep(0.02)
        assert index_progress(store._db).backfilled and index_is_exact(store._db)
        assert indexer.error is None
    finally:
        indexer.stop()
        other.close()
        store.close()


def test_a_big_backlog_is_progress_to_report_too(tmp_path: Path) -> None:
    """(An import writes many messages at once: the index has work in hand, like a backfill.)"""
    store = Store(tmp_path / "new.db")
    conv = store.create_conversation("bulk")
    assert index_progress(store._db).finished  # (a new profile: nothing to do)
    reports: list[IndexProgress] = []
    indexer = SearchIndexer(
        store.path, on_progress=reports.append, idle_seconds=0.02, report_seconds=0
    )
    indexer.start()
    try:
        deadline = time.monotonic() + 10
        while not reports and time.monotonic() < deadline:
            time.sleep(0.01)
        assert reports == [IndexProgress(1.0, True, 0)]  # finished, said once
        results = [ToolResult(f"c{n}", "f", f"imported result {n}") for n in range(150)]
        store.add_tool_results(conv, results)  # (one transaction)
        indexer.wake()
        deadline = time.monotonic() + 20
        while not (len(reports) > 2 and reports[-1].finished) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        indexer.stop()
    later = reports[1:]
    assert not later[0].finished and later[0].percent < 100  # the import, in hand …
    assert later[-1].finished and later[-1].percent == 100  # … then done
    assert all(not r.finished for r in later[:-1])
    assert [r.fraction for r in later] == sorted(r.fraction for r in later)
    assert index_is_exact(store._db)
    assert index_progress(store._db).backlog == 0
    store.close()


def test_progress_counts_a_draining_backlog(tmp_path: Path) -> None:
    store = Store(tmp_path / "new.db")
    conv = store.create_conversation("bulk")
    for n in range(150):
        store.add_user_message(conv, f"m{n}")
    assert index_progress(store._db) == IndexProgress(0.0, True, 150)
    index_step(store._db, rows=30)
    assert index_progress(store._db, backlog_peak=150) == IndexProgress(0.2, True, 120)
    assert index_progress(store._db, backlog_peak=150).percent == 20
    index_step(store._db, rows=30)  # 90 left: the usual few, nothing to say
    assert index_progress(store._db, backlog_peak=150).finished
    store.close()


# -- the search thread ---------------------------------------------------------------------------


class Batches:
    def __init__(self) -> None:
        self.got: list[tuple[int, list[int], bool, str]] = []
        self.done = threading.Event()

    def __call__(self, generation: int, rows: object, done: bool) -> None:
        assert isinstance(rows, list)
        self.got.append((generation, [r.id for r in rows], done, threading.current_thread().name))
        if done:
            self.done.set()


def test_the_search_thread_hands_rows_over_in_batches(old: Store) -> None:
    drain(old._db)
    batches = Batches()
    worker = SearchWorker(old.path, batches, batch_rows=4, batch_seconds=60)
    try:
        generation = worker.submit("e")
        assert batches.done.wait(10)
    finally:
        worker.close()
    truth = oracle(old._db, "e")
    assert len(truth) == 40
    # the first row at once, then batches of 4, the last three with the end
    assert [b[1] for b in batches.got] == [
        truth[:1],
        *(truth[i : i + 4] for i in range(1, 37, 4)),
        truth[37:],
    ]
    assert [b[2] for b in batches.got] == [False] * 10 + [True]
    assert {b[0] for b in batches.got} == {generation}
    assert {b[3] for b in batches.got} == {"conversation-search"}  # not the caller's thread


def test_a_newer_search_stops_the_older_one(old: Store) -> None:
    release = threading.Event()
    started = threading.Event()

    def slow_then_fast(db: object, query: str) -> object:
        if query == "slow":  # its rows read, then handed on only after "fast" was submitted
            rows = search_cursor(db, "stream").fetchall()  # type: ignore[arg-type]
            started.set()
            release.wait(10)
            return iter(rows)
        return search_cursor(db, query)  # type: ignore[arg-type]

    batches = Batches()
    worker = SearchWorker(
        old.path,
        batches,
        search=slow_then_fast,  # type: ignore[arg-type]
        batch_rows=1,  # (each row of the old one would go at once)
    )
    try:
        slow = worker.submit("slow")
        assert started.wait(10)
        fast = worker.submit("needle")
        release.set()
        assert batches.done.wait(10)
    finally:
        worker.close()
    assert [b for b in batches.got if b[0] == slow] == []  # not a row of the old one
    assert [row for b in batches.got for row in b[1]] == oracle(old._db, "needle")
    assert {b[0] for b in batches.got} == {fast} and batches.got[-1][2]


def test_a_search_that_fails_says_so_and_the_next_one_works(old: Store) -> None:
    def broken(db: object, query: str) -> object:
        if query == "boom":
            raise __import__("sqlite3").OperationalError("no such table: nowhere")
        return search_cursor(db, query)  # type: ignore[arg-type]

    batches = Batches()
    worker = SearchWorker(old.path, batches, search=broken)  # type: ignore[arg-type]
    try:
        worker.submit("boom")
        assert batches.done.wait(10)
        assert batches.got == [(1, [], True, "conversation-search")]
        assert "nowhere" in str(worker.error)
        batches.done.clear()
        worker.submit("needle")
        assert batches.done.wait(10)
        assert worker.error is None
        assert [row for b in batches.got[1:] for row in b[1]] == oracle(old._db, "needle")
    finally:
        worker.close()


def test_summaries_carry_the_rows_columns(old: Store) -> None:
    (row,) = search_cursor(old._db, "Chat 7 ").fetchall()
    assert ConversationSummary(*row) == old.conversation(8)
