"""The assistant's answer card: shows a turn as the reducer's deltas arrive, then its outcome.

:meth:`AssistantCard.take` renders a :class:`~streamscope.core.turn.model.TurnDelta` (text and
reasoning appended, tool calls put in place); the card never assembles events itself, so it
shows exactly what the reducer says at every batch. Streamed text goes to a *tail* pane as
plain text (cost per append independent of the answer's length); a few times a second the
finished blocks at the head of the tail are rendered as Markdown into the *rendered* pane
above it and removed from the tail; :meth:`finish` renders the rest. All of that runs as
this card's job on the window's :class:`~streamscope.ui.paint_clock.PaintClock`, paced as
:mod:`streamscope.ui.pacing` says, in slices, so a long answer never freezes the window.
"""

from __future__ import annotations

import html
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import (
    QMouseEvent,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from streamscope.core.turn.liveness import Liveness
from streamscope.core.turn.model import ToolCallState, Turn, TurnDelta, apply_tool_calls
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Message, ToolCall, match_results
from streamscope.ui import pacing
from streamscope.ui.code_highlight import is_dark, warm_up_highlighting
from streamscope.ui.markdown import MarkdownWriter, split_markdown
from streamscope.ui.message_card import (
    CardFrame,
    ToolCallBox,
    _muted,
    footer_parts,
    outcome_colour,
    turn_colour,
)
from streamscope.ui.paint_clock import PaintClock, default_clock
from streamscope.ui.text_pane import PlainAppender, TextPane
from streamscope.ui.theme import set_text_colour
from streamscope.ui.warnings_box import WarningsBox

__all__ = ["REASON_CHARS", "AssistantCard"]

REASON_CHARS = 300
"""A longer reason is cut on the card (the whole of it in the tooltip, and in the footer's)."""
if TYPE_CHECKING:
    from streamscope.ui.inspector.turn_header import TurnRef

__all__ = ["INSPECT_TIP", "AssistantCard"]

INSPECT_TIP = "Click to show this turn in the Inspector"


class AssistantCard(CardFrame):
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
        self._source: list[str] = []
        self._source_text: str | None = ""
        self._length = 0  # of the source (known without joining it)
        self._unshown: list[str] = []  # the source after ``_shown``, not in the tail yet
        self._rendered_upto = 0  # source offset rendered into ``_rendered``
        # The tail shows the source from ``_tail_from`` to ``_shown``; what arrived after
        # that waits for the next append.
        self._tail_from = 0
        self._shown = 0
        self._next_append = 0.0  # monotonic time streamed text may be appended next
        self._live_due: float | None = None  # when finished blocks are rendered next
        self._live_started: float | None = None  # the first delta's arrival
        self._live_spent = 0.0  # seconds spent rendering while streaming
        self._reasoning: list[str] = []
        self._channels: list[str] = []
        self._jobs: deque[Iterator[None]] = deque()
        self._writer = MarkdownWriter(self.palette())
        warm_up_highlighting()  # the first answer may hold code: load Pygments meanwhile

        # The pager through the answers to the same message (regenerated ones), on the card
        # it pages: "◀ answer 2/3 ▶" (hidden unless there are two).
        self.pager = QWidget(self)
        pager = QHBoxLayout(self.pager)
        pager.setContentsMargins(0, 0, 0, 0)
        pager.setSpacing(2)
        self.prev_alt = QToolButton(self.pager)
        self.prev_alt.setText("◀")
        self.prev_alt.setToolTip("The previous answer to this message (Regenerate keeps each)")
        self.prev_alt.setAccessibleName("Previous answer")
        self.alt_label = QLabel(self.pager)
        self.alt_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.next_alt = QToolButton(self.pager)
        self.next_alt.setText("▶")
        self.next_alt.setToolTip("The next answer to this message")
        self.next_alt.setAccessibleName("Next answer")
        for part in (self.prev_alt, self.alt_label, self.next_alt):
            pager.addWidget(part)
        for button in (self.prev_alt, self.next_alt):
            button.setAutoRaise(True)
        self.prev_alt.clicked.connect(lambda: self.alternativeStepped.emit(-1))
        self.next_alt.clicked.connect(lambda: self.alternativeStepped.emit(+1))
        self.pager.hide()
        self.header.addWidget(self.pager)
        self.status = QLabel("streaming…", self)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.header.addWidget(self.status)

        self.reasoning_toggle = QToolButton(self)
        self.reasoning_toggle.setCheckable(True)
        self.reasoning_toggle.setAccessibleName("Reasoning")
        self.reasoning_toggle.setAutoRaise(True)
        self.reasoning_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.reasoning_toggle.toggled.connect(self._on_reasoning_toggle_toggled)
        self.reasoning_toggle.hide()
        self.reasoning_pane = TextPane(self)
        muted = self.reasoning_pane.palette()
        muted.setColor(QPalette.ColorRole.Text, _muted(self.palette()))
        self.reasoning_pane.setPalette(muted)
        self.reasoning_pane.hide()
        self._reasoning_appender = PlainAppender(self.reasoning_pane.document())

        self._rendered = TextPane(self)
        self._rendered.codes = self._writer.codes
        self._rendered.hide()
        self._cursor = QTextCursor(self._rendered.document())
        self._tail = TextPane(self)
        self._tail_appender = PlainAppender(self._tail.document())

        self._tools = QWidget(self)
        self._tools_layout = QVBoxLayout(self._tools)
        self._tools_layout.setContentsMargins(0, 0, 0, 0)
        self._tools_layout.setSpacing(2)
        self._boxes: list[ToolCallBox] = []
        self.send_button = QPushButton("Send results", self._tools)
        self.send_button.setEnabled(False)
        self.send_button.clicked.connect(self._on_send_button_clicked)
        self.unanswered_label = QLabel(self._tools)  # see show_unanswered
        self.unanswered_label.setWordWrap(True)
        set_text_colour(self.unanswered_label, "warning")
        self.unanswered_label.hide()
        row = QHBoxLayout()
        row.addWidget(self.unanswered_label, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignRight)
        self._tools_layout.addLayout(row)
        self._tools.hide()

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
        if delta.reasoning or (delta.reasoning_channel and not self._channels):
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

    def text(self) -> str:
        """The answer text so far, exactly as received."""
        if self._source_text is None:
            self._source_text = "".join(self._source)
            self._source = [self._source_text]
        return self._source_text

    def append_text(self, text: str) -> None:
        """Append answer text (shown on the next loop turn, then at most every
        :data:`~streamscope.ui.pacing.LIVE_APPEND_MS`)."""
        if not text:
            return
        if self._live_started is None:
            self._live_started = time.perf_counter()
        self._source.append(text)
        self._source_text = None
        self._length += len(text)
        self._unshown.append(text)
        self.clock.wake(self._layout, self._next_append, widget=self)
        if self.turn is None and self._live_due is None:
            self._live_due = time.monotonic() + pacing.LIVE_RENDER_MS / 1000
            self.clock.wake(self._layout, self._live_due, widget=self)

    def _show_more(self) -> None:
        """Append what arrived since the last append to the tail, at most
        :data:`~streamscope.ui.pacing.LIVE_APPEND_CHARS` (a flood is shown at a bounded
        pace, and whole at the end)."""
        pending = "".join(self._unshown)  # (only what arrived since: no join of the answer)
        shown, rest = pending[: pacing.LIVE_APPEND_CHARS], pending[pacing.LIVE_APPEND_CHARS :]
        self._unshown = [rest] if rest else []
        if shown:
            self._tail_appender.append(shown)
            self._shown += len(shown)

    def append_reasoning(self, text: str, channel: str) -> None:
        """Append reasoning text; ``channel`` is where it arrived (``a+b`` for several)."""
        for name in channel.split("+") if channel else ():
            if name not in self._channels:
                self._channels.append(name)
                self._update_reasoning_label()
        if not text:
            return
        self._reasoning.append(text)
        self._reasoning_appender.append(text)
        if self.reasoning_toggle.isHidden():
            self.reasoning_toggle.show()
            self._update_reasoning_label()

    def reasoning(self) -> str:
        """The reasoning text so far."""
        return "".join(self._reasoning)

    def reasoning_expanded(self) -> bool:
        """Whether the reasoning is shown (it starts collapsed)."""
        return self.reasoning_toggle.isChecked()

    def set_tool_calls(self, calls: Sequence[ToolCallState]) -> None:
        """Show the tool calls so far (call it again as they grow)."""
        while len(self._boxes) < len(calls):
            box = ToolCallBox(self._tools)
            self._tools_layout.insertWidget(len(self._boxes), box)
            self._boxes.append(box)
        for box, call in zip(self._boxes, calls, strict=False):
            if box.call != call:
                box.update_call(call)
        self._tools.setVisible(bool(self._boxes))

    def tool_call_boxes(self) -> list[ToolCallBox]:
        """One box per tool call, in order."""
        return list(self._boxes)

    def show_alternatives(self, chosen: int, count: int) -> None:
        """This card is answer ``chosen`` of ``count`` to its message: the pager shows it
        (hidden unless there are two)."""
        self.pager.setVisible(count > 1)
        self.alt_label.setText(f"answer {chosen + 1}/{count}")
        self.prev_alt.setEnabled(chosen > 0)
        self.next_alt.setEnabled(chosen < count - 1)

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
        if self._boxes:
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

    def _render_again(self) -> None:
        """Render the finished answer's Markdown again (links and code in the new theme's
        colours), in slices on the paint clock as the first time."""
        self._writer = MarkdownWriter(self.palette())
        self._rendered.codes = self._writer.codes
        self._rendered.document().clear()
        self._cursor = QTextCursor(self._rendered.document())
        self._rendered_upto = 0
        self._jobs.append(self._render_job(final=True))
        self.clock.wake(self._layout, widget=self)

    def note_redacted(self) -> None:
        """Say that what was saved of this turn differs from what is shown: a secret in it
        is masked there."""
        self.redacted_label.show()

    def rendered_pane(self) -> TextPane:
        """The pane holding the rendered Markdown (the live tail is below it)."""
        return self._rendered

    def is_rendering(self) -> bool:
        """Whether Markdown rendering is still in progress."""
        return bool(self._jobs)

    def height_settled(self) -> bool:
        """Whether the card is as tall as it will be (not while a finished answer's
        Markdown is rendered: it grows slice by slice)."""
        return self.turn is None or not self._jobs

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

    # -- the card's job on the paint clock ----------------------------------------------

    def _live_over_budget(self) -> bool:
        if self._live_started is None:
            return False
        elapsed = time.perf_counter() - self._live_started
        return self._live_spent > pacing.LIVE_RENDER_SHARE * elapsed

    def _layout(self, deadline: float) -> float | None:
        """Append streamed text, start live rendering when due, render until ``deadline``;
        when to run next (see :mod:`streamscope.ui.pacing`)."""
        now = time.monotonic()
        streaming = self.turn is None
        wanted: list[float] = []
        if streaming and self._shown < self._length:
            if now >= self._next_append:
                self._show_more()
                self._next_append = now + pacing.LIVE_APPEND_MS / 1000
            if self._shown < self._length:
                wanted.append(self._next_append)
        if streaming and self._live_due is not None and now >= self._live_due and not self._jobs:
            self._live_due = None
            if self._live_over_budget():  # a flood: look again later
                self._live_due = now + pacing.LIVE_RENDER_MS / 1000
            else:
                self._jobs.append(self._render_job(final=False))
        if self._jobs:
            self._render(deadline)
        if self._jobs:
            paused = self.turn is None and self._live_over_budget()
            wanted.append(now + pacing.LIVE_RENDER_MS / 1000 if paused else 0.0)
        elif streaming and self._live_due is not None:  # (not while a rendering waits)
            wanted.append(self._live_due)
        return min(wanted) if wanted else None

    def _render(self, deadline: float) -> None:
        start = time.perf_counter()
        while self._jobs and time.perf_counter() < deadline:
            job = self._jobs[0]
            try:
                next(job)
            except StopIteration:
                self._jobs.popleft()
        elapsed = time.perf_counter() - start
        self.render_slices += 1
        self.last_render_max_slice_ms = max(self.last_render_max_slice_ms, elapsed * 1000)
        if self.turn is None:
            self._live_spent += elapsed

    def _render_job(self, final: bool) -> Iterator[None]:
        """Render the finished blocks of the tail (all of it when ``final``), then show
        only what is left in the tail."""
        start = self._rendered_upto
        segments, used = split_markdown(self.text()[start:], final=final)
        self._rendered_upto = start + used
        yield
        if segments:
            self._rendered.show()
        for segment in segments:
            yield from self._writer.write(self._cursor, segment)
            yield
        if final:
            _flatten_trailing_block(self._rendered.document())
        if final and self._rendered.held:
            self._rendered.hold(False)  # (and the tail goes below: one swap, one paint)
        if used:
            # Drop what was just rendered from the head of the tail (cheap, unlike
            # appending the rest again); what was not shown yet need not be.
            upto = self._rendered_upto
            self._tail_appender.remove_prefix(min(upto, self._shown) - self._tail_from)
            self._tail_from = min(upto, self._shown)
            if upto > self._shown:
                self._tail_from = self._shown = upto
                self._unshown = [self.text()[upto:]] if upto < self._length else []
        if used or final:
            self._tail.setVisible(not self._tail.document().isEmpty())
        if final:
            self._rendered.setVisible(not self._rendered.document().isEmpty())
            self.rendered.emit()

    # -- reasoning and tools ------------------------------------------------------------

    def _update_reasoning_label(self) -> None:
        arrow = "▾" if self.reasoning_toggle.isChecked() else "▸"
        channel = "+".join(self._channels) or "reasoning"
        self.reasoning_toggle.setText(f"{arrow} reasoning ({channel})")
        self.reasoning_toggle.setAccessibleName(f"Reasoning ({channel})")  # (not the arrow)

    def _on_reasoning_toggle_toggled(self, checked: bool) -> None:
        self.reasoning_pane.setVisible(checked)
        self._update_reasoning_label()

    def set_alternatives(self, index: int, count: int) -> None:
        """This card is answer ``index + 1`` of ``count`` to its message (see
        :meth:`show_alternatives`)."""
        self.show_alternatives(index, count)

    def show_unanswered(self, count: int, *, skipped: bool) -> None:
        """Say that ``count`` tool calls have no result: still waiting for one (a new
        message would send them as "not run"), or ``skipped`` — the conversation went on
        and they were sent as "not run" results (then they can no longer be answered)."""
        calls = f"{count} tool call{'s' if count != 1 else ''} unanswered"
        if skipped:
            text = f"⚠ {calls}: sent as “not run” results when the conversation went on."
        else:
            text = (
                f"⚠ {calls}: send results below, or a new message sends them as “not run”"
                " results (providers refuse a history with unanswered calls)."
            )
        self.unanswered_label.setText(text)
        self.unanswered_label.setVisible(count > 0)
        if skipped and count:
            self._close_results("Skipped")

    def show_results(self, results: Sequence[Message]) -> None:
        """Show the results the calls got (a saved conversation): in their boxes, sent."""
        calls = [ToolCall(b.call.id, b.call.name or "", "") for b in self._boxes if b.call]
        for box, result in zip(self._boxes, match_results(calls, results), strict=False):
            if result is not None:
                box.result.setPlainText(result.text)
        if results:
            self._close_results("Results sent")

    def _close_results(self, label: str) -> None:
        self.send_button.setEnabled(False)
        self.send_button.setText(label)
        for box in self._boxes:
            box.result.setReadOnly(True)

    def _on_send_button_clicked(self) -> None:
        results: list[tuple[str, str, str]] = []
        for box in self._boxes:
            call = box.call
            if call is None:
                continue
            results.append((call.id or "", call.name or "", box.result.toPlainText()))
        for call_id, _name, text in results:
            self.toolResultSubmitted.emit(call_id, text)
        self.resultsSubmitted.emit(results)
        self._close_results("Results sent")
        self.unanswered_label.hide()


def _flatten_trailing_block(document: QTextDocument) -> None:
    """A table or code block at the end leaves an empty paragraph after it (a document
    always ends with one): a blank line above the footer. Make it take no height."""
    last = document.lastBlock()
    if document.blockCount() < 2 or last.length() > 1:
        return
    cursor = QTextCursor(last)
    block = last.blockFormat()
    block.setLineHeight(0, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    block.setTopMargin(0)
    block.setBottomMargin(0)
    cursor.setBlockFormat(block)
    chars = QTextCharFormat()
    chars.setFontPointSize(1)
    cursor.setBlockCharFormat(chars)
