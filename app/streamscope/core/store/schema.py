"""The conversations database schema: a version table and forward migrations.

``MIGRATIONS[i]`` takes a database from version ``i`` to ``i + 1`` (version 0 is an empty
file). :func:`migrate` applies the missing ones, each in its own transaction, and records
the version in ``schema_version``. Migrations only ever move forward; a database newer
than this code raises :class:`SchemaTooNewError` instead of being touched.

Version 1: conversations, messages, turns, captures.
Version 2: soft delete (``conversations.deleted_at``), per-conversation tool definitions,
regenerated alternatives (``turns.alt_group``/``chosen``), token counts and stream facts
on turns, and the indexes the list and paging queries use.
Version 3: a conversation is a tree (edited prompts keep what they replaced): every message
follows ``messages.parent_id`` (``NULL``: it opens the conversation) and ``messages.chosen``
marks the alternative shown among those sharing a parent. Rows from version 2 (a list whose
only alternatives were regenerated answers) get the parent the list implied: the message
before them, or — after regenerated answers — the chosen one of those; an alternative
answer, its first alternative's parent. (The index on ``turns.alt_group``, made before the
parents are filled, keeps that linear: 0.55 s for 21,000 messages, 19 s without it.) The step
is additive and idempotent: it adds only the columns and indexes missing (:func:`_v3_tree`),
and fills a column only when it added it.
Version 4: the model each answer asked for (``turns.model``; ``NULL`` for older answers);
the step runs version 3's again first, so a database numbered 3 by a build that had only
one of the two is completed either way.
Version 5: the full-text index search uses (:mod:`~streamscope.core.store.search_index`):
two FTS5 tables with the trigram tokenizer over ``messages.text`` and ``conversations.title``
(external content: the text is not stored twice), the triggers that keep them in step, the
backlog of messages whose text changed since they were indexed, and the backfill's place.
The step is instant whatever the database holds: it indexes nothing itself — rows that
exist already are indexed in the background afterwards, newest first
(:class:`~streamscope.core.store.search_index.SearchIndexer`), and searches cover the part
not indexed yet by reading it. Every statement is ``IF NOT EXISTS`` / ``OR IGNORE``.
Version 6: each answer's short verdict line kept with it (``turns.verdict``: ``NULL`` not
checked, ``''`` checked with nothing to say) and the digest of the rules that made it
(``turns.verdict_rules``: :func:`~streamscope.core.verdict.catalog.rules_digest`); older
answers have neither, and are checked from their captures when shown
(:mod:`~streamscope.core.store.verdicts`). Additive and idempotent, like version 3's step.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "SchemaTooNewError",
    "migrate",
    "schema_version",
]

_V1 = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    endpoint_name TEXT,
    model TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT '',
    reasoning TEXT NOT NULL DEFAULT '',
    reasoning_channel TEXT,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    name TEXT,
    created REAL NOT NULL,
    UNIQUE (conversation_id, seq)
);
CREATE TABLE captures (
    id TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    path TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE turns (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('streaming', 'done')),
    outcome TEXT,
    reason TEXT NOT NULL DEFAULT '',
    finish_reason TEXT,
    usage TEXT,
    timings TEXT,
    warnings TEXT NOT NULL DEFAULT '[]',
    capture_id TEXT REFERENCES captures(id) ON DELETE SET NULL
);
"""

_V2 = """
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
UPDATE turns SET alt_group = message_id WHERE alt_group IS NULL;
CREATE INDEX conversations_updated ON conversations (deleted_at, updated);
CREATE INDEX turns_status ON turns (status);
CREATE INDEX turns_capture ON turns (capture_id);
"""

_V3_CHOSEN = """
UPDATE messages SET chosen =
    COALESCE((SELECT t.chosen FROM turns t WHERE t.message_id = messages.id), 1)
"""

_V3_PARENTS = """
UPDATE messages SET parent_id = (
    SELECT p.id FROM messages p
    WHERE p.conversation_id = messages.conversation_id AND p.seq < messages.seq
    ORDER BY p.seq DESC LIMIT 1);
UPDATE messages SET parent_id = (
    SELECT COALESCE(
        (SELECT o.message_id FROM turns o WHERE o.alt_group = g.alt_group AND o.chosen = 1
         ORDER BY o.message_id DESC LIMIT 1),
        (SELECT MAX(o.message_id) FROM turns o WHERE o.alt_group = g.alt_group))
    FROM turns g WHERE g.message_id = messages.parent_id)
WHERE parent_id IN (SELECT message_id FROM turns WHERE alt_group IS NOT NULL);
UPDATE messages SET parent_id = (
    SELECT first.parent_id FROM turns t JOIN messages first ON first.id = t.alt_group
    WHERE t.message_id = messages.id)
WHERE id IN (
    SELECT message_id FROM turns
    WHERE alt_group <> message_id AND alt_group IN (SELECT id FROM messages))
"""


def _v3_tree(db: sqlite3.Connection) -> None:
    """Version 3, additive and idempotent: each column is added (and filled from the v2
    list) only when missing, each index only when missing — so a database that already has
    them (e.g. from a build that numbered its migrations differently) is left as it is."""
    db.execute("CREATE INDEX IF NOT EXISTS turns_alt_group ON turns (alt_group, chosen)")
    if _add_column(db, "messages", "chosen", "INTEGER NOT NULL DEFAULT 1"):
        _run(db, _V3_CHOSEN)
    parent = "INTEGER REFERENCES messages(id) ON DELETE CASCADE"
    if _add_column(db, "messages", "parent_id", parent):
        _run(db, _V3_PARENTS)
    db.execute(
        "CREATE INDEX IF NOT EXISTS messages_parent ON messages (conversation_id, parent_id)"
    )


def _add_column(db: sqlite3.Connection, table: str, column: str, decl: str) -> bool:
    """``ALTER TABLE table ADD COLUMN column decl`` unless it exists; True when added."""
    if any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})")):
        return False
    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
    return True


Migration = str | Callable[[sqlite3.Connection], None]
"""A script of ``;``-separated statements, or a function given the open transaction."""


def _v4_model(db: sqlite3.Connection) -> None:
    """Version 4: ``turns.model`` (after making sure version 3's tree is there)."""
    _v3_tree(db)
    _add_column(db, "turns", "model", "TEXT")


def _v6_verdict(db: sqlite3.Connection) -> None:
    """Version 6: ``turns.verdict`` and ``turns.verdict_rules`` (each only when missing)."""
    _add_column(db, "turns", "verdict", "TEXT")
    _add_column(db, "turns", "verdict_rules", "TEXT")


_V5_SEARCH = """
CREATE VIRTUAL TABLE IF NOT EXISTS message_index USING fts5(
    text, content='messages', content_rowid='id', tokenize='trigram');
CREATE VIRTUAL TABLE IF NOT EXISTS title_index USING fts5(
    title, content='conversations', content_rowid='id', tokenize='trigram');
CREATE TABLE IF NOT EXISTS search_backlog (message_id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS search_backfill (
    source TEXT PRIMARY KEY, below INTEGER NOT NULL, start INTEGER NOT NULL);
INSERT OR IGNORE INTO search_backfill (source, below, start)
    SELECT 'messages', COALESCE(MAX(id), 0), COALESCE(MAX(id), 0) FROM messages;
INSERT OR IGNORE INTO search_backfill (source, below, start)
    SELECT 'conversations', COALESCE(MAX(id), 0), COALESCE(MAX(id), 0) FROM conversations;
CREATE TRIGGER IF NOT EXISTS messages_search_insert AFTER INSERT ON messages BEGIN
    INSERT OR IGNORE INTO search_backlog (message_id) VALUES (new.id);
END;
CREATE TRIGGER IF NOT EXISTS messages_search_update AFTER UPDATE OF text ON messages
WHEN old.text IS NOT new.text BEGIN
    INSERT INTO message_index (message_index, rowid, text) SELECT 'delete', old.id, old.text
    WHERE old.id > (SELECT below FROM search_backfill WHERE source = 'messages')
    AND old.id NOT IN (SELECT message_id FROM search_backlog);
    INSERT OR IGNORE INTO search_backlog (message_id) VALUES (new.id);
END;
CREATE TRIGGER IF NOT EXISTS messages_search_delete AFTER DELETE ON messages BEGIN
    INSERT INTO message_index (message_index, rowid, text) SELECT 'delete', old.id, old.text
    WHERE old.id > (SELECT below FROM search_backfill WHERE source = 'messages')
    AND old.id NOT IN (SELECT message_id FROM search_backlog);
    DELETE FROM search_backlog WHERE message_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS conversations_search_insert AFTER INSERT ON conversations
WHEN new.id > (SELECT below FROM search_backfill WHERE source = 'conversations') BEGIN
    INSERT INTO title_index (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER IF NOT EXISTS conversations_search_update AFTER UPDATE OF title ON conversations
WHEN old.title IS NOT new.title
AND old.id > (SELECT below FROM search_backfill WHERE source = 'conversations') BEGIN
    INSERT INTO title_index (title_index, rowid, title) VALUES ('delete', old.id, old.title);
    INSERT INTO title_index (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER IF NOT EXISTS conversations_search_delete AFTER DELETE ON conversations
WHEN old.id > (SELECT below FROM search_backfill WHERE source = 'conversations') BEGIN
    INSERT INTO title_index (title_index, rowid, title) VALUES ('delete', old.id, old.title);
END;
"""
"""Version 5. A message is in ``message_index`` exactly when its id is above the messages'
``below`` and it is not in ``search_backlog`` (a conversation's title: when its id is above
the conversations' ``below``); the triggers keep that true. A new message, or one whose
text changes, goes to the backlog (its old text leaves the index first): saving a streaming
answer's partial text costs two lookups, not re-indexing the answer each time. The indexer
indexes the backlog and, newest first, what is below ``below``. Titles are short: their
index follows renames at once."""


def _run_script(script: str) -> Callable[[sqlite3.Connection], None]:
    """A migration that runs ``script`` whole (its triggers contain ``;``)."""

    def step(db: sqlite3.Connection) -> None:
        for statement in _statements(script):
            db.execute(statement)

    return step


def _statements(script: str) -> list[str]:
    """``script``'s statements: :func:`sqlite3.complete_statement` finds where each ends."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    assert not current.strip(), "a statement without its ';'"
    return out


MIGRATIONS: tuple[Migration, ...] = (
    _V1,
    _V2,
    _v3_tree,
    _v4_model,
    _run_script(_V5_SEARCH),
    _v6_verdict,
)
SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNewError(RuntimeError):
    """The database was written by a newer StreamScope (its schema version is higher)."""


def schema_version(db: sqlite3.Connection) -> int:
    """The database's schema version (0 for an empty database)."""
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(db: sqlite3.Connection, upto: int = SCHEMA_VERSION) -> int:
    """Bring ``db`` (autocommit mode) up to :data:`SCHEMA_VERSION` (or ``upto``: a database
    as an older version left it, for tests); returns the version."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied REAL)")
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"database schema version {current} is newer than this app's ({SCHEMA_VERSION})"
        )
    for version in range(current, upto):
        db.execute("BEGIN IMMEDIATE")
        try:
            step = MIGRATIONS[version]
            if isinstance(step, str):
                _run(db, step)
            else:
                step(db)
            db.execute(
                "INSERT INTO schema_version (version, applied) VALUES (?, julianday('now'))",
                (version + 1,),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return max(current, upto)


def _run(db: sqlite3.Connection, script: str) -> None:
    """Run a migration script, split on ``;`` line ends (no statement here contains one)."""
    for statement in (s.strip() for s in script.split(";\n")):
        if statement:
            db.execute(statement)
