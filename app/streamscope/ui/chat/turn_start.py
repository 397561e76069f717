"""What a turn's start and progress carry to the views (the chat, the inspector, the status
bar): :class:`TurnStart` and :data:`ProgressBatch`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from streamscope.core.redact import Scrubber
from streamscope.core.turn.progress import Progress

if TYPE_CHECKING:
    from streamscope.core.capture.format import ReadLog
    from streamscope.core.net.arrivals import ArrivalSource
    from streamscope.core.net.options import StreamTimeouts
    from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["ProgressBatch", "TurnStart"]


@dataclass(frozen=True, slots=True)
class TurnStart:
    """What was sent (``spec`` is unredacted: redact before showing, scrub before saving).

    ``recorded``: for a replay, the capture's reads — all of them already in memory, so a
    view can index them instead of keeping a copy of what the batches bring."""

    spec: RequestSpec
    body: bytes
    dialect: str
    t0: float
    recorded: ReadLog | None = None
    scrubber: Scrubber = field(default_factory=Scrubber)
    """The request's secrets, masked in whatever is saved of the turn."""
    capture_id: str | None = None
    """The capture being written, when the runner has a capture store."""
    timeouts: StreamTimeouts | None = None
    """The client's timeouts for a live turn (``None``: a replay)."""
    arrivals: ArrivalSource | None = None
    """What the turn's reader has received, read at any moment (a live turn): ahead of the
    batches when they queue behind a slow display."""


ProgressBatch = Progress
"""What ``turnProgressed`` carries: see :class:`~streamscope.core.turn.progress.Progress`."""
