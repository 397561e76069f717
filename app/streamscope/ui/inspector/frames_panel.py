"""The Frames tab: a dialect banner, a filter box, the frames table and the frame detail
(its bytes and the events the dialect made of it).

Batches go into the table's log as they arrive; the table shows the new rows when the paint
clock gives it a slot: at once, then at most every
:data:`~streamscope.ui.base.pacing.TABLE_PAINT_MS` while frames pour in.

The table *follows* the newest frame while the Follow button is on. Selecting a frame or
scrolling up turns it off (the frame you look at stays put); scrolling back to the end, or
clicking Follow, turns it on again (the button scrolls to the end)."""

from __future__ import annotations

import time

from PySide6.QtCore import QItemSelection, QModelIndex, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import TurnDelta
from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import default_clock
from streamscope.ui.base.theme import colour, rgba, set_text_colour, text_fill
from streamscope.ui.chat.turn_start import ProgressBatch
from streamscope.ui.inspector.frame_detail import FrameDetail
from streamscope.ui.inspector.frames_filter import FramesFilterModel
from streamscope.ui.inspector.frames_model import (
    COL_BYTES,
    COL_EVENT,
    COL_GAP,
    COL_INDEX,
    COL_TIME,
    FramesModel,
    frame_notes,
)

__all__ = ["FramesPanel"]


def _size(n: int) -> str:
    return (
        f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"
    )


class FramesPanel(QWidget):
    """See the module docstring; ``frameSelected(row)`` is the source-model row."""

    frameSelected = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = FramesModel(self)
        # The table shows the model itself, or the filter's matches while a filter is set
        # (found a slice at a time: a million frames take seconds to check).
        self.proxy = FramesFilterModel(self.model, self)
        self.proxy.progressChanged.connect(self._update_count)
        self.dialect = "auto"
        self.content_type: str | None = None
        self._total_bytes = 0
        self._next_rows = 0.0  # monotonic time new rows may be shown next
        self.clock = default_clock()

        self.banner = QLabel(self)
        self.banner.setWordWrap(True)
        set_text_colour(
            self.banner,
            "banner",
            f"background: {rgba(text_fill('banner'))}; border: 1px solid"
            f" {colour('silence_mark').name()}; border-radius: 3px; padding: 4px;",
        )
        self.banner.hide()

        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText(
            "Filter frames by event or text (e.g. tool_calls, error)"
        )
        self.filter_edit.setClearButtonEnabled(True)
        self.count_label = QLabel("0 frames", self)
        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(pacing.FILTER_DEBOUNCE_MS)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.filter_edit.textChanged.connect(self._on_filter_edit_textChanged)
        self.follow_button = QToolButton(self)
        self.follow_button.setText("Follow")
        self.follow_button.setCheckable(True)
        self.follow_button.setChecked(True)
        self.follow_button.setToolTip(
            "Keep the newest frame in view. Selecting a frame or scrolling up stops"
            " following; click to follow again."
        )
        self.follow_button.toggled.connect(self._on_follow_button_toggled)
        self._auto_scrolling = False  # (the table scrolls itself: not the user scrolling up)
        self._reselecting = False  # (the selection is restored: not the user selecting)

        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setWordWrap(False)
        self.view.setShowGrid(False)
        self.view.setAlternatingRowColors(True)
        self.view.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        vheader = self.view.verticalHeader()
        vheader.setVisible(False)
        vheader.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        vheader.setDefaultSectionSize(self.fontMetrics().height() + 4)
        hheader = self.view.horizontalHeader()
        hheader.setStretchLastSection(True)
        hheader.setHighlightSections(False)
        digit = self.fontMetrics().horizontalAdvance("0")
        widths = {COL_INDEX: 6, COL_TIME: 8, COL_GAP: 7, COL_BYTES: 6, COL_EVENT: 14}
        for col, chars in widths.items():
            hheader.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
            hheader.resizeSection(col, digit * chars + 12)
        self._connect_selection()
        vbar = self.view.verticalScrollBar()
        vbar.valueChanged.connect(self._on_scrollbar_valueChanged)
        vbar.actionTriggered.connect(self._on_scrollbar_actionTriggered)

        self.detail = FrameDetail(self)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.view)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setChildrenCollapsible(False)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.filter_edit, 1)
        top.addWidget(self.count_label)
        top.addWidget(self.follow_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.banner)
        layout.addLayout(top)
        layout.addWidget(self.splitter, 1)

    # -- feeding ------------------------------------------------------------------------

    def begin_turn(self, t0: float, dialect: str, recorded: bytearray | None = None) -> None:
        """A turn starts; ``recorded``: a replayed capture's reads, joined (see
        :meth:`FramesModel.clear`)."""
        self.clock.cancel(self._show_rows)
        self.model.clear(t0, recorded)
        self.dialect = dialect
        self.content_type = None
        self._total_bytes = 0
        self._next_rows = 0.0
        self.banner.hide()
        self.detail.clear()
        self.set_follow(True)
        self._update_count()

    def set_content_type(self, content_type: str | None) -> None:
        self.content_type = content_type

    def add_progress(self, batch: ProgressBatch) -> None:
        """Keep a batch (cheap); its rows show when the paint clock gives the table a slot."""
        self.model.take(batch)
        log = self.model.log  # (a body row's bytes are not in the reads: ``side``)
        self._total_bytes = max(batch.total_bytes, log.received) + len(log.side)
        self._show_mismatch(batch.delta)
        if self.model.pending_rows:
            self.clock.wake(self._show_rows, self._next_rows)

    def adopt(self, log: FrameLog, total_bytes: int, delta: TurnDelta | None) -> None:
        """Show a turn's frames kept elsewhere (a live turn coming back into view): ``log``
        with every row, ``delta`` the reducer's latest."""
        self.clock.cancel(self._show_rows)
        self.model.adopt(log)
        self._total_bytes = total_bytes
        self._show_mismatch(delta)
        self._update_count()
        self.view.scrollToBottom()

    @property
    def total_bytes(self) -> int:
        """The turn's bytes so far."""
        return self._total_bytes

    def _show_mismatch(self, delta: TurnDelta | None) -> None:
        if delta is not None and delta.dialect_mismatch and self.banner.isHidden():
            self.banner.setText(
                f"⚠ These frames look like the <b>{delta.dialect_mismatch}</b> dialect, but"
                f" this endpoint is set to <b>{delta.dialect or self.dialect}</b>. Text and"
                " tool calls may be missing; change the endpoint's dialect in its settings."
            )
            self.banner.show()

    def _show_rows(self, _deadline: float) -> float | None:
        """The table's job on the paint clock: show the rows that arrived, follow the end."""
        if self.model.show_new_rows():
            self._next_rows = time.monotonic() + pacing.TABLE_PAINT_MS / 1000
            self._update_count()
            if self.following:
                self._scroll_to_end()
        return None

    def repaint_now(self) -> None:
        """Show every row that arrived now (at the end of a turn, say)."""
        self.clock.cancel(self._show_rows)
        self._show_rows(0.0)

    # -- following the newest frame -------------------------------------------------------

    @property
    def following(self) -> bool:
        """Whether the table keeps the newest frame in view."""
        return self.follow_button.isChecked()

    def set_follow(self, follow: bool) -> None:
        """Follow the newest frame (and scroll to it), or stop following."""
        self.follow_button.setChecked(follow)  # (toggled: scrolls when it turns on)

    def _on_follow_button_toggled(self, checked: bool) -> None:
        if checked:
            self._scroll_to_end()

    def _scroll_to_end(self) -> None:
        self._auto_scrolling = True
        try:
            self.view.scrollToBottom()
        finally:
            self._auto_scrolling = False

    def _on_scrollbar_valueChanged(self, value: int) -> None:
        if not self._auto_scrolling and value < self.view.verticalScrollBar().maximum():
            self._set_checked_quietly(False)  # scrolled up (or to a selected frame)

    def _on_scrollbar_actionTriggered(self, _action: int) -> None:
        bar = self.view.verticalScrollBar()  # the user scrolls: back at the end, follow
        if bar.sliderPosition() >= bar.maximum():
            self._set_checked_quietly(True)

    def _set_checked_quietly(self, follow: bool) -> None:
        """Set the button without scrolling (the table is where it should be)."""
        if follow != self.following:
            self.follow_button.blockSignals(True)
            self.follow_button.setChecked(follow)
            self.follow_button.blockSignals(False)

    # -- filter and selection -----------------------------------------------------------

    def _on_filter_edit_textChanged(self, _text: str) -> None:
        self._filter_timer.start()

    def apply_filter(self) -> None:
        """Apply the filter box now (normally debounced)."""
        self._filter_timer.stop()
        selected = self.selected_row()
        following = self.following
        self._auto_scrolling = True  # (the table changes under the view: not a scroll up)
        try:
            self.proxy.set_needle(self.filter_edit.text())
            filtering = bool(self.proxy.needle)
            if filtering:
                self.proxy.scan()  # a first slice now: a small table is filtered at once
            if filtering != self.filtering:
                self.view.setModel(self.proxy if filtering else self.model)
                self._connect_selection()
        finally:
            self._auto_scrolling = False
        if selected is not None:  # the selection survives (following, it stays off-screen)
            self._reselecting = self._auto_scrolling = following
            try:
                self.select_row(selected, scroll=not following)
            finally:
                self._reselecting = self._auto_scrolling = False
        if following:
            self._scroll_to_end()
        self._update_count()

    @property
    def filtering(self) -> bool:
        """Whether the table shows the filtered rows (through the proxy)."""
        return self.view.model() is self.proxy

    def shown_rows(self) -> int:
        """How many rows the table shows (all, or those passing the filter)."""
        return self.view.model().rowCount()

    def source_row(self, index: QModelIndex | QPersistentModelIndex) -> int:
        """The frame (model row) at a view index."""
        return self.proxy.mapToSource(index).row() if self.filtering else index.row()

    def view_index(self, row: int) -> QModelIndex:
        """The view's index of frame ``row`` (invalid if the filter hides it)."""
        index = self.model.index(row, 0)
        return self.proxy.mapFromSource(index) if self.filtering else index

    def _connect_selection(self) -> None:
        self.view.selectionModel().selectionChanged.connect(self._on_selection_changed)

    def _update_count(self) -> None:
        total = self.model.rowCount()
        shown = self.shown_rows()
        noun = "frame" if total == 1 else "frames"
        head = f"{total:,} {noun}" if shown == total else f"{shown:,} of {total:,} {noun}"
        if self.filtering and self.proxy.scanning:
            head += f" (filtering… {self.proxy.progress():.0%})"
        self.count_label.setText(f"{head} · {_size(self._total_bytes)}")

    def selected_row(self) -> int | None:
        """The selected source row, if any."""
        rows = self.view.selectionModel().selectedRows()
        return self.source_row(rows[0]) if rows else None

    def select_row(self, row: int, *, scroll: bool = True) -> None:
        """Select source row ``row`` (if it passes the filter) and show it."""
        index = self.view_index(row)
        if index.isValid():
            self.view.selectRow(index.row())
            if scroll:
                self.view.scrollTo(index)

    def select_malformed(self, reason: str | None = None) -> bool:
        """Select the first malformed frame (whose event says ``reason``, if given), clearing
        a filter that hides it; whether there was one."""
        self.repaint_now()
        row = self.model.log.find_malformed(reason)
        if row is None:
            return False
        if not self.view_index(row).isValid():
            self.filter_edit.clear()
            self.apply_filter()
        self.select_row(row)
        return True

    def _on_selection_changed(self, _sel: QItemSelection, _desel: QItemSelection) -> None:
        row = self.selected_row()
        if row is None:
            return
        if not self._reselecting:
            self.set_follow(False)  # the frame looked at stays in view
        self.show_detail(row)
        self.frameSelected.emit(row)

    def show_detail(self, row: int) -> None:
        log = self.model.log
        notes = frame_notes(log.kinds[row], log.flags[row])
        self.detail.show_frame(
            row,
            log.frame_bytes(row),
            offset=log.stream_offset(row),
            boundaries=log.read_boundaries(row),
            t_ms=log.time(row) * 1000,
            notes=", ".join(notes),
            events=log.events(row),
        )

    def current_index(self) -> QModelIndex:
        return self.view.currentIndex()
