"""Each answer's short verdict ("⚑ 2 spec errors") kept with it: on its card again when its
conversation is reopened, made again from its capture when the rules have changed.

A live answer's line comes from the Verdict tab when the turn has been checked and is saved
with the turn (:mod:`streamscope.ui.chat.live_turn`). When a conversation opens,
:class:`VerdictKeeper` learns the current rules' digest off the UI thread (the checker is not
loaded with the window), then gives each answer shown the line kept with it under those rules.
An answer whose line was made by other rules, or never made, and that has a capture, is
checked again (:func:`~streamscope.core.store.verdicts.recheck`) — only once its card is
built (the chat builds cards near its viewport: the answers looked at, never a whole
profile), on a worker thread of its own, one at a time, the card built last first — and the
line is kept with the turn and shown on its card.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.store.messages import MessageRows
    from streamscope.core.store.records import StoredMessage, StoredTurn
    from streamscope.ui.chat.chat_rows import AnswerSlot
    from streamscope.ui.chat.chat_view import ChatView

__all__ = ["VerdictKeeper"]

_log = logging.getLogger("streamscope.chat")

T = TypeVar("T")


def _rules() -> str:
    from streamscope.core.verdict.catalog import rules_digest  # (its import: ~25 ms)

    return rules_digest()


def _recheck(
    store: MessageRows, message_id: int, captures: CaptureStore, capture_id: str, rules: str
) -> str | None:
    from streamscope.core.store.verdicts import recheck

    return recheck(store, message_id, captures.path(capture_id), rules)


class VerdictKeeper:
    """See the module docstring. ``checked``: how many answers were checked again."""

    def __init__(self, chat: ChatView) -> None:
        self._chat = chat
        self._store: MessageRows | None = None
        self._captures: CaptureStore | None = None
        self._kept: dict[int, StoredTurn] = {}  # the open conversation's saved turns, by message
        self._slots: list[AnswerSlot] = []
        self._rules: str | None = None  # the current rules' digest, once known
        self._stale: dict[int, AnswerSlot] = {}  # to check again once their card is built
        self._asked: set[int] = set()  # (queued or checked already: once a conversation)
        self._queue: list[AnswerSlot] = []  # (the last one first)
        self._generation = 0  # bumped when another conversation opens
        self._io: ThreadPoolExecutor | None = None
        self._job: Future[Any] | None = None
        self.task: asyncio.Task[None] | None = None
        """Checking (``None`` or done when nothing is to be checked)."""
        self.checked = 0

    def open(
        self,
        store: MessageRows | None,
        captures: CaptureStore | None,
        messages: Sequence[StoredMessage],
    ) -> None:
        """Another conversation opens (``messages``: its saved messages as loaded; without a
        ``store`` nothing is kept): what waited to be checked for the one before is let go."""
        self._generation += 1
        self._store, self._captures = store, captures
        self._kept = {m.id: m.turn for m in messages if m.turn is not None}
        self._rules = None  # (asked again: a dialect registered since brings its rules)
        self._slots = []
        self._stale.clear()
        self._asked.clear()
        self._queue.clear()

    def show(self, slots: Sequence[AnswerSlot]) -> None:
        """The chat shows these answers now (a conversation opened, or its path redrawn)."""
        self._slots = list(slots)
        if self._store is None or not self._kept:
            return
        if self._rules is None:
            self._kick()  # (the answers get their lines once the digest is known)
        else:
            self._apply(self._slots, self._rules)

    def card_built(self, slot: AnswerSlot) -> None:
        """``slot``'s card was built (it is in or near the view): check it again if its kept
        line is not the current rules'."""
        if slot.message_id is not None and self._stale.get(slot.message_id) is slot:
            self._want(slot)

    async def settled(self) -> None:
        """Wait until nothing is left to check (tests)."""
        while self.task is not None and not self.task.done():
            await asyncio.gather(self.task, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop checking; wait for the check running, if any (it writes to the store)."""
        self._generation += 1
        self._queue.clear()
        self._stale.clear()
        task, job = self.task, self._job
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if job is not None:
            await asyncio.gather(asyncio.wrap_future(job), return_exceptions=True)
        if self._io is not None:
            self._io.shutdown(wait=False)

    # -- internals ----------------------------------------------------------------------

    def _apply(self, slots: Sequence[AnswerSlot], rules: str) -> None:
        """Give each answer its kept line; note those to check again (and queue the ones
        whose card is built)."""
        for slot in slots:
            stored = self._kept.get(slot.message_id) if slot.message_id is not None else None
            if stored is None or slot.turn is None:
                continue
            line = stored.kept_verdict(rules)
            if line is not None:
                self._show(slot, line)
            elif stored.capture_id is not None and stored.message_id not in self._asked:
                self._stale[stored.message_id] = slot  # (kept: a redraw may make it again)
                if self._chat.card_of(slot) is not None:
                    self._want(slot)

    def _want(self, slot: AnswerSlot) -> None:
        assert slot.message_id is not None
        del self._stale[slot.message_id]
        self._asked.add(slot.message_id)
        self._queue.append(slot)
        self._kick()

    def _kick(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            generation = self._generation
            if self._rules is None:
                rules = await self._in_thread(_rules)
                if generation != self._generation:
                    continue  # (another conversation opened meanwhile)
                self._rules = rules
                self._apply(self._slots, rules)
            if not self._queue:
                return
            slot = self._queue.pop()
            store, captures = self._store, self._captures
            stored = self._kept.get(slot.message_id) if slot.message_id is not None else None
            if store is None or captures is None or stored is None or stored.capture_id is None:
                continue
            rules = self._rules
            try:
                line = await self._in_thread(
                    _recheck, store, stored.message_id, captures, stored.capture_id, rules
                )
            except Exception:  # (a database closed or locked: the turn keeps what it had)
                _log.exception("could not check turn %s again", stored.message_id)
                continue
            self.checked += 1
            if line is None:
                _log.info("turn %s: its capture could not be checked", stored.message_id)
                continue
            if generation == self._generation:
                self._kept[stored.message_id] = replace(stored, verdict=line, verdict_rules=rules)
                self._show(slot, line)

    async def _in_thread(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` on the keeper's worker thread."""
        if self._io is None:
            self._io = ThreadPoolExecutor(1, thread_name_prefix="verdict-check")
        job = self._job = self._io.submit(fn, *args)
        return await asyncio.wrap_future(job)

    def _show(self, slot: AnswerSlot, line: str) -> None:
        if not line or slot.verdict == line:
            return
        slot.verdict = line
        row = slot.row
        if row is not None and row.shown is slot:
            self._chat.row_changed(row)  # (the footer may take another line)
        else:
            self._chat.refresh(slot)
