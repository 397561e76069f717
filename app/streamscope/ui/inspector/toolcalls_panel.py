"""The Tool calls tab: per call its index, id, name, the fragments as they arrived (with the
frame each came in), the arguments so far, whether they parse yet, and the final pretty JSON.

It renders the reducer's tool-call states (:class:`~streamscope.core.turn.model.ToolCallState`,
whole so far, from each delta): it never merges fragments itself, so it shows the same calls
as the chat card, live and at the end. Whether the arguments parse — and the partial value
``jiter`` makes of them — is computed where the stream is parsed, once per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.model import ToolCallState, Turn, apply_tool_calls
from streamscope.core.wire.summary import quote
from streamscope.ui.base.elided_label import ElidedLabel
from streamscope.ui.base.theme import monospace_font, set_text_colour

__all__ = ["ToolCallsPanel"]

_HEADERS = ("#", "id", "name", "fragments", "bytes", "parses")


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


class ToolCallsPanel(QWidget):
    """See the module docstring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        mono = monospace_font()  # (its size follows the text zoom)
        self.t0 = 0.0
        self.finished = False
        self.calls: list[ToolCallState] = []
        self._items: list[QTreeWidgetItem] = []
        self._shown = -1  # position of the call in the detail panes
        self._shown_fragments = 0

        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(list(_HEADERS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.currentItemChanged.connect(self._on_tree_currentItemChanged)
        self.header = ElidedLabel("No tool calls in this turn.", self)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fragments_view = QPlainTextEdit(self)
        self.arguments_view = QPlainTextEdit(self)
        for view, placeholder in (
            (self.fragments_view, "Fragments, with their arrival time and frame"),
            (self.arguments_view, "Arguments"),
        ):
            view.setReadOnly(True)
            view.setFont(mono)
            view.setUndoRedoEnabled(False)
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            view.setPlaceholderText(placeholder)
        self.warnings = QLabel(self)
        self.warnings.setWordWrap(True)
        set_text_colour(self.warnings, "warning_window")
        self.warnings.hide()

        panes = QSplitter(Qt.Orientation.Horizontal, self)
        panes.addWidget(_titled("Fragments as they arrived", self.fragments_view))
        panes.addWidget(_titled("Arguments", self.arguments_view))
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.tree)
        split.addWidget(panes)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 4)
        row = self.tree.fontMetrics().height() + 6
        split.setSizes([row * 5, row * 25])
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addWidget(split, 1)
        layout.addWidget(self.warnings)

    # -- feeding ------------------------------------------------------------------------

    def clear(self, t0: float = 0.0) -> None:
        self.t0 = t0
        self.finished = False
        self.calls = []
        self._items = []
        self._shown = -1
        self._shown_fragments = 0
        self.tree.clear()
        self.header.setText("No tool calls in this turn.")
        self.fragments_view.clear()
        self.arguments_view.clear()
        self.warnings.hide()

    def take(self, changed: Sequence[ToolCallState]) -> None:
        """Put the calls a delta changed in place and show them."""
        if not changed:
            return
        apply_tool_calls(self.calls, changed)
        while len(self._items) < len(self.calls):
            item = QTreeWidgetItem(self.tree)
            for col in (0, 3, 4):
                item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight)
            self._items.append(item)
            if self._shown < 0:
                self.tree.setCurrentItem(item)
        for call in changed:
            self._refresh(call.position if call.position >= 0 else len(self.calls) - 1)
        for col in range(len(_HEADERS)):
            self.tree.resizeColumnToContents(col)

    def finish(self, turn: Turn) -> None:
        """The turn ended: its calls are final (they came with the last delta); show the
        final state and the turn's warnings."""
        self.finished = True
        if self._shown >= 0:
            self._show(self._shown)
        if turn.warnings:
            self.warnings.setText("⚠ " + "\n⚠ ".join(turn.warnings))
            self.warnings.show()

    # -- showing ------------------------------------------------------------------------

    def _refresh(self, position: int) -> None:
        call = self.calls[position]
        values = (str(call.index), call.id or "", call.name or "", str(len(call.fragments)),
                  str(len(call.arguments.encode())), "yes" if call.parses else "no")  # fmt: skip
        item = self._items[position]
        for col, text in enumerate(values):
            item.setText(col, text)
        if position == self._shown:
            self._show(position)

    def _on_tree_currentItemChanged(
        self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None
    ) -> None:
        if current in self._items:
            self._shown = self._items.index(current)
            self._shown_fragments = 0
            self.fragments_view.clear()
            if self._shown < len(self.calls):
                self._show(self._shown)

    def _show(self, position: int) -> None:
        call = self.calls[position]
        state = "parses: yes" if call.parses else "parses: no"
        if self.finished:
            state += " (final)" if call.parses else " (final: invalid JSON)"
        self.header.setText(
            f"<b>[{call.index}] {call.name or '(no name)'}</b> · id {call.id or '(none)'} · "
            f"{len(call.fragments)} fragments · {len(call.arguments.encode()):,} bytes · "
            f"<b>{state}</b>"
        )
        if self._shown_fragments > len(call.fragments):
            self._shown_fragments = 0
            self.fragments_view.clear()
        new = call.fragments[self._shown_fragments :]
        if new:
            lines = [
                f"{(f.t - self.t0) * 1000:9.1f} ms  frame {f.frame:>5}  +{quote(f.text)}"
                for f in new
            ]
            self.fragments_view.appendPlainText("\n".join(lines))
            self._shown_fragments = len(call.fragments)
        self.arguments_view.setPlainText(self._arguments_text(call))

    def _arguments_text(self, call: ToolCallState) -> str:
        if call.parses:
            head = "Final JSON" if self.finished else "Parses as JSON"
            return f"{head}:\n{_pretty(call.partial)}"
        parts = ["Does not parse as JSON yet." if not self.finished else "Invalid JSON."]
        if call.partial is not None:
            parts.append(f"Partial object (jiter):\n{_pretty(call.partial)}")
        parts.append(f"Raw arguments so far:\n{call.arguments}")
        return "\n\n".join(parts)

    def call_count(self) -> int:
        return len(self.calls)


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    label = QLabel(f"<b>{title}</b>", box)
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box
