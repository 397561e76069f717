"""One conversation as the window runs it: the in-memory history and what is saved of it.

``ChatSession`` writes to the :class:`~streamscope.core.store.database.Store` at the moments that
make a crash cheap: the user message when it is sent; the assistant's partial answer on a save
clock — whatever arrived is on disk at most ``save_interval`` seconds later, whether or not
more arrives (a stream that goes silent is saved too) — and once more at the end, with the
turn's outcome and the id of its capture (linked when the request starts, so a crash keeps
it). Everything saved passes the request's :class:`~streamscope.core.redact.Scrubber`: the
history in memory keeps the answer as it came, the database a copy with its secrets masked.
Without a store it is just the history.

Nothing is deleted: every message is saved after its parent in the history's tree (a
regenerated answer beside the one it replaces; an edited prompt, once sent, beside the one it
edits), and paging alternatives saves which one is shown. Editing writes nothing until the
edited prompt is sent.

The next request is the stored conversation, never what happens to be loaded or on screen:
:meth:`ChatSession.context` is the whole shown path — for a conversation opened with only its
latest messages (:meth:`ChatSession.open` with a ``limit``), the stored messages before them
too — and :meth:`ChatSession.conversation` applies the endpoint's
:class:`~streamscope.core.wire.context.ContextPolicy` to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamscope.core.redact import Scrubber
from streamscope.core.store.database import Store
from streamscope.core.store.history import ChatHistory, Node, ToolResult, assistant_message
from streamscope.core.store.records import StoredMessage, to_chat_history, turn_from_stored
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta, apply_tool_calls
from streamscope.core.wire.context import ContextCut, ContextPolicy, apply_policy
from streamscope.core.wire.conversation import Conversation, Message, ToolDefinition

__all__ = ["SAVE_INTERVAL", "ChatSession", "SavedAnswer", "Schedule"]

SAVE_INTERVAL = 0.5
"""What arrived is saved at most this many seconds later (a crash loses at most that)."""

Schedule = Callable[[float, Callable[[], None]], Any]
"""``schedule(delay, callback)``: call ``callback`` ``delay`` seconds from now (by default on
the running asyncio loop)."""


def _call_later(delay: float, callback: Callable[[], None]) -> Any:
    try:
        return asyncio.get_running_loop().call_later(delay, callback)
    except RuntimeError:  # no loop (a script): the next delta or the end saves
        return None


@dataclass(slots=True)
class SavedAnswer:
    """The assistant message being streamed: its row and the text so far."""

    message_id: int | None
    text: list[str]
    reasoning: list[str]
    reasoning_channel: str | None = None
    tool_calls: tuple[ToolCallState, ...] = ()
    saved_at: float = 0.0
    scrubber: Scrubber = field(default_factory=Scrubber)
    dirty: bool = False  # something arrived since the last save
    timer: Any = None  # the pending save, if any


class ChatSession:
    def __init__(
        self,
        store: Store | None = None,
        *,
        save_interval: float = SAVE_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule = _call_later,
    ) -> None:
        self.store = store
        self.save_interval = save_interval
        self._clock = clock
        self._schedule = schedule
        self.history = ChatHistory()
        self.conversation_id: int | None = None
        self.title = ""
        self.model: str | None = None
        """The model the conversation last used (as saved with it)."""
        self.has_more = False
        self.tools: tuple[ToolDefinition, ...] = ()
        self.loaded_messages: list[StoredMessage] = []
        self._answer: SavedAnswer | None = None
        self._finished: tuple[int, Scrubber] | None = None  # the last answer's row and secrets
        self._earlier: list[Message] | None = None  # the stored path above what is loaded

    @classmethod
    def open(cls, store: Store, conversation_id: int, limit: int | None = None) -> ChatSession:
        """A saved conversation: all of it, or its latest ``limit`` messages (``has_more``
        if older)."""
        session = cls(store)
        stored = store.load_conversation(conversation_id, limit=limit)
        session.conversation_id = conversation_id
        session.title = stored.summary.title
        session.model = stored.summary.model
        session.has_more = stored.has_more
        session.tools = tuple(stored.tools)
        session.loaded_messages = list(stored.messages)
        session.history = to_chat_history(stored.messages)
        return session

    # -- what the next request sends -----------------------------------------------------

    def context(self) -> list[Message]:
        """The whole conversation as the next request sends it, before any context policy:
        the stored messages of the shown path above what is loaded (when the conversation
        was opened with a ``limit`` and has more), then the loaded path."""
        return [*self._earlier_messages(), *self.history.messages()]

    def conversation(
        self,
        policy: ContextPolicy = ContextPolicy(),
        *,
        tools: Sequence[ToolDefinition] | None = None,
        system: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, object] | None = None,
        include_usage: bool = True,
    ) -> tuple[Conversation, ContextCut]:
        """The next request's input: :meth:`context` cut by ``policy`` (at an exchange
        boundary: see :mod:`~streamscope.core.wire.context`), with ``tools`` (by default
        this conversation's), and what the cut kept."""
        messages, cut = apply_policy(self.context(), policy)
        conv = Conversation(
            messages=tuple(messages),
            system=system or None,
            tools=tuple(self.tools if tools is None else tools),
            temperature=temperature,
            max_tokens=max_tokens,
            extra_body=dict(extra_body or {}),
            include_usage=include_usage,
        )
        return conv, cut

    def next_cut(self, policy: ContextPolicy) -> ContextCut:
        """What ``policy`` would send with the next message (that message counted, empty):
        for the composer to say before anything is sent."""
        return apply_policy([*self.context(), Message("user", "")], policy)[1]

    def _earlier_messages(self) -> list[Message]:
        """The stored shown path up to the message the loaded part follows (the history's
        root key), read once."""
        above = self.history.root.key
        if not self.has_more or above is None or self.store is None:
            return []
        if self._earlier is None:
            assert self.conversation_id is not None
            path = self.store.path_ids(self.conversation_id)
            wanted = path[: path.index(above) + 1] if above in path else []
            ids = set(wanted)
            stored = {
                m.id: m
                for m in self.store.load_messages(self.conversation_id, limit=None)
                if m.id in ids
            }
            earlier = (_context_message(stored[i]) for i in wanted if i in stored)
            self._earlier = [m for m in earlier if m is not None]
        return self._earlier

    # -- the user ------------------------------------------------------------------------

    def user_sent(self, text: str, *, endpoint_name: str, model: str) -> None:
        """The user sent ``text`` (while editing: the edited prompt, saved beside the one
        it edits)."""
        node = self.history.add_user(text)
        self.model = model
        if not self.title:  # (named by its first message, saved or not)
            self.title = text.strip().splitlines()[0][:60] if text.strip() else "Untitled"
        if self.store is None:
            return
        if self.conversation_id is None:
            self.conversation_id = self.store.create_conversation(
                self.title, endpoint_name=endpoint_name, model=model, tools=self.tools
            )
        else:
            self.store.set_endpoint(self.conversation_id, endpoint_name, model)
        parent = node.parent.key if node.parent is not None else None
        node.key = self.store.add_user_message(self.conversation_id, text, parent_id=parent)

    def set_tools(self, tools: Sequence[ToolDefinition]) -> None:
        """The function definitions this conversation sends (kept with it)."""
        self.tools = tuple(tools)
        if self.store is not None and self.conversation_id is not None:
            self.store.set_tools(self.conversation_id, self.tools)

    def tool_results(self, results: Sequence[ToolResult]) -> None:
        parent = self.history.tip().key
        nodes = self.history.add_tool_results(results)
        if self.store is not None and self.conversation_id is not None:
            ids = self.store.add_tool_results(self.conversation_id, results, parent_id=parent)
            for node, key in zip(nodes, ids, strict=True):
                node.key = key

    def edit_last(self) -> str:
        """Start editing the last user message; returns its text. Nothing is saved or
        removed: sending the edited text adds it beside the original (with
        :meth:`user_sent`), :meth:`cancel_edit` leaves everything as it was."""
        return self.history.begin_edit()

    def cancel_edit(self) -> None:
        self.history.cancel_edit()

    # -- the answer ----------------------------------------------------------------------

    def answer_started(
        self, *, alternative: bool, scrubber: Scrubber | None = None, model: str | None = None
    ) -> None:
        """An answer starts streaming (``scrubber``: the request's secrets, masked in what
        is saved; ``model``: the model it asks for)."""
        if alternative and not self.history.regenerating:
            with contextlib.suppress(ValueError):  # (nothing to regenerate: a new answer)
                self.history.regenerate()
        message_id = None
        if self.store is not None and self.conversation_id is not None:
            parent = self.history.answer_parent().key
            message_id = self.store.begin_assistant_message(
                self.conversation_id, parent_id=parent, model=model
            )
        self._answer = SavedAnswer(
            message_id, [], [], saved_at=self._clock(), scrubber=scrubber or Scrubber()
        )

    def answer_request(self, scrubber: Scrubber, capture_id: str | None) -> None:
        """The request went out: its secrets (masked in what is saved) and its capture (the
        turn points at it from now on: a crash keeps the bytes received)."""
        answer = self._answer
        if answer is None:
            return
        answer.scrubber = scrubber
        if capture_id is not None and self.store is not None and answer.message_id is not None:
            self.store.link_capture(answer.message_id, capture_id)

    def answer_progressed(self, delta: TurnDelta) -> bool:
        """Keep what the reducer says changed; save it now if the last save is
        ``save_interval`` old, else at that time (whether or not more arrives). Returns
        whether it saved now."""
        answer = self._answer
        if answer is None:
            return False
        if delta.text:
            answer.text.append(delta.text)
        if delta.reasoning:
            answer.reasoning.append(delta.reasoning)
        answer.reasoning_channel = delta.reasoning_channel
        if delta.tool_calls:
            answer.tool_calls = tuple(apply_tool_calls(list(answer.tool_calls), delta.tool_calls))
        answer.dirty = True
        if self.store is None or answer.message_id is None:
            return False
        wait = answer.saved_at + self.save_interval - self._clock()
        if wait <= 0:
            self._save(answer)
            return True
        if answer.timer is None:
            answer.timer = self._schedule(wait, self._on_save_due)
        return False

    def _on_save_due(self) -> None:
        answer = self._answer
        if answer is not None:
            answer.timer = None
            if answer.dirty:
                self._save(answer)

    def _save(self, answer: SavedAnswer) -> None:
        assert self.store is not None and answer.message_id is not None
        scrub = answer.scrubber
        answer.saved_at = self._clock()
        answer.dirty = False
        self.store.update_assistant_partial(
            answer.message_id,
            scrub.text("".join(answer.text)),
            scrub.text("".join(answer.reasoning)),
            [c.scrubbed(scrub) for c in answer.tool_calls],
            answer.reasoning_channel,
        )

    @property
    def answer_id(self) -> int | None:
        """The saved row of the answer streaming (``None``: none, or not saved)."""
        return self._answer.message_id if self._answer is not None else None

    def answer_checked(self, message_id: int, verdict: str) -> None:
        """The Verdict tab checked answer ``message_id`` (before or after
        :meth:`answer_finished`): keep its short line (``""``: nothing to say) with it, under
        the current rules (:mod:`~streamscope.core.store.verdicts`), masked like the rest of
        the answer."""
        if self.store is None:
            return
        from streamscope.core.verdict.catalog import rules_digest  # (loaded by the check)

        answer, finished = self._answer, self._finished
        if answer is not None and answer.message_id == message_id:
            scrubber = answer.scrubber
        elif finished is not None and finished[0] == message_id:
            scrubber = finished[1]
        else:
            scrubber = Scrubber()
        self.store.save_verdict(message_id, scrubber.text(verdict), rules_digest())

    def answer_finished(self, turn: Turn, capture_id: str | None = None) -> bool:
        """Record the finished turn (any outcome) with its capture's id; returns whether the
        saved copy differs from the turn (a secret was masked in it)."""
        node = self.history.add_answer(turn)
        answer, self._answer = self._answer, None
        if answer is None:
            return False
        node.key = answer.message_id
        if answer.timer is not None and hasattr(answer.timer, "cancel"):
            answer.timer.cancel()
        saved = turn.scrubbed(answer.scrubber)
        if self.store is not None and answer.message_id is not None:
            self.store.finish_assistant_message(answer.message_id, saved, capture_id)
            self._finished = (answer.message_id, answer.scrubber)  # (its verdict may follow)
        return saved != turn

    def choose(self, index: int) -> Turn:
        """Show alternative ``index`` of the last answer (saved)."""
        turn = self.history.choose(index)
        self._save_choice(self.history.tip())
        return turn

    def choose_at(self, depth: int, index: int) -> Node:
        """Show alternative ``index`` of the path's step ``depth`` (saved)."""
        node = self.history.choose_at(depth, index)
        self._save_choice(node)
        return node

    def _save_choice(self, node: Node) -> None:
        if self.store is not None and node.key is not None:
            self.store.choose_message(node.key)

    def capture_ids(self) -> list[str | None]:
        """The capture of every loaded answer, in order (for Save capture / repro)."""
        return [m.turn.capture_id if m.turn else None for m in self.loaded_messages]


def _context_message(stored: StoredMessage) -> Message | None:
    """A saved message as the context sends it (as the history holds it once loaded)."""
    if stored.role == "assistant":
        return assistant_message(turn_from_stored(stored))
    if stored.role == "tool":
        return Message("tool", stored.text, tool_call_id=stored.tool_call_id, name=stored.name)
    return Message("user", stored.text)
