"""Real bytes through the real pipeline, cut into the ProgressBatches the window receives."""

from __future__ import annotations

from collections.abc import Sequence

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import ProgressEncoder
from streamscope.ui.chat.turn_start import ProgressBatch


def pipeline_batches(
    dialect: str,
    reads: Sequence[bytes],
    per_batch: int = 1,
    dt: float = 0.01,
    *,
    t0: float,
    lead: float = 0.1,
    tail: float = 0.001,
) -> tuple[list[ProgressBatch], Turn]:
    """Run ``reads`` through the pipeline (request sent at ``t0``, first read ``lead`` later,
    ``dt`` apart); one ProgressBatch per ``per_batch`` reads, and the finished Turn."""
    pipe = StreamPipeline(dialect, keep_frames=True, request_sent=t0)
    encoder = ProgressEncoder()
    batches: list[ProgressBatch] = []
    t = t0 + lead
    for i, data in enumerate(reads):
        t += dt
        encoder.read(data, t)
        encoder.progressed(pipe.feed(data, t), t)
        if (i + 1) % per_batch == 0:
            batches.append(encoder.take())
    encoder.progressed(pipe.flush(t), t)
    batches.append(encoder.take())
    return batches, pipe.close(StreamEnd("eof"), t + tail)
