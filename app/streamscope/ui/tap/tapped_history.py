"""The Tapped dock's earlier exchanges: what taps before this window recorded (its captures
are kept in the profile's capture folder; :mod:`streamscope.core.tap.history` reads them),
by day, newest day first. Choosing one opens its capture (replayed, as File → Open capture
does); "Open folder" shows the folder itself."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path

from PySide6.QtCore import QEvent, QModelIndex, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTreeView, QVBoxLayout, QWidget

from streamscope.core.tap.history import PastExchange, past_exchanges
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.chat.message_card import outcome_colour
from streamscope.ui.chat.status_panel import GLYPHS

__all__ = ["PATH_ROLE", "TappedHistory", "day_title", "past_label"]

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
"""An earlier exchange's row: its capture's path (``str``)."""

OUTCOME_ROLE = Qt.ItemDataRole.UserRole + 2


def _outcome(text: str | None) -> Outcome | None:
    try:
        return Outcome(text)
    except ValueError:
        return None


def day_title(day: date, today: date) -> str:
    """``Today``, ``Yesterday``, else ``Mon 30 Nov 2026``."""
    if day == today:
        return "Today"
    if day == today - timedelta(days=1):
        return "Yesterday"
    return f"{day:%a} {day.day} {day:%b %Y}"


def past_label(past: PastExchange) -> str:
    """``14:03:12 POST /v1/chat/completions`` and, below, ``✓ completed · 200``
    (its reason too, for anything but a completed exchange)."""
    head = f"{past.started:%H:%M:%S} {past.method} {past.target}"
    if past.outcome is None:
        return f"{head}\n? no end recorded (the tap stopped while it streamed)"
    outcome = _outcome(past.outcome)
    glyph = GLYPHS[outcome][0] if outcome is not None else "?"
    said = [f"{glyph} {past.outcome}", str(past.status or "—")]
    if past.outcome != "completed" and past.reason:
        said.append(past.reason)
    return f"{head}\n{' · '.join(said)}"


class TappedHistory(QWidget):
    """ "Earlier" under the Tapped list: the tap's captures in ``folder`` by day (read once,
    when built: this window's own exchanges are the list above); ``open_capture`` opens
    one."""

    def __init__(
        self,
        folder: Path,
        open_capture: Callable[[Path], object] | None,
        parent: QWidget | None = None,
        *,
        today: date | None = None,
    ) -> None:
        super().__init__(parent)
        self.folder = folder
        self._open_capture = open_capture
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel(self)
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_folder = QPushButton("Open folder", self)
        self.open_folder.setToolTip(str(folder))
        self.open_folder.clicked.connect(self._on_open_folder)
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.open_folder, 0, Qt.AlignmentFlag.AlignTop)
        self.model = QStandardItemModel(self)
        self.view = QTreeView(self)
        self.view.setModel(self.model)
        self.view.setHeaderHidden(True)
        self.view.setEditTriggers(QTreeView.EditTrigger.NoEditTriggers)
        self.view.setIndentation(8)
        layout.addLayout(top)
        layout.addWidget(self.view, 1)
        self.view.clicked.connect(self._on_chosen)
        self.view.activated.connect(self._on_chosen)
        self.past = past_exchanges(folder)
        self._fill(today or date.today())

    def _fill(self, today: date) -> None:
        days: dict[date, QStandardItem] = {}
        for past in reversed(self.past):  # (newest day first, its newest exchange first)
            day = past.started.date()
            heading = days.get(day)
            if heading is None:
                heading = days[day] = QStandardItem(day_title(day, today))
                heading.setFlags(Qt.ItemFlag.ItemIsEnabled)
                font = heading.font()
                font.setBold(True)
                heading.setFont(font)
                self.model.appendRow(heading)
            row = QStandardItem(past_label(past))
            row.setData(str(past.path), PATH_ROLE)
            row.setData(past.outcome, OUTCOME_ROLE)
            row.setToolTip(f"{past_label(past)}\n{past.path}")
            heading.appendRow(row)
        self.view.expandAll()
        n = len(self.past)
        self.title.setText(
            f"Earlier: {n} tapped exchange{'s' if n != 1 else ''}, kept as captures — choose "
            "one to open it"
            if n
            else "Earlier: no tapped exchanges kept yet (their captures go to the folder)"
        )
        self.view.setVisible(bool(n))
        self._colour()

    def _colour(self) -> None:
        palette = self.palette()
        for d in range(self.model.rowCount()):
            heading = self.model.item(d)
            for r in range(heading.rowCount()):
                row = heading.child(r)
                outcome = _outcome(row.data(OUTCOME_ROLE))
                if outcome is not None:
                    row.setForeground(outcome_colour(outcome, palette))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        palette_changed = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
        if event.type() in palette_changed:  # (the theme changed: the outcomes' colours)
            self._colour()

    def rows(self) -> list[tuple[str, list[str]]]:
        """(day, [its rows' texts]) as listed."""
        out = []
        for d in range(self.model.rowCount()):
            heading = self.model.item(d)
            out.append(
                (heading.text(), [heading.child(r).text() for r in range(heading.rowCount())])
            )
        return out

    def _on_chosen(self, index: QModelIndex) -> None:
        path = index.data(PATH_ROLE)
        if path and self._open_capture is not None:
            self._open_capture(Path(path))

    def _on_open_folder(self) -> None:
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.folder))):
            # (no file manager: a bare X session, a sandbox …) the path, to copy
            self.title.setText(
                f"No file manager could be opened; the captures are in {self.folder}"
            )
