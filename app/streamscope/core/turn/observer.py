"""The observer interface through which a turn is watched as it happens (no I/O here, so
importing it does not load the network stack)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamscope.core.turn.model import Turn
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import PipelineUpdate
    from streamscope.core.turn.progress import Progress
    from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["MultiObserver", "TurnObserver"]


class TurnObserver:
    """Receives a turn as it happens. Subclass and override what you need; every method is
    called on the event loop's thread, in order, and must be quick."""

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        """The request is about to be sent (``spec`` is unredacted: redact before showing)."""

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        """Status line and headers arrived."""

    def read(self, data: bytes, t: float) -> None:
        """One network read of the body (wire bytes, or decompressed when the server
        compressed despite ``Accept-Encoding: identity``)."""

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        """What the pipeline made of the last read (frames, events)."""

    def batch(self, progress: Progress) -> None:
        """An encoded batch (from the stream worker), in place of :meth:`read` and
        :meth:`progressed` calls: by default, each of its reads is passed to :meth:`read`."""
        for data, t in progress.reads:
            self.read(data, t)

    def ended(self, end: StreamEnd) -> None:
        """How the byte stream ended (with the bounded error body, if any); then
        :meth:`finished` follows."""

    def finished(self, turn: Turn) -> None:
        """The turn ended (any outcome, cancelled included)."""


class MultiObserver(TurnObserver):
    """Fans every callback out to several observers, in order."""

    def __init__(self, *observers: TurnObserver) -> None:
        self.observers = observers

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        for o in self.observers:
            o.request_started(spec, body, t)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        for o in self.observers:
            o.response_started(status, headers, t)

    def read(self, data: bytes, t: float) -> None:
        for o in self.observers:
            o.read(data, t)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        for o in self.observers:
            o.progressed(update, t)

    def batch(self, progress: Progress) -> None:
        for o in self.observers:
            o.batch(progress)

    def ended(self, end: StreamEnd) -> None:
        """Forwarded to every observer (see :meth:`CaptureRecorder.ended`)."""
        for o in self.observers:
            o.ended(end)

    def finished(self, turn: Turn) -> None:
        for o in self.observers:
            o.finished(turn)
