"""The open conversation's rows as the chat controller keeps them.

Built from the history's shown path when a conversation opens or its path changes (an edit
sent, a version or an older alternative chosen: :meth:`ConversationRows.rebuild`), then kept
in step as the conversation goes on — a message sent adds a row, an answer begun adds a row
or (regenerated) an alternative to the last one, choosing among the last answers moves what
that row shows. Each answer is an :class:`~streamscope.ui.chat.chat_rows.AnswerSlot` whether or
not its card is built: its turn, the :class:`~streamscope.ui.inspector.turn_header.TurnRef`
the inspector opens, its pager, its tool calls' results or skipping. Pure data: the
controller shows the changes in the chat view.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from streamscope.ui.chat.chat_rows import AnswerSlot, AnswersRow, ChatRow, UserRow

if TYPE_CHECKING:
    from streamscope.core.store.history import ChatHistory
    from streamscope.core.turn.model import Turn
    from streamscope.ui.chat.turn_ref import TurnRef

__all__ = ["ConversationRows", "PreparedRows", "answer_label"]

RefFor = Callable[["Turn", "int | None"], "TurnRef"]
"""The turn a saved answer (with its saved message id, if any) opens in the inspector."""

PreparedRows = tuple["ConversationRows", list[ChatRow]]
"""A conversation's rows kept by the controller, and the rows its chat shows."""


def answer_label(model: str, index: int) -> str:
    """An answer card's title: its model, and which answer it is after the first."""
    return model + (f" · answer {index + 1}" if index else "")


class ConversationRows:
    """The answers steps (:attr:`steps`) and the last user message of the chat; see the
    module docstring."""

    def __init__(self, saved_refs: dict[int, TurnRef] | None = None) -> None:
        self.steps: list[AnswersRow] = []
        self.last_user: UserRow | None = None
        self.saved_refs = saved_refs if saved_refs is not None else {}
        """The saved answers' turns by message id (as the conversation was opened)."""

    @property
    def answers(self) -> list[AnswerSlot]:
        """Every answer of the conversation (each alternative), top to bottom."""
        return [slot for row in self.steps for slot in row.slots]

    def slots_by_turn(self) -> dict[int, AnswerSlot]:
        """The finished answers by their turn's identity (a redraw keeps them)."""
        return {id(slot.turn): slot for slot in self.answers if slot.turn is not None}

    def rebuild(
        self, history: ChatHistory, ref_for: RefFor, kept: dict[int, AnswerSlot]
    ) -> list[ChatRow]:
        """The rows of ``history``'s shown path. An answer in ``kept`` (by its turn's
        identity) keeps its slot — its turn in the inspector, its verdict, its card —; the
        others get ``ref_for(turn, saved id)``."""
        rows: list[ChatRow] = []
        self.steps = []
        self.last_user = None
        for entry in history.path_entries():
            if entry.kind == "user" and entry.message is not None:
                user = UserRow(
                    text=entry.message.text,
                    depth=entry.depth,
                    chosen=entry.chosen,
                    count=entry.count,
                )
                rows.append(user)
                self.last_user = user
            elif entry.kind == "answers":
                slots: list[AnswerSlot] = []
                for i, turn in enumerate(entry.answers):
                    slot = kept.get(id(turn))
                    if slot is None:
                        key = entry.keys[i] if i < len(entry.keys) else None
                        ref = ref_for(turn, key)
                        slot = AnswerSlot(answer_label(ref.model, i), ref, turn, message_id=key)
                    shown = i == entry.chosen
                    slot.index, slot.count = i, entry.count
                    slot.results = entry.results if shown else ()
                    slot.unanswered = entry.unanswered if shown else 0
                    slot.skipped = entry.followed if shown else False
                    slots.append(slot)
                step = AnswersRow(slots=slots, chosen=entry.chosen, depth=entry.depth)
                rows.append(step)
                self.steps.append(step)
        return rows

    def user_sent(self, text: str, depth: int) -> UserRow:
        """A message was sent at ``depth`` of the path: its row."""
        self.last_user = UserRow(text=text, depth=depth)
        return self.last_user

    def answer_begun(self, slot: AnswerSlot, *, alternative: bool, depth: int) -> AnswersRow | None:
        """An answer starts: beside the last answers (``alternative``: returns ``None``, the
        last row shows it now) or in a new row at ``depth`` (returned)."""
        if alternative and self.steps:
            self.steps[-1].add(slot)
            return None
        step = AnswersRow(slots=[slot], depth=depth)
        self.steps.append(step)
        return step

    def sync_last(self, count: int) -> list[AnswerSlot]:
        """The last answers are ``count`` (as the history says): their pagers follow;
        returns those slots (none when out of step, e.g. while an answer streams)."""
        if not self.steps or len(self.steps[-1].slots) != count:
            return []
        step = self.steps[-1]
        for i, slot in enumerate(step.slots):
            slot.index, slot.count = i, count
        return list(step.slots)

    def last_shown(self) -> AnswerSlot | None:
        """The answer the last answers step shows."""
        return self.steps[-1].shown if self.steps else None
