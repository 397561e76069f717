"""Keeping the full-text index full: the backlog of changed messages, and the backfill of
what a database held before it had an index.

The index itself (two FTS5 tables with the trigram tokenizer) and the triggers that keep it in
step are schema version 5 (:mod:`~streamscope.core.store.schema`). A message is indexed
exactly when its id is above the backfill's ``below`` and it is not in ``search_backlog``:

- a new message, or one whose text changes, joins the backlog (a streaming answer's partial
  saves cost the app two lookups each); :func:`index_step` indexes backlog rows whose answer
  has finished streaming, the newest first;
- rows that existed when the index was added are below ``below``: :func:`index_step` indexes
  them in batches from the newest down, lowering ``below`` in the same transaction — so an
  interrupted backfill resumes where it stopped, and a search knows exactly which part it
  must read instead (:mod:`~streamscope.core.store.search`).

:class:`SearchIndexer` runs the steps in a thread of its own, on its own connection, in
short transactions (the app's writes wait for the write lock at most about one batch).

Measured on a profile of 1,000 conversations / 67k messages / 134 MB of text (2 cores,
``tests/benchmarks/bench_search.py``): the trigram index takes 270 MB (the profile grows from
170 to 440 MB) and ~26 s of background batches (~22 s in one transaction). Unicode61 words
with prefix indexes would take 86 MB and ~6 s, but find neither the inside of a word ("eam"
in "stream") nor a CJK word inside a run of CJK text — search before the index found both
(``LIKE``); trigram without positions (``detail=none``, 34 MB) answers no phrase, so every
candidate's text would be read again (a common word: slower than no index). So: trigram,
with positions. Re-indexing each partial save of a 20 KB answer at once would cost 8–15 ms a
save, and 200–450 ms when FTS5 merges segments, on the thread that saves; through the backlog
a save costs 0.1 ms (0.08 ms with no index at all).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IndexProgress", "SearchIndexer", "index_progress", "index_step"]

BATCH_SECONDS = 0.015
"""What one transaction of the indexer aims at: the app's own writes (a streaming answer's
partial saves) wait for the write lock at most about this long."""


QUIET_BACKLOG = 100
"""A backlog this small is the app's usual state (answers that just ended): nothing to say."""


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """How much of the history is indexed: ``fraction`` of the work in hand done (the
    backfill, and a backlog bigger than :data:`QUIET_BACKLOG`, e.g. after an import; 1.0
    when there is none), whether the backfill is ``backfilled``, how many messages are in
    the ``backlog`` (streaming answers among them)."""

    fraction: float
    backfilled: bool
    backlog: int

    @property
    def finished(self) -> bool:
        """Nothing worth a word left: backfilled, and the backlog is the usual few."""
        return self.backfilled and self.backlog <= QUIET_BACKLOG

    @property
    def percent(self) -> int:
        """The work done, in whole per cent (100 only when it is finished)."""
        return 100 if self.finished else min(99, int(self.fraction * 100))


def index_progress(db: sqlite3.Connection, backlog_peak: int = 0) -> IndexProgress:
    """Where the index stands (a read; any connection). ``backlog_peak``: the biggest
    backlog seen since the work began (the indexer keeps it), so that a draining backlog
    counts as progress."""
    rows = db.execute("SELECT source, below, start FROM search_backfill")
    state = {r[0]: (int(r[1]), int(r[2])) for r in rows}
    below, start = state.get("messages", (0, 0))
    titles_below, _ = state.get("conversations", (0, 0))
    (backlog,) = db.execute("SELECT COUNT(*) FROM search_backlog").fetchone()
    backfilled = below <= 0 and titles_below <= 0
    waiting = backlog if backlog > QUIET_BACKLOG else 0
    total = (start if below > 0 else 0) + max(backlog_peak, waiting)
    fraction = 1.0 if total <= 0 else (total - max(below, 0) - waiting) / total
    return IndexProgress(max(0.0, fraction), backfilled, int(backlog))


def index_step(db: sqlite3.Connection, rows: int = 100) -> int:
    """Index one batch, in one transaction: conversation titles still below the backfill's
    mark; else up to ``rows`` backlog messages that are not streaming and up to ``rows``
    messages below the mark (the newest first: new writes never starve the backfill).
    Returns how many rows it indexed (0: nothing to do now). ``db`` is in autocommit mode
    (``isolation_level=None``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        done = _titles(db, rows * 10) or _backlog(db, rows) + _backfill(db, rows)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return done


def _below(db: sqlite3.Connection, source: str) -> int:
    row = db.execute("SELECT below FROM search_backfill WHERE source = ?", (source,)).fetchone()
    return int(row[0]) if row else 0


def _lowest(db: sqlite3.Connection, table: str, below: int, rows: int) -> int:
    """The new mark after taking the ``rows`` highest ids of ``table`` up to ``below``: the
    id under the lowest one taken (0 when that took everything left)."""
    (lowest, count) = db.execute(
        f"SELECT MIN(id), COUNT(*) FROM (SELECT id FROM {table} WHERE id <= ?"
        " ORDER BY id DESC LIMIT ?)",
        (below, rows),
    ).fetchone()
    return 0 if count < rows else int(lowest) - 1


def _titles(db: sqlite3.Connection, rows: int) -> int:
    below = _below(db, "conversations")
    if below <= 0:
        return 0
    low = _lowest(db, "conversations", below, rows)
    cur = db.execute(
        "INSERT INTO title_index (rowid, title) SELECT id, title FROM conversations"
        " WHERE id > ? AND id <= ?",
        (low, below),
    )
    db.execute("UPDATE search_backfill SET below = ? WHERE source = 'conversations'", (low,))
    return max(cur.rowcount, 1)


def _backlog(db: sqlite3.Connection, rows: int) -> int:
    ready = [
        r[0]
        for r in db.execute(
            "SELECT b.message_id FROM search_backlog b WHERE b.message_id > ? AND NOT EXISTS"
            " (SELECT 1 FROM turns t WHERE t.message_id = b.message_id AND t.status = 'streaming')"
            " ORDER BY b.message_id DESC LIMIT ?",
            (_below(db, "messages"), rows),
        )
    ]
    if not ready:
        return 0
    marks = ",".join("?" * len(ready))
    db.execute(
        f"INSERT INTO message_index (rowid, text) SELECT id, text FROM messages"
        f" WHERE id IN ({marks})",
        ready,
    )
    db.execute(f"DELETE FROM search_backlog WHERE message_id IN ({marks})", ready)
    return len(ready)


def _backfill(db: sqlite3.Connection, rows: int) -> int:
    below = _below(db, "messages")
    if below <= 0:
        return 0
    low = _lowest(db, "messages", below, rows)
    # (a backlog row down here — an id reused after a purge — waits until it is above)
    cur = db.execute(
        "INSERT INTO message_index (rowid, text) SELECT id, text FROM messages"
        " WHERE id > ? AND id <= ? AND id NOT IN (SELECT message_id FROM search_backlog)",
        (low, below),
    )
    db.execute("UPDATE search_backfill SET below = ? WHERE source = 'messages'", (low,))
    return max(cur.rowcount, 1)


def _lower_priority() -> None:
    """Nice the calling thread (Linux: a thread id is a process id to ``setpriority``), so
    the window's thread gets the cores first; elsewhere nothing."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


class SearchIndexer:
    """Runs :func:`index_step` in a daemon thread on its own connection to ``path``, until
    :meth:`stop`: batches sized to take about :data:`BATCH_SECONDS` each while there is work,
    then a look every ``idle_seconds`` (or at :meth:`wake`); a database another writer keeps
    locked past ``lock_timeout`` is tried again a second later. ``on_progress`` is called
    from that thread while there is work in hand (:attr:`IndexProgress.finished` false; at
    most every ``report_seconds``) and once when it is finished; it must only hand the value
    on. While ``busy()`` says so (a search runs: it reads what is not indexed yet, and wants
    the disk and a core) no batch starts."""

    def __init__(
        self,
        path: Path | str,
        *,
        on_progress: Callable[[IndexProgress], None] | None = None,
        idle_seconds: float = 1.0,
        report_seconds: float = 0.25,
        batch_seconds: float = BATCH_SECONDS,
        busy: Callable[[], bool] = lambda: False,
        lock_timeout: float = 5.0,
    ) -> None:
        self.path = str(path)
        self._busy = busy
        self._lock_timeout = lock_timeout
        self._on_progress = on_progress
        self._idle = idle_seconds
        self._report = report_seconds
        self._batch = batch_seconds
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="search-indexer", daemon=True)
        self._reported: IndexProgress | None = None
        self._reported_at = 0.0
        self._peak = 0  # the biggest backlog since the work in hand began
        self.error: BaseException | None = None
        """What stopped the thread, if anything but :meth:`stop` did."""

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Look for work now (e.g. after an answer finished)."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the batch in progress (its transaction commits or rolls back whole)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        _lower_priority()
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            self.error = exc
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._lock_timeout * 1000)}")
            db.execute("PRAGMA synchronous = NORMAL")  # (WAL: commits survive a crash)
            self._loop(db)
        except sqlite3.Error as exc:  # (a broken or vanished database: search reads instead)
            self.error = exc
        finally:
            db.close()

    def _loop(self, db: sqlite3.Connection) -> None:
        rows = 20
        self._report_state(db, force=True)
        while not self._stop.is_set():
            if self._busy():
                self._stop.wait(0.02)
                continue
            t0 = time.monotonic()
            try:
                done = index_step(db, rows)
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise
                self._stop.wait(1.0)
                continue
            elapsed = time.monotonic() - t0
            if done:  # aim the next batch at the time budget (rows are ~0–100 KB each)
                rows = max(1, min(2000, int(rows * self._batch / max(elapsed, 1e-4))))
                if time.monotonic() - self._reported_at >= self._report:
                    self._report_state(db)
                continue
            self._report_state(db)
            self._wake.wait(self._idle)
            self._wake.clear()

    def _report_state(self, db: sqlite3.Connection, *, force: bool = False) -> None:
        """Report the progress while there is work in hand, and once when it is finished."""
        progress = index_progress(db, self._peak)
        self._peak = 0 if progress.finished else max(self._peak, progress.backlog)
        was = self._reported
        if force or was is None or not (was.finished and progress.finished):
            self._report_progress(progress)
        self._reported = progress
        self._reported_at = time.monotonic()

    def _report_progress(self, progress: IndexProgress) -> None:
        if self._on_progress is not None:
            self._on_progress(progress)
