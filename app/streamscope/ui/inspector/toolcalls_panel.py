"""The Tool calls tab: per call (by index) its id, name, fragments as they arrived, the
arguments so far, whether they parse yet, and the final pretty JSON.

Built from ToolCallStarted/ToolCallDelta/ToolCallDone events a batch at a time; whether the
arguments parse is checked once per batch (the UI refresh rate), never per delta, and the
partial object is shown via ``jiter`` partial mode. ``finish`` replaces everything with the
assembled :class:`~streamscope.core.turn.assembler.Turn`'s calls, which are authoritative.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jiter
import orjson
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.assembler import Turn
from streamscope.core.wire.events import StreamEvent, ToolCallDelta, ToolCallDone, ToolCallStarted
from streamscope.ui.inspector.frame_summary import quote

__all__ = ["ToolCallsPanel", "parse_state"]

_HEADERS = ("#", "id", "name", "fragments", "bytes", "parses")


def parse_state(arguments: str) -> tuple[bool, Any]:
    """Whether ``arguments`` parse as JSON, and the (possibly partial) value."""
    if not arguments.strip():
        return False, None
    data = arguments.encode()
    try:
        return True, orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return False, jiter.from_json(data, partial_mode="trailing-strings")
    except ValueError:
        return False, None


def _pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


@dataclass(slots=True)
class _Call:
    index: int
    id: str | None = None
    name: str | None = None
    fragments: list[tuple[float, str]] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    final: str | None = None  # from ToolCallDone when no fragments came
    parses: bool = False
    value: Any = None
    done: bool = False
    dirty: bool = True
    item: QTreeWidgetItem | None = None

    def arguments(self) -> str:
        return "".join(self.parts) if self.parts else (self.final or "")


class ToolCallsPanel(QWidget):
    """See the module docstring."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.t0 = 0.0
        self.finished = False
        self._calls: dict[int, _Call] = {}
        self._last: _Call | None = None
        self._shown: _Call | None = None
        self._shown_fragments = 0

        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(list(_HEADERS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.currentItemChanged.connect(self._on_tree_currentItemChanged)
        self.header = QLabel("No tool calls in this turn.", self)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fragments_view = QPlainTextEdit(self)
        self.arguments_view = QPlainTextEdit(self)
        for view, placeholder in (
            (self.fragments_view, "Fragments, with their arrival time"),
            (self.arguments_view, "Arguments"),
        ):
            view.setReadOnly(True)
            view.setFont(mono)
            view.setUndoRedoEnabled(False)
            view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            view.setPlaceholderText(placeholder)
        self.warnings = QLabel(self)
        self.warnings.setWordWrap(True)
        self.warnings.setStyleSheet("QLabel { color: rgb(205, 110, 0); }")
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
        self._calls = {}
        self._last = None
        self._shown = None
        self._shown_fragments = 0
        self.tree.clear()
        self.header.setText("No tool calls in this turn.")
        self.fragments_view.clear()
        self.arguments_view.clear()
        self.warnings.hide()

    def add_events(self, events: Iterable[tuple[StreamEvent, float]]) -> None:
        """Fold one batch of events in, then refresh (parse check included) once."""
        touched = False
        for event, t in events:
            match event:
                case ToolCallStarted(index, id, name):
                    self._touch(self._call(index, id, new=True), id, name)
                    touched = True
                case ToolCallDelta(index, id, name, arguments):
                    call = self._call(index, id)
                    self._touch(call, id, name)
                    if arguments:
                        call.parts.append(arguments)
                        call.fragments.append((t, arguments))
                    touched = True
                case ToolCallDone(index, arguments):
                    call = self._call(index)
                    call.done = True
                    if arguments is not None and not call.parts:
                        call.final = arguments
                    call.dirty = True
                    touched = True
        if touched:
            self.refresh()

    def finish(self, turn: Turn) -> None:
        """The turn ended: show its assembled calls (authoritative), the final pretty JSON
        and the quirk warnings."""
        self.finished = True
        selected = next((k for k, c in self._calls.items() if c is self._shown), None)
        self._calls = {}
        self._last = self._shown = None
        self.tree.clear()
        self.fragments_view.clear()
        self._shown_fragments = 0
        for position, state in enumerate(turn.tool_calls):
            call = self._add(position, state.index)
            call.id, call.name = state.id, state.name
            call.fragments = list(state.fragments)
            call.parts = [text for _t, text in state.fragments]
            call.final = state.arguments if not call.parts else None
            call.done = state.done
        item = self._calls[selected].item if selected in self._calls else None
        if item is not None:
            self.tree.setCurrentItem(item)
        self.refresh()
        if not self._calls:
            self.header.setText("No tool calls in this turn.")
        if turn.warnings:
            self.warnings.setText("⚠ " + "\n⚠ ".join(turn.warnings))
            self.warnings.show()

    def _call(self, index: int | None, id: str | None = None, *, new: bool = False) -> _Call:
        """The call for provider ``index``; ``None`` means by position (the last call, or a
        new one when ``new``); an index reused with a different id starts a new call."""
        if index is None:
            if new or self._last is None:
                key = max(self._calls, default=-1) + 1
                return self._add(key, key)
            return self._last
        call = self._calls.get(index)
        if call is None:
            return self._add(index, index)
        if id and call.id and id != call.id:
            return self._add(max(self._calls) + 1, index)
        self._last = call
        return call

    def _add(self, key: int, index: int) -> _Call:
        call = self._calls[key] = _Call(index)
        call.item = QTreeWidgetItem(self.tree)
        for col in (0, 3, 4):
            call.item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight)
        if self._shown is None:
            self.tree.setCurrentItem(call.item)
        self._last = call
        return call

    @staticmethod
    def _touch(call: _Call, id: str | None, name: str | None) -> None:
        call.id = id or call.id
        call.name = name or call.name
        call.dirty = True

    # -- showing ------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-check changed calls (one parse each) and update the tree and the detail."""
        for call in self._calls.values():
            if not call.dirty:
                continue
            call.parses, call.value = parse_state(call.arguments())
            item = call.item
            assert item is not None
            args = call.arguments()
            values = (str(call.index), call.id or "", call.name or "", str(len(call.fragments)),
                      str(len(args.encode())), "yes" if call.parses else "no")  # fmt: skip
            for col, text in enumerate(values):
                item.setText(col, text)
            if call is self._shown:
                self._show(call)
            call.dirty = False
        for col in range(len(_HEADERS)):
            self.tree.resizeColumnToContents(col)

    def _on_tree_currentItemChanged(
        self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None
    ) -> None:
        for call in self._calls.values():
            if call.item is current:
                self._shown = call
                self._shown_fragments = 0
                self.fragments_view.clear()
                self._show(call)
                return

    def _show(self, call: _Call) -> None:
        args = call.arguments()
        state = "parses: yes" if call.parses else "parses: no"
        if self.finished:
            state += " (final)" if call.parses else " (final: invalid JSON)"
        self.header.setText(
            f"<b>[{call.index}] {call.name or '(no name)'}</b> · id {call.id or '(none)'} · "
            f"{len(call.fragments)} fragments · {len(args.encode()):,} bytes · <b>{state}</b>"
        )
        if self._shown_fragments > len(call.fragments):
            self._shown_fragments = 0
            self.fragments_view.clear()
        new = call.fragments[self._shown_fragments :]
        if new:
            lines = [f"{(t - self.t0) * 1000:9.1f} ms  +{quote(text, 200)}" for t, text in new]
            self.fragments_view.appendPlainText("\n".join(lines))
            self._shown_fragments = len(call.fragments)
        self.arguments_view.setPlainText(self._arguments_text(call, args))

    def _arguments_text(self, call: _Call, args: str) -> str:
        if call.parses:
            head = "Final JSON" if self.finished else "Parses as JSON"
            return f"{head}:\n{_pretty(call.value)}"
        parts = ["Does not parse as JSON yet." if not self.finished else "Invalid JSON."]
        if call.value is not None:
            parts.append(f"Partial object (jiter):\n{_pretty(call.value)}")
        parts.append(f"Raw arguments so far:\n{args}")
        return "\n\n".join(parts)

    def call_count(self) -> int:
        return len(self._calls)


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    label = QLabel(f"<b>{title}</b>", box)
    layout.addWidget(label)
    layout.addWidget(widget, 1)
    return box
