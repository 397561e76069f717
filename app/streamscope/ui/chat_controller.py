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

Each answer card knows its turn (:attr:`AssistantCard.turn_ref`); clicking it, paging to
it or opening its conversation shows that turn in the inspector through the
:class:`~streamscope.ui.inspector.turn_feed.InspectorFeed`, which the live turn feeds too.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.options import StreamTimeouts, TLSOptions
from streamscope.core.store.history import ChatHistory, PathEntry, ToolResult
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolDefinition
from streamscope.ui.chat_view import AssistantCard, ChatView, UserCard
from streamscope.ui.demo_service import DemoService
from streamscope.ui.inspector.inspector import InspectorPanel
from streamscope.ui.inspector.turn_feed import InspectorFeed
from streamscope.ui.inspector.turn_header import TurnRef
from streamscope.ui.liveness_ticker import LivenessTicker
from streamscope.ui.status_panel import StatusPanel
from streamscope.ui.turn_runner import ProgressBatch, TurnRunner, TurnStart

if TYPE_CHECKING:
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture
    from streamscope.core.net.worker import StreamWorker
    from streamscope.core.turn.liveness import Liveness
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


def _requested_model(capture: Capture) -> str:
    """The model a captured request asked for (else its dialect)."""
    import orjson

    try:
        body = orjson.loads(capture.request.body) if capture.request is not None else None
    except orjson.JSONDecodeError:
        body = None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) and model else capture.dialect


def _stream_worker() -> StreamWorker | None:
    import os

    if os.environ.get(WORKER_ENV, "1") == "0":
        return None
    from streamscope.core.net.worker import StreamWorker

    return StreamWorker()


class ChatController(QObject):
    """Sends what the composer submits; see the module docstring."""

    busyChanged = Signal(bool)
    historyChanged = Signal()
    editingChanged = Signal(bool)
    """The last message started (``True``) or stopped being edited (sent, cancelled, or
    another conversation opened)."""

    def __init__(
        self,
        *,
        chat: ChatView,
        inspector: InspectorPanel,
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
        """``captures``: where each live turn's capture is written as it streams."""
        super().__init__(parent)
        self.chat = chat
        self.inspector = inspector
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
        self._card: AssistantCard | None = None
        self._editing_card: UserCard | None = None
        self._prepare: asyncio.Task[None] | None = None
        self.answer_cards: list[AssistantCard] = []
        self.last_capture: Capture | None = None
        self._replaying: Capture | None = None
        self.feed = InspectorFeed(inspector, captures, self)
        self.feed.shown.connect(self._on_feed_shown)
        self.feed.loaded.connect(self._on_feed_loaded)
        self._frame_wanted: tuple[int, str] | None = None  # (a frame to select once loaded)
        self._keep_captures = captures is None  # (no profile: captures live on the cards)
        self._keys = itertools.count(1)
        self._finished_card: AssistantCard | None = None  # (its capture is being written)
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
        if skipped and len(self.answer_cards) >= count:
            shown = self.answer_cards[len(self.answer_cards) - count + chosen]
            shown.show_unanswered(skipped, skipped=True)
        self.chat.add_user_message(text)

    def regenerate(self) -> None:
        """Answer the last user message again; the earlier answer stays as an alternative."""
        if self.busy or self.history.editing:
            return
        step = max(self.history.alternatives()[1], 1)  # (any of them may be the one shown)
        try:
            self.history.regenerate()
        except ValueError:
            return
        for card in self.answer_cards[-step:]:
            card.hide()
        self._start_turn(alternative=True)

    def edit_last(self) -> str | None:
        """Start editing the last user message; returns its text for the composer. Nothing
        changes until the edited text is sent (:meth:`send`) or :meth:`cancel_edit`."""
        if self.busy:
            return None
        try:
            text = self.session.edit_last()
        except ValueError:
            return None
        cards = [c for c in self.chat.cards() if isinstance(c, UserCard)]
        if cards:
            self._editing_card = cards[-1]
            self._editing_card.set_editing(True)
        self.editingChanged.emit(True)
        return text

    def cancel_edit(self) -> None:
        """Leave the last message as it was."""
        if self.history.editing:
            self.session.cancel_edit()
            self._end_edit()

    def _end_edit(self) -> None:
        if self._editing_card is not None:
            self._editing_card.set_editing(False)
            self._editing_card = None
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

    def choose_alternative(self, index: int) -> None:
        count = self.history.alternatives()[1]
        if self.busy or not 0 <= index < count:
            return
        length = len(self.history.path())
        self.session.choose(index)
        if len(self.history.path()) != length:
            self._rebuild_view()  # (that answer was continued: the path after it shows)
            return
        cards = self.answer_cards[-count:]
        for i, card in enumerate(cards):
            card.setVisible(i == index)
        self.sync_answer_pagers()
        self.inspect(cards[index])
        self.historyChanged.emit()

    def _answer_steps(self) -> list[tuple[PathEntry, list[AssistantCard]]]:
        """Each answers step of the shown path with its cards (one per alternative, in the
        order :attr:`answer_cards` holds them); empty if the view is out of step."""
        steps: list[tuple[PathEntry, list[AssistantCard]]] = []
        start = 0
        for entry in self.history.path_entries():
            if entry.kind == "answers":
                steps.append((entry, self.answer_cards[start : start + entry.count]))
                start += entry.count
        return steps if start == len(self.answer_cards) else []

    def sync_answer_pagers(self) -> None:
        """Each answer card's pager says which of its step's answers it is."""
        for entry, cards in self._answer_steps():
            for i, card in enumerate(cards):
                card.set_alternatives(i, entry.count)

    def _on_answer_card_alternative_stepped(self, card: AssistantCard, step: int) -> None:
        steps = self._answer_steps()
        for n, (entry, cards) in enumerate(steps):
            if card not in cards:
                continue
            index = cards.index(card) + step
            if n == len(steps) - 1 and self.history.alternatives()[1] == entry.count:
                self.choose_alternative(index)  # (the last answer: its cards stay)
            else:
                self.choose_version(entry.depth, index)  # (the path after it changes)
            return

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
        self._card = self.chat.begin_assistant_message(label)
        ref = self._new_ref(_requested_model(capture), conversation=label)
        self._watch(self._card, ref)
        self.feed.live_started(ref)
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
        await self.feed.aclose()
        await self.runner.aclose()
        await self.demo.aclose()

    def open_session(self, session: ChatSession) -> None:
        """Show another conversation (a new one, or one loaded from the store). An edit in
        progress is left (nothing of it was saved)."""
        if self.busy:
            return
        editing = self.history.editing
        self.session.cancel_edit()
        self.session = session
        self._editing_card = None
        if editing:
            self.editingChanged.emit(False)
        self._rebuild_view(self._stored_refs())
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
        self._card = self.chat.begin_assistant_message(label)
        self._card.resultsSubmitted.connect(self._on_card_results_submitted)
        self._card.frameRequested.connect(
            functools.partial(self._on_card_frame_requested, self._card)
        )
        self._card.alternativeStepped.connect(
            functools.partial(self._on_answer_card_alternative_stepped, self._card)
        )
        ref = self._new_ref(model)
        self._watch(self._card, ref)
        self.feed.live_started(ref)
        self.answer_cards.append(self._card)
        self.session.answer_started(alternative=alternative, model=model)
        self.status.show_started(status)
        self.busyChanged.emit(True)

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
        conv, cut = self.session.conversation(
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
        if self._card is not None:
            self._card.finish(turn)
            note = f"Nothing was sent, so nothing was captured. {message}"
            ref = self._update_ref(self._card, outcome=Outcome.ERROR, note=note)
            if ref is not None:
                self.feed.live_finished(turn, ref)
        self.session.answer_finished(turn)
        self.status.show_message(message)
        self.busyChanged.emit(False)

    # -- runner signals -----------------------------------------------------------------

    def _on_runner_turn_started(self, start: TurnStart) -> None:
        if start.timeouts is not None:  # (a live turn: a replay's clock is the recording's)
            self.liveness.begin(start.t0, start.timeouts, start.arrivals)
        card = self._card
        if card is not None and card.turn_ref is not None:
            card.turn_ref = replace(card.turn_ref, capture_id=start.capture_id)
            self.feed.live_request(start, card.turn_ref)
        if self._replaying is None:
            self.session.answer_request(start.scrubber, start.capture_id)

    def _on_runner_response_started(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.feed.live_response(status, headers)

    def _on_runner_turn_progressed(self, batch: ProgressBatch) -> None:
        at_bottom = self.chat.is_at_bottom()
        self.liveness.add(batch)
        delta = batch.delta
        if delta is not None:
            if self._card is not None:
                self._card.take(delta)
            if self._replaying is None:
                self.session.answer_progressed(delta)
        self.feed.live_progress(batch)
        self.status.show_progress(batch)
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_runner_turn_finished(self, turn: Turn) -> None:
        self.liveness.end()
        at_bottom = self.chat.is_at_bottom()
        self._finished_card = self._card
        if self._card is not None:
            self._card.finish(turn)
        self.status.show_turn(turn, self.feed.live_frames())
        card = self._card  # the Verdict tab's short line, once every frame is checked:

        def show_verdict(verdict: str) -> None:  # "2 spec errors · buffered by a proxy"
            if turn.status is None or turn.status >= 400:
                return  # (no stream was checked: the outcome already says what went wrong)
            if verdict and card is not None:
                card.show_verdict(verdict)
            if verdict and self.status.outcome is turn.outcome:
                self.status.show_verdict(verdict)

        if card is not None:
            ref = self._update_ref(card, outcome=turn.outcome)
            if ref is not None:
                if self.feed.following_live:  # (the Verdict tab holds this turn)
                    self.inspector.verdict_panel.on_final = show_verdict
                self.feed.live_finished(turn, ref)
        replayed, self._replaying = self._replaying, None
        if replayed is None:
            redacted = self.session.answer_finished(turn, self.runner.capture_id)
            if redacted and self._card is not None:
                self._card.note_redacted()
            if self._card is not None:
                self._card.show_unanswered(self.history.unanswered(), skipped=False)
            self.sync_answer_pagers()
            _log.info("turn finished: %s", turn.summary())  # (the log masks every secret)
        self.busyChanged.emit(False)
        self.historyChanged.emit()
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_liveness_ticked(self, live: Liveness) -> None:
        self.status.show_liveness(live)
        if self._card is not None:
            self._card.show_liveness(live)
        if self.feed.following_live:  # (not over an older turn the inspector shows)
            self.inspector.timeline_panel.show_liveness(live)

    def _on_runner_turn_recorded(self, capture: Capture) -> None:
        self.last_capture = capture
        card, self._finished_card = self._finished_card, None
        if card is None or card.turn_ref is None:
            return
        if self._keep_captures or card.turn_ref.capture_id is None:  # (kept in memory only)
            self._update_ref(card, capture=capture)
            kept = [c for c in self.answer_cards if c.turn_ref and c.turn_ref.capture]
            for old in kept[:-MEMORY_CAPTURES]:
                self._update_ref(old, capture=None, note=MEMORY_NOTE)

    def _on_card_frame_requested(self, card: AssistantCard, reason: str) -> None:
        """A card's "malformed frame" warning was clicked: select that frame in Frames (its
        turn is loaded into the inspector first when another one is shown)."""
        ref, shown = card.turn_ref, self.feed.ref
        if ref is not None and shown is not None and shown.key == ref.key:
            if not self.inspector.show_malformed_frame(reason):
                self.status.show_message("That frame is not in this turn's capture")
            return
        if ref is None:
            return
        self._frame_wanted = (ref.key, reason)
        self.inspect(card)

    def _on_feed_loaded(self, key: int) -> None:
        wanted, self._frame_wanted = self._frame_wanted, None
        if wanted is not None and wanted[0] == key:
            self.inspector.show_malformed_frame(wanted[1])

    def _on_card_results_submitted(self, results: list[tuple[str, str, str]]) -> None:
        self.send_tool_results([ToolResult(id or None, name, text) for id, name, text in results])

    # -- the inspector -------------------------------------------------------------------

    def inspect(self, card: AssistantCard) -> None:
        """Show ``card``'s turn in the inspector."""
        if card.turn_ref is not None:
            self.feed.show(card.turn_ref)

    def _new_ref(self, model: str, *, conversation: str | None = None) -> TurnRef:
        title = conversation if conversation is not None else self.session.title
        return TurnRef(next(self._keys), title, time.time(), model)

    def _watch(self, card: AssistantCard, ref: TurnRef) -> None:
        card.turn_ref = ref
        card.inspectRequested.connect(lambda: self.inspect(card))

    def _update_ref(self, card: AssistantCard, **changes: object) -> TurnRef | None:
        if card.turn_ref is None:
            return None
        card.turn_ref = replace(card.turn_ref, **changes)  # type: ignore[arg-type]
        self.feed.update(card.turn_ref)
        return card.turn_ref

    def _on_feed_shown(self, key: int) -> None:
        for card in self.answer_cards:
            card.set_selected(card.turn_ref is not None and card.turn_ref.key == key)
        if self._card is not None and self._card not in self.answer_cards:  # (a replay)
            ref = self._card.turn_ref
            self._card.set_selected(ref is not None and ref.key == key)

    def _stored_refs(self) -> dict[int, TurnRef]:
        """The turns of the conversation's saved answers, by message id."""
        session = self.session
        refs: dict[int, TurnRef] = {}
        for message in session.loaded_messages:
            if message.role != "assistant":
                continue
            stored = message.turn
            refs[message.id] = TurnRef(
                next(self._keys),
                session.title,
                message.created,
                (stored.model if stored else None) or session.model or "assistant",
                stored.outcome if stored else None,
                stored.capture_id if stored else None,
            )
        return refs

    # -- view ----------------------------------------------------------------------------

    def _rebuild_view(self, stored: dict[int, TurnRef] | None = None) -> None:
        """Redraw the chat from the history's shown path (after an edit was sent, a version
        chosen, or a conversation switch) and show its last answer in the inspector:
        versions of a message page on its card; the results tool calls got show in their
        boxes. ``stored``: the saved answers' turns by message id (a conversation opened);
        an answer shown before keeps the turn its card had."""
        kept = {
            id(c.turn): c.turn_ref
            for c in self.answer_cards
            if c.turn is not None and c.turn_ref is not None
        }
        stored = stored or {}
        self.chat.clear()
        self.answer_cards = []
        shown: AssistantCard | None = None
        for entry in self.history.path_entries():
            if entry.kind == "user" and entry.message is not None:
                user = self.chat.add_user_message(entry.message.text)
                user.set_versions(entry.chosen, entry.count)
                user.versionStepped.connect(
                    functools.partial(self._on_user_card_version_stepped, entry)
                )
            elif entry.kind == "answers":
                for i, turn in enumerate(entry.answers):
                    key = entry.keys[i] if i < len(entry.keys) else None
                    ref = kept.get(id(turn)) or (stored.get(key) if key is not None else None)
                    if ref is None:
                        ref = self._new_ref(turn.model or self.session.model or "assistant")
                    card = self.chat.begin_assistant_message(
                        ref.model + (f" · answer {i + 1}" if i else "")
                    )
                    card.show_turn(turn)
                    card.frameRequested.connect(
                        functools.partial(self._on_card_frame_requested, card)
                    )
                    card.setVisible(i == entry.chosen)
                    self._watch(card, ref)
                    self.answer_cards.append(card)
                    card.set_alternatives(i, entry.count)
                    card.alternativeStepped.connect(
                        functools.partial(self._on_answer_card_alternative_stepped, card)
                    )
                    if i == entry.chosen:
                        shown = card
                        card.show_results(entry.results)
                        card.show_unanswered(entry.unanswered, skipped=entry.followed)
                        if not entry.followed:
                            card.resultsSubmitted.connect(self._on_card_results_submitted)
        if shown is not None:
            self.inspect(shown)
        else:
            self.feed.clear("No turn in this conversation yet")
        self.historyChanged.emit()

    def _on_user_card_version_stepped(self, entry: PathEntry, step: int) -> None:
        self.choose_version(entry.depth, entry.chosen + step)
