"""Hand-made frame timelines as real captures, for the bench tests: each read is
``(t, frames)`` (one frame or several arriving in the same read), written in the dialect's
framing by :mod:`support.verdict_streams`. Times are binary fractions (multiples of 1/8 s)
so the expected values in the tests are exact."""

from __future__ import annotations

from typing import Any

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from support.verdict_streams import DONE, Frame, frame_bytes, oa

Read = tuple[float, Frame | list[Frame]]

CONTENT_TYPES = {"ollama": "application/x-ndjson"}


def timeline(
    dialect: str,
    reads: list[Read],
    *,
    end: CaptureEnd | None = None,
    ttfb: float = 0.0625,
    status: int = 200,
    content_type: str | None = None,
) -> Capture:
    """A capture of ``reads`` (each read's frames joined), answered at ``ttfb`` with
    ``status`` (``content_type``: the dialect's by default); ``end`` defaults to a clean
    end 1/8 s after the last read."""
    log = ReadLog()
    for t, frames in reads:
        group = frames if isinstance(frames, list) else [frames]
        log.append(t, b"".join(frame_bytes(f, dialect) for f in group))
    ctype = content_type or CONTENT_TYPES.get(dialect, "text/event-stream")
    last = reads[-1][0] if reads else ttfb
    return Capture(
        dialect,
        response=CaptureResponse(status, (("content-type", ctype),), ttfb),
        reads=log,
        end=end if end is not None else CaptureEnd("eof", elapsed=last + 0.125),
    )


def usage_chunk(completion: int) -> dict[str, Any]:
    """The OpenAI usage chunk (``choices: []``) that ``stream_options.include_usage`` adds."""
    return oa({}, usage={"prompt_tokens": 7, "completion_tokens": completion}) | {"choices": []}


def role_first() -> Capture:
    """OpenAI chat: the role-only chunk, three content chunks, the finish, the usage chunk
    (4 tokens) in the same read, ``[DONE]``; frames 0-6, ends at 1.0 s."""
    return timeline(
        "openai",
        [
            (0.125, oa({"role": "assistant", "content": ""})),  # frame 0
            (0.25, oa({"content": "Hel"})),  # frame 1
            (0.5, oa({"content": "lo"})),  # frame 2
            (0.625, oa({"content": " world"})),  # frame 3
            (0.75, [oa({}, "stop"), usage_chunk(4)]),  # frames 4, 5
            (0.875, DONE),  # frame 6
        ],
        end=CaptureEnd("eof", elapsed=1.0),
    )
