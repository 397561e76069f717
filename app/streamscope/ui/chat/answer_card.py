"""The assistant's answer card: shows a turn as the reducer's deltas arrive, then its outcome.

:meth:`AssistantCard.take` renders a :class:`~streamscope.core.turn.model.TurnDelta` (text and
reasoning appended, tool calls put in place); the card never assembles events itself, so it
shows exactly what the reducer says at every batch. Streamed text goes to a *tail* pane as
plain text (cost per append independent of the answer's length); a few times a second the
finished blocks at the head of the tail are rendered as Markdown into the *rendered* pane
above it and removed from the tail; :meth:`finish` renders the rest. All of that runs as
this card's job on the window's :class:`~streamscope.ui.base.paint_clock.PaintClock`, paced as
:mod:`streamscope.ui.base.pacing` says, in slices, so a long answer never freezes the window
(:mod:`streamscope.ui.chat.answer_text`). Its pager, reasoning and tool calls are
:mod:`streamscope.ui.chat.answer_parts`.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QMouseEvent, QPalette
from PySide6.QtWidgets import QLabel, QWidget

from streamscope.core.turn.liveness import Liveness
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta, apply_tool_calls
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Message
from streamscope.ui.base.code_highlight import is_dark, warm_up_highlighting
from streamscope.ui.base.paint_clock import PaintClock, default_clock
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.chat.answer_parts import AnswerPager, Reasoning, ToolCallsArea
from streamscope.ui.chat.answer_text import AnswerText
from streamscope.ui.chat.message_card import (
    CardFrame,
    ToolCallBox,
    _muted,
    footer_parts,
    outcome_colour,
    turn_colour,
)
from streamscope.ui.chat.warnings_box import WarningsBox

if TYPE_CHECKING:
    from streamscope.ui.chat.turn_ref import TurnRef

__all__ = ["INSPECT_TIP", "REASON_CHARS", "AssistantCard"]

REASON_CHARS = 300
"""A longer reason is cut on the card (the whole of it in the tooltip, and in the footer's)."""

INSPECT_TIP = "Click to show this turn in the Inspector"


class AssistantCard(AnswerText, CardFrame):
    """An assistant answer: reasoning (collapsed), text, tool calls and a footer."""

    toolResultSubmitted = Signal(str, str)
    """``(tool_call_id, result text)`` for each call when "Send results" is clicked."""
    resultsSubmitted = Signal(list)
    """``[(tool_call_id, name, result text), ...]`` when "Send results" is clicked."""
    rendered = Signal()
    """The final Markdown rendering finished (after :meth:`finish`)."""
    frameRequested = Signal(str)
    """A "malformed frame" warning was clicked: its reason (see :class:`WarningsBox`)."""
    alternativeStepped = Signal(int)
    """◀ (-1) or ▶ (+1) of the card's "answer n/m" pager was clicked."""
    inspectRequested = Signal()
    """The card (its header, footer or margin: not its text) was clicked: show this turn
    in the inspector."""

    def __init__(
        self,
        label: str = "assistant",
        parent: QWidget | None = None,
        *,
        clock: PaintClock | None = None,
    ) -> None:
        super().__init__(label, parent)
        self.clock = clock if clock is not None else default_clock()
        self.last_render_max_slice_ms = 0.0
        self.render_slices = 0
        """How many paint-clock slices the final rendering took (a long answer: several)."""
        self.turn: Turn | None = None
        self.turn_ref: TurnRef | None = None
        """The turn this card shows, as the inspector finds it (set by the controller)."""
        self._pressed = False
        self.calls: list[ToolCallState] = []
        self._init_text()
        warm_up_highlighting()  # the first answer may hold code: load Pygments meanwhile
        self.pager = AnswerPager(self)  # ("◀ answer 2/3 ▶": hidden unless there are two)
        self.prev_alt, self.alt_label, self.next_alt = (
            self.pager.prev,
            self.pager.label,
            self.pager.next,
        )
        self.pager.stepped.connect(self.alternativeStepped)
        self.header.addWidget(self.pager)
        self.status = QLabel("streaming…", self)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.header.addWidget(self.status)

        self._reasoning = Reasoning(self)
        self.reasoning_toggle, self.reasoning_pane = self._reasoning.toggle, self._reasoning.pane
        self._rendered, self._tail = self._panes()

        self._tools = ToolCallsArea(self)
        self.send_button, self.unanswered_label = (
            self._tools.send_button,
            self._tools.unanswered_label,
        )
        self._tools.toolResultSubmitted.connect(self.toolResultSubmitted)
        self._tools.resultsSubmitted.connect(self.resultsSubmitted)

        self.silence_label = QLabel(self)
        self.silence_label.setWordWrap(True)
        set_text_colour(self.silence_label, "warning")
        self.silence_label.hide()
        self.partial_label = QLabel(self)
        self.partial_label.setWordWrap(True)
        self.partial_label.setTextFormat(Qt.TextFormat.RichText)
        self.partial_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.partial_label.hide()
        self.verdict = ""  # the Verdict tab's short line, once the turn has one
        self.footer = QLabel(self)
        self.footer.setWordWrap(True)
        self.footer.setTextFormat(Qt.TextFormat.RichText)
        self.footer.hide()
        self.warnings_box = WarningsBox(self)
        self.warnings_box.frameRequested.connect(self.frameRequested)
        self.redacted_label = QLabel(
            "🔒 A secret of the request (the API key) appeared in this turn; the saved copy"
            " and the capture mask it.",
            self,
        )
        self.redacted_label.setWordWrap(True)
        self.redacted_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.redacted_label.hide()

        for clickable in (self.title, self.status, self.footer):
            clickable.setCursor(Qt.CursorShape.PointingHandCursor)
        self.title.setToolTip(INSPECT_TIP)
        for widget in (
            self.reasoning_toggle,
            self.reasoning_pane,
            self._rendered,
            self._tail,
            self._tools,
            self.silence_label,
            self.partial_label,
            self.footer,
            self.warnings_box,
            self.redacted_label,
        ):
            self.body.addWidget(widget)

    # -- streaming ----------------------------------------------------------------------

    def take(self, delta: TurnDelta) -> None:
        """Render what the reducer says changed."""
        if delta.reasoning or (delta.reasoning_channel and not self._reasoning.channels):
            self.append_reasoning(delta.reasoning, delta.reasoning_channel or "")
        if delta.text:
            self.append_text(delta.text)
        if delta.tool_calls:
            self.set_tool_calls(apply_tool_calls(self.calls, delta.tool_calls))
        if delta.warnings:
            self.warnings_box.add(delta.warnings)

    def show_liveness(self, live: Liveness) -> None:
        """While streaming: a silence in a line of its own ("no data for 12 s · idle timeout
        in 4 min 48 s"), hidden while the stream moves."""
        if self.turn is not None:
            return
        words = live.words()
        text = " · ".join(words)
        if text == self.silence_label.text():
            return
        self.silence_label.setText(text)
        self.silence_label.setVisible(bool(text))

    def show_turn(self, turn: Turn) -> None:
        """Show a finished turn at once (a saved answer): as one delta, then its outcome."""
        self.take(turn.as_delta())
        self.finish(turn)

    def append_reasoning(self, text: str, channel: str) -> None:
        """Append reasoning text; ``channel`` is where it arrived (``a+b`` for several)."""
        self._reasoning.append(text, channel)

    def reasoning(self) -> str:
        """The reasoning text so far."""
        return self._reasoning.text()

    def reasoning_expanded(self) -> bool:
        """Whether the reasoning is shown (it starts collapsed)."""
        return self.reasoning_toggle.isChecked()

    def set_tool_calls(self, calls: Sequence[ToolCallState]) -> None:
        """Show the tool calls so far (call it again as they grow)."""
        self._tools.set_calls(calls)

    def tool_call_boxes(self) -> list[ToolCallBox]:
        """One box per tool call, in order."""
        return list(self._tools.boxes)

    def show_alternatives(self, chosen: int, count: int) -> None:
        """This card is answer ``chosen`` of ``count`` to its message: the pager shows it
        (hidden unless there are two)."""
        self.pager.show_alternatives(chosen, count)

    # -- the end ------------------------------------------------------------------------

    def finish(self, turn: Turn) -> None:
        """Show the outcome and render the final Markdown (in slices when long). The text
        and calls are the ones the deltas brought: the reducer's last delta arrives before
        the turn's end."""
        self.turn = turn
        self._live_due = None
        self.silence_label.hide()
        if turn.reasoning_channel:
            self.append_reasoning("", turn.reasoning_channel)
        if self._tools.boxes:
            self.send_button.setEnabled(True)
        self.warnings_box.set_warnings(turn.warnings)
        self._show_outcome(turn)
        self.render_slices = 0
        # The streamed text stays in view until the final rendering is ready: when it is all
        # plain text (a flood, a short answer) it is rendered into the held, heightless pane
        # and swapped in at once. The job keeps the clock's paint pacing (the card repaints
        # every WORK_PAINT_MS while it runs): painting the card every tick made a 100k-delta
        # answer's final rendering take 1.6x as long (firehose benchmark, 1.48 s → 2.37 s).
        if self._rendered.document().isEmpty() and not self._tail.document().isEmpty():
            self._rendered.hold(True)
        self._jobs.append(self._render_job(final=True))
        # (what the tail has not shown yet is shown by the final rendering)
        self.clock.wake(self._layout, widget=self)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        palette_changed = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
        if event.type() in palette_changed and self.turn is not None:
            self._show_outcome(self.turn)  # (the theme changed: the outcome in its colours)
            if not self._jobs and is_dark(self.palette()) != self._writer.dark:
                self._render_again()

    def note_redacted(self) -> None:
        """Say that what was saved of this turn differs from what is shown: a secret in it
        is masked there."""
        self.redacted_label.show()

    def _show_outcome(self, turn: Turn) -> None:
        outcome = turn.outcome or Outcome.COMPLETED
        palette = self.palette()
        colour = turn_colour(turn, palette).name()
        parts = footer_parts(turn)
        rest = "".join(f" · {html.escape(p)}" for p in parts[1:])
        self.footer.setText(
            f"<span style='color:{colour}; font-weight:600'>{html.escape(parts[0])}</span>"
            f"<span style='color:{_muted(palette).name()}'>{rest}</span>"
        )
        tips = [turn.reason, *turn.warnings] if turn.reason else list(turn.warnings)
        self.footer.setToolTip("\n".join([*tips, INSPECT_TIP]))
        self.footer.show()
        self.status.setText(f"<span style='color:{colour}'>{html.escape(parts[0])}</span>")
        if outcome is Outcome.COMPLETED:
            self.partial_label.hide()
            self.set_accent(turn_colour(turn, palette) if turn.stopped_at_limit else None)
            return
        what = "partial answer" if self.text() else "no answer"
        reason = turn.reason or outcome.value
        shown = reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"
        self.partial_label.setText(
            f"<span style='color:{colour}; font-weight:600'>{what}</span> — {html.escape(shown)}"
        )
        self.partial_label.setToolTip(reason if shown != reason else "")
        self.partial_label.show()
        self.set_accent(outcome_colour(outcome, palette))

    # -- clicks -------------------------------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        # (a press the text panes did not take: the header, footer, labels, margins)
        self._pressed = event.button() is Qt.MouseButton.LeftButton
        event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        pressed, self._pressed = self._pressed, False
        if pressed and self.rect().contains(event.position().toPoint()):
            self.inspectRequested.emit()
        event.accept()

    def show_verdict(self, verdict: str) -> None:
        """The Verdict tab's short line beside the outcome in the footer ("2 spec errors ·
        buffered by a proxy"); in the error colour when the stream broke its dialect's rules."""
        palette = self.palette()
        bad = "spec error" in verdict
        colour = outcome_colour(Outcome.ERROR, palette) if bad else _muted(palette)
        self.verdict = verdict
        self.footer.setText(
            f"{self.footer.text()}<span style='color:{colour.name()}'> · ⚑ "
            f"{html.escape(verdict)}</span>"
        )

    # -- tool calls ---------------------------------------------------------------------

    def set_alternatives(self, index: int, count: int) -> None:
        """This card is answer ``index + 1`` of ``count`` to its message (see
        :meth:`show_alternatives`)."""
        self.show_alternatives(index, count)

    def show_unanswered(self, count: int, *, skipped: bool) -> None:
        """Say that ``count`` tool calls have no result: still waiting for one (a new
        message would send them as "not run"), or ``skipped`` — the conversation went on
        and they were sent as "not run" results (then they can no longer be answered)."""
        self._tools.show_unanswered(count, skipped=skipped)

    def show_results(self, results: Sequence[Message]) -> None:
        """Show the results the calls got (a saved conversation): in their boxes, sent."""
        self._tools.show_results(results)
