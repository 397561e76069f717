"""Runs the chat: composer in, one turn at a time through the TurnRunner, results out to the
chat view, the inspector and the status bar.

The controller holds the current conversation (:class:`~streamscope.core.store.history.ChatHistory`)
and never blocks the event loop: starting the demo server, reading the keyring and the turn
itself all happen in tasks it owns and cancels.

No click removes history. Edit last only marks the last message (the composer holds its
text): sending the edited text adds it as a new version beside the original — whose answers
stay, one ◀ ▶ away on the message — and cancelling changes nothing. Tool calls left
unanswered when the conversation goes on are said so on their card (the request answers them
"not run": see :func:`~streamscope.core.wire.conversation.settle_tool_calls`).

The chat shows the conversation's rows (:mod:`streamscope.ui.chat.conversation_rows`) and builds
cards only near its viewport: everything a card shows — which alternative, the results its
tool calls got, its turn in the inspector, its verdict — is kept in its row, whether or not
the card exists (:class:`~streamscope.ui.chat.chat_cards.ChatCards` builds and syncs them).
Each answer knows its turn (:attr:`AnswerSlot.ref`); clicking its card, paging to it or
opening its conversation shows that turn in the inspector through the
:class:`~streamscope.ui.chat.turn_viewer.TurnViewer` the window gives it (the inspector's feed),
which the live turn feeds too.
The runner's signals are handled in :mod:`streamscope.ui.chat.live_turn`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.options import StreamTimeouts, TLSOptions
from streamscope.core.store.history import ChatHistory, ToolResult
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolDefinition
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.chat_answers import ChatAnswers
from streamscope.ui.chat.chat_cards import ChatCards
from streamscope.ui.chat.chat_rows import AnswerSlot, AnswersRow, UserRow
from streamscope.ui.chat.chat_view import ChatView
from streamscope.ui.chat.conversation_rows import ConversationRows, PreparedRows
from streamscope.ui.chat.live_elsewhere import LiveElsewhere, Parked
from streamscope.ui.chat.live_turn import LiveTurn, requested_model
from streamscope.ui.chat.liveness_ticker import LivenessTicker
from streamscope.ui.chat.status_panel import StatusPanel
from streamscope.ui.chat.turn_runner import TurnRunner
from streamscope.ui.chat.turn_viewer import TurnViewer
from streamscope.ui.chat.verdict_keeper import VerdictKeeper
from streamscope.ui.endpoint.demo_service import DemoService

if TYPE_CHECKING:
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture
    from streamscope.core.net.worker import StreamWorker
    from streamscope.core.wire.dialects.base import RequestSpec


_log = logging.getLogger("streamscope.chat")

WORKER_ENV = "STREAMSCOPE_WORKER"
"""Set to ``0`` to read and parse live turns on the UI thread instead of in the stream
worker process (for debugging)."""


MEMORY_CAPTURES = 50
"""Without a profile, the captures of this many latest answers are kept (in memory)."""

MEMORY_NOTE = (
    "This turn's capture is not kept: without a profile, only the captures of the last"
    f" {MEMORY_CAPTURES} answers are kept, in memory."
)


def _stream_worker() -> StreamWorker | None:
    import os

    if os.environ.get(WORKER_ENV, "1") == "0":
        return None
    from streamscope.core.net.worker import StreamWorker

    return StreamWorker()


class ChatController(ChatAnswers, LiveTurn, LiveElsewhere, QObject):
    """Sends what the composer submits; see the module docstring."""

    busyChanged = Signal(bool)
    historyChanged = Signal()
    editingChanged = Signal(bool)
    """The last message started (``True``) or stopped being edited (sent, cancelled, or
    another conversation opened)."""
    elsewhereChanged = Signal(str)
    """The title of the conversation a turn streams into while another one is shown
    (``""``: none; see :mod:`~streamscope.ui.chat.live_elsewhere`)."""

    def __init__(
        self,
        *,
        chat: ChatView,
        viewer: TurnViewer,
        status: StatusPanel,
        endpoint: Callable[[], Endpoint],
        api_key: Callable[[Endpoint], str | None],
        headers: Callable[[Endpoint], dict[str, str]],
        tls: Callable[[Endpoint], TLSOptions] = Endpoint.tls,
        tools: Callable[[], list[ToolDefinition]],
        demo: DemoService,
        captures: CaptureStore | None = None,
        parent: QObject | None = None,
    ) -> None:
        """``viewer``: what shows its turns (the inspector's feed); ``captures``: where each
        live turn's capture is written as it streams."""
        super().__init__(parent)
        self.chat = chat
        self.status = status
        self._endpoint = endpoint
        self._api_key = api_key
        self._headers = headers
        self._tls = tls
        self._tools = tools
        self.demo = demo
        self.runner = TurnRunner(None, self, worker=_stream_worker())
        self.runner.captures = captures
        self.runner.warm_ups.append(lambda: demo.warm_up(self._endpoint()))
        self.session = ChatSession()
        self.rows = ConversationRows()
        self.verdicts = VerdictKeeper(chat)
        self._selected: int | None = None  # the key of the turn the inspector shows
        chat.factory = ChatCards(self, lambda: self._selected)
        self._live: AnswerSlot | None = None  # the answer streaming (or replayed)
        self._card: AssistantCard | None = None  # its card (built while it streams)
        self._finished: AnswerSlot | None = None  # (its capture is being written)
        self._away: Parked | None = None  # the live turn's conversation, another one shown
        self.busyChanged.connect(self._on_busy_changed_elsewhere)  # (before the window's)
        self._editing: UserRow | None = None
        self._prepare: asyncio.Task[None] | None = None
        self.last_capture: Capture | None = None
        self._replaying: Capture | None = None
        self.feed = viewer
        self.feed.shown.connect(self._on_feed_shown)
        self.feed.loaded.connect(self._on_feed_loaded)
        self.feed.ended.connect(self._on_feed_ended)
        self._frame_wanted: tuple[int, str] | None = None  # (a frame to select once loaded)
        self._keep_captures = captures is None  # (no profile: captures live in the refs)
        self._keys = itertools.count(1)
        self.runner.turnStarted.connect(self._on_runner_turn_started)
        self.runner.responseStarted.connect(self._on_runner_response_started)
        self.runner.turnProgressed.connect(self._on_runner_turn_progressed)
        self.runner.turnFinished.connect(self._on_runner_turn_finished)
        self.runner.turnRecorded.connect(self._on_runner_turn_recorded)
        self.liveness = LivenessTicker(self, clock=self.runner.clock)
        self.liveness.ticked.connect(self._on_liveness_ticked)

    # -- commands ------------------------------------------------------------------------

    @property
    def history(self) -> ChatHistory:
        return self.session.history

    @property
    def busy(self) -> bool:
        return self.runner.running or (self._prepare is not None and not self._prepare.done())

    def send(self, text: str) -> None:
        """Send a new user message (while editing: the edited last message, as its new
        version)."""
        if self.busy:
            return
        endpoint = self._endpoint()
        self._add_user_message(text, endpoint_name=endpoint.name, model=endpoint.model)
        self._start_turn()

    def _add_user_message(self, text: str, *, endpoint_name: str, model: str) -> None:
        editing = self.history.editing
        skipped = self.history.unanswered()
        chosen, count = self.history.alternatives()
        self.session.user_sent(text, endpoint_name=endpoint_name, model=model)
        if editing:
            self._end_edit()
            self._rebuild_view()  # (the earlier version's answers leave the view)
            return
        last = self.rows.steps[-1] if self.rows.steps else None
        if skipped and last is not None and len(last.slots) >= count:
            shown = last.slots[len(last.slots) - count + chosen]
            shown.unanswered, shown.skipped = skipped, True
            self.chat.refresh(shown)
        self.chat.drop_welcome()
        self.chat.append_row(self.rows.user_sent(text, len(self.history.path()) - 1))
        self.chat.scroll_to_bottom()  # (the user just acted: follow the end again)

    def regenerate(self) -> None:
        """Answer the last user message again; the earlier answer stays as an alternative."""
        if self.busy or self.history.editing:
            return
        try:
            self.history.regenerate()
        except ValueError:
            return
        self._start_turn(alternative=True)  # (the last row shows the new answer instead)

    def edit_last(self) -> str | None:
        """Start editing the last user message; returns its text for the composer. Nothing
        changes until the edited text is sent (:meth:`send`) or :meth:`cancel_edit`."""
        if self.busy:
            return None
        try:
            text = self.session.edit_last()
        except ValueError:
            return None
        self._editing = self.rows.last_user
        if self._editing is not None:
            self._editing.editing = True
            self.chat.refresh(self._editing)
        self.editingChanged.emit(True)
        return text

    def cancel_edit(self) -> None:
        """Leave the last message as it was."""
        if self.history.editing:
            self.session.cancel_edit()
            self._end_edit()

    def _end_edit(self) -> None:
        if self._editing is not None:
            self._editing.editing = False
            self.chat.refresh(self._editing)
            self._editing = None
        self.editingChanged.emit(False)

    def choose_version(self, depth: int, index: int) -> None:
        """Show version ``index`` of the message at ``depth`` on the shown path, with its
        own answers and whatever followed them."""
        if self.busy:
            return
        was_editing = self.history.editing
        try:
            self.session.choose_at(depth, index)
        except IndexError:
            return
        if was_editing:
            self._end_edit()
        self._rebuild_view()

    def send_tool_results(self, results: list[ToolResult]) -> None:
        """Continue the turn with the user's answers to the tool calls."""
        if self.busy or not results:
            return
        self.session.tool_results(results)
        self._start_turn()

    def replay(self, capture: Capture, *, speed: float | None, label: str) -> bool:
        """Show a recorded turn exactly as it went live: chat card, inspector, status bar.
        A replay is not added to the conversation."""
        if self.busy:
            return False
        self._replaying = capture
        # (when it was recorded: a HAR entry's startedDateTime, not now)
        ref = self._new_ref(requested_model(capture), conversation=label, started=capture.started)
        slot = AnswerSlot(label, ref)
        self.chat.append_row(AnswersRow(slots=[slot], replay=True))
        self._go_live(slot)
        self.status.show_started(label)
        self.busyChanged.emit(True)
        self.runner.start_replay(capture, speed=speed)
        return True

    def stop(self) -> None:
        if self._prepare is not None and not self._prepare.done():
            self._prepare.cancel()
        self.runner.stop()

    async def shutdown(self) -> None:
        """Cancel a running turn, wait for it, close the network and the demo server."""
        self.stop()
        if self._prepare is not None:
            await asyncio.gather(self._prepare, return_exceptions=True)
        await self.runner.wait()
        await self.verdicts.aclose()
        await self.feed.aclose()
        await self.runner.aclose()
        await self.demo.aclose()

    def open_session(self, session: ChatSession, prepared: PreparedRows | None = None) -> None:
        """Show another conversation (a new one, or one loaded from the store; ``prepared``:
        its rows, when :meth:`prepare` made them already). An edit in progress is left
        (nothing of it was saved). While a turn streams, its conversation is parked."""
        if self.busy:
            self._open_while_busy(session, prepared)
            return
        editing = self.history.editing
        self.session.cancel_edit()
        self.session = session
        self._editing = None
        if editing:
            self.editingChanged.emit(False)
        self.verdicts.open(session.store, self.runner.captures, session.loaded_messages)
        self._show_rows(prepared if prepared is not None else self.prepare(session))
        self.status.show_message("Ready")  # (it spoke of a turn of the conversation left)

    # -- a turn --------------------------------------------------------------------------

    def start_request(
        self,
        spec: RequestSpec,
        *,
        dialect: str,
        label: str,
        user_text: str,
        endpoint_name: str,
        model: str,
        timeouts: StreamTimeouts = StreamTimeouts(),
        tls: TLSOptions = TLSOptions(),
    ) -> bool:
        """Send a ready request (edited, raw, imported from curl) as a turn of this
        conversation: ``user_text`` stands for it in the chat and the history."""
        if self.busy:
            return False
        self._add_user_message(user_text, endpoint_name=endpoint_name, model=model)
        self._begin_answer(label, status=label, alternative=False, model=model)
        self.runner.start(spec, dialect=dialect, timeouts=timeouts, tls=tls)
        self.historyChanged.emit()
        return True

    def _begin_answer(self, label: str, *, status: str, alternative: bool, model: str) -> None:
        slot = AnswerSlot(label, self._new_ref(model))
        step = self.rows.answer_begun(slot, alternative=alternative, depth=len(self.history.path()))
        if step is not None:
            self.chat.append_row(step)
        elif slot.row is not None:
            self.chat.row_changed(slot.row)  # (it shows the new answer instead)
        self._go_live(slot)
        self.session.answer_started(alternative=alternative, model=model)
        self.status.show_started(status)
        self.busyChanged.emit(True)

    def _go_live(self, slot: AnswerSlot) -> None:
        self._live = slot
        card = self.chat.ensure_card(slot)  # (kept built while it streams)
        assert isinstance(card, AssistantCard)
        self._card = card
        assert slot.ref is not None
        self.feed.live_started(slot.ref)

    def _start_turn(self, *, alternative: bool = False) -> None:
        endpoint = self._endpoint()
        model = endpoint.model or endpoint.name
        label = model
        if alternative:
            label += f" · answer {self.history.alternatives()[1] + 1}"
        self._begin_answer(label, status=endpoint.name, alternative=alternative, model=model)
        self._prepare = asyncio.ensure_future(self._launch(endpoint))
        self._prepare.add_done_callback(self._on_prepare_done)

    async def _launch(self, endpoint: Endpoint) -> None:
        dialect = endpoint.dialect if endpoint.dialect != "auto" else "openai"
        if endpoint.is_demo:
            await self.demo.ensure_started()
            base_url = self.demo.base_url(dialect)
        else:
            base_url = endpoint.base_url
        await self.runner.warmed()  # (the keyring's backend is being detected off this thread)
        api_key = self._api_key(endpoint)
        # The whole stored conversation (not what the view holds), cut by the policy.
        conv, cut = self.live_session.conversation(
            endpoint.context_policy,
            tools=self._tools(),
            system=endpoint.system_prompt or None,
            temperature=endpoint.temperature,
            max_tokens=endpoint.max_tokens,
            extra_body=dict(endpoint.extra_body),
            include_usage=endpoint.include_usage,
        )
        from streamscope.core.wire.dialects import get_dialect

        spec = get_dialect(dialect).build_request(
            conv,
            base_url=base_url,
            model=endpoint.model,
            api_key=api_key,
            extra_headers=self._headers(endpoint),
        )
        spec = replace(spec, context=cut)
        self.runner.start(
            spec, dialect=endpoint.dialect, timeouts=endpoint.timeouts(), tls=self._tls(endpoint)
        )

    def _on_prepare_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            self._fail_before_start("Cancelled by you before the request was sent")
            return
        exc = task.exception()
        if exc is not None:
            self._fail_before_start(f"Could not send: {type(exc).__name__}: {exc}")

    def _fail_before_start(self, message: str) -> None:
        turn = Turn(outcome=Outcome.ERROR, reason=message)
        slot, self._live = self._live, None
        if slot is not None:
            if self._card is not None:
                self._card.finish(turn)
            slot.turn = turn
            note = f"Nothing was sent, so nothing was captured. {message}"
            ref = self._update_ref(slot, outcome=Outcome.ERROR, note=note)
            if ref is not None:
                self.feed.live_finished(turn, ref)
        self._card = None
        self.live_session.answer_finished(turn)
        self.status.show_message(message)
        self.busyChanged.emit(False)

    def _on_runner_turn_recorded(self, capture: Capture) -> None:
        self.last_capture = capture
        slot, self._finished = self._finished, None
        if slot is None or slot.ref is None:
            return
        if self._keep_captures or slot.ref.capture_id is None:  # (kept in memory only)
            self._update_ref(slot, capture=capture)
            kept = [s for s in self.answers if s.ref and s.ref.capture]
            for old in kept[:-MEMORY_CAPTURES]:
                self._update_ref(old, capture=None, note=MEMORY_NOTE)


__all__ = ["MEMORY_CAPTURES", "MEMORY_NOTE", "ChatController"]
