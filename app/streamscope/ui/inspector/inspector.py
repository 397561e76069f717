"""The Inspector dock's tab widget: Frames | Tool calls | Timeline | Request | Verdict.

The main window forwards the TurnRunner's coarse signals here::

    runner.turnStarted.connect(inspector.begin_turn)
    runner.responseStarted.connect(inspector.set_response)
    runner.turnProgressed.connect(inspector.add_progress)   # <= 60 Hz, one batch each
    runner.turnFinished.connect(inspector.finish_turn)

Each batch becomes one row insert in the frames model and one refresh of each tab.

Which turn that is — the live one or an older one replayed from its capture — is decided by
:class:`~streamscope.ui.inspector.turn_feed.InspectorFeed`; the :class:`TurnHeader` above the
tabs names it (the dock holds :meth:`InspectorPanel.container`). While another turn is
shown, a live turn goes on in a :class:`ParkedTurn` (:meth:`InspectorPanel.park`) and comes
back whole with :meth:`InspectorPanel.resume`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta, apply_tool_calls
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from streamscope.ui.inspector.frames_model import FramesModel
from streamscope.ui.inspector.frames_panel import FramesPanel
from streamscope.ui.inspector.request_panel import RequestPanel
from streamscope.ui.inspector.timeline_panel import TimelinePanel
from streamscope.ui.inspector.toolcalls_panel import ToolCallsPanel
from streamscope.ui.inspector.turn_header import TurnHeader
from streamscope.ui.inspector.verdict_panel import VerdictPanel

__all__ = ["InspectorPanel", "ParkedTurn"]

TAB_FRAMES, TAB_TOOL_CALLS, TAB_TIMELINE, TAB_REQUEST, TAB_VERDICT = range(5)


@dataclass(slots=True)
class ParkedTurn:
    """A live turn while the inspector shows another one: what its tabs held, kept up to
    date as its batches arrive (the reducer's frame log, tool calls and latest delta; no
    widget is touched), until :meth:`InspectorPanel.resume` shows it again."""

    start: TurnStart | None
    """What was sent (``None`` until the request goes out)."""
    log: FrameLog = field(default_factory=FrameLog)
    calls: list[ToolCallState] = field(default_factory=list)
    response: tuple[int, list[tuple[str, str]]] | None = None
    headers_t: float | None = None
    delta: TurnDelta | None = None
    """The latest delta (its counters, timings and dialect are the turn's so far)."""
    total_bytes: int = 0
    turn: Turn | None = None

    def begin(self, start: TurnStart) -> None:
        """The parked turn's request went out (as :meth:`InspectorPanel.begin_turn`)."""
        self.start = start
        self.log = FrameLog(start.t0, _recorded(start))
        self.calls, self.response, self.headers_t, self.delta = [], None, None, None

    def add(self, batch: ProgressBatch) -> None:
        """A batch of the live turn (cheap: the log keeps numbers, the calls their state)."""
        self.log.add(batch)
        self.total_bytes = max(batch.total_bytes, self.log.received)
        if batch.delta is not None:
            apply_tool_calls(self.calls, batch.delta.tool_calls)
            self.delta = batch.delta


class InspectorPanel(QTabWidget):
    """See the module docstring. ``frameSelected(row)``: a frame row was selected."""

    frameSelected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Inspector")
        self.setDocumentMode(True)
        self.frames_panel = FramesPanel(self)
        self.frames_model: FramesModel = self.frames_panel.model
        self.toolcalls_panel = ToolCallsPanel(self)
        self.timeline_panel = TimelinePanel(self)
        self.request_panel = RequestPanel(self)
        self.addTab(self.frames_panel, "Frames")
        self.addTab(self.toolcalls_panel, "Tool calls")
        self.addTab(self.timeline_panel, "Timeline")
        self.addTab(self.request_panel, "Request")
        self.verdict_panel = VerdictPanel(self._frame_log, self)
        self.addTab(self.verdict_panel, "Verdict")
        self.verdict_panel.frameRequested.connect(self.show_frame)
        self.verdict_panel.countChanged.connect(self._on_verdict_count)
        self.frames_panel.frameSelected.connect(self.frameSelected)
        self.t0 = 0.0
        self.header = TurnHeader(self)
        self.header.hide()  # (shown above the tabs by container())
        self._box: QWidget | None = None
        # the turn shown, as park() hands it over
        self._start: TurnStart | None = None
        self._response: tuple[int, list[tuple[str, str]]] | None = None
        self._headers_t: float | None = None
        self._delta: TurnDelta | None = None
        self._turn: Turn | None = None

    @property
    def turn(self) -> Turn | None:
        """The turn shown, once it has ended in the tabs."""
        return self._turn

    def container(self) -> QWidget:
        """The header above the tabs, as one widget (what the dock holds); made once."""
        if self._box is None:
            box = QWidget(self.parentWidget())
            layout = QVBoxLayout(box)
            layout.setContentsMargins(0, 0, 0, 0)
            layout.setSpacing(0)
            layout.addWidget(self.header)
            layout.addWidget(self, 1)
            self.header.show()
            self._box = box
        return self._box

    def begin_turn(self, start: TurnStart) -> None:
        """A request is going out: clear every tab and show what was sent (redacted)."""
        self._start, self._response, self._headers_t = start, None, None
        self._delta = self._turn = None
        self.t0 = start.t0
        self.frames_panel.begin_turn(start.t0, start.dialect, _recorded(start))
        self.toolcalls_panel.clear(start.t0)
        self.timeline_panel.begin_turn(start.t0)
        self.request_panel.show_request(start)
        self.verdict_panel.begin_turn(start.dialect, start.body, start.t0)

    def set_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        """The response status and headers arrived."""
        self._response, self._headers_t = (status, headers), time.monotonic()
        self.timeline_panel.mark_headers(self._headers_t)
        self.request_panel.show_response(status, headers)
        content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
        self.frames_panel.set_content_type(content_type)
        self.verdict_panel.set_response(status, headers)

    def add_progress(self, batch: ProgressBatch) -> None:
        """Everything that arrived since the last delivery (the rows show on the paint clock)."""
        self.frames_panel.add_progress(batch)
        if batch.delta is not None:
            self._delta = batch.delta
            self.toolcalls_panel.take(batch.delta.tool_calls)
        self.timeline_panel.add_progress(batch)
        self.verdict_panel.add_progress(batch)

    def show_malformed_frame(self, reason: str | None = None) -> bool:
        """Bring Frames forward with the first malformed frame (saying ``reason``) selected;
        whether the shown turn has one."""
        if not self.frames_panel.select_malformed(reason):
            return False
        self.setCurrentIndex(TAB_FRAMES)
        return True

    def finish_turn(self, turn: Turn) -> None:
        """The turn ended: final tool-call JSON, timeline milestones and warnings; the body
        of a response that was no stream (its Frames row) under Response, or "No response"."""
        self._turn = turn
        self.frames_panel.repaint_now()
        self.toolcalls_panel.finish(turn)
        self.timeline_panel.finish(turn)
        log = self.frames_model.log
        body = log.body_row()
        if body is not None:
            self.request_panel.show_body(log.frame_bytes(body))
        elif self.request_panel.headers is None:
            self.request_panel.show_no_response(turn.reason)
        self.verdict_panel.finish(turn)

    # -- another turn -------------------------------------------------------------------

    def clear(self, message: str = "") -> None:
        """Show no turn; every tab says ``message`` (e.g. why a turn has no frames)."""
        self._start = self._response = self._headers_t = self._delta = self._turn = None
        self.t0 = 0.0
        self.frames_panel.begin_turn(0.0, "auto")
        self.toolcalls_panel.clear()
        self.timeline_panel.begin_turn(0.0)
        self.request_panel.clear(message)
        self.verdict_panel.begin_turn("auto", b"", 0.0)
        if message:
            self.toolcalls_panel.header.setText(message)
            self.timeline_panel.summary.setText(message)

    def park(self) -> ParkedTurn:
        """Hand the turn shown over to a :class:`ParkedTurn`: feed it the turn's next
        batches, show something else, :meth:`resume` it later."""
        return ParkedTurn(
            self._start,
            self.frames_model.log,
            list(self.toolcalls_panel.calls),
            self._response,
            self._headers_t,
            self._delta,
            self.frames_panel.total_bytes,
            self._turn,
        )

    def resume(self, parked: ParkedTurn) -> None:
        """Show a parked turn again, as if it had been shown all along."""
        if parked.start is not None:
            self.begin_turn(parked.start)
        else:
            self.clear()
        self.frames_panel.adopt(parked.log, parked.total_bytes, parked.delta)
        if parked.response is not None:
            status, headers = parked.response
            self._response, self._headers_t = parked.response, parked.headers_t
            self.request_panel.show_response(status, headers)
            self.verdict_panel.set_response(status, headers)
            content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
            self.frames_panel.set_content_type(content_type)
        self.timeline_panel.resume(parked.headers_t, parked.log.times, parked.delta)
        self._delta = parked.delta
        self.toolcalls_panel.take(parked.calls)
        self.verdict_panel.catch_up()  # (the adopted log's reads)
        if parked.turn is not None:
            self.finish_turn(parked.turn)

    def _frame_log(self) -> FrameLog:
        return self.frames_model.log

    def _on_verdict_count(self, count: int) -> None:
        self.setTabText(TAB_VERDICT, f"Verdict · {count}" if count else "Verdict")

    def show_frame(self, row: int) -> None:
        """Show frame ``row`` in the Frames tab, selected (a finding was clicked)."""
        self.frames_panel.repaint_now()
        self.setCurrentWidget(self.frames_panel)
        self.frames_panel.select_row(row)


def _recorded(start: TurnStart) -> bytearray | None:
    """A replayed capture's reads, joined (the frames index them instead of copying)."""
    return start.recorded.buffer() if start.recorded is not None else None
