"""The answers of the chat controller: each answer's row and card, paging among them,
their turns in the inspector, and drawing the rows of a conversation.

Every answer is an :class:`~streamscope.ui.chat.chat_rows.AnswerSlot` in the controller's
:class:`~streamscope.ui.chat.conversation_rows.ConversationRows`, whether or not its card is built
(the chat builds cards near its viewport): its turn (:class:`TurnRef`, what the inspector
opens: kept when it changes, e.g. its capture written), which of its step's answers it is,
the results its tool calls got. A card built later shows the slot's state, selected when its
turn is the one the inspector shows. Opening a conversation prepares its rows with
:meth:`ChatAnswers.prepare` (on the loading thread for a long one), then shows them, each
answer with the verdict kept with it (:mod:`~streamscope.ui.chat.verdict_keeper`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from streamscope.core.store.history import ToolResult
from streamscope.core.turn.model import stopped_at_limit
from streamscope.core.wire.conversation import Message
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.chat_rows import AnswerSlot, UserRow
from streamscope.ui.chat.conversation_rows import ConversationRows, PreparedRows
from streamscope.ui.chat.turn_ref import TurnRef

if TYPE_CHECKING:
    import itertools

    from PySide6.QtCore import SignalInstance

    from streamscope.core.store.history import ChatHistory
    from streamscope.core.store.session import ChatSession
    from streamscope.core.turn.model import Turn
    from streamscope.ui.chat.chat_view import ChatView
    from streamscope.ui.chat.status_panel import StatusPanel
    from streamscope.ui.chat.turn_viewer import TurnViewer
    from streamscope.ui.chat.verdict_keeper import VerdictKeeper

__all__ = ["ChatAnswers"]


class ChatAnswers:
    """The answers part of :class:`~streamscope.ui.chat.chat_controller.ChatController` (the
    attributes below are the controller's)."""

    chat: ChatView
    status: StatusPanel
    feed: TurnViewer
    session: ChatSession
    rows: ConversationRows
    verdicts: VerdictKeeper
    _selected: int | None
    _keys: itertools.count[int]
    _frame_wanted: tuple[int, str] | None

    if TYPE_CHECKING:
        historyChanged: SignalInstance

        @property
        def history(self) -> ChatHistory: ...

        @property
        def busy(self) -> bool: ...

        def choose_version(self, depth: int, index: int) -> None: ...

        def send_tool_results(self, results: list[ToolResult]) -> None: ...

    @property
    def answers(self) -> list[AnswerSlot]:
        """Every answer of the conversation shown (each alternative), top to bottom."""
        return self.rows.answers

    def answer_card(self, which: int | AnswerSlot) -> AssistantCard:
        """The card of answer ``which`` (of :attr:`answers`), built if it is not: shown
        (scrolled to) when it is the answer its step shows, else built hidden."""
        slot = self.answers[which] if isinstance(which, int) else which
        row = slot.row
        if row is not None and row.shown is slot and row.index >= 0:
            card = self.chat.card_for(row)
        else:
            card = self.chat.ensure_card(slot)
        assert isinstance(card, AssistantCard)
        return card

    def shown_answer_card(self) -> AssistantCard | None:
        """The card of the answer the last answers step shows (its pager is the one the
        toolbar's stands for), built and scrolled to if need be."""
        slot = self.rows.last_shown()
        return self.answer_card(slot) if slot is not None else None

    def choose_alternative(self, index: int) -> None:
        count = self.history.alternatives()[1]
        if self.busy or not 0 <= index < count or not self.rows.steps:
            return
        length = len(self.history.path())
        self.session.choose(index)
        step = self.rows.steps[-1]
        if len(self.history.path()) != length or len(step.slots) != count:
            self._rebuild_view()  # (that answer was continued: the path after it shows)
            return
        step.chosen = index
        self.sync_answer_pagers()
        self.chat.row_changed(step)
        self.inspect(step.shown)
        self.historyChanged.emit()

    def sync_answer_pagers(self) -> None:
        """The last answers' pagers say which of their step's answers each is (the earlier
        steps' change only when the path is redrawn)."""
        for slot in self.rows.sync_last(self.history.alternatives()[1]):
            self.chat.refresh(slot)

    def _on_answer_card_alternative_stepped(self, slot: AnswerSlot, step: int) -> None:
        row = slot.row
        if row is None or row not in self.rows.steps or slot not in row.slots:
            return  # (a replay's card)
        index = row.slots.index(slot) + step
        if row is self.rows.steps[-1] and self.history.alternatives()[1] == len(row.slots):
            self.choose_alternative(index)  # (the last answers: the path stays)
        else:
            self.choose_version(row.depth, index)  # (the path after it changes)

    def _on_user_card_version_stepped(self, row: UserRow, step: int) -> None:
        self.choose_version(row.depth, row.chosen + step)

    def _on_card_results_submitted(
        self, slot: AnswerSlot, results: list[tuple[str, str, str]]
    ) -> None:
        answers = [ToolResult(id or None, name, text) for id, name, text in results]
        if not self.busy and answers:  # (the card shows them sent: so does its row)
            slot.results = tuple(
                Message("tool", r.text, tool_call_id=r.tool_call_id, name=r.name) for r in answers
            )
            slot.unanswered = 0
        self.send_tool_results(answers)

    def _on_card_frame_requested(self, slot: AnswerSlot, reason: str) -> None:
        """A card's "malformed frame" warning was clicked: select that frame in Frames (its
        turn is loaded into the inspector first when another one is shown)."""
        ref, shown = slot.ref, self.feed.ref
        if ref is not None and shown is not None and shown.key == ref.key:
            if not self.feed.show_malformed_frame(reason):
                self.status.show_message("That frame is not in this turn's capture")
            return
        if ref is None:
            return
        self._frame_wanted = (ref.key, reason)
        self.inspect(slot)

    def _on_answer_card_built(self, slot: AnswerSlot) -> None:
        self.verdicts.card_built(slot)

    def _on_feed_loaded(self, key: int) -> None:
        wanted, self._frame_wanted = self._frame_wanted, None
        if wanted is not None and wanted[0] == key:
            self.feed.show_malformed_frame(wanted[1])

    def inspect(self, slot: AnswerSlot) -> None:
        """Show ``slot``'s turn in the inspector."""
        if slot.ref is not None:
            self.feed.show(slot.ref)

    def _new_ref(
        self, model: str, *, conversation: str | None = None, started: float | None = None
    ) -> TurnRef:
        title = conversation if conversation is not None else self.session.title
        return TurnRef(next(self._keys), title, time.time() if started is None else started, model)

    def _update_ref(self, slot: AnswerSlot, **changes: object) -> TurnRef | None:
        """``slot``'s turn with ``changes``; once the slot has its finished turn, the ref
        says whether the token limit cut it (as the card does)."""
        if slot.ref is None:
            return None
        if slot.turn is not None:
            changes.setdefault("stopped_at_limit", slot.turn.stopped_at_limit)
        slot.ref = replace(slot.ref, **changes)  # type: ignore[arg-type]
        self.feed.update(slot.ref)
        card = self.chat.card_of(slot)
        if isinstance(card, AssistantCard):
            card.turn_ref = slot.ref
        return slot.ref

    def inspect_elsewhere(self, ref: TurnRef, turn: Turn | None, frames: int) -> None:
        """The inspector shows a turn of another part of the window (a tapped exchange):
        no answer is selected; once it has ended, the status bar describes it (named)."""
        if self.busy:
            return  # (the streaming turn owns the inspector and the status bar)
        self.feed.taken(ref)
        if turn is not None:
            self.status.show_turn(turn, frames, which=ref.conversation)
        else:
            self.status.show_message(f"{ref.conversation} — streaming…")

    def _on_feed_ended(self, turn: Turn, frames: int, which: str, verdict: str) -> None:
        """The turn the inspector shows has ended there (no turn streams): the status bar
        describes it, as it described the live one."""
        self.status.show_turn(turn, frames, which=which)
        if verdict and turn.status is not None and turn.status < 400:
            self.status.show_verdict(verdict)

    def _on_feed_shown(self, key: int) -> None:
        self._selected = key
        for slot, card in self.chat.built_cards():
            if isinstance(slot, AnswerSlot) and isinstance(card, AssistantCard):
                card.set_selected(slot.ref is not None and slot.ref.key == key)

    # -- the rows -----------------------------------------------------------------------

    def prepare(self, session: ChatSession) -> PreparedRows:
        """``session``'s rows, with their texts read for the estimates: pure Python (no
        Qt), so a long conversation is prepared on the thread that loads it."""
        refs: dict[int, TurnRef] = {}
        model = session.model or "assistant"
        for message in session.loaded_messages:  # (the saved answers' turns by message id)
            if message.role != "assistant":
                continue
            stored = message.turn
            refs[message.id] = TurnRef(
                next(self._keys),
                session.title,
                message.created,
                (stored.model if stored else None) or model,
                stored.outcome if stored else None,
                stored.capture_id if stored else None,
                stopped_at_limit=bool(
                    stored and stopped_at_limit(stored.outcome, stored.finish_reason)
                ),
            )

        def ref_for(turn: Turn, key: int | None) -> TurnRef:
            ref = refs.get(key) if key is not None else None
            if ref is None:
                ref = TurnRef(next(self._keys), session.title, time.time(), turn.model or model)
            return ref

        rows = ConversationRows(refs)
        shown = rows.rebuild(session.history, ref_for, {})
        for row in shown:
            row.read_texts()
        return rows, shown

    def _rebuild_view(self) -> None:
        """Redraw the chat from the history's shown path (after an edit was sent, a version
        chosen): versions of a message page on its card; the results tool calls got show
        in their boxes; an answer shown before keeps its turn (and its card)."""
        model = self.session.model or "assistant"
        saved = self.rows.saved_refs

        def ref_for(turn: Turn, key: int | None) -> TurnRef:
            ref = saved.get(key) if key is not None else None
            return ref if ref is not None else self._new_ref(turn.model or model)

        rows = ConversationRows(saved)
        shown = rows.rebuild(self.history, ref_for, self.rows.slots_by_turn())
        self._show_rows((rows, shown))

    def _show_rows(self, prepared: PreparedRows) -> None:
        """Show the rows and the last answer's turn in the inspector."""
        self.rows, shown = prepared
        self.chat.set_rows(shown)
        self.verdicts.show(self.rows.answers)  # (their kept verdicts)
        last = self.rows.last_shown()
        if last is not None:
            self.inspect(last)
        else:
            self.feed.clear("No turn in this conversation yet")
        self.historyChanged.emit()
