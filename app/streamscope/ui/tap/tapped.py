"""A tapped exchange as the window keeps it (:class:`TappedExchange`: its batches — built by
the tap's recording process and gathered on the thread that hears it, or built on the tap's
thread when it records in this process — its liveness, its result) and the bridge that
brings the tap's calls onto the UI thread."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from streamscope.core.net.arrivals import ArrivalBoard, ArrivalSource
from streamscope.core.redact import Scrubber
from streamscope.core.turn.liveness import Arrivals, Liveness, LivenessWatch
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome, format_bytes
from streamscope.core.turn.progress import Progress, ProgressEncoder
from streamscope.core.wire.sizes import plural
from streamscope.ui.chat.status_panel import GLYPHS
from streamscope.ui.chat.turn_ref import TurnRef
from streamscope.ui.chat.turn_start import TurnStart

if TYPE_CHECKING:
    from streamscope.core.tap.proxy import ExchangeResult, TapExchange
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import PipelineUpdate

__all__ = ["Bridge", "Feed", "TappedExchange"]


class Feed(TurnObserver):
    """One exchange's batches, built on the tap's thread (or encoded by the tap's recording
    process: :meth:`batch`); :meth:`take` on the UI thread. What arrived is on its arrival
    board at once (:meth:`arrivals`, from any thread: ``arrivals``, the recording process's
    board, when it records elsewhere)."""

    def __init__(self, poke: Callable[[], None], arrivals: ArrivalSource | None = None) -> None:
        self._lock = threading.Lock()
        self._encoder = ProgressEncoder()
        self._poke = poke
        self._poked = False
        self.response: tuple[int, list[tuple[str, str]]] | None = None
        self._board = ArrivalBoard.private()
        self._arrived = self._board.log(0)
        self._source = arrivals

    def arrivals(self, shown: int) -> Arrivals | None:
        """What the tap has received of the exchange, the window having got ``shown`` bytes."""
        if self._source is not None:
            return self._source(shown)
        return self._board.arrivals(0, shown)

    def batch(self, progress: Progress) -> None:
        """A batch the recording process encoded (in place of ``read`` and ``progressed``)."""
        with self._lock:
            self._encoder.absorb(progress)
        self._news()

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        with self._lock:
            self.response = (status, headers)
        self._news()

    def read(self, data: bytes, t: float) -> None:
        self._arrived.read(data, t)
        with self._lock:
            self._encoder.read(data, t)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self._arrived.progressed(update, t)
        with self._lock:
            self._encoder.progressed(update, t)
        self._news()

    def ended(self, end: StreamEnd) -> None:
        self._arrived.ended(end)

    def _news(self) -> None:
        with self._lock:
            if self._poked:
                return
            self._poked = True
        self._poke()  # (one queued signal until the window takes what is there)

    def take(self) -> Progress:
        with self._lock:
            self._poked = False
            batch = self._encoder.take()
            batch.total_frames = self._encoder.frames
            return batch


def _model_asked(exchange: TapExchange) -> str:
    """The model a request names: its JSON body's ``model``, or a Gemini path's
    ``models/NAME:…`` (``""`` when neither)."""
    if exchange.body[:1] == b"{":
        try:
            model = json.loads(exchange.body).get("model")
        except (ValueError, UnicodeDecodeError, AttributeError):
            model = None
        if isinstance(model, str):
            return model
    _before, found, rest = exchange.path.partition("/models/")
    return rest.split(":")[0].split("?")[0] if found else ""


@dataclass(eq=False)
class TappedExchange:
    """An exchange as the window keeps it: every batch so far (``kept``) and, once it has
    ended, its result."""

    exchange: TapExchange
    feed: Feed
    dialect: str
    kept: list[Progress] = field(default_factory=list)
    """Every batch so far, in order (joined once, when it is shown: joining batch by batch
    would copy the text so far each time)."""
    result: ExchangeResult | None = None
    bytes: int = 0
    key: int = 0
    watch: LivenessWatch = field(init=False)
    """Its liveness while it streams (fed the batches the window takes)."""
    live: Liveness | None = None
    """How it was doing at the last tick of the tap's live clock."""
    reaction: str = ""
    """Its faults on cue and how its client reacted (``cut@frame:5 → read to the end and
    did not retry``), once it has ended; "" without faults."""

    def __post_init__(self) -> None:
        self.watch = LivenessWatch(self.exchange.started)

    @property
    def turn(self) -> Turn | None:
        return self.result.turn if self.result is not None else None

    def start(self) -> TurnStart:
        ex = self.exchange
        return TurnStart(
            ex.spec,
            ex.body,
            self.dialect,
            ex.started,
            scrubber=Scrubber.for_request(ex.headers, ex.url),
        )

    def ref(self) -> TurnRef:
        """What the inspector's header says of it: "Tapped #1 POST /v1/chat/completions",
        when it started, the model the request asked for, its outcome."""
        ex = self.exchange
        r = self.result
        return TurnRef(
            key=-1 - self.key,  # (never a chat turn's key)
            conversation=f"Tapped #{ex.id} {ex.method} {ex.path}",
            started=time.time() - (time.monotonic() - ex.started),
            model=_model_asked(ex),
            outcome=Outcome(r.outcome) if r is not None else None,
            stopped_at_limit=self.turn is not None and self.turn.stopped_at_limit,
        )

    def label(self) -> str:
        ex = self.exchange
        head = f"#{ex.id} {ex.method} {ex.path}"
        r = self.result
        if r is None:
            status = self.feed.response[0] if self.feed.response else "…"
            words = self.live.words() if self.live is not None else []
            return " · ".join(
                [f"{head}\n● streaming", str(status), format_bytes(self.bytes), *words]
            )
        outcome = Outcome(r.outcome)
        glyph = GLYPHS[outcome][0]
        applied = ", ".join(str(f.get("fault")) for f in r.faults if f.get("applied"))
        missed = ", ".join(str(f.get("fault")) for f in r.faults if not f.get("applied"))
        said = self.reaction or applied or f"{missed} (not applied)"
        return (
            f"{head}\n{glyph} {r.outcome} · {r.status} · {plural(r.frames, 'frame')} · "
            f"{format_bytes(r.bytes)} · {r.duration_ms / 1000:.2f} s"
            + (f"\n⚡ {said}" if r.faults else "")
        )


class Bridge(QObject):
    """The tap's listener: its calls (on the tap's thread, or the thread that hears its
    recording process) become queued signals. ``arrivals``: where to read what the tap has
    received of an exchange (by its id), when it records in another process."""

    started = Signal(object)  # TappedExchange
    finished = Signal(object)  # ExchangeResult
    news = Signal(object)  # TappedExchange

    def __init__(self, dialect: str) -> None:
        super().__init__()
        self.dialect = dialect
        self.arrivals: Callable[[int], ArrivalSource] | None = None

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        holder: list[TappedExchange] = []
        source = self.arrivals(exchange.id) if self.arrivals is not None else None
        feed = Feed(lambda: self.news.emit(holder[0]), source)
        item = TappedExchange(exchange, feed, self.dialect)
        holder.append(item)
        self.started.emit(item)
        return feed

    def exchange_finished(self, result: ExchangeResult) -> None:
        self.finished.emit(result)
