"""Searching conversations: which ones contain a piece of text, in their titles or their
messages' text — newest first, as the list shows them.

A search matches a *substring*, case-insensitively in every script (``"eam"`` finds
"stream", ``"поток"`` finds "Поток", ``"流式"`` finds "…令牌流式…"); the query is literal
text (quotes, ``*``, ``-``, ``AND``, ``%``, ``_``, ``\\`` mean themselves). Soft-deleted
conversations are never returned.

:func:`search_sql` asks the trigram index (:mod:`~streamscope.core.store.search_index`) for
queries of three characters or more, and reads the text itself for what the index cannot
answer: shorter queries, the messages the backfill has not reached yet, and the backlog
(the messages changed since they were indexed: a streaming answer, one that just ended).
Reading is ``LIKE`` (case-insensitive for ASCII) plus, for letters outside ASCII that have a
case, either each spelling of those letters (up to two of them) or — past two — a check in
Python (:func:`folded_contains`) after a ``LIKE`` that narrows it down. (That check is the
slow part: ~1 s for all 134 MB, and its trips through the GIL cost the window's thread
stalls of 10–30 ms; it only runs while the backfill or a big backlog leaves text unindexed,
since a query of one or two letters takes the ``LIKE`` spellings.)

Results come newest first (``updated``, then ``id``), the list's order: the query walks
the conversations in that order, so the first rows arrive before the last are found.
:class:`SearchWorker` runs searches in a thread with its own connection and hands each
search's rows over in batches as they come; a newer search interrupts an older one.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamscope.core.store.records import ConversationSummary, summary_from_row

__all__ = [
    "INDEX_MIN_CHARS",
    "IndexState",
    "SearchWorker",
    "folded_contains",
    "index_state",
    "prepare",
    "search_sql",
    "text_matches",
]

INDEX_MIN_CHARS = 3
"""The trigram index answers queries of at least this many characters."""

COLUMNS = "c.id, c.title, c.endpoint_name, c.model, c.created, c.updated"
"""A :class:`~streamscope.core.store.records.ConversationSummary` row."""

CHECK_EVERY = 100_000
"""A search looks whether it is still wanted every this many SQLite VM steps."""

_BACKLOG_AT_ONCE = 500
"""A backlog up to this many messages is read before the conversations are walked."""

_VARIANTS_MAX = 2
"""Up to this many cased letters outside ASCII, each spelling is one ``LIKE``."""


def folded_contains(text: str | None, folded: str) -> bool:
    """Whether ``text`` contains ``folded`` (already lower-cased), ignoring case."""
    return text is not None and folded in text.lower()


def prepare(db: sqlite3.Connection) -> None:
    """Register what :func:`search_sql`'s statements call (:func:`folded_contains`)."""
    db.create_function("folded_contains", 2, folded_contains, deterministic=True)


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _cased(ch: str) -> bool:
    """A letter outside ASCII whose case ``LIKE`` does not fold."""
    return not ch.isascii() and ch.lower() != ch.upper()


def text_matches(column: str, query: str) -> tuple[str, list[Any]]:
    """SQL true when ``column`` contains ``query`` ignoring case (without the index)."""
    cased = [ch for ch in query if _cased(ch)]
    if not cased:
        return f"{column} LIKE ? ESCAPE '\\'", [f"%{_escape_like(query)}%"]
    if any(len(ch.lower()) != 1 or len(ch.upper()) != 1 for ch in cased):  # ("İ".lower())
        return f"folded_contains({column}, ?)", [query.lower()]
    if len(cased) <= _VARIANTS_MAX:
        choices = [(ch.lower(), ch.upper()) if _cased(ch) else (ch,) for ch in query]
        spellings = dict.fromkeys("".join(p) for p in itertools.product(*choices))
        params: list[Any] = [f"%{_escape_like(s)}%" for s in spellings]
        return "(" + " OR ".join(f"{column} LIKE ? ESCAPE '\\'" for _ in params) + ")", params
    # narrow down with LIKE (each cased letter: any one character), then check in Python
    narrow = "".join("_" if _cased(ch) else _escape_like(ch) for ch in query)
    return (
        f"({column} LIKE ? ESCAPE '\\' AND folded_contains({column}, ?))",
        [f"%{narrow}%", query.lower()],
    )


def _phrase(query: str) -> str:
    """The query as one FTS5 string: with the trigram tokenizer, a substring."""
    return '"' + query.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class IndexState:
    """What the index does not hold yet: messages and titles with ids up to the backfill's
    marks, and the ``backlog`` (messages changed since they were indexed)."""

    messages_below: int = 0
    titles_below: int = 0
    backlog: int = 0


def index_state(db: sqlite3.Connection) -> IndexState:
    """The index's :class:`IndexState` (a read; any connection)."""
    marks = dict(db.execute("SELECT source, below FROM search_backfill").fetchall())
    (backlog,) = db.execute("SELECT COUNT(*) FROM search_backlog").fetchone()
    return IndexState(int(marks.get("messages", 0)), int(marks.get("conversations", 0)), backlog)


def search_sql(query: str, state: IndexState) -> tuple[str, list[Any]]:
    """The statement listing the conversations that contain ``query`` (titles or message
    text), newest first, and its parameters. What ``state`` says is not indexed is read:
    a small backlog at once (found first, it costs little), otherwise conversation by
    conversation like the rest, so that the first rows come before the last conversation is
    read. Run it on a connection :func:`prepare` has seen."""
    title_sql, title_params = text_matches("c.title", query)
    text_sql, text_params = text_matches("m.text", query)
    where: list[str] = []
    params: list[Any] = []
    unindexed: list[str] = []  # (messages read conversation by conversation)
    if len(query) < INDEX_MIN_CHARS:
        where.append(title_sql)
        params += title_params
        unindexed.append("1")
    else:
        phrase = _phrase(query)
        where.append(
            "c.id IN (SELECT conversation_id FROM messages WHERE +id IN"
            " (SELECT rowid FROM message_index WHERE message_index MATCH ?))"
        )
        where.append("c.id IN (SELECT rowid FROM title_index WHERE title_index MATCH ?)")
        params += [phrase, phrase]
        if state.titles_below > 0:
            where.append(f"(c.id <= ? AND {title_sql})")
            params += [state.titles_below, *title_params]
        if state.backlog > _BACKLOG_AT_ONCE:
            unindexed.append("m.id IN (SELECT message_id FROM search_backlog)")
        elif state.backlog:
            where.append(
                "c.id IN (SELECT m.conversation_id FROM messages m WHERE m.id IN"
                f" (SELECT message_id FROM search_backlog) AND {text_sql})"
            )
            params += text_params
        if state.messages_below > 0:
            unindexed.append(f"m.id <= {int(state.messages_below)}")
    if unindexed:
        where.append(
            "EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id"
            f" AND ({' OR '.join(unindexed)}) AND {text_sql})"
        )
        params += text_params
    sql = (
        f"SELECT {COLUMNS} FROM conversations c WHERE c.deleted_at IS NULL"
        f" AND ({' OR '.join(where)}) ORDER BY c.updated DESC, c.id DESC"
    )
    return sql, params


def search_cursor(db: sqlite3.Connection, query: str) -> sqlite3.Cursor:
    """A cursor over the conversations containing ``query``, newest first (read it in the
    same thread; the state is read first, in the same snapshot when in a transaction)."""
    sql, params = search_sql(query, index_state(db))
    return db.execute(sql, params)


Batch = Callable[[int, Sequence[ConversationSummary], bool], None]
"""``on_batch(generation, rows, done)``: rows of search ``generation`` (``done``: its last)."""


class SearchWorker:
    """Runs one search at a time in a daemon thread with its own read connection to
    ``path``. :meth:`submit` returns the search's generation; rows go to ``on_batch`` (called
    in the worker's thread) in batches: the first row found at once, then at most
    ``batch_rows`` a batch, and whatever was found once ``batch_seconds`` have passed since
    the last batch — so the first rows are seen before the search ends. A newer
    :meth:`submit` (or :meth:`cancel`) interrupts the one running: it ends without its
    ``done`` batch."""

    def __init__(
        self,
        path: Path | str,
        on_batch: Batch,
        *,
        batch_rows: int = 200,
        batch_seconds: float = 0.05,
        search: Callable[[sqlite3.Connection, str], sqlite3.Cursor] = search_cursor,
    ) -> None:
        self.path = str(path)
        self._on_batch = on_batch
        self._batch_rows = batch_rows
        self._batch_seconds = batch_seconds
        self._search = search
        self._lock = threading.Condition()
        self._generation = 0
        self._pending: tuple[int, str] | None = None
        self._closed = False
        self.error: BaseException | None = None
        """The last search's error, if it failed (it ends with its ``done`` batch)."""
        self._thread = threading.Thread(target=self._run, name="conversation-search", daemon=True)
        self._thread.start()

    def submit(self, query: str) -> int:
        """Search ``query`` (instead of whatever runs); returns its generation."""
        with self._lock:
            self._generation += 1
            self._pending = (self._generation, query)
            self._lock.notify()
            return self._generation

    def cancel(self) -> None:
        """Stop the search running (none is reported further)."""
        with self._lock:
            self._generation += 1
            self._pending = None

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            self._closed = True
            self._generation += 1
            self._pending = None
            self._lock.notify()
        self._thread.join(timeout)

    def _current(self, generation: int) -> bool:
        return generation == self._generation and not self._closed

    def _run(self) -> None:
        db: sqlite3.Connection | None = None
        try:
            while True:
                with self._lock:
                    while self._pending is None and not self._closed:
                        self._lock.wait()
                    if self._closed:
                        return
                    assert self._pending is not None
                    generation, query = self._pending
                    self._pending = None
                if db is None:
                    db = sqlite3.connect(self.path, isolation_level=None)
                    db.execute("PRAGMA query_only = ON")
                    prepare(db)
                self._one(db, generation, query)
        finally:
            if db is not None:
                db.close()

    def _one(self, db: sqlite3.Connection, generation: int, query: str) -> None:
        found: list[ConversationSummary] = []
        sent = 0  # rows handed on so far
        last = time.monotonic()

        def flush(done: bool) -> None:
            nonlocal found, last, sent
            if found or done:
                self._on_batch(generation, found, done)
            sent += len(found)
            found = []
            last = time.monotonic()

        def due() -> bool:  # the first row at once; then at most every batch_seconds
            return bool(found) and (not sent or time.monotonic() - last >= self._batch_seconds)

        def progress() -> int:  # (between steps of the statement: stop, or hand rows on)
            if not self._current(generation):
                return 1
            if due():
                flush(False)
            return 0

        db.set_progress_handler(progress, CHECK_EVERY)
        try:
            db.execute("BEGIN")  # one snapshot: the marks and the rows agree
            for row in self._search(db, query):
                if not self._current(generation):
                    return
                found.append(summary_from_row(row))
                if len(found) >= self._batch_rows or due():
                    flush(False)
            if self._current(generation):
                self.error = None
                flush(True)
        except sqlite3.OperationalError as exc:
            if self._current(generation):  # (not interrupted by a newer search: failed)
                self.error = exc
                flush(True)
        finally:
            db.set_progress_handler(None, 0)
            if db.in_transaction:
                db.execute("COMMIT")
