"""The Inspector dock's tab widget: Frames | Tool calls | Timeline | Request | Verdict.

The main window forwards the TurnRunner's coarse signals here::

    runner.turnStarted.connect(inspector.begin_turn)
    runner.responseStarted.connect(inspector.set_response)
    runner.turnProgressed.connect(inspector.add_progress)   # <= 60 Hz, one batch each
    runner.turnFinished.connect(inspector.finish_turn)

Each batch becomes one row insert in the frames model and one refresh of each tab.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QTabWidget, QWidget

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import Turn
from streamscope.ui.inspector.frames_model import FramesModel
from streamscope.ui.inspector.frames_panel import FramesPanel
from streamscope.ui.inspector.request_panel import RequestPanel
from streamscope.ui.inspector.timeline_panel import TimelinePanel
from streamscope.ui.inspector.toolcalls_panel import ToolCallsPanel
from streamscope.ui.inspector.verdict_panel import VerdictPanel
from streamscope.ui.turn_runner import ProgressBatch, TurnStart

__all__ = ["InspectorPanel"]

TAB_FRAMES, TAB_TOOL_CALLS, TAB_TIMELINE, TAB_REQUEST, TAB_VERDICT = range(5)


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

    def begin_turn(self, start: TurnStart) -> None:
        """A request is going out: clear every tab and show what was sent (redacted)."""
        self.t0 = start.t0
        recorded = start.recorded.buffer() if start.recorded is not None else None
        self.frames_panel.begin_turn(start.t0, start.dialect, recorded)
        self.toolcalls_panel.clear(start.t0)
        self.timeline_panel.begin_turn(start.t0)
        self.request_panel.show_request(start)
        self.verdict_panel.begin_turn(start.dialect, start.body, start.t0)

    def set_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        """The response status and headers arrived."""
        self.timeline_panel.mark_headers(time.monotonic())
        self.request_panel.show_response(status, headers)
        content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
        self.frames_panel.set_content_type(content_type)
        self.verdict_panel.set_response(status, headers)

    def add_progress(self, batch: ProgressBatch) -> None:
        """Everything that arrived since the last delivery (the rows show on the paint clock)."""
        self.frames_panel.add_progress(batch)
        if batch.delta is not None:
            self.toolcalls_panel.take(batch.delta.tool_calls)
        self.timeline_panel.add_progress(batch)
        self.verdict_panel.add_progress(batch)

    def finish_turn(self, turn: Turn) -> None:
        """The turn ended: final tool-call JSON, timeline milestones and warnings."""
        self.frames_panel.repaint_now()
        self.toolcalls_panel.finish(turn)
        self.timeline_panel.finish(turn)
        self.verdict_panel.finish(turn)

    def _frame_log(self) -> FrameLog:
        return self.frames_model.log

    def _on_verdict_count(self, count: int) -> None:
        self.setTabText(TAB_VERDICT, f"Verdict · {count}" if count else "Verdict")

    def show_frame(self, row: int) -> None:
        """Show frame ``row`` in the Frames tab, selected (a finding was clicked)."""
        self.frames_panel.repaint_now()
        self.setCurrentWidget(self.frames_panel)
        self.frames_panel.select_row(row)
