"""The conversations database schema: a version table and forward migrations.

``MIGRATIONS[i]`` takes a database from version ``i`` to ``i + 1`` (version 0 is an empty
file). :func:`migrate` applies the missing ones, each in its own transaction, and records
the version in ``schema_version``. Migrations only ever move forward; a database newer
than this code raises :class:`SchemaTooNewError` instead of being touched.

Version 1: conversations, messages, turns, captures.
Version 2: soft delete (``conversations.deleted_at``), per-conversation tool definitions,
regenerated alternatives (``turns.alt_group``/``chosen``), token counts and stream facts
on turns, and the indexes the list and paging queries use.
Version 3: the model each answer asked for (``turns.model``; ``NULL`` for older answers).
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaTooNewError", "migrate", "schema_version"]

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

_V3 = """
ALTER TABLE turns ADD COLUMN model TEXT;
"""

MIGRATIONS: tuple[str, ...] = (_V1, _V2, _V3)
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


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` (autocommit mode) up to :data:`SCHEMA_VERSION`; returns the version."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied REAL)")
    current = schema_version(db)
    if current > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"database schema version {current} is newer than this app's ({SCHEMA_VERSION})"
        )
    for version in range(current, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[version]):
                db.execute(statement)
            db.execute(
                "INSERT INTO schema_version (version, applied) VALUES (?, julianday('now'))",
                (version + 1,),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    """Split a migration script on ``;`` line ends (no statement here contains one)."""
    return [s.strip() for s in script.split(";\n") if s.strip()]
