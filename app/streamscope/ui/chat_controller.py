"""Runs the chat: composer in, one turn at a time through the TurnRunner, results out to the
chat view, the inspector and the status bar.

The controller holds the current conversation (:class:`~streamscope.core.store.history.ChatHistory`)
and never blocks the event loop: starting the demo server, reading the keyring and the turn
itself all happen in tasks it owns and cancels.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QObject, Signal

from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.options import StreamTimeouts, TLSOptions
from streamscope.core.store.history import ChatHistory, ToolResult
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import ToolDefinition
from streamscope.ui.chat_view import AssistantCard, ChatView
from streamscope.ui.demo_service import DemoService
from streamscope.ui.inspector.inspector import InspectorPanel
from streamscope.ui.status_panel import StatusPanel
from streamscope.ui.turn_runner import ProgressBatch, TurnRunner, TurnStart

if TYPE_CHECKING:
    from streamscope.core.capture.files import CaptureStore
    from streamscope.core.capture.format import Capture
    from streamscope.core.net.worker import StreamWorker
    from streamscope.core.wire.dialects.base import RequestSpec


_log = logging.getLogger("streamscope.chat")

WORKER_ENV = "STREAMSCOPE_WORKER"
"""Set to ``0`` to read and parse live turns on the UI thread instead of in the stream
worker process (for debugging)."""


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

    def __init__(
        self,
        *,
        chat: ChatView,
        inspector: InspectorPanel,
        status: StatusPanel,
        endpoint: Callable[[], Endpoint],
        api_key: Callable[[Endpoint], str | None],
        headers: Callable[[Endpoint], dict[str, str]],
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
        self._tools = tools
        self.demo = demo
        self.runner = TurnRunner(None, self, worker=_stream_worker())
        self.runner.captures = captures
        self.session = ChatSession()
        self._card: AssistantCard | None = None
        self._prepare: asyncio.Task[None] | None = None
        self.answer_cards: list[AssistantCard] = []
        self.last_capture: Capture | None = None
        self._replaying: Capture | None = None
        self.runner.turnStarted.connect(self._on_runner_turn_started)
        self.runner.responseStarted.connect(self._on_runner_response_started)
        self.runner.turnProgressed.connect(self._on_runner_turn_progressed)
        self.runner.turnFinished.connect(self._on_runner_turn_finished)
        self.runner.turnRecorded.connect(self._on_runner_turn_recorded)

    # -- commands ------------------------------------------------------------------------

    @property
    def history(self) -> ChatHistory:
        return self.session.history

    @property
    def busy(self) -> bool:
        return self.runner.running or (self._prepare is not None and not self._prepare.done())

    def send(self, text: str) -> None:
        """Send a new user message."""
        if self.busy:
            return
        endpoint = self._endpoint()
        self.session.user_sent(text, endpoint_name=endpoint.name, model=endpoint.model)
        self.chat.add_user_message(text)
        self._start_turn()

    def regenerate(self) -> None:
        """Answer the last user message again; the earlier answer stays as an alternative."""
        if self.busy:
            return
        try:
            self.history.regenerate()
        except ValueError:
            return
        for card in self.answer_cards[-1:]:
            card.hide()
        self._start_turn(alternative=True)

    def edit_last(self) -> str | None:
        """Take the last user message back for editing (its answer is removed)."""
        if self.busy:
            return None
        try:
            text = self.session.edit_last()
        except ValueError:
            return None
        self._rebuild_view()
        return text

    def choose_alternative(self, index: int) -> None:
        count = self.history.alternatives()[1]
        if self.busy or not 0 <= index < count:
            return
        self.session.choose(index)
        cards = self.answer_cards[-count:]
        for i, card in enumerate(cards):
            card.setVisible(i == index)
        self.historyChanged.emit()

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
        await self.runner.aclose()
        await self.demo.aclose()

    def open_session(self, session: ChatSession) -> None:
        """Show another conversation (a new one, or one loaded from the store)."""
        if self.busy:
            return
        self.session = session
        self._rebuild_view()

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
        self.session.user_sent(user_text, endpoint_name=endpoint_name, model=model)
        self.chat.add_user_message(user_text)
        self._begin_answer(label, status=label, alternative=False)
        self.runner.start(spec, dialect=dialect, timeouts=timeouts, tls=tls)
        self.historyChanged.emit()
        return True

    def _begin_answer(self, label: str, *, status: str, alternative: bool) -> None:
        self._card = self.chat.begin_assistant_message(label)
        self._card.resultsSubmitted.connect(self._on_card_results_submitted)
        self.answer_cards.append(self._card)
        self.session.answer_started(alternative=alternative)
        self.status.show_started(status)
        self.busyChanged.emit(True)

    def _start_turn(self, *, alternative: bool = False) -> None:
        endpoint = self._endpoint()
        label = f"{endpoint.model or endpoint.name}"
        if alternative:
            label += f" · answer {self.history.alternatives()[1] + 1}"
        self._begin_answer(label, status=endpoint.name, alternative=alternative)
        self._prepare = asyncio.ensure_future(self._launch(endpoint))
        self._prepare.add_done_callback(self._on_prepare_done)

    async def _launch(self, endpoint: Endpoint) -> None:
        dialect = endpoint.dialect if endpoint.dialect != "auto" else "openai"
        if endpoint.is_demo:
            await self.demo.ensure_started()
            base_url = self.demo.base_url(dialect)
        else:
            base_url = endpoint.base_url
        api_key = self._api_key(endpoint)
        conv = self.history.conversation(
            system=endpoint.system_prompt or None,
            tools=self._tools(),
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
        self.runner.start(
            spec, dialect=endpoint.dialect, timeouts=endpoint.timeouts(), tls=endpoint.tls()
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
        self.session.answer_finished(turn)
        self.status.show_message(message)
        self.busyChanged.emit(False)

    # -- runner signals -----------------------------------------------------------------

    def _on_runner_turn_started(self, start: TurnStart) -> None:
        self.inspector.begin_turn(start)
        if self._replaying is None:
            self.session.answer_request(start.scrubber, start.capture_id)

    def _on_runner_response_started(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.inspector.set_response(status, headers)

    def _on_runner_turn_progressed(self, batch: ProgressBatch) -> None:
        at_bottom = self.chat.is_at_bottom()
        delta = batch.delta
        if delta is not None:
            if self._card is not None:
                self._card.take(delta)
            if self._replaying is None:
                self.session.answer_progressed(delta)
        self.inspector.add_progress(batch)
        self.status.show_progress(batch)
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_runner_turn_finished(self, turn: Turn) -> None:
        at_bottom = self.chat.is_at_bottom()
        if self._card is not None:
            self._card.finish(turn)
        self.status.show_turn(turn, len(self.inspector.frames_model.log))
        card = self._card  # the Verdict tab's short line, once every frame is checked:

        def show_verdict(verdict: str) -> None:  # "2 spec errors · buffered by a proxy"
            if verdict and card is not None:
                card.show_verdict(verdict)
            if verdict and self.status.outcome is turn.outcome:
                self.status.show_verdict(verdict)

        self.inspector.verdict_panel.on_final = show_verdict
        self.inspector.finish_turn(turn)
        replayed, self._replaying = self._replaying, None
        if replayed is None:
            redacted = self.session.answer_finished(turn, self.runner.capture_id)
            if redacted and self._card is not None:
                self._card.note_redacted()
            _log.info("turn finished: %s", turn.summary())  # (the log masks every secret)
        self.busyChanged.emit(False)
        self.historyChanged.emit()
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_runner_turn_recorded(self, capture: Capture) -> None:
        self.last_capture = capture

    def _on_card_results_submitted(self, results: list[tuple[str, str, str]]) -> None:
        self.send_tool_results([ToolResult(id or None, name, text) for id, name, text in results])

    # -- view ----------------------------------------------------------------------------

    def _rebuild_view(self) -> None:
        """Redraw the chat from the history (after an edit or a conversation switch)."""
        self.chat.clear()
        self.answer_cards = []
        for kind, payload in self.history.entries():
            if kind == "user":
                self.chat.add_user_message(str(payload))
            elif kind == "answers":
                answers, chosen = cast(tuple[list[Turn], int], payload)
                for i, turn in enumerate(answers):
                    card = self.chat.begin_assistant_message(turn.model or "assistant")
                    card.show_turn(turn)
                    card.setVisible(i == chosen)
                    self.answer_cards.append(card)
        self.historyChanged.emit()
