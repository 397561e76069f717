"""Tap another app, in the window: the tap's controller and the Tapped list, whose exchanges
open in the inspector — live, while they stream (the tap's dialog is
:mod:`streamscope.ui.tap.tap_dialog`).

The tap records in a child process (:class:`~streamscope.core.tap.recording.TapProcess`,
which runs what ``streamscope tap`` runs: forwarding in a child of its own, recording niced),
like the stream worker: it sends the window each exchange's start, coalesced
:class:`Progress` batches (rows and the reducer's :class:`TurnDelta`, built by the same
:class:`~streamscope.core.turn.progress.ProgressEncoder` that live chat turns use), each
result and why it stopped. A thread of the window hears it and hands each exchange's batches
to its :class:`Feed` (under a lock; off POSIX, where no descriptor can be handed to a child,
the tap records in a thread of the window, a
:class:`~streamscope.core.tap.server.TapServer`, whose feeds encode the batches themselves);
a feed with news pokes the window once (a queued signal), and the paint clock takes the
batches on the UI thread. Every batch is kept per exchange, so choosing an exchange
shows it whole — finished or still streaming — and the open one gets each new batch as it
comes. While an exchange streams, its row (and the Timeline, when it is the one shown) says
how it is doing, by a chat turn's rules: "● streaming · 200 · 1.2 KB · no data for 12 s"
(:mod:`streamscope.ui.tap.tap_liveness`).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.options import TLSOptions
from streamscope.core.turn.liveness import Liveness
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.progress import Progress
from streamscope.ui.base.paint_clock import default_clock
from streamscope.ui.chat.message_card import outcome_colour
from streamscope.ui.tap.tap_liveness import TapLiveness
from streamscope.ui.tap.tapped import Bridge, TappedExchange

if TYPE_CHECKING:
    from pathlib import Path

    from streamscope.core.tap.proxy import ExchangeResult
    from streamscope.core.tap.recording import TapProcess
    from streamscope.core.tap.server import TapServer
    from streamscope.ui.inspector.inspector import InspectorPanel
    from streamscope.ui.tap.tapped_history import TappedHistory

__all__ = ["TapController", "TapPanel", "TappedExchange"]


class TapController(QObject):
    """Runs the tap (start and stop off the UI thread) and keeps its exchanges; the one
    shown in the inspector gets every batch as it arrives."""

    stateChanged = Signal()
    exchangeAdded = Signal(object)
    exchangeChanged = Signal(object)
    exchangeShown = Signal(object)
    """The inspector shows this exchange now, or the one it shows has just ended."""
    _startDone = Signal(object, str)  # TapProcess | TapServer | None, error
    _died = Signal(object, str)  # the tap, why it stopped serving unasked

    def __init__(
        self,
        inspector: InspectorPanel,
        *,
        busy: Callable[[], bool] = lambda: False,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.inspector = inspector
        self.busy = busy
        self.server: TapProcess | TapServer | None = None
        self.error = ""
        self.died = False  # (``error`` says why the running tap stopped, unasked)
        self.upstream = ""
        self.faults: str | None = None  # the running tap's fault spec (the Tap dialog's)
        self.exchanges: list[TappedExchange] = []
        self.shown: TappedExchange | None = None
        self._by_key: dict[int, TappedExchange] = {}  # key: the window's own numbering
        self._by_exchange: dict[int, TappedExchange] = {}  # id() of the TapExchange
        self._keys = itertools.count(1)
        self._dirty: set[TappedExchange] = set()
        self._bridge: Bridge | None = None
        self.liveness = TapLiveness(self._on_liveness_ticked)
        self._startDone.connect(self._on_start_done)
        self._died.connect(self._on_died)

    @property
    def running(self) -> bool:
        return self.server is not None

    def start(
        self,
        upstream: str,
        port: int,
        *,
        tls: TLSOptions | None = None,
        faults: str | None = None,
    ) -> None:
        """Start a tap in front of ``upstream`` on 127.0.0.1:``port`` (0: any free port),
        with the endpoint's TLS options (system trust, CA file, verification off) and the
        faults on cue of ``faults`` (a ``--fault`` spec, already checked)."""
        if self.server is not None:
            return
        import os

        from streamscope.core.tap.history import tap_capture_store
        from streamscope.core.tap.recording import TapProcess
        from streamscope.core.tap.server import TapServer

        self.error, self.died = "", False
        self.upstream = upstream
        self.faults = faults
        bridge = self._bridge = Bridge("auto")
        bridge.started.connect(self._on_started)
        bridge.finished.connect(self._on_finished)
        bridge.news.connect(self._on_news)
        tap = TapProcess if os.name == "posix" else TapServer  # (records here: a thread)
        try:
            server = tap(
                upstream,
                port=port,
                tls=tls or TLSOptions(),
                captures=tap_capture_store(),  # (listed again after a restart)
                listener=bridge,
                died=lambda why: self._died.emit(server, why),
                faults=faults,
            )
        except ValueError as exc:
            self.error = str(exc)
            self.stateChanged.emit()
            return
        if isinstance(server, TapProcess):
            bridge.arrivals = server.arrivals

        def run() -> None:
            try:
                server.start()
            except (OSError, RuntimeError) as exc:
                self._startDone.emit(None, str(exc))
                return
            self._startDone.emit(server, "")

        threading.Thread(target=run, name="tap-start", daemon=True).start()

    def _on_start_done(self, server: TapProcess | TapServer | None, error: str) -> None:
        self.server, self.error, self.died = server, error, False
        self.stateChanged.emit()

    def _on_died(self, server: TapProcess | TapServer, why: str) -> None:
        if server is self.server:  # (not one stopped since, or replaced)
            self.server, self.error, self.died = None, why, True
            self.stateChanged.emit()

    def stop(self) -> None:
        """Stop the tap (open exchanges end as cancelled), off the UI thread."""
        server, self.server = self.server, None
        if server is not None:
            threading.Thread(target=server.stop, name="tap-stop", daemon=True).start()
        self.stateChanged.emit()

    def stop_and_wait(self) -> None:
        """Stop the tap now (the window is closing)."""
        server, self.server = self.server, None
        if server is not None:
            server.stop()

    # -- exchanges ----------------------------------------------------------------------

    def _on_started(self, item: TappedExchange) -> None:
        self.exchanges.append(item)
        item.key = next(self._keys)  # (a restarted tap numbers its exchanges from 1 again)
        self._by_key[item.key] = item
        self._by_exchange[id(item.exchange)] = item
        self.liveness.begin(item)
        self.exchangeAdded.emit(item)

    def _on_news(self, item: TappedExchange) -> None:
        self._dirty.add(item)
        default_clock().poke(self._deliver)

    def _deliver(self, deadline: float) -> float | None:
        dirty, self._dirty = self._dirty, set()
        for item in dirty:
            self._take(item)
            self.exchangeChanged.emit(item)
        return None

    def _take(self, item: TappedExchange) -> None:
        batch = item.feed.take()
        if batch.is_empty():
            return
        item.bytes += sum(len(data) for data, _t in batch.reads)
        batch.total_bytes = item.bytes
        batch.elapsed = time.monotonic() - item.exchange.started
        item.watch.add(batch)
        if item is self.shown:
            self.inspector.add_progress(batch)
        item.kept.append(batch)

    def _on_finished(self, result: ExchangeResult) -> None:
        item = self._by_exchange.get(id(result.exchange))
        if item is None:
            return
        self._dirty.discard(item)
        self._take(item)
        self.liveness.end(item)
        item.result = result
        self._react()
        if item is self.shown:
            self.inspector.finish_turn(result.turn)
            self._name(item)
            self.exchangeShown.emit(item)
        self.exchangeChanged.emit(item)

    def _react(self) -> None:
        """Say on each faulted exchange how its client reacted (a later retry changes what
        an earlier exchange's row says)."""
        from streamscope.core.faults import client_reactions, describe_reaction
        from streamscope.core.tap.exchange import observed

        ended = [i for i in self.exchanges if i.result is not None]
        if not any(i.result is not None and i.result.faults for i in ended):
            return
        by_id = {str(i.exchange.id): i for i in ended}
        seen = [observed(i.result) for i in ended if i.result is not None]
        for report in client_reactions(seen, now=time.monotonic())["exchanges"]:
            item = by_id.get(report["exchange"])
            said = describe_reaction(report)
            if item is not None and item.reaction != said:
                item.reaction = said
                self.exchangeChanged.emit(item)
                if item is self.shown:
                    self.inspector.header.set_note(said)

    def _on_liveness_ticked(self, item: TappedExchange, live: Liveness) -> None:
        said = item.label()
        item.live = live
        if item is self.shown:
            self.inspector.timeline_panel.show_liveness(live)
        if item.label() != said:
            self.exchangeChanged.emit(item)

    def _name(self, item: TappedExchange) -> None:
        header = self.inspector.header
        header.show_turn(item.ref(), live=item.result is None)
        header.set_note(item.reaction)
        header.set_live_elsewhere(False)

    def show(self, item: TappedExchange) -> bool:
        """Show ``item`` in the inspector (whole so far; live from here on). Not while a
        chat turn streams into the inspector."""
        if self.busy():
            return False
        self.shown = None
        self._take(item)  # (what just arrived joins what is kept: shown once, with the rest)
        self.exchangeChanged.emit(item)  # (and the list says so, as the inspector will)
        self.shown = item
        inspector = self.inspector
        inspector.begin_turn(item.start())
        self._name(item)
        if item.feed.response is not None:
            inspector.set_response(*item.feed.response)
        whole = Progress.joined(item.kept)
        whole.elapsed = time.monotonic() - item.exchange.started
        if not whole.is_empty():
            inspector.add_progress(whole)
        if item.turn is not None:
            inspector.finish_turn(item.turn)
        self.exchangeShown.emit(item)
        return True

    def get(self, key: int) -> TappedExchange | None:
        return self._by_key.get(key)

    def release_inspector(self) -> None:
        """A chat turn takes the inspector: stop sending it tapped batches."""
        self.shown = None


class TapPanel(QWidget):
    """The Tapped dock: what the tap is doing, and its exchanges (newest last); with a
    ``folder``, the earlier ones kept there below them (``open_capture`` opens one)."""

    def __init__(
        self,
        controller: TapController,
        parent: QWidget | None = None,
        *,
        folder: Path | None = None,
        open_capture: Callable[[Path], object] | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        # Wide enough for a row ("#12 POST /v1/chat/completions", "✓ completed · 200 · 12
        # frames · 1.2 KB · 0.85 s") and, beside Conversations, for both tabs' titles.
        fm = self.fontMetrics()
        tabs = fm.horizontalAdvance("Conversations") + fm.horizontalAdvance("Tapped")
        self.setMinimumWidth(tabs + 4 * fm.height())  # (each tab pads its title)
        self._wide = fm.horizontalAdvance("✓ completed · 200 · 12 frames · 1.2 KB · 0.85 s") + 40
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.state = QLabel(self)
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_dialog = QPushButton("Tap another app…", self)
        self.model = QStandardItemModel(self)
        self.view = QListView(self)
        self.view.setModel(self.model)
        self.view.setEditTriggers(QListView.EditTrigger.NoEditTriggers)
        self.view.setUniformItemSizes(True)
        layout.addWidget(self.state)
        layout.addWidget(self.open_dialog)
        layout.addWidget(self.view, 1)
        self.history: TappedHistory | None = None
        if folder is not None:
            from streamscope.ui.tap.tapped_history import TappedHistory

            self.history = TappedHistory(folder, open_capture, self)
            layout.addWidget(self.history, 1)
        self._rows: dict[int, QStandardItem] = {}
        controller.stateChanged.connect(self._show_state)
        controller.exchangeAdded.connect(self._on_added)
        controller.exchangeChanged.connect(self._on_changed)
        self.view.clicked.connect(self._on_clicked)
        self.view.activated.connect(self._on_clicked)
        self._show_state()
        for item in controller.exchanges:  # (the window builds this list when it is shown)
            self._on_added(item)
            self._on_changed(item)

    def sizeHint(self) -> QSize:
        return QSize(max(self._wide, self.minimumWidth()), super().sizeHint().height())

    def _show_state(self) -> None:
        c = self.controller
        if c.server is not None:
            from streamscope.core.tap.server import sdk_base_urls

            urls = sdk_base_urls(c.server.root_url, c.server.upstream)  # (the dialog: all)
            self.state.setText(f"Tapping {c.upstream}\nOpenAI SDK base URL: {urls[0]}")
        elif c.error:
            self.state.setText(f"Tap not running: {c.error}")
        else:
            self.state.setText("Tap not running")

    def _on_added(self, item: TappedExchange) -> None:
        row = QStandardItem(item.label())
        row.setData(item.key, Qt.ItemDataRole.UserRole)
        self._rows[item.key] = row
        self.model.appendRow(row)

    def _on_changed(self, item: TappedExchange) -> None:
        row = self._rows.get(item.key)
        if row is None:
            return
        row.setText(item.label())
        row.setToolTip(item.label())  # (the row may be narrower than what it says)
        if item.result is not None:
            row.setForeground(outcome_colour(Outcome(item.result.outcome), self.palette()))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        palette_changed = (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange)
        if event.type() in palette_changed:  # (the theme changed: the outcomes' colours)
            for key in self._rows:
                item = self.controller.get(key)
                if item is not None:
                    self._on_changed(item)

    def _on_clicked(self, index: object) -> None:
        from PySide6.QtCore import QModelIndex

        assert isinstance(index, QModelIndex)
        exchange_id = index.data(Qt.ItemDataRole.UserRole)
        item = self.controller.get(exchange_id)
        if item is not None:
            self.controller.show(item)

    def texts(self) -> list[str]:
        return [self.model.item(i).text() for i in range(self.model.rowCount())]
