"""The Verdict tab: the turn's stream checked against its dialect's rules, live.

It runs the core's :class:`~streamscope.core.verdict.engine.Linter` on the reads each
progress batch brings — read back from the Frames tab's log, which holds them anyway (for a
replay, the capture's own bytes): nothing is copied or kept here — as a job on the window's
paint clock (no timer of its own: a slice of
each tick, so a flood or an instant replay never blocks the event loop), so findings appear
as their frames arrive; the whole-stream rules and the timing diagnosis come when the turn has
finished and every read is checked (then ``on_final`` is called with the short verdict). A
stream longer than :data:`LIVE_LIMIT` bytes is not checked here (``streamscope lint`` checks
any length). A row: severity icon, rule, frame, message (elided in its column: the
selected finding's message, how often it fired and its hint are whole under the list, and
in the row's tooltip). Activating a row with a frame asks for that frame
(``frameRequested``): the inspector selects it in Frames.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon, QPalette, QShowEvent
from PySide6.QtWidgets import (
    QLabel,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.turn.frame_log import FrameLog
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.progress import Progress
from streamscope.core.wire.sizes import plural
from streamscope.ui.base.paint_clock import PaintClock, default_clock

if TYPE_CHECKING:  # the checker is loaded by the first turn it checks, not with the window
    from streamscope.core.verdict import Finding, Linter

__all__ = ["NO_RESPONSE", "VerdictPanel", "end_of", "finding_text", "no_response"]

LIVE_LIMIT = 64 * 1024 * 1024
"""Bytes of a response the tab checks; past this it says to run ``streamscope lint``."""

AUTO_LIMIT = 1024 * 1024
"""Checking costs about as much as reading the stream did, so it runs only while the tab is
shown — except for a finished turn up to this many bytes (most answers), checked at its end
even while hidden, so the card and the status bar get the short verdict. A longer one (a
flood, a big replay) is checked when the tab is shown: the benchmark's 100k-delta firehose
took 1.5x as long with every turn checked live."""

COLUMNS = ("", "rule", "frame", "message")
COL_ICON, COL_RULE, COL_FRAME, COL_MESSAGE = range(4)
FRAME_ROLE = Qt.ItemDataRole.UserRole + 1
FINDING_ROLE = Qt.ItemDataRole.UserRole + 2  # (its index in ``findings``)


NO_RESPONSE = "no response"
"""The tab's one line for a request that got no response at all (refused, DNS, TLS): there
is no stream to check, so no finding either."""


def no_response(turn: Turn, received: int = 0) -> bool:
    """Whether a finished turn got no response at all: no status, not a byte (and not
    stopped by the user)."""
    return (
        turn.outcome is not Outcome.CANCELLED
        and turn.status is None
        and turn.bytes_received == 0
        and received == 0
    )


_STREAM_ENDS = frozenset({"eof", "broken", "idle_timeout", "first_byte_timeout", "protocol_error"})
"""Ends of a stream the linter is given as the turn met them (the card's reason and the
Verdict tab's then say the same: "connection closed …" is not "connection broken …")."""


def end_of(turn: Turn, status: int | None = None) -> StreamEnd:
    """How the input ended, as the finished turn says (for the linter's own pipeline);
    ``status``: the response's, when its head came."""
    if status is None and no_response(turn):
        return StreamEnd("connect_error", elapsed=turn.timings.end)
    if turn.outcome is Outcome.CANCELLED:
        return StreamEnd("cancelled", elapsed=turn.timings.end)
    if turn.status is not None and turn.status >= 400:
        return StreamEnd("http_error", elapsed=turn.timings.end, status=turn.status)
    if turn.stream_end is not None and turn.stream_end.kind in _STREAM_ENDS:
        return turn.stream_end
    # (a turn that does not say how its stream ended: as its outcome tells)
    if turn.terminal_signal is not None or turn.outcome is Outcome.COMPLETED:
        return StreamEnd("eof", elapsed=turn.timings.end)
    return StreamEnd("broken", elapsed=turn.timings.end)


class VerdictPanel(QWidget):
    """See the module docstring. ``verdictChanged(line)``: the short diagnosis changed."""

    frameRequested = Signal(int)
    verdictChanged = Signal(str)
    countChanged = Signal(int)  # errors and warnings so far (for the tab's title)

    def __init__(
        self,
        log_of: Callable[[], FrameLog],
        parent: QWidget | None = None,
        *,
        clock: PaintClock | None = None,
    ) -> None:
        super().__init__(parent)
        self.log_of = log_of  # the Frames tab's log of this turn (its reads, with their times)
        self.clock = clock or default_clock()
        self.linter: Linter | None = None
        self.findings: list[Finding] = []
        self.finished = False
        self.on_final: Callable[[str], None] | None = None
        """Called once with the short verdict when the turn's verdict is complete."""
        self._next_read = 0  # the first read of the log not checked yet
        self._fed = 0
        self._too_long = False
        self._ended: Turn | None = None
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
        # the selected finding, whole (the message column is elided to its width)
        self.detail = QLabel("", self)
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint = QLabel("", self)
        self.hint.setWordWrap(True)
        self.hint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        for label in (self.detail, self.hint):
            label.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.header)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.hint)

    # -- the turn -----------------------------------------------------------------------------

    def begin_turn(self, dialect: str, request_body: bytes, t0: float) -> None:
        self.clock.cancel(self._check)
        self.linter = None
        self.findings = []
        self.finished = False
        self.on_final = None
        self._next_read = 0
        self._fed = 0
        self._too_long = False
        self._ended = None
        self.tree.clear()
        self._show_detail(None)
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
        """The batch's reads are in the log (the Frames tab took it first): check them on the
        paint clock (while the tab is shown: see :data:`AUTO_LIMIT`)."""
        if not batch.reads or self.finished or self._too_long or not self.isVisible():
            return
        self.clock.wake(self._check)

    def _wanted(self) -> bool:
        """Whether checking runs now: the tab is shown, or a short turn has finished."""
        return self.isVisible() or (
            self._ended is not None and self.log_of().received <= AUTO_LIMIT
        )

    def showEvent(self, event: QShowEvent) -> None:  # the tab is shown: catch up
        super().showEvent(event)
        if (
            not self.finished
            and not self._too_long
            and (self._unchecked() or self._ended is not None)
        ):
            self._show_header(final=False)
            self.clock.wake(self._check)

    def catch_up(self) -> None:
        """Check the reads the log already holds (a turn shown again with its log)."""
        if not self.finished and not self._too_long and self._unchecked() and self._wanted():
            self.clock.wake(self._check)

    def _unchecked(self) -> bool:
        return self._next_read < len(self.log_of().read_offsets)

    def finish(self, turn: Turn) -> None:
        """The turn ended: once every read is checked, the whole-stream rules and the timing
        diagnosis (at once when nothing is left to check)."""
        if self.finished or self._ended is not None:
            return
        self._ended = turn
        if not self._wanted():
            self.header.setText(
                "This turn is long (over 1 MiB): it is checked when this tab is shown."
            )
            return
        if self._unchecked() and not self._too_long:
            self.clock.wake(self._check)
        else:
            self._finalize()

    def drain(self) -> None:
        """Check everything queued now (tests; a caller that must have the verdict)."""
        self.clock.cancel(self._check)
        self._check(float("inf"))

    def diagnosis(self) -> str:
        """ "2 spec errors · buffered by a proxy" ("" when there is nothing to say)."""
        if not self.findings:
            return ""
        from streamscope.core.verdict import diagnosis

        return diagnosis(self.findings)

    # -- internals ------------------------------------------------------------------------------

    def _check(self, deadline: float) -> float | None:
        """The paint-clock job: check the log's reads until ``deadline`` (``perf_counter``)."""
        if deadline != float("inf") and not self._wanted():
            return None  # (hidden again: the rest when the tab is shown)
        log = self.log_of()
        offsets, times = log.read_offsets, log.read_times
        count = len(offsets)
        if self._next_read < count and not self._too_long:
            linter = self._linter()
            new: list[Finding] = []
            with memoryview(log.stream) as stream:
                while self._next_read < count:
                    i = self._next_read
                    end = offsets[i + 1] if i + 1 < count else log.received
                    self._next_read = i + 1
                    self._fed += end - offsets[i]
                    if self._fed > LIVE_LIMIT:
                        break
                    new += linter.feed(bytes(stream[offsets[i] : end]), times[i])
                    if time.perf_counter() >= deadline:
                        break
            if self._fed > LIVE_LIMIT:
                self._give_up()
                return None
            if new:
                self._add(new)
                self._show_header(final=False)
            if self._next_read < count:
                return 0.0  # (more next tick)
        if self._ended is not None and not self.finished:
            self._finalize()
        return None

    def _give_up(self) -> None:
        self._too_long = True
        self.linter = None
        self.finished = True
        mib = LIVE_LIMIT // (1024 * 1024)
        self.header.setText(
            f"The response is longer than {mib} MiB: not checked here. Save the capture and "
            "run `streamscope lint FILE` to check all of it."
        )
        self.verdictChanged.emit(self.diagnosis())

    def _finalize(self) -> None:
        turn = self._ended
        assert turn is not None
        self.finished = True
        if self._status is None and no_response(turn, self.log_of().received):
            self.findings = []  # (no stream: nothing to check, "no response" says it all)
            self.tree.clear()
            self.linter = None
            self.header.setText(NO_RESPONSE)
            self.verdictChanged.emit("")
            self.countChanged.emit(0)
            callback, self.on_final = self.on_final, None
            if callback is not None:
                callback("")
            return
        linter = self._linter()
        t_end = turn.timings.end if turn.timings.end is not None else time.monotonic()
        verdict = linter.finish(end_of(turn, self._status), t_end)
        # (the whole-stream rules may have dropped live findings: show the final list)
        self.findings = []
        self.tree.clear()
        self._add(list(verdict.findings))
        first = self.tree.topLevelItem(0)
        if first is not None:  # (the first finding whole under the list, without a click)
            self.tree.setCurrentItem(first)
        self._show_header(final=True)
        self.linter = None  # (its state is no longer needed)
        callback, self.on_final = self.on_final, None
        if callback is not None:
            callback(self.diagnosis())

    def _linter(self) -> Linter:
        if self.linter is None:
            from streamscope.core.verdict import Linter

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
        for i, f in enumerate(findings, len(self.findings)):
            item = QTreeWidgetItem(["", f.rule, "" if f.frame is None else str(f.frame), f.message])
            item.setIcon(COL_ICON, self._icons.get(f.severity, QIcon()))
            item.setToolTip(COL_ICON, f.severity)
            item.setToolTip(COL_MESSAGE, f"{finding_text(f)}\n\n{f.hint}")
            item.setData(COL_FRAME, FRAME_ROLE, -1 if f.frame is None else f.frame)
            item.setData(COL_ICON, FINDING_ROLE, i)
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
                f"{plural(counts['error'], 'error')} · {plural(counts['warning'], 'warning')} · "
                f"{plural(counts['info'], 'note')}"
            )
            words = [w for w in self.diagnosis().split(" · ") if "spec error" not in w]
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
        index = current.data(COL_ICON, FINDING_ROLE) if current is not None else None
        if isinstance(index, int) and 0 <= index < len(self.findings):
            self._show_detail(self.findings[index])
        else:
            self._show_detail(None)

    def _show_detail(self, finding: Finding | None) -> None:
        """The selected finding under the list, whole: its message, then its hint."""
        self.detail.setText(finding_text(finding) if finding is not None else "")
        self.hint.setText(finding.hint if finding is not None else "")
        self.detail.setVisible(finding is not None)
        self.hint.setVisible(finding is not None)


def finding_text(f: Finding) -> str:
    """A finding's whole message, with where it fired: ``frame 7: the body ended …``
    (``3 times (frames 4, 9, 12): …`` for one that fired on several frames)."""
    where = f"frame {f.frame}" if f.frame is not None else "the whole stream"
    if f.count > 1:
        label = "frame" if len(f.frames) == 1 else "frames"
        listed = f" ({label} {', '.join(map(str, f.frames))})" if f.frames else ""
        where = f"{f.count} times{listed}"
    return f"{where}: {f.message}"
