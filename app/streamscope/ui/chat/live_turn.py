"""The live turn in the chat: what the chat controller does with the turn runner's signals.

While an answer streams (or a capture is replayed) its card is the only copy of what
arrived so far on screen: the chat view keeps it built wherever the user scrolls (its
:class:`~streamscope.ui.chat.chat_rows.AnswerSlot` is *live*, so pinned), the reducer's deltas are
appended to it, and the view follows the end only if the user was at the bottom. When the
turn ends its slot takes the finished Turn (a card built again later shows it), its outcome,
its tool calls still waiting for results, the Verdict tab's line (saved with the turn:
reopened, its card shows it again) and whether the saved copy masks a secret.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from streamscope.core.capture.format import Capture
    from streamscope.core.store.history import ChatHistory
    from streamscope.core.store.session import ChatSession
    from streamscope.core.turn.liveness import Liveness
    from streamscope.core.turn.model import Turn
    from streamscope.ui.chat.answer_card import AssistantCard
    from streamscope.ui.chat.chat_rows import AnswerSlot
    from streamscope.ui.chat.chat_view import ChatView
    from streamscope.ui.chat.liveness_ticker import LivenessTicker
    from streamscope.ui.chat.status_panel import StatusPanel
    from streamscope.ui.chat.turn_ref import TurnRef
    from streamscope.ui.chat.turn_runner import TurnRunner
    from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
    from streamscope.ui.chat.turn_viewer import TurnViewer

__all__ = ["LiveTurn", "requested_model"]

_log = logging.getLogger("streamscope.chat")


def requested_model(capture: Capture) -> str:
    """The model a captured request asked for (else its dialect)."""
    import orjson

    try:
        body = orjson.loads(capture.request.body) if capture.request is not None else None
    except orjson.JSONDecodeError:
        body = None
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) and model else capture.dialect


class LiveTurn:
    """The runner's signal handlers of :class:`~streamscope.ui.chat.chat_controller.ChatController`
    (a part of it: the attributes below are the controller's)."""

    chat: ChatView
    status: StatusPanel
    feed: TurnViewer
    runner: TurnRunner
    session: ChatSession
    liveness: LivenessTicker
    _live: AnswerSlot | None
    _card: AssistantCard | None
    _finished: AnswerSlot | None
    _replaying: Capture | None

    if TYPE_CHECKING:

        @property
        def history(self) -> ChatHistory: ...

        @property
        def live_session(self) -> ChatSession: ...

        def sync_answer_pagers(self) -> None: ...

        def _update_ref(self, slot: AnswerSlot, **changes: object) -> TurnRef | None: ...

        busyChanged: SignalInstance
        historyChanged: SignalInstance

    def _on_runner_turn_started(self, start: TurnStart) -> None:
        if start.timeouts is not None:  # (a live turn: a replay's clock is the recording's)
            self.liveness.begin(start.t0, start.timeouts, start.arrivals)
        slot = self._live
        if slot is not None and slot.ref is not None:
            slot.ref = replace(slot.ref, capture_id=start.capture_id)
            if self._card is not None:
                self._card.turn_ref = slot.ref
            self.feed.live_request(start, slot.ref)
        if self._replaying is None:
            self.live_session.answer_request(start.scrubber, start.capture_id)

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
                self.live_session.answer_progressed(delta)
        self.feed.live_progress(batch)
        self.status.show_progress(batch)
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_runner_turn_finished(self, turn: Turn) -> None:
        self.liveness.end()
        at_bottom = self.chat.is_at_bottom()
        slot, card = self._live, self._card
        self._finished = slot
        if card is not None:
            card.finish(turn)
        frames = self.feed.live_frames()
        self.status.show_turn(turn, frames)
        session = self.live_session  # (the one shown, or the one parked: it streams there)
        message_id = session.answer_id if self._replaying is None else None

        def show_verdict(verdict: str) -> None:  # "2 spec errors · buffered by a proxy"
            if turn.status is None or turn.status >= 400:
                verdict = ""  # (no stream was checked: the outcome already says what went wrong)
            if message_id is not None:  # (kept with the turn: shown when it is reopened)
                session.answer_checked(message_id, verdict)
            if verdict and slot is not None:  # (its card may be built again by then)
                slot.verdict = verdict
                self.chat.refresh(slot)
            if verdict and self.status.outcome is turn.outcome:
                self.status.show_verdict(verdict)

        if slot is not None:
            slot.turn, slot.message_id = turn, message_id
            ref = self._update_ref(slot, outcome=turn.outcome)
            if ref is not None:
                self.feed.when_checked(show_verdict)  # (when it shows this turn)
                self.feed.live_finished(turn, ref)
                if session is not self.session:  # (read elsewhere: its end is the news,
                    self.status.show_turn(turn, frames)  # not the turn the inspector shows)
        replayed, self._replaying = self._replaying, None
        if replayed is None:
            redacted = session.answer_finished(turn, self.runner.capture_id)
            if slot is not None:
                slot.redacted = redacted
                slot.unanswered, slot.skipped = session.history.unanswered(), False
                self.chat.refresh(slot)
            self.sync_answer_pagers()
            _log.info("turn finished: %s", turn.summary())  # (the log masks every secret)
        self._live = self._card = None  # (no longer pinned: the view may release it)
        if slot is not None and slot.row is not None:
            self.chat.row_changed(slot.row)
        self.busyChanged.emit(False)
        self.historyChanged.emit()
        if at_bottom:
            self.chat.scroll_to_bottom()

    def _on_liveness_ticked(self, live: Liveness) -> None:
        self.status.show_liveness(live)
        if self._card is not None:
            self._card.show_liveness(live)
        self.feed.show_liveness(live)
