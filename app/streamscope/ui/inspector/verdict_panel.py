"""The Verdict tab: the turn's stream checked against its dialect's rules, live.

It runs the core's :class:`~streamscope.core.verdict.engine.Linter` on the reads each
progress batch brings (the batches the paint clock already delivers: no timer of its own), so
findings appear as their frames arrive; the whole-stream rules and the timing diagnosis come
when the turn finishes. A row: severity icon, rule, frame, message (the hint as its tooltip
and under the list). Activating a row with a frame asks for that frame (``frameRequested``):
the inspector selects it in Frames.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QLabel,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.progress import Progress
from streamscope.core.verdict import Finding, Linter, diagnosis

__all__ = ["VerdictPanel", "end_of"]

COLUMNS = ("", "rule", "frame", "message")
COL_ICON, COL_RULE, COL_FRAME, COL_MESSAGE = range(4)
FRAME_ROLE = Qt.ItemDataRole.UserRole + 1


def end_of(turn: Turn) -> StreamEnd:
    """How the input ended, as far as a finished turn tells (for the linter's own pipeline)."""
    if turn.outcome is Outcome.CANCELLED:
        return StreamEnd("cancelled", elapsed=turn.timings.end)
    if turn.status is not None and turn.status >= 400:
        return StreamEnd("http_error", elapsed=turn.timings.end, status=turn.status)
    if turn.terminal_signal is not None or turn.outcome is Outcome.COMPLETED:
        return StreamEnd("eof", elapsed=turn.timings.end)
    return StreamEnd("broken", elapsed=turn.timings.end)


class VerdictPanel(QWidget):
    """See the module docstring. ``verdictChanged(line)``: the short diagnosis changed."""

    frameRequested = Signal(int)
    verdictChanged = Signal(str)
    countChanged = Signal(int)  # errors and warnings so far (for the tab's title)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.linter: Linter | None = None
        self.findings: list[Finding] = []
        self.finished = False
        self._dialect = "auto"
        self._request: dict[str, Any] | None = None
        self._t0 = 0.0
        self._status: int | None = None
        self._headers: list[tuple[str, str]] | None = None
        style = self.style()
        self._icons = {
            "error": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical),
            "warning": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning),
            "info": style.standardIcon(QStyle.StandardPixmap.SP_MessageBoxInformation),
        }
        self.header = QLabel("No turn yet.", self)
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tree = QTreeWidget(self)
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setColumnWidth(COL_ICON, 28)
        self.tree.setColumnWidth(COL_RULE, 190)
        self.tree.setColumnWidth(COL_FRAME, 50)
        self.tree.itemActivated.connect(self._on_tree_itemActivated)
        self.tree.itemClicked.connect(self._on_tree_itemActivated)
        self.tree.currentItemChanged.connect(self._on_tree_currentItemChanged)
        self.hint = QLabel("", self)
        self.hint.setWordWrap(True)
        self.hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.hint)

    # -- the turn -----------------------------------------------------------------------------

    def begin_turn(self, dialect: str, request_body: bytes, t0: float) -> None:
        self.linter = None
        self.findings = []
        self.finished = False
        self.tree.clear()
        self.hint.clear()
        self._dialect = dialect
        self._t0 = t0
        self._status = None
        self._headers = None
        try:
            doc = orjson.loads(request_body) if request_body else None
        except orjson.JSONDecodeError:
            doc = None
        self._request = doc if isinstance(doc, dict) else None
        self.header.setText("Checking the stream as it arrives…")
        self.verdictChanged.emit("")
        self.countChanged.emit(0)

    def set_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        self._status = status
        self._headers = list(headers)

    def add_progress(self, batch: Progress) -> None:
        """Lint the reads this batch brought; show the findings they produced."""
        if not batch.reads or self.finished:
            return
        linter = self._linter()
        new: list[Finding] = []
        for data, t in batch.reads:
            new += linter.feed(data, t)
        if new:
            self._add(new)
            self._show_header(final=False)

    def finish(self, turn: Turn) -> None:
        """The turn ended: the whole-stream rules and the timing diagnosis."""
        if self.finished:
            return
        self.finished = True
        linter = self._linter()
        end = end_of(turn)
        t_end = turn.timings.end if turn.timings.end is not None else time.monotonic()
        verdict = linter.finish(end, t_end)
        # (rules that look at the whole stream may have dropped live findings: start over)
        self.findings = []
        self.tree.clear()
        self._add(list(verdict.findings))
        self._show_header(final=True)

    def diagnosis(self) -> str:
        """ "2 spec errors · buffered by a proxy" ("" when there is nothing to say)."""
        return diagnosis(self.findings)

    # -- internals ------------------------------------------------------------------------------

    def _linter(self) -> Linter:
        if self.linter is None:
            self.linter = Linter(
                self._dialect,
                headers=self._headers,
                status=self._status,
                request=self._request,
                start=self._t0,
                keep_text=False,  # (the Frames tab and the card hold the answer)
            )
        return self.linter

    def _add(self, findings: list[Finding]) -> None:
        items = []
        for f in findings:
            item = QTreeWidgetItem(["", f.rule, "" if f.frame is None else str(f.frame), f.message])
            item.setIcon(COL_ICON, self._icons.get(f.severity, QIcon()))
            item.setToolTip(COL_ICON, f.severity)
            item.setToolTip(COL_MESSAGE, f.hint)
            item.setData(COL_FRAME, FRAME_ROLE, -1 if f.frame is None else f.frame)
            item.setTextAlignment(COL_FRAME, Qt.AlignmentFlag.AlignRight)
            items.append(item)
        self.findings += findings
        self.tree.addTopLevelItems(items)

    def _show_header(self, *, final: bool) -> None:
        counts = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            counts[f.severity] += 1
        if not self.findings:
            text = (
                "No findings: the stream follows its dialect's rules."
                if final
                else ("Checking the stream as it arrives… nothing so far.")
            )
        else:
            text = (
                f"{counts['error']} error{'s' if counts['error'] != 1 else ''} · "
                f"{counts['warning']} warning{'s' if counts['warning'] != 1 else ''} · "
                f"{counts['info']} note{'s' if counts['info'] != 1 else ''}"
            )
            words = [w for w in diagnosis(self.findings).split(" · ") if "spec error" not in w]
            words = [w for w in words if not w.endswith(("warning", "warnings"))]
            if words:
                text += " — " + ", ".join(words)
            if not final:
                text += " (so far)"
        self.header.setText(text)
        self.verdictChanged.emit(self.diagnosis())
        self.countChanged.emit(counts["error"] + counts["warning"])

    def _on_tree_itemActivated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        frame = item.data(COL_FRAME, FRAME_ROLE)
        if isinstance(frame, int) and frame >= 0:
            self.frameRequested.emit(frame)

    def _on_tree_currentItemChanged(
        self, current: QTreeWidgetItem | None, _previous: QTreeWidgetItem | None
    ) -> None:
        self.hint.setText(current.toolTip(COL_MESSAGE) if current is not None else "")
