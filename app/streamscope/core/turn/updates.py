"""What the byte pipeline (:mod:`streamscope.core.turn.pipeline`) hands out per read: the
frames it decoded with the events made of each, and the :class:`PipelineUpdate` holding them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from streamscope.core.turn.assembler import TurnAssembler
from streamscope.core.wire.events import StreamEvent
from streamscope.core.wire.sse import RawFrame, SSEEvent

__all__ = ["FrameRole", "MarkedFrame", "ParsedFrame", "PipelineUpdate"]

FrameRole = Literal["body", "oversized"]


@dataclass(frozen=True, slots=True)
class MarkedFrame(RawFrame):
    """A frame row the pipeline adds that no decoded block is: ``role="body"``, a response
    body that was not a stream (an HTTP error's JSON, a proxy's HTML page: not in the reads,
    so its bytes travel with the row); ``role="oversized"``, the first bytes of the block
    whose line broke the line cap. Both are ``error`` rows (flagged
    :data:`~streamscope.core.turn.progress.FLAG_BODY` or ``FLAG_OVERSIZED``), with no
    events."""

    role: FrameRole = "body"


class ParsedFrame(NamedTuple):
    """One decoded frame and the events the dialect made of it (in order)."""

    frame: RawFrame
    events: list[StreamEvent]


@dataclass(slots=True)
class PipelineUpdate:
    """What one ``feed`` (or the end of input) produced.

    ``frames`` is filled only with ``keep_frames=True``; ``events`` always holds every new
    event in order. With ``lean=True``, a read of usual blocks only (see
    :meth:`~streamscope.core.wire.sse.SSEDecoder.feed_usual`) fills ``usual`` instead of
    ``frames``: each frame's decoded event and the events made of it, frames unmade.
    ``progress``: some event was semantic progress (text, reasoning or argument bytes) — what
    the idle timeout watches. ``terminal``: the terminal signal has
    arrived (so far). ``protocol_error``: the framing layer gave up (stop reading and close
    with ``StreamEnd("protocol_error")``). ``assembler``: the reducer behind it (whose
    :meth:`~TurnAssembler.take_delta` says what changed for the views).
    """

    frames: list[ParsedFrame] = field(default_factory=list)
    events: list[StreamEvent] = field(default_factory=list)
    usual: list[tuple[SSEEvent, list[StreamEvent]]] | None = None
    progress: bool = False
    terminal: bool = False
    protocol_error: str | None = None
    assembler: TurnAssembler | None = None
