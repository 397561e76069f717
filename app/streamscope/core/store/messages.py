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


class MessageRows(StoreConnection):
    """The messages and turns half of the :class:`~streamscope.core.store.database.Store`."""

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

    def begin_assistant_message(
        self, conv_id: int, *, alternative_of: int | None = None, model: str | None = None
    ) -> int:
        """A new assistant message in status ``streaming``. ``alternative_of``: the id of
        an earlier answer this one regenerates (it becomes the chosen alternative);
        ``model``: the model the request asks for."""
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
