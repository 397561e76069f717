"""The live clock of tapped exchanges: while any of them streams, every
:data:`~streamscope.ui.base.pacing.LIVE_CLOCK_MS` each streaming exchange's
:class:`~streamscope.core.turn.liveness.LivenessWatch` is told what the tap has received of it
(the exchange's arrival board, written on the tap's thread as the forwarder's reads come in,
with the forwarder's times) and asked how the exchange is doing — the rules of a chat turn:
"no data for 12 s", "keep-alives only for 40 s", "no progress", "showing 3 s behind the
stream". No countdown: the timeouts are the tapped client's, not known here.

It ticks on the window's one paint clock, as a source (like the chat turn's clock, so a
backlog of batches cannot hold it back), and only while something streams.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from streamscope.ui.base import pacing
from streamscope.ui.base.paint_clock import PaintClock, default_clock

if TYPE_CHECKING:
    from streamscope.core.turn.liveness import Arrivals, Liveness, LivenessWatch

__all__ = ["LiveItem", "TapLiveness"]


class _Arrivals(Protocol):
    def arrivals(self, shown: int) -> Arrivals | None: ...


class LiveItem(Protocol):
    """What the clock reads of a streaming exchange: its watch and what has arrived."""

    @property
    def watch(self) -> LivenessWatch: ...

    @property
    def feed(self) -> _Arrivals: ...


Item = TypeVar("Item", bound=LiveItem)


class TapLiveness(Generic[Item]):
    """Ticks the exchanges between :meth:`begin` and :meth:`end`; ``ticked(item, live)``
    gets each one's :class:`~streamscope.core.turn.liveness.Liveness` at every tick."""

    def __init__(
        self,
        ticked: Callable[[Item, Liveness], None],
        clock: PaintClock | None = None,
    ) -> None:
        self._ticked = ticked
        self.clock = clock if clock is not None else default_clock()
        self.streaming: list[Item] = []
        self.ticks = 0
        self.clock.add_source(self._tick)

    def begin(self, item: Item) -> None:
        """``item`` started streaming."""
        self.streaming.append(item)
        self.clock.poke(self._tick, pacing.LIVE_CLOCK_MS)

    def end(self, item: Item) -> None:
        """``item`` ended (its last tick has been)."""
        if item in self.streaming:
            self.streaming.remove(item)

    def _tick(self, deadline: float) -> float | None:
        if not self.streaming:
            return None
        self.ticks += 1
        now = time.monotonic()
        for item in list(self.streaming):
            watch = item.watch
            watch.arrived(item.feed.arrivals(watch.shown_bytes))
            self._ticked(item, watch.at(now))
        return pacing.LIVE_CLOCK_MS if self.streaming else None
