"""Writing a conversation's messages, and the bookkeeping of its answers' turns: status
``streaming`` while an answer arrives, its partial text saved on a clock, everything about the
turn when it ends (any outcome), regenerated alternatives, and recovery after a crash.

:class:`MessageRows` is a part of :class:`~streamscope.core.store.database.Store`; see that
module for how the window uses it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from streamscope.core.store.connection import StoreConnection
from streamscope.core.store.history import ToolResult
from streamscope.core.store.records import calls_to_json, dumps_json, timings_to_dict
from streamscope.core.turn.model import ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolCall

__all__ = ["INTERRUPTED_REASON", "MessageRows"]

INTERRUPTED_REASON = "app closed during the stream"


class _Tip:
    """The default parent of a new message: the last message of the shown path."""

    def __repr__(self) -> str:
        return "TIP"


TIP = _Tip()

_PATH = """
WITH RECURSIVE path(id, depth) AS (
    SELECT (SELECT id FROM messages WHERE conversation_id = ?1 AND parent_id IS NULL
            ORDER BY chosen DESC, seq DESC LIMIT 1), 0
    UNION ALL
    SELECT (SELECT c.id FROM messages c WHERE c.conversation_id = ?1 AND c.parent_id = path.id
            ORDER BY c.chosen DESC, c.seq DESC LIMIT 1), depth + 1
    FROM path WHERE path.id IS NOT NULL
)
SELECT id FROM path WHERE id IS NOT NULL ORDER BY depth
"""
"""The ids of the shown path: from the first message, each step's chosen alternative (the
last chosen; the last one when none is), as :func:`~streamscope.core.store.records.
active_path` and :func:`~streamscope.core.store.records.to_chat_history` read it."""


class MessageRows(StoreConnection):
    """The messages and turns half of the :class:`~streamscope.core.store.database.Store`.

    Messages form a tree (see :mod:`~streamscope.core.store.schema`, version 3): each new
    one follows ``parent_id`` — by default (:data:`TIP`) the last message of the shown
    path — and becomes the chosen alternative among those sharing its parent."""

    def path_ids(self, conv_id: int) -> list[int]:
        """The ids of the conversation's shown path, first to last."""
        return [r[0] for r in self._all(_PATH, (conv_id,))]

    def _insert_message(
        self,
        db: sqlite3.Connection,
        conv_id: int,
        role: str,
        text: str = "",
        *,
        parent_id: int | _Tip | None = TIP,
        tool_call_id: str | None = None,
        name: str | None = None,
    ) -> tuple[int, int]:
        now = self._clock()
        if isinstance(parent_id, _Tip):
            path = [r[0] for r in db.execute(_PATH, (conv_id,))]
            parent_id = path[-1] if path else None
        (seq,) = db.execute(
            "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE conversation_id = ?",
            (conv_id,),
        ).fetchone()
        cur = db.execute(
            "INSERT INTO messages (conversation_id, seq, role, text, tool_call_id, name, created,"
            " parent_id, chosen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
            (conv_id, seq, role, text, tool_call_id, name, now, parent_id),
        )
        assert cur.lastrowid is not None
        self._choose(db, cur.lastrowid)
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conv_id))
        return cur.lastrowid, seq

    def _choose(self, db: sqlite3.Connection, message_id: int) -> None:
        """Make ``message_id`` the chosen one among the messages sharing its parent."""
        siblings = (
            "SELECT s.id FROM messages s JOIN messages m ON m.id = ?1"
            " WHERE s.conversation_id = m.conversation_id AND s.parent_id IS m.parent_id"
        )
        db.execute(
            f"UPDATE messages SET chosen = (id = ?1) WHERE id IN ({siblings})", (message_id,)
        )
        db.execute(
            f"UPDATE turns SET chosen = (message_id = ?1) WHERE message_id IN ({siblings})",
            (message_id,),
        )

    def add_user_message(
        self, conv_id: int, text: str, *, parent_id: int | _Tip | None = TIP
    ) -> int:
        """A user message after ``parent_id`` (an edited prompt: beside the one it edits,
        after the same parent)."""
        with self._tx() as db:
            return self._insert_message(db, conv_id, "user", text, parent_id=parent_id)[0]

    def add_tool_results(
        self,
        conv_id: int,
        results: Sequence[ToolResult],
        *,
        parent_id: int | _Tip | None = TIP,
    ) -> list[int]:
        """The results, one after the other, after ``parent_id`` (the answer calling)."""
        ids: list[int] = []
        with self._tx() as db:
            parent = parent_id
            for r in results:
                msg_id, _ = self._insert_message(
                    db,
                    conv_id,
                    "tool",
                    r.text,
                    parent_id=parent,
                    tool_call_id=r.tool_call_id,
                    name=r.name,
                )
                ids.append(msg_id)
                parent = msg_id
        return ids

    def begin_assistant_message(
        self,
        conv_id: int,
        *,
        parent_id: int | _Tip | None = TIP,
        alternative_of: int | None = None,
        model: str | None = None,
    ) -> int:
        """A new assistant message in status ``streaming`` after ``parent_id``; with
        ``alternative_of`` (the id of an earlier answer this one regenerates) after that
        one's parent. It becomes the chosen alternative; ``turns.alt_group`` is its first
        alternative's id. ``model``: the model the request asks for."""
        with self._tx() as db:
            if alternative_of is not None:
                row = db.execute(
                    "SELECT parent_id FROM messages WHERE id = ?", (alternative_of,)
                ).fetchone()
                parent_id = row[0] if row else parent_id
            msg_id, _ = self._insert_message(db, conv_id, "assistant", parent_id=parent_id)
            (group,) = db.execute(
                "SELECT COALESCE(MIN(t.alt_group), ?1) FROM turns t JOIN messages s"
                " ON s.id = t.message_id JOIN messages m ON m.id = ?1"
                " WHERE s.conversation_id = m.conversation_id AND s.parent_id IS m.parent_id",
                (msg_id,),
            ).fetchone()
            db.execute(
                "INSERT INTO turns (message_id, status, alt_group, chosen, model)"
                " VALUES (?, 'streaming', ?, 1, ?)",
                (msg_id, group, model),
            )
        return msg_id

    def link_capture(self, message_id: int, capture_id: str) -> None:
        """The turn's capture (from when its request starts: a crash keeps the link)."""
        with self._tx() as db:
            db.execute(
                "UPDATE turns SET capture_id = ? WHERE message_id = ?", (capture_id, message_id)
            )

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

    def save_verdict(self, message_id: int, verdict: str, rules: str) -> None:
        """Keep the turn's short verdict line (``""``: checked, nothing to say) and the
        digest of the rules that made it (see :meth:`StoredTurn.kept_verdict`). It may come
        before :meth:`finish_assistant_message` (which leaves it as it is) or long after."""
        with self._tx() as db:
            db.execute(
                "UPDATE turns SET verdict = ?, verdict_rules = ? WHERE message_id = ?",
                (verdict, rules, message_id),
            )

    def choose_message(self, message_id: int) -> None:
        """Make this message the chosen (shown) one among its alternatives."""
        with self._tx() as db:
            self._choose(db, message_id)

    choose_alternative = choose_message
    """(An answer's alternatives are messages sharing a parent like any other.)"""

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
