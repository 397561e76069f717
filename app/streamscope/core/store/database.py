"""Conversations on disk: SQLite (WAL, foreign keys on) in ``data_dir()/streamscope.db``.

Every call is synchronous, small and quick (one statement or one short transaction), so
the window can call it from the event-loop thread or hand it to ``run_in_executor``; a
lock makes a :class:`Store` safe to share between those threads.

Crash safety, as the window uses it::

    conv = store.create_conversation(title, endpoint_name=..., model=...)
    store.add_user_message(conv, prompt)                 # when sent
    msg = store.begin_assistant_message(conv)            # status 'streaming'
    store.update_assistant_partial(msg, text, reasoning, tool_calls)   # >= once a second
    store.finish_assistant_message(msg, turn, capture_id)             # any outcome
    ...
    store.recover_interrupted()      # at startup: 'streaming' -> truncated, text kept

WAL with ``synchronous=NORMAL`` makes every commit survive the app being killed (only a
power loss can drop the last commits). Rows become domain objects (:class:`StoredMessage`,
:class:`StoredTurn` ...) through the explicit converters in
:mod:`streamscope.core.store.records`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from streamscope.core.paths import data_dir
from streamscope.core.store.history import ToolResult
from streamscope.core.store.records import (
    ConversationSummary,
    StoredConversation,
    StoredMessage,
    StoredTurn,
    calls_to_json,
    dumps_json,
    message_from_row,
    summary_from_row,
    timings_to_dict,
    to_chat_history,
    tools_from_json,
    tools_to_json,
    turn_from_stored,
)
from streamscope.core.store.schema import migrate
from streamscope.core.turn.model import ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolCall, ToolDefinition

__all__ = [
    "INTERRUPTED_REASON",
    "ConversationSummary",
    "Store",
    "StoredConversation",
    "StoredMessage",
    "StoredTurn",
    "default_db_path",
    "to_chat_history",
    "turn_from_stored",
]

INTERRUPTED_REASON = "app closed during the stream"
DB_NAME = "streamscope.db"


def default_db_path() -> Path:
    """``data_dir()/streamscope.db`` (resolved now: honours ``STREAMSCOPE_HOME``)."""
    return data_dir() / DB_NAME


# -- the store ---------------------------------------------------------------------------

_MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.seq, m.role, m.text, m.reasoning, m.reasoning_channel,"
    " m.tool_calls, m.tool_call_id, m.name, m.created,"
    " t.message_id, t.status, t.outcome, t.reason, t.finish_reason, t.usage, t.input_tokens,"
    " t.output_tokens, t.timings, t.warnings, t.capture_id, t.alt_group, t.chosen,"
    " t.http_status, t.terminal_signal, t.bytes_received, t.events, t.malformed_frames"
)
_MESSAGES_FROM = "FROM messages m LEFT JOIN turns t ON t.message_id = m.id"
_CONV_COLUMNS = "id, title, endpoint_name, model, created, updated"


class Store:
    """The conversations database; see the module docstring. ``path=None`` opens
    :func:`default_db_path`; ``":memory:"`` works for tests."""

    def __init__(
        self, path: Path | str | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.path: Path | str = default_db_path() if path is None else path
        target = str(self.path)
        self._clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA busy_timeout = 5000")
            migrate(self._db)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            return self._db.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- conversations ------------------------------------------------------------------

    def create_conversation(
        self,
        title: str = "",
        *,
        endpoint_name: str | None = None,
        model: str | None = None,
        tools: Sequence[ToolDefinition] = (),
    ) -> int:
        now = self._clock()
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO conversations (title, endpoint_name, model, created, updated,"
                " tools_json) VALUES (?, ?, ?, ?, ?, ?)",
                (title, endpoint_name, model, now, now, tools_to_json(tools)),
            )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def list_conversations(
        self, search: str | None = None, limit: int = 100, offset: int = 0
    ) -> list[ConversationSummary]:
        """Newest first; ``search`` matches titles and message text (case-insensitive for
        ASCII)."""
        sql = f"SELECT {_CONV_COLUMNS} FROM conversations c WHERE deleted_at IS NULL"
        params: list[Any] = []
        if search:
            pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            pattern += "%"
            sql += (
                " AND (title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m WHERE"
                " m.conversation_id = c.id AND (m.text LIKE ? ESCAPE '\\')))"
            )
            params += [pattern, pattern]
        sql += " ORDER BY updated DESC, id DESC LIMIT ? OFFSET ?"
        params += [limit, offset]
        return [summary_from_row(row) for row in self._all(sql, params)]

    def most_recent_conversation(self) -> ConversationSummary | None:
        found = self.list_conversations(limit=1)
        return found[0] if found else None

    def conversation(self, conv_id: int) -> ConversationSummary | None:
        row = self._one(
            f"SELECT {_CONV_COLUMNS} FROM conversations WHERE id = ? AND deleted_at IS NULL",
            (conv_id,),
        )
        return summary_from_row(row) if row else None

    def load_conversation(self, conv_id: int, *, limit: int | None = 200) -> StoredConversation:
        """The conversation with its last ``limit`` messages (all with ``None``). Raises
        ``KeyError`` when it does not exist (or is deleted)."""
        row = self._one(
            f"SELECT {_CONV_COLUMNS}, tools_json FROM conversations"
            " WHERE id = ? AND deleted_at IS NULL",
            (conv_id,),
        )
        if row is None:
            raise KeyError(conv_id)
        messages = self.load_messages(conv_id, limit=None if limit is None else limit + 1)
        has_more = limit is not None and len(messages) > limit
        if has_more:
            messages = messages[1:]
        return StoredConversation(
            summary_from_row(row[:6]), tools_from_json(row[6]), messages, has_more
        )

    def load_messages(
        self, conv_id: int, before_seq: int | None = None, limit: int | None = 100
    ) -> list[StoredMessage]:
        """Up to ``limit`` messages before ``before_seq`` (the newest ones), in order."""
        sql = f"SELECT {_MESSAGE_COLUMNS} {_MESSAGES_FROM} WHERE m.conversation_id = ?"
        params: list[Any] = [conv_id]
        if before_seq is not None:
            sql += " AND m.seq < ?"
            params.append(before_seq)
        sql += " ORDER BY m.seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._all(sql, params)
        return [message_from_row(row) for row in reversed(rows)]

    def rename(self, conv_id: int, title: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE conversations SET title = ?, updated = ? WHERE id = ?",
                (title, self._clock(), conv_id),
            )

    def set_endpoint(self, conv_id: int, endpoint_name: str | None, model: str | None) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE conversations SET endpoint_name = ?, model = ? WHERE id = ?",
                (endpoint_name, model, conv_id),
            )

    def set_tools(self, conv_id: int, tools: Sequence[ToolDefinition]) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE conversations SET tools_json = ? WHERE id = ?",
                (tools_to_json(tools), conv_id),
            )

    def delete(self, conv_id: int) -> None:
        """Hide the conversation (undo with :meth:`restore`; :meth:`purge_deleted` removes
        it for good)."""
        with self._tx() as db:
            db.execute(
                "UPDATE conversations SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL",
                (self._clock(), conv_id),
            )

    def restore(self, conv_id: int) -> None:
        with self._tx() as db:
            db.execute("UPDATE conversations SET deleted_at = NULL WHERE id = ?", (conv_id,))

    def purge_deleted(self, older_than: float = 0.0) -> list[str]:
        """Remove conversations deleted more than ``older_than`` seconds ago, with their
        messages; returns the ids of the captures they referenced (their rows are removed
        too: the caller deletes the files, e.g. :meth:`CaptureStore.remove`)."""
        cutoff = self._clock() - older_than
        with self._tx() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM conversations WHERE deleted_at IS NOT NULL AND deleted_at <= ?",
                    (cutoff,),
                )
            ]
            captures: list[str] = []
            for conv_id in ids:
                captures += [
                    r[0]
                    for r in db.execute(
                        "SELECT t.capture_id FROM turns t JOIN messages m ON m.id = t.message_id"
                        " WHERE m.conversation_id = ? AND t.capture_id IS NOT NULL",
                        (conv_id,),
                    )
                ]
                db.execute("DELETE FROM conversations WHERE id = ?", (conv_id,))
            db.executemany("DELETE FROM captures WHERE id = ?", [(c,) for c in captures])
        return captures

    # -- messages -----------------------------------------------------------------------

    def _insert_message(
        self,
        db: sqlite3.Connection,
        conv_id: int,
        role: str,
        text: str = "",
        *,
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> tuple[int, int]:
        now = self._clock()
        (seq,) = db.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE conversation_id = ?",
            (conv_id,),
        ).fetchone()
        cur = db.execute(
            "INSERT INTO messages (conversation_id, seq, role, text, tool_call_id, name, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (conv_id, seq, role, text, tool_call_id, name, now),
        )
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conv_id))
        assert cur.lastrowid is not None
        return cur.lastrowid, seq

    def add_user_message(self, conv_id: int, text: str) -> int:
        with self._tx() as db:
            return self._insert_message(db, conv_id, "user", text)[0]

    def add_tool_results(self, conv_id: int, results: Sequence[ToolResult]) -> list[int]:
        with self._tx() as db:
            return [
                self._insert_message(
                    db, conv_id, "tool", r.text, tool_call_id=r.tool_call_id, name=r.name
                )[0]
                for r in results
            ]

    def begin_assistant_message(self, conv_id: int, *, alternative_of: int | None = None) -> int:
        """A new assistant message in status ``streaming``. ``alternative_of``: the id of
        an earlier answer this one regenerates (it becomes the chosen alternative)."""
        with self._tx() as db:
            msg_id, _ = self._insert_message(db, conv_id, "assistant")
            group = msg_id
            if alternative_of is not None:
                row = db.execute(
                    "SELECT alt_group FROM turns WHERE message_id = ?", (alternative_of,)
                ).fetchone()
                group = row[0] if row else alternative_of
                db.execute("UPDATE turns SET chosen = 0 WHERE alt_group = ?", (group,))
            db.execute(
                "INSERT INTO turns (message_id, status, alt_group, chosen)"
                " VALUES (?, 'streaming', ?, 1)",
                (msg_id, group),
            )
        return msg_id

    def update_assistant_partial(
        self,
        message_id: int,
        text: str,
        reasoning: str = "",
        tool_calls: Sequence[ToolCall | ToolCallState] = (),
        reasoning_channel: str | None = None,
    ) -> None:
        """Save the text so far (one UPDATE; call it at least once a second)."""
        with self._lock:
            self._db.execute(
                "UPDATE messages SET text = ?, reasoning = ?, reasoning_channel = ?,"
                " tool_calls = ? WHERE id = ?",
                (text, reasoning, reasoning_channel, calls_to_json(tool_calls), message_id),
            )

    def finish_assistant_message(
        self, message_id: int, turn: Turn, capture_id: str | None = None
    ) -> None:
        """Store the finished turn (any outcome): final text and everything about it."""
        outcome = turn.outcome.value if turn.outcome is not None else None
        with self._tx() as db:
            db.execute(
                "UPDATE messages SET text = ?, reasoning = ?, reasoning_channel = ?,"
                " tool_calls = ? WHERE id = ?",
                (
                    turn.text,
                    turn.reasoning,
                    turn.reasoning_channel,
                    calls_to_json(turn.tool_calls),
                    message_id,
                ),
            )
            db.execute(
                "UPDATE turns SET status = 'done', outcome = ?, reason = ?, finish_reason = ?,"
                " usage = ?, input_tokens = ?, output_tokens = ?, timings = ?, warnings = ?,"
                " capture_id = ?, http_status = ?, terminal_signal = ?, bytes_received = ?,"
                " events = ?, malformed_frames = ? WHERE message_id = ?",
                (
                    outcome,
                    turn.reason,
                    turn.finish_reason,
                    dumps_json(turn.usage) if turn.usage is not None else None,
                    turn.input_tokens,
                    turn.output_tokens,
                    dumps_json(timings_to_dict(turn.timings)),
                    dumps_json(list(turn.warnings)),
                    capture_id,
                    turn.status,
                    turn.terminal_signal,
                    turn.bytes_received,
                    turn.events,
                    turn.malformed_frames,
                    message_id,
                ),
            )
            db.execute(
                "UPDATE conversations SET updated = ? WHERE id ="
                " (SELECT conversation_id FROM messages WHERE id = ?)",
                (self._clock(), message_id),
            )

    def choose_alternative(self, message_id: int) -> None:
        """Make this answer the chosen one among its alternatives."""
        with self._tx() as db:
            db.execute(
                "UPDATE turns SET chosen = (message_id = ?) WHERE alt_group ="
                " (SELECT alt_group FROM turns WHERE message_id = ?)",
                (message_id, message_id),
            )

    def delete_messages_from(self, conv_id: int, seq: int) -> None:
        """Remove the message at ``seq`` and everything after it (editing a prompt)."""
        with self._tx() as db:
            db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND seq >= ?", (conv_id, seq)
            )

    def recover_interrupted(self) -> list[int]:
        """Mark every turn left ``streaming`` (crash, kill) as truncated with reason
        :data:`INTERRUPTED_REASON`, keeping its partial text. Call once at startup, from
        the one running instance. Returns the message ids."""
        with self._tx() as db:
            ids = [
                r[0]
                for r in db.execute("SELECT message_id FROM turns WHERE status = ?", ("streaming",))
            ]
            db.execute(
                "UPDATE turns SET status = 'done', outcome = ?, reason = ? WHERE status = ?",
                (Outcome.TRUNCATED.value, INTERRUPTED_REASON, "streaming"),
            )
        return ids

    # -- captures -----------------------------------------------------------------------

    def add_capture(self, capture_id: str, path: str, size: int) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO captures (id, size, path, created) VALUES (?, ?, ?, ?)",
                (capture_id, size, path, self._clock()),
            )

    def remove_capture(self, capture_id: str) -> None:
        """Forget a capture's raw bytes; turns keep their text and outcome (their
        ``capture_id`` becomes ``None``)."""
        with self._tx() as db:
            db.execute("DELETE FROM captures WHERE id = ?", (capture_id,))

    def capture_path(self, capture_id: str) -> str | None:
        row = self._one("SELECT path FROM captures WHERE id = ?", (capture_id,))
        return str(row[0]) if row else None
