"""Parts of the answer card (:mod:`streamscope.ui.chat.answer_card`): the pager through the
answers to one message, the reasoning (collapsed), and the tool calls with the results the
user sends back."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from streamscope.core.turn.model import ToolCallState
from streamscope.core.wire.conversation import Message, ToolCall, match_results
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.chat.message_card import ToolCallBox, _muted
from streamscope.ui.chat.text_pane import PlainAppender, TextPane

__all__ = ["AnswerPager", "Reasoning", "ToolCallsArea"]


class AnswerPager(QWidget):
    """The pager through the answers to the same message (regenerated ones), on the card
    it pages: "◀ answer 2/3 ▶" (hidden unless there are two)."""

    stepped = Signal(int)
    """◀ (-1) or ▶ (+1) was clicked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.prev = QToolButton(self)
        self.prev.setText("◀")
        self.prev.setToolTip("The previous answer to this message (Regenerate keeps each)")
        self.prev.setAccessibleName("Previous answer")
        self.label = QLabel(self)
        self.label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.next = QToolButton(self)
        self.next.setText("▶")
        self.next.setToolTip("The next answer to this message")
        self.next.setAccessibleName("Next answer")
        for part in (self.prev, self.label, self.next):
            layout.addWidget(part)
        for button in (self.prev, self.next):
            button.setAutoRaise(True)
        self.prev.clicked.connect(lambda: self.stepped.emit(-1))
        self.next.clicked.connect(lambda: self.stepped.emit(+1))
        self.hide()

    def show_alternatives(self, chosen: int, count: int) -> None:
        """Answer ``chosen`` of ``count`` (hidden unless there are two)."""
        self.setVisible(count > 1)
        self.label.setText(f"answer {chosen + 1}/{count}")
        self.prev.setEnabled(chosen > 0)
        self.next.setEnabled(chosen < count - 1)


class Reasoning:
    """An answer's reasoning: a toggle (hidden until some arrives, collapsed) and the pane
    it shows, both children of ``card``; the text appended in bounded blocks."""

    def __init__(self, card: QWidget) -> None:
        self._text: list[str] = []
        self.channels: list[str] = []
        self.toggle = QToolButton(card)
        self.toggle.setCheckable(True)
        self.toggle.setAccessibleName("Reasoning")
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.toggle.hide()
        self.pane = TextPane(card)
        muted = self.pane.palette()
        muted.setColor(QPalette.ColorRole.Text, _muted(card.palette()))
        self.pane.setPalette(muted)
        self.pane.hide()
        self._appender = PlainAppender(self.pane.document())

    def append(self, text: str, channel: str) -> None:
        """Append reasoning text; ``channel`` is where it arrived (``a+b`` for several)."""
        for name in channel.split("+") if channel else ():
            if name not in self.channels:
                self.channels.append(name)
                self._update_label()
        if not text:
            return
        self._text.append(text)
        self._appender.append(text)
        if self.toggle.isHidden():
            self.toggle.show()
            self._update_label()

    def text(self) -> str:
        return "".join(self._text)

    def _update_label(self) -> None:
        arrow = "▾" if self.toggle.isChecked() else "▸"
        channel = "+".join(self.channels) or "reasoning"
        self.toggle.setText(f"{arrow} reasoning ({channel})")
        self.toggle.setAccessibleName(f"Reasoning ({channel})")  # (not the arrow)

    def _on_toggle_toggled(self, checked: bool) -> None:
        self.pane.setVisible(checked)
        self._update_label()


class ToolCallsArea(QWidget):
    """One box per tool call (name, arguments, a field for the result), a line saying when
    calls go unanswered, and "Send results" (enabled once the turn ended)."""

    toolResultSubmitted = Signal(str, str)
    """``(tool_call_id, result text)`` for each call when "Send results" is clicked."""
    resultsSubmitted = Signal(list)
    """``[(tool_call_id, name, result text), ...]`` when "Send results" is clicked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self.boxes: list[ToolCallBox] = []
        self.send_button = QPushButton("Send results", self)
        self.send_button.setEnabled(False)
        self.send_button.clicked.connect(self._on_send_button_clicked)
        self.unanswered_label = QLabel(self)  # see show_unanswered
        self.unanswered_label.setWordWrap(True)
        set_text_colour(self.unanswered_label, "warning")
        self.unanswered_label.hide()
        row = QHBoxLayout()
        row.addWidget(self.unanswered_label, 1)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignRight)
        self._layout.addLayout(row)
        self.hide()

    def set_calls(self, calls: Sequence[ToolCallState]) -> None:
        """Show the tool calls so far (call it again as they grow)."""
        while len(self.boxes) < len(calls):
            box = ToolCallBox(self)
            self._layout.insertWidget(len(self.boxes), box)
            self.boxes.append(box)
        for box, call in zip(self.boxes, calls, strict=False):
            if box.call != call:
                box.update_call(call)
        self.setVisible(bool(self.boxes))

    def show_unanswered(self, count: int, *, skipped: bool) -> None:
        """See :meth:`~streamscope.ui.chat.answer_card.AssistantCard.show_unanswered`."""
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
            self.close_results("Skipped")

    def show_results(self, results: Sequence[Message]) -> None:
        """Show the results the calls got (a saved conversation): in their boxes, sent."""
        calls = [ToolCall(b.call.id, b.call.name or "", "") for b in self.boxes if b.call]
        for box, result in zip(self.boxes, match_results(calls, results), strict=False):
            if result is not None:
                box.result.setPlainText(result.text)
        if results:
            self.close_results("Results sent")

    def close_results(self, label: str) -> None:
        """No more results can be sent (``label`` says why)."""
        self.send_button.setEnabled(False)
        self.send_button.setText(label)
        for box in self.boxes:
            box.result.setReadOnly(True)

    def _on_send_button_clicked(self) -> None:
        results: list[tuple[str, str, str]] = []
        for box in self.boxes:
            call = box.call
            if call is None:
                continue
            results.append((call.id or "", call.name or "", box.result.toPlainText()))
        for call_id, _name, text in results:
            self.toolResultSubmitted.emit(call_id, text)
        self.resultsSubmitted.emit(results)
        self.close_results("Results sent")
        self.unanswered_label.hide()
