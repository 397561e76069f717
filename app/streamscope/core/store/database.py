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
:mod:`streamscope.core.store.records`. The class is assembled from parts:
:mod:`~streamscope.core.store.connection` (opening, migrating, transactions),
:mod:`~streamscope.core.store.messages` (messages and their turns) and, here, the
conversations and the captures' index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamscope.core.store.connection import default_db_path
from streamscope.core.store.messages import INTERRUPTED_REASON, MessageRows
from streamscope.core.store.records import (
    ConversationSummary,
    StoredConversation,
    StoredMessage,
    StoredTurn,
    message_from_row,
    summary_from_row,
    to_chat_history,
    tools_from_json,
    tools_to_json,
    turn_from_stored,
)
from streamscope.core.store.search import index_state, search_sql
from streamscope.core.wire.conversation import ToolDefinition

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

_MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.seq, m.role, m.text, m.reasoning, m.reasoning_channel,"
    " m.tool_calls, m.tool_call_id, m.name, m.created, m.parent_id, m.chosen,"
    " t.message_id, t.status, t.outcome, t.reason, t.finish_reason, t.usage, t.input_tokens,"
    " t.output_tokens, t.timings, t.warnings, t.capture_id, t.alt_group, t.chosen,"
    " t.http_status, t.terminal_signal, t.bytes_received, t.events, t.malformed_frames, t.model,"
    " t.verdict, t.verdict_rules"
)
_MESSAGES_FROM = "FROM messages m LEFT JOIN turns t ON t.message_id = m.id"
_CONV_COLUMNS = "id, title, endpoint_name, model, created, updated"


def _limit(limit: int | None) -> int:
    return -1 if limit is None else limit  # (SQLite: a negative LIMIT is none)


class Store(MessageRows):
    """The conversations database; see the module docstring. ``path=None`` opens
    :func:`default_db_path`; ``":memory:"`` works for tests."""

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
        self,
        search: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
        *,
        after: ConversationSummary | None = None,
    ) -> list[ConversationSummary]:
        """Newest first (``updated``, then ``id``); ``search``: only those whose title or
        message text contains it, ignoring case (:mod:`~streamscope.core.store.search`: the
        full-text index, and the text itself where the index cannot answer). ``after``: the
        rows that follow that one in this order (a page of the list, however long it is);
        ``limit=None``: all of them."""
        if search:
            with self._lock:
                sql, found = search_sql(search, index_state(self._db))
                rows = self._db.execute(sql + " LIMIT ? OFFSET ?", [*found, _limit(limit), offset])
                return [summary_from_row(row) for row in rows]
        sql = f"SELECT {_CONV_COLUMNS} FROM conversations c WHERE deleted_at IS NULL"
        params: list[Any] = []
        if after is not None:
            sql += " AND (updated < ? OR (updated = ? AND id < ?))"
            params += [after.updated, after.updated, after.id]
        sql += " ORDER BY updated DESC, id DESC LIMIT ? OFFSET ?"
        params += [_limit(limit), offset]
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
        """The conversation: every message (``limit=None``), or the last ``limit`` messages
        of its shown path with every alternative branching off them (``has_more`` when the
        path is longer), in ``seq`` order. Raises ``KeyError`` when it does not exist (or
        is deleted)."""
        row = self._one(
            f"SELECT {_CONV_COLUMNS}, tools_json FROM conversations"
            " WHERE id = ? AND deleted_at IS NULL",
            (conv_id,),
        )
        if row is None:
            raise KeyError(conv_id)
        path = self.path_ids(conv_id) if limit is not None else []
        has_more = limit is not None and len(path) > limit
        if has_more:
            assert limit is not None
            messages = self._descendants(conv_id, path[-limit - 1])
        else:
            messages = self.load_messages(conv_id, limit=None)
        return StoredConversation(
            summary_from_row(row[:6]), tools_from_json(row[6]), messages, has_more
        )

    def _descendants(self, conv_id: int, message_id: int) -> list[StoredMessage]:
        """Every message after ``message_id`` (on any branch), in ``seq`` order."""
        rows = self._all(
            "WITH RECURSIVE below(id) AS ("
            " SELECT id FROM messages WHERE conversation_id = ?1 AND parent_id = ?2"
            " UNION ALL SELECT m.id FROM messages m JOIN below"
            " ON m.conversation_id = ?1 AND m.parent_id = below.id)"
            f" SELECT {_MESSAGE_COLUMNS} {_MESSAGES_FROM}"
            " WHERE m.id IN (SELECT id FROM below) ORDER BY m.seq",
            (conv_id, message_id),
        )
        return [message_from_row(row) for row in rows]

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

    # -- captures -----------------------------------------------------------------------

    def add_capture(self, capture_id: str, path: str, size: int) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO captures (id, size, path, created) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET size = excluded.size, path = excluded.path",
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
