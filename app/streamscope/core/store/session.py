"""One conversation as the window runs it: the in-memory history and what is saved of it.

``ChatSession`` writes to the :class:`~streamscope.core.store.database.Store` at the moments that
make a crash cheap: the user message when it is sent; the assistant's partial text at most
``save_interval`` seconds apart while it streams (so a crash or ``kill -9`` loses at most
that much) and once more at the end, with the turn's outcome and its capture. Without a
store it is just the history.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamscope.core.store.database import Store
from streamscope.core.store.history import ChatHistory, ToolResult
from streamscope.core.store.records import StoredMessage, to_chat_history
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta, apply_tool_calls
from streamscope.core.wire.conversation import ToolDefinition

if TYPE_CHECKING:  # captures load with the first turn, not with the window
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture

__all__ = ["ChatSession", "SavedAnswer"]


@dataclass(slots=True)
class SavedAnswer:
    """The assistant message being streamed: its row and the text so far."""

    message_id: int | None
    text: list[str]
    reasoning: list[str]
    reasoning_channel: str | None = None
    tool_calls: tuple[ToolCallState, ...] = ()
    saved_at: float = 0.0


class ChatSession:
    def __init__(
        self,
        store: Store | None = None,
        captures: CaptureStore | None = None,
        *,
        save_interval: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.captures = captures
        self.save_interval = save_interval
        self._clock = clock
        self.history = ChatHistory()
        self.conversation_id: int | None = None
        self.title = ""
        self.has_more = False
        self.tools: tuple[ToolDefinition, ...] = ()
        self.loaded_messages: list[StoredMessage] = []
        self._answer_ids: list[list[int]] = []  # per answer step, its alternatives' rows
        self._answer: SavedAnswer | None = None

    @classmethod
    def open(
        cls, store: Store, captures: CaptureStore | None, conversation_id: int, limit: int = 200
    ) -> ChatSession:
        """A saved conversation (its latest ``limit`` messages; ``has_more`` if older)."""
        session = cls(store, captures)
        stored = store.load_conversation(conversation_id, limit=limit)
        session.conversation_id = conversation_id
        session.title = stored.summary.title
        session.has_more = stored.has_more
        session.tools = tuple(stored.tools)
        session.loaded_messages = list(stored.messages)
        session.history = to_chat_history(stored.messages)
        groups: dict[int, list[int]] = {}
        for msg in stored.messages:
            if msg.role == "assistant":
                group = msg.turn.alt_group if msg.turn is not None else msg.id
                groups.setdefault(group, []).append(msg.id)
        session._answer_ids = list(groups.values())
        return session

    # -- the user ------------------------------------------------------------------------

    def user_sent(self, text: str, *, endpoint_name: str, model: str) -> None:
        self.history.add_user(text)
        if self.store is None:
            return
        if self.conversation_id is None:
            self.title = text.strip().splitlines()[0][:60] if text.strip() else "Untitled"
            self.conversation_id = self.store.create_conversation(
                self.title, endpoint_name=endpoint_name, model=model, tools=self.tools
            )
        else:
            self.store.set_endpoint(self.conversation_id, endpoint_name, model)
        self.store.add_user_message(self.conversation_id, text)

    def set_tools(self, tools: Sequence[ToolDefinition]) -> None:
        """The function definitions this conversation sends (kept with it)."""
        self.tools = tuple(tools)
        if self.store is not None and self.conversation_id is not None:
            self.store.set_tools(self.conversation_id, self.tools)

    def tool_results(self, results: Sequence[ToolResult]) -> None:
        self.history.add_tool_results(results)
        if self.store is not None and self.conversation_id is not None:
            self.store.add_tool_results(self.conversation_id, results)

    def edit_last(self) -> str:
        """Take the last user message back (and what followed it); returns its text."""
        text = self.history.edit_last_user()
        if self.store is not None and self.conversation_id is not None:
            messages = self.store.load_messages(self.conversation_id, limit=500)
            users = [m for m in messages if m.role == "user"]
            if users:
                self.store.delete_messages_from(self.conversation_id, users[-1].seq)
        if self._answer_ids:
            self._answer_ids.pop()
        return text

    # -- the answer ----------------------------------------------------------------------

    def answer_started(self, *, alternative: bool) -> None:
        message_id = None
        if self.store is not None and self.conversation_id is not None:
            previous = self._answer_ids[-1][-1] if alternative and self._answer_ids else None
            message_id = self.store.begin_assistant_message(
                self.conversation_id, alternative_of=previous
            )
            if alternative and self._answer_ids:
                self._answer_ids[-1].append(message_id)
            else:
                self._answer_ids.append([message_id])
        self._answer = SavedAnswer(message_id, [], [], saved_at=self._clock())

    def answer_progressed(self, delta: TurnDelta) -> bool:
        """Keep what the reducer says changed; save it if the last save is
        ``save_interval`` old. Returns whether it saved."""
        answer = self._answer
        if answer is None:
            return False
        if delta.text:
            answer.text.append(delta.text)
        if delta.reasoning:
            answer.reasoning.append(delta.reasoning)
        answer.reasoning_channel = delta.reasoning_channel
        if delta.tool_calls:
            calls = apply_tool_calls(list(answer.tool_calls), delta.tool_calls)
            answer.tool_calls = tuple(calls)
        now = self._clock()
        if self.store is None or answer.message_id is None:
            return False
        if now - answer.saved_at < self.save_interval:
            return False
        answer.saved_at = now
        self.store.update_assistant_partial(
            answer.message_id,
            "".join(answer.text),
            "".join(answer.reasoning),
            answer.tool_calls,
            answer.reasoning_channel,
        )
        return True

    def answer_finished(self, turn: Turn, capture: Capture | None = None) -> str | None:
        """Record the finished turn (any outcome); returns the capture id if one was saved."""
        self.history.add_answer(turn)
        answer, self._answer = self._answer, None
        if self.store is None or answer is None or answer.message_id is None:
            return None
        capture_id = None
        if capture is not None and self.captures is not None:
            try:
                capture_id = self.captures.save(capture)
            except OSError:
                capture_id = None  # a full disk must not lose the answer's text
        self.store.finish_assistant_message(answer.message_id, turn, capture_id)
        return capture_id

    def choose(self, index: int) -> Turn:
        turn = self.history.choose(index)
        if self.store is not None and self._answer_ids and index < len(self._answer_ids[-1]):
            self.store.choose_alternative(self._answer_ids[-1][index])
        return turn

    def capture_ids(self) -> list[str | None]:
        """The capture of every loaded answer, in order (for Save capture / repro)."""
        return [m.turn.capture_id if m.turn else None for m in self.loaded_messages]
