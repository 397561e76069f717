"""The cards of the chat: a user message, a notice, and an assistant answer.

An :class:`AssistantCard` shows an answer while it streams and after it ended. Deltas are
appended as plain text to a *tail* pane (cost per delta independent of the answer's
length), on the next event-loop turn and then coalesced to at most one append (of at most
:data:`LIVE_APPEND_CHARS`) per :data:`LIVE_APPEND_MS`. A
few times a second, the finished blocks at the head of the tail are rendered as Markdown
into the *rendered* pane above it and removed from the tail; :meth:`finish` renders the
rest. Rendering runs in slices of at most :data:`SLICE_MS` across event-loop
turns, so a long answer never freezes the window.
"""

from __future__ import annotations

import html
import json
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import replace

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent, QPalette, QPen, QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.assembler import Outcome, ToolCallState, Turn
from streamscope.ui.markdown import (
    MarkdownWriter,
    PlainAppender,
    TextPane,
    is_dark,
    monospace_family,
    split_markdown,
    warm_up_highlighting,
)

SLICE_MS = 3.0
"""Rendering work done per event-loop turn before yielding (milliseconds)."""

LIVE_RENDER_MS = 300
"""How often finished blocks of a streaming answer are rendered as Markdown."""

RENDER_PAINT_MS = 50
"""While Markdown renders in slices, the card repaints at most this often."""

LIVE_RENDER_SHARE = 0.1
"""While an answer streams, rendering its finished blocks as Markdown takes at most this
share of the time since it started (paused beyond it): a flood is shown as plain text at
once and formatted when it ends, instead of slowing the stream down."""

LIVE_APPEND_CHARS = 16_384
"""At most this much streamed text is appended to the tail at a time (~5 ms of layout)."""

LIVE_APPEND_MS = 100
"""Streamed text is shown at once, then at most this often (coalesced in between): each
append re-lays out the tail and resizes the card, and a flood must not repaint per flush."""

_BADGES: dict[Outcome, tuple[str, str, str]] = {
    # outcome: (badge, colour on light, colour on dark)
    Outcome.COMPLETED: ("✓ completed", "#1a7f37", "#3fb950"),
    Outcome.TRUNCATED: ("⚠ truncated", "#9a6700", "#d29922"),
    Outcome.CANCELLED: ("■ cancelled", "#59636e", "#9198a1"),
    Outcome.ERROR: ("✕ error", "#cf222e", "#f85149"),
}


def outcome_colour(outcome: Outcome, palette: QPalette) -> QColor:
    """The accent colour of an outcome, readable on the palette's background."""
    _badge, light, dark = _BADGES[outcome]
    return QColor(dark if is_dark(palette) else light)


def footer_parts(turn: Turn) -> list[str]:
    """The footer as words: badge, finish reason, tokens, TTFT, tok/s, warnings."""
    parts = [_BADGES[turn.outcome][0] if turn.outcome is not None else "streaming…"]
    if turn.finish_reason:
        parts.append(turn.finish_reason)
    if turn.output_tokens is not None:
        parts.append(f"{turn.output_tokens} tokens")
    ttft = turn.timings.ttft
    if ttft is not None:
        parts.append(f"TTFT {ttft:.2f} s")
    rate = turn.tokens_per_second()
    if rate is not None:
        parts.append(f"{rate:.0f} tok/s")
    if turn.warnings:
        n = len(turn.warnings)
        parts.append(f"{n} warning{'s' if n != 1 else ''}")
    return parts


def pretty_arguments(raw: str) -> str:
    """Tool-call arguments as indented JSON, or the raw text while they do not parse."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return json.dumps(value, indent=2, ensure_ascii=False)


def _muted(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorRole.PlaceholderText)


def _blend(a: QColor, b: QColor, t: float) -> QColor:
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
    )


class CardFrame(QFrame):
    """A rounded card painted from the palette, with an optional coloured left edge."""

    def __init__(self, title: str, parent: QWidget | None = None, *, tint: bool = False) -> None:
        super().__init__(parent)
        self._tint = tint
        self._accent: QColor | None = None
        self.body = QVBoxLayout(self)
        self.body.setContentsMargins(14, 8, 12, 10)
        self.body.setSpacing(4)
        self.header = QHBoxLayout()
        self.header.setSpacing(8)
        self.title = QLabel(title, self)
        font = self.title.font()
        font.setWeight(QFont.Weight.DemiBold)
        self.title.setFont(font)
        self.title.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.header.addWidget(self.title)
        self.header.addStretch(1)
        if title:
            self.body.addLayout(self.header)

    def set_accent(self, colour: QColor | None) -> None:
        """Colour the left edge (``None``: no edge)."""
        self._accent = colour
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        palette = self.palette()
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        fill = palette.color(QPalette.ColorRole.Base)
        if self._tint:
            fill = _blend(fill, palette.color(QPalette.ColorRole.Highlight), 0.08)
        border = _blend(fill, palette.color(QPalette.ColorRole.Text), 0.18)
        painter.setPen(QPen(border, 1))
        painter.setBrush(fill)
        painter.drawRoundedRect(rect, 6, 6)
        if self._accent is not None:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self._accent)
            painter.drawRoundedRect(QRectF(rect.left(), rect.top(), 4, rect.height()), 2, 2)


class UserCard(CardFrame):
    """What the user sent, as plain selectable text."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__("you", parent, tint=True)
        self.pane = TextPane(self)
        self.pane.setPlainText(text)
        self.body.addWidget(self.pane)
        self._text = text

    def text(self) -> str:
        """The message as sent."""
        return self._text


class NoticeCard(CardFrame):
    """A short Markdown note from the app (e.g. the welcome text)."""

    def __init__(self, markdown: str, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.pane = TextPane(self)
        writer = MarkdownWriter(self.palette())
        self.pane.codes = writer.codes
        writer.write_all(QTextCursor(self.pane.document()), markdown)
        self.body.addWidget(self.pane)
        self.set_accent(self.palette().color(QPalette.ColorRole.Highlight))


class ToolCallBox(QFrame):
    """One tool call: name, id, pretty arguments, and a field for the result."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.call: ToolCallState | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(3)
        self.title = QLabel(self)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.arguments = TextPane(self)
        font = QFont(self.font())
        font.setFamilies([monospace_family()])
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.arguments.setFont(font)
        self.arguments.document().setDefaultFont(font)
        self.result = QPlainTextEdit(self)
        self.result.setTabChangesFocus(True)
        line = self.result.fontMetrics().lineSpacing()
        self.result.setFixedHeight(int(line * 2.6) + 10)
        layout.addWidget(self.title)
        layout.addWidget(self.arguments)
        layout.addWidget(self.result)
        self._shown_args: str | None = None

    def update_call(self, call: ToolCallState) -> None:
        """Show ``call`` (only what changed is redrawn)."""
        self.call = call
        name = html.escape(call.name or "?")
        muted = _muted(self.palette()).name()
        extra = f" · {html.escape(call.id)}" if call.id else ""
        state = ""
        if call.done and call.arguments and not call.arguments_parse():
            state = " · arguments are not valid JSON (shown raw)"
        elif not call.done:
            state = " · arguments streaming…"
        self.title.setText(
            f"<span>⚙ <b>{name}</b></span>"
            f"<span style='color:{muted}'>&nbsp;#{call.index}{extra}{html.escape(state)}</span>"
        )
        if call.arguments != self._shown_args:
            self._shown_args = call.arguments
            self.arguments.setPlainText(pretty_arguments(call.arguments) or "(no arguments)")
        self.result.setPlaceholderText(f"Result of {call.name or 'this call'} — text or JSON")


class AssistantCard(CardFrame):
    """An assistant answer: reasoning (collapsed), text, tool calls and a footer."""

    toolResultSubmitted = Signal(str, str)
    """``(tool_call_id, result text)`` for each call when "Send results" is clicked."""
    resultsSubmitted = Signal(list)
    """``[(tool_call_id, name, result text), ...]`` when "Send results" is clicked."""
    rendered = Signal()
    """The final Markdown rendering finished (after :meth:`finish`)."""

    def __init__(self, label: str = "assistant", parent: QWidget | None = None) -> None:
        super().__init__(label, parent)
        self.last_render_max_slice_ms = 0.0
        self.turn: Turn | None = None
        self._source: list[str] = []
        self._source_text: str | None = ""
        self._rendered_upto = 0  # source offset rendered into ``_rendered``
        # The tail shows the source from ``_tail_from`` to ``_shown`` (what arrived after
        # that waits for the append timer).
        self._tail_from = 0
        self._shown = 0
        self._last_paint = 0.0  # when a render slice last let the card repaint
        self._live_started: float | None = None  # the first delta's arrival
        self._live_spent = 0.0  # seconds spent rendering while streaming
        self._reasoning: list[str] = []
        self._channels: list[str] = []
        self._jobs: deque[Iterator[None]] = deque()
        self._writer = MarkdownWriter(self.palette())
        warm_up_highlighting()  # the first answer may hold code: load Pygments meanwhile

        self.status = QLabel("streaming…", self)
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.header.addWidget(self.status)

        self.reasoning_toggle = QToolButton(self)
        self.reasoning_toggle.setCheckable(True)
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
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.send_button)
        self._tools_layout.addLayout(row)
        self._tools.hide()

        self.partial_label = QLabel(self)
        self.partial_label.setWordWrap(True)
        self.partial_label.setTextFormat(Qt.TextFormat.RichText)
        self.partial_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.partial_label.hide()
        self.footer = QLabel(self)
        self.footer.setWordWrap(True)
        self.footer.setTextFormat(Qt.TextFormat.RichText)
        self.footer.hide()

        for widget in (
            self.reasoning_toggle,
            self.reasoning_pane,
            self._rendered,
            self._tail,
            self._tools,
            self.partial_label,
            self.footer,
        ):
            self.body.addWidget(widget)
        self._live_timer = QTimer(self)
        self._live_timer.setSingleShot(True)
        self._live_timer.setInterval(LIVE_RENDER_MS)
        self._live_timer.timeout.connect(self._on_live_timer_timeout)
        self._pump_timer = QTimer(self)
        self._pump_timer.setSingleShot(True)
        self._pump_timer.setInterval(0)
        self._pump_timer.timeout.connect(self._pump)
        self._append_timer = QTimer(self)
        self._append_timer.setSingleShot(True)
        self._append_timer.setInterval(LIVE_APPEND_MS)
        self._append_timer.timeout.connect(self._on_append_timer_timeout)

    # -- streaming ----------------------------------------------------------------------

    def text(self) -> str:
        """The answer text so far, exactly as received."""
        if self._source_text is None:
            self._source_text = "".join(self._source)
            self._source = [self._source_text]
        return self._source_text

    def append_text(self, text: str) -> None:
        """Append a (coalesced) delta of answer text."""
        if not text:
            return
        if self._live_started is None:
            self._live_started = time.perf_counter()
        self._source.append(text)
        self._source_text = None
        if not self._append_timer.isActive():
            # Shown on the next loop turn (not inside the batch that brought it: the two
            # layouts would add up to one stall), then at most every LIVE_APPEND_MS.
            self._append_timer.start(0)
        if self.turn is None and not self._live_timer.isActive():
            self._live_timer.start()

    def _on_append_timer_timeout(self) -> None:
        if self._shown < len(self.text()):
            self._show_more()
            self._append_timer.start(LIVE_APPEND_MS)  # what arrives meanwhile: in one go

    def _show_more(self) -> None:
        """Append what arrived since the last append to the tail, at most
        :data:`LIVE_APPEND_CHARS` (a flood is shown at a bounded pace, and whole at the end)."""
        text = self.text()
        end = min(len(text), self._shown + LIVE_APPEND_CHARS)
        if end > self._shown:
            self._tail_appender.append(text[self._shown : end])
            self._shown = end

    def append_reasoning(self, text: str, channel: str) -> None:
        """Append reasoning text that arrived in ``channel`` (shown collapsed)."""
        if channel and channel not in self._channels:
            self._channels.append(channel)
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

    # -- the end ------------------------------------------------------------------------

    def finish(self, turn: Turn) -> None:
        """Show the outcome and render the final Markdown (in slices when long)."""
        self.turn = turn
        self._live_timer.stop()
        self._append_timer.stop()
        if self._pump_timer.isActive():  # a live render paused for the budget: go on now
            self._pump_timer.start(0)
        # (what the tail has not shown yet is shown by the final rendering, below)
        if turn.text != self.text():
            self._restart_with(turn.text)
        if turn.reasoning and turn.reasoning != self.reasoning():
            self._reasoning = [turn.reasoning]
            self._reasoning_appender.clear()
            self._reasoning_appender.append(turn.reasoning)
            self.reasoning_toggle.show()
        if turn.reasoning_channel:
            self._channels = turn.reasoning_channel.split("+")
            self._update_reasoning_label()
        if turn.tool_calls:  # the turn is over: no call is still streaming
            self.set_tool_calls([replace(call, done=True) for call in turn.tool_calls])
            self.send_button.setEnabled(True)
        self._show_outcome(turn)
        self._enqueue_render(final=True)

    def rendered_pane(self) -> TextPane:
        """The pane holding the rendered Markdown (the live tail is below it)."""
        return self._rendered

    def is_rendering(self) -> bool:
        """Whether Markdown rendering is still in progress."""
        return bool(self._jobs)

    def _restart_with(self, text: str) -> None:
        self._jobs.clear()
        self._pump_timer.stop()
        self._source = [text]
        self._source_text = text
        self._rendered.document().clear()
        self._cursor = QTextCursor(self._rendered.document())
        self._writer.codes.clear()
        self._rendered.hide()
        self._rendered_upto = self._tail_from = self._shown = 0
        self._tail_appender.clear()

    def _show_outcome(self, turn: Turn) -> None:
        outcome = turn.outcome or Outcome.COMPLETED
        palette = self.palette()
        colour = outcome_colour(outcome, palette).name()
        parts = footer_parts(turn)
        rest = "".join(f" · {html.escape(p)}" for p in parts[1:])
        self.footer.setText(
            f"<span style='color:{colour}; font-weight:600'>{html.escape(parts[0])}</span>"
            f"<span style='color:{_muted(palette).name()}'>{rest}</span>"
        )
        tips = [turn.reason, *turn.warnings] if turn.reason else list(turn.warnings)
        self.footer.setToolTip("\n".join(tips))
        self.footer.show()
        self.status.setText(f"<span style='color:{colour}'>{html.escape(parts[0])}</span>")
        if outcome is Outcome.COMPLETED:
            self.partial_label.hide()
            self.set_accent(None)
            return
        what = "partial answer" if turn.text else "no answer"
        self.partial_label.setText(
            f"<span style='color:{colour}; font-weight:600'>{what}</span>"
            f" — {html.escape(turn.reason or outcome.value)}"
        )
        self.partial_label.show()
        self.set_accent(outcome_colour(outcome, palette))

    # -- rendering ----------------------------------------------------------------------

    def _live_over_budget(self) -> bool:
        if self._live_started is None:
            return False
        elapsed = time.perf_counter() - self._live_started
        return self._live_spent > LIVE_RENDER_SHARE * elapsed

    def _on_live_timer_timeout(self) -> None:
        if self.turn is not None or self._jobs:
            return
        if self._live_over_budget():
            self._live_timer.start()  # a flood: look again later
            return
        self._enqueue_render(final=False)

    def _enqueue_render(self, *, final: bool) -> None:
        self._jobs.append(self._render_job(final))
        if not self._pump_timer.isActive():
            self._pump_timer.start(0)  # next loop turn: the end of a turn does enough already

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
        if used:
            # Drop what was just rendered from the head of the tail (cheap, unlike
            # appending the rest again); what was not shown yet need not be.
            upto = self._rendered_upto
            self._tail_appender.remove_prefix(min(upto, self._shown) - self._tail_from)
            self._tail_from = min(upto, self._shown)
            if upto > self._shown:
                self._tail_from = self._shown = upto
        if used or final:
            self._tail.setVisible(not self._tail.document().isEmpty())
        if final:
            self._rendered.setVisible(not self._rendered.document().isEmpty())
            self.rendered.emit()

    def _pump(self) -> None:
        start = time.perf_counter()
        while self._jobs:
            job = self._jobs[0]
            try:
                next(job)
            except StopIteration:
                self._jobs.popleft()
            if (time.perf_counter() - start) * 1000 >= SLICE_MS:
                break
        elapsed = (time.perf_counter() - start) * 1000
        self.last_render_max_slice_ms = max(self.last_render_max_slice_ms, elapsed)
        streaming = self.turn is None
        if streaming:
            self._live_spent += elapsed / 1000
        if self._jobs:
            paused = streaming and self._live_over_budget()
            self._pump_timer.start(LIVE_RENDER_MS if paused else 0)
            # Between slices, the card repaints at most every RENDER_PAINT_MS (a repaint of
            # the growing card costs as much as a slice).
            now = time.perf_counter()
            if (now - self._last_paint) * 1000 >= RENDER_PAINT_MS:
                self._last_paint = now
                self.setUpdatesEnabled(True)
            else:
                self.setUpdatesEnabled(False)
        elif not self.updatesEnabled():
            self.setUpdatesEnabled(True)

    # -- reasoning and tools ------------------------------------------------------------

    def _update_reasoning_label(self) -> None:
        arrow = "▾" if self.reasoning_toggle.isChecked() else "▸"
        channel = "+".join(self._channels) or "reasoning"
        self.reasoning_toggle.setText(f"{arrow} reasoning ({channel})")

    def _on_reasoning_toggle_toggled(self, checked: bool) -> None:
        self.reasoning_pane.setVisible(checked)
        self._update_reasoning_label()

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
        self.send_button.setEnabled(False)
        self.send_button.setText("Results sent")
        for box in self._boxes:
            box.result.setReadOnly(True)


__all__ = [
    "AssistantCard",
    "CardFrame",
    "NoticeCard",
    "ToolCallBox",
    "UserCard",
    "footer_parts",
    "outcome_colour",
    "pretty_arguments",
]
