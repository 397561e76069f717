"""Compare two turns: pick two of the session's turns (or open two ``.sscap`` files) and see
them side by side — what differs, the metrics, the word diff of the text, the tool calls
compared as JSON, and the frames aligned by index or by time.

It compares as soon as it opens (the last two turns), and again whenever a side or the
"Ignore ids and timestamps" box changes. Both sides are replayed from their captures
(instantly) through the same pipeline, so a session turn and a saved capture compare alike.
Replaying and diffing are CPU work (a long answer is tens of thousands of words), so they
run in the dialog's worker thread while the dialog shows "Comparing…"; the task awaiting
them is the dialog's (:meth:`CompareDialog.compare` returns it; closing the dialog cancels
it). A text diff too long to compare word by word is
coarsened, and the dialog says so.
"""

from __future__ import annotations

import asyncio
import html
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QBrush, QCloseEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.capture.compare import (
    Comparison,
    FrameRow,
    TextDiff,
    WordOp,
    compare_captures,
)
from streamscope.core.capture.format import Capture, CaptureError, read_capture
from streamscope.core.capture.frames_export import FrameRecord
from streamscope.ui.base.code_highlight import is_dark
from streamscope.ui.base.theme import TEXT, colour
from streamscope.ui.chat.turn_recorder import SessionTurn

__all__ = ["CompareDialog", "comparison_html", "word_diff_html"]

MAX_FRAME_ROWS = 5000
"""Aligned frame rows shown (a table of widgets items; a firehose turn is cut here)."""


def word_diff_html(ops: tuple[WordOp, ...] | list[WordOp], *, dark: bool = False) -> str:
    """The word diff as HTML: removed words struck through in red, added ones in green
    (the colours of the light or ``dark`` theme; plain data, so any thread may build it)."""
    removed, added = TEXT["diff_removed"], TEXT["diff_added"]
    rm_bg, rm_fg = removed.fill(dark)[3:], removed.text(dark)
    add_bg, add_fg = added.fill(dark)[3:], added.text(dark)
    parts = []
    for op in ops:
        a, b = html.escape(op.a), html.escape(op.b)
        if op.tag == "equal":
            parts.append(a)
            continue
        if op.a:
            parts.append(
                f'<span style="background:#{rm_bg};color:{rm_fg};text-decoration:line-through">'
                f"{a}</span>"
            )
            if op.b and not op.a[-1:].isspace():
                parts.append(" ")  # keep the removed and the added words apart
        if op.b:
            parts.append(f'<span style="background:#{add_bg};color:{add_fg}">{b}</span>')
    body = "".join(parts).replace("\n", "<br>")
    return f'<div style="white-space:pre-wrap">{body}</div>'


def comparison_html(result: Comparison, *, dark: bool = False) -> str:
    """The Text diff tab: a note when a diff was coarsened, the reasoning's diff (if any),
    then the text's. Plain Python, so it is built in the worker thread too."""
    amber = TEXT["warning"].text(dark)
    note = "".join(
        f'<p style="color:{amber}">{what} compared {diff.how}, not word by word: the '
        "answers are too long for a word diff.</p>"
        for what, diff in (("Reasoning", result.reasoning), ("Text", result.text))
        if diff.coarsened
    )
    text = word_diff_html(result.text_ops, dark=dark)
    if any(op.a or op.b for op in result.reasoning_ops):
        reasoning = word_diff_html(result.reasoning_ops, dark=dark)
        text = f"<h4>Reasoning</h4>{reasoning}<h4>Text</h4>{text}"
    return note + text


def _compute(
    a: tuple[str, Capture], b: tuple[str, Capture], ignore_volatile: bool, dark: bool
) -> tuple[Comparison, str]:
    """Replay, compare and lay out the text diff (in the dialog's worker thread)."""
    labels = (f"A: {a[0]}", f"B: {b[0]}")
    result = compare_captures(a[1], b[1], labels, ignore_volatile=ignore_volatile)
    return result, comparison_html(result, dark=dark)


def _coarse(diff: TextDiff, what: str) -> list[str]:
    return [f"{what} compared {diff.how} (too long for a word diff)"] if diff.coarsened else []


def _frame_text(frame: FrameRecord | None) -> str:
    if frame is None:
        return ""
    if frame.event is None:
        return ": " + " ".join(c.strip() for c in frame.comments) if frame.comments else "(blank)"
    data = frame.data or ""
    return data if len(data) <= 160 else data[:160] + "…"


class CompareDialog(QDialog):
    """See the module docstring."""

    def __init__(self, turns: list[SessionTurn], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare two turns")
        self.resize(1100, 720)
        self.sources: list[tuple[str, Capture]] = [(t.label, t.capture) for t in turns]
        self.comparison: Comparison | None = None
        self._task: asyncio.Task[Comparison] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._asked: tuple[int, int, bool] | None = None  # what the last comparison compared
        self._auto = QTimer(self)  # picks changed: compare again (once for both combos)
        self._auto.setSingleShot(True)
        self._auto.setInterval(0)
        self._auto.timeout.connect(self._compare_if_changed)

        self.combo_a = QComboBox(self)
        self.combo_b = QComboBox(self)
        open_a = QPushButton("Open capture…", self)
        open_b = QPushButton("Open capture…", self)
        open_a.clicked.connect(lambda: self._on_open_clicked(self.combo_a))
        open_b.clicked.connect(lambda: self._on_open_clicked(self.combo_b))
        self.compare_button = QPushButton("Compare", self)
        self.compare_button.setToolTip("Compare again (it compares by itself when A or B changes)")
        self.compare_button.clicked.connect(self.compare)
        self.ignore_volatile = QCheckBox("Ignore ids and timestamps", self)
        self.ignore_volatile.setChecked(True)
        self.ignore_volatile.setToolTip(
            "Compare the frames without the fields every run changes: id, created,"
            " timestamp, and fields named …_id, …Id, …_at, …Time, …_time, …_duration."
        )
        self.align_combo = QComboBox(self)
        self.align_combo.addItem("Frames aligned by index", "index")
        self.align_combo.addItem("Frames aligned by time", "time")
        self.align_combo.currentIndexChanged.connect(self._fill_frames)
        pick = QGridLayout()
        pick.addWidget(QLabel("<b>A</b>", self), 0, 0)
        pick.addWidget(self.combo_a, 0, 1)
        pick.addWidget(open_a, 0, 2)
        pick.addWidget(QLabel("<b>B</b>", self), 1, 0)
        pick.addWidget(self.combo_b, 1, 1)
        pick.addWidget(open_b, 1, 2)
        pick.addWidget(self.compare_button, 0, 3)
        pick.addWidget(self.ignore_volatile, 1, 3)
        pick.setColumnStretch(1, 1)
        for combo in (self.combo_a, self.combo_b):
            combo.currentIndexChanged.connect(self._on_pick_changed)
        self.ignore_volatile.toggled.connect(self._on_pick_changed)

        self.summary = QPlainTextEdit(self)
        self.summary.setReadOnly(True)
        self.metrics_table = QTableWidget(0, 3, self)
        self.metrics_table.setHorizontalHeaderLabels(["", "A", "B"])
        self._table_defaults(self.metrics_table)
        for col in (1, 2):  # A and B: equal halves
            self.metrics_table.horizontalHeader().setSectionResizeMode(
                col, QHeaderView.ResizeMode.Stretch
            )
        summary_box = QWidget(self)
        sb = QVBoxLayout(summary_box)
        sb.setContentsMargins(0, 0, 0, 0)
        sb.addWidget(self.summary, 1)
        sb.addWidget(self.metrics_table, 3)
        self.text_view = QTextBrowser(self)
        self.tools_view = QPlainTextEdit(self)
        self.tools_view.setReadOnly(True)
        self.frames_table = QTableWidget(0, 6, self)
        self.frames_table.setHorizontalHeaderLabels(
            ["# A", "t A (ms)", "A", "# B", "t B (ms)", "B"]
        )
        self._table_defaults(self.frames_table)
        self.frames_table.setWordWrap(False)  # one line a frame, elided
        header = self.frames_table.horizontalHeader()
        header.setStretchLastSection(False)
        for col in (2, 5):  # A's and B's frames: equal halves of what the numbers leave
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        digit = self.fontMetrics().horizontalAdvance("0")
        for col, chars in ((0, 6), (1, 8), (3, 6), (4, 8)):  # the same on both sides
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(col, digit * chars + 16)
        frames_box = QWidget(self)
        fb = QVBoxLayout(frames_box)
        fb.setContentsMargins(0, 0, 0, 0)
        fb.addWidget(self.align_combo)
        fb.addWidget(self.frames_table, 1)
        self.frames_note = QLabel(self)  # says when the rows are cut at MAX_FRAME_ROWS
        fb.addWidget(self.frames_note)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(summary_box, "Summary")
        self.tabs.addTab(self.text_view, "Text diff")
        self.tabs.addTab(self.tools_view, "Tool calls")
        self.tabs.addTab(frames_box, "Frames")
        self.status = QLabel(self)
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)  # busy: how long a diff takes is not known ahead
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(8)
        self.progress.hide()

        layout = QVBoxLayout(self)
        layout.addLayout(pick)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self._fill_combos()

    @staticmethod
    def _table_defaults(table: QTableWidget) -> None:
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.horizontalHeader().setStretchLastSection(True)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)

    # -- sources ----------------------------------------------------------------------------

    def _fill_combos(self) -> None:
        for combo in (self.combo_a, self.combo_b):
            current = combo.currentIndex()
            combo.clear()
            for i, (label, _capture) in enumerate(self.sources):
                combo.addItem(label, i)
            if current >= 0:
                combo.setCurrentIndex(min(current, combo.count() - 1))
        if len(self.sources) >= 2 and self.combo_a.currentIndex() == self.combo_b.currentIndex():
            self.combo_a.setCurrentIndex(len(self.sources) - 2)
            self.combo_b.setCurrentIndex(len(self.sources) - 1)

    def add_capture(self, label: str, capture: Capture, side: QComboBox | None = None) -> None:
        """Offer ``capture`` as a source (and pick it on ``side``)."""
        self.sources.append((label, capture))
        self._fill_combos()
        if side is not None:
            side.setCurrentIndex(len(self.sources) - 1)

    def open_capture(self, path: Path, side: QComboBox) -> None:
        try:
            capture = read_capture(path)
        except (OSError, CaptureError) as exc:
            self.status.setText(f"Could not open {path.name}: {exc}")
            return
        self.add_capture(path.name, capture, side)

    def _on_open_clicked(self, side: QComboBox) -> None:
        name, _ = QFileDialog.getOpenFileName(
            self, "Open capture", "", "StreamScope captures (*.sscap);;All files (*)"
        )
        if name:
            self.open_capture(Path(name), side)

    def select(self, a: int, b: int) -> None:
        """Pick source ``a`` for A and ``b`` for B (indexes into :attr:`sources`)."""
        self.combo_a.setCurrentIndex(a)
        self.combo_b.setCurrentIndex(b)

    # -- comparing ------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.comparison is None and not self.busy:
            self._auto.start()  # compare on open: no click needed

    def _on_pick_changed(self, *_args: object) -> None:
        if self.isVisible():
            self._auto.start()

    def _compare_if_changed(self) -> None:
        ia, ib = self.combo_a.currentData(), self.combo_b.currentData()
        if (ia, ib, self.ignore_volatile.isChecked()) != self._asked:
            self.compare()

    def compare(self) -> asyncio.Task[Comparison] | None:
        """Compare the two picked sources (in a task; the views fill when it is done)."""
        self._auto.stop()
        ia, ib = self.combo_a.currentData(), self.combo_b.currentData()
        if ia is None or ib is None:
            self.status.setText("Pick two turns (send two messages first) or open two captures.")
            return None
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._set_busy(True)
        ignore = self.ignore_volatile.isChecked()
        self._asked = (ia, ib, ignore)
        self._task = asyncio.ensure_future(
            self._compare(self.sources[ia], self.sources[ib], ignore)
        )
        self._task.add_done_callback(self._on_task_done)
        return self._task

    @property
    def busy(self) -> bool:
        """Whether a comparison is running (the dialog shows "Comparing…")."""
        return self._task is not None and not self._task.done()

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.compare_button.setEnabled(not busy)
        if busy:
            self.status.setText("Comparing…")

    async def _compare(
        self, a: tuple[str, Capture], b: tuple[str, Capture], ignore_volatile: bool
    ) -> Comparison:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="compare")
        loop = asyncio.get_running_loop()
        dark = is_dark(self.palette())
        result, text_html = await loop.run_in_executor(
            self._pool, _compute, a, b, ignore_volatile, dark
        )
        self.show_result(result, text_html)
        return result

    def _on_task_done(self, task: asyncio.Task[Comparison]) -> None:
        if task is self._task:
            self._set_busy(False)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.status.setText(f"Could not compare: {type(exc).__name__}: {exc}")

    def show_result(self, result: Comparison, text_html: str | None = None) -> None:
        """Fill the tabs (``text_html``: :func:`comparison_html` of ``result``, if made)."""
        self.comparison = result
        differences = result.differences()
        lines = [result.a.label, result.b.label, ""]
        lines += [f"• {d}" for d in differences] or ["No differences (timings aside)."]
        self.summary.setPlainText("\n".join(lines))
        coarse = _coarse(result.reasoning, "reasoning") + _coarse(result.text, "text")
        self.status.setText(
            " · ".join(
                [f"{len(differences)} difference{'s' if len(differences) != 1 else ''}"
                 " (timings aside)", *coarse]
            )
        )  # fmt: skip
        table = self.metrics_table
        table.setRowCount(len(result.metrics))
        for row, m in enumerate(result.metrics):
            items = [QTableWidgetItem(m.name + (" ⏱" if m.timing else "")), QTableWidgetItem(m.a),
                     QTableWidgetItem(m.b)]  # fmt: skip
            for col, item in enumerate(items):
                if m.differs and not m.timing:
                    item.setBackground(QBrush(colour("compare_diff", self.palette())))
                table.setItem(row, col, item)
        table.resizeColumnToContents(0)
        if text_html is None:
            text_html = comparison_html(result, dark=is_dark(self.palette()))
        self.text_view.setHtml(text_html)
        self.tools_view.setPlainText(self._tools_text(result))
        self._fill_frames()

    @staticmethod
    def _tools_text(result: Comparison) -> str:
        if not result.tool_calls:
            return "No tool calls on either side."
        lines = []
        for call in result.tool_calls:
            head = f"[{call.index}] {call.name_a or '—'}  vs  {call.name_b or '—'}"
            how = "JSON compared structurally" if call.structural else "compared as raw text"
            if call.identical:
                lines.append(f"{head}: identical ({how})")
            else:
                lines.append(f"{head}: differs ({how})")
                lines += [f"    {d}" for d in call.describe()]
        return "\n".join(lines)

    def frame_rows(self) -> list[FrameRow]:
        result = self.comparison
        if result is None:
            return []
        return result.frame_rows("time" if self.align_combo.currentData() == "time" else "index")

    def _fill_frames(self, *_args: object) -> None:
        all_rows = self.frame_rows()
        rows = all_rows[:MAX_FRAME_ROWS]
        cut = len(all_rows) > len(rows)
        self.frames_note.setText(
            f"Showing the first {len(rows):,} of {len(all_rows):,} frame rows" if cut else ""
        )
        table = self.frames_table
        table.setUpdatesEnabled(False)
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            values = [
                "" if row.ia is None else str(row.ia),
                "" if row.a is None else f"{row.a.t * 1000:.1f}",
                _frame_text(row.a),
                "" if row.ib is None else str(row.ib),
                "" if row.b is None else f"{row.b.t * 1000:.1f}",
                _frame_text(row.b),
            ]
            tint = (
                None
                if row.same
                else colour(
                    "compare_only" if row.a is None or row.b is None else "compare_diff",
                    self.palette(),
                )
            )
            for c, value in enumerate(values):
                item = QTableWidgetItem(value)
                if c in (0, 1, 3, 4):
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if tint is not None:
                    item.setBackground(QBrush(tint))
                table.setItem(r, c, item)
        table.setUpdatesEnabled(True)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._pool is not None:  # a diff under way finishes on its own; its result is dropped
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        super().closeEvent(event)
