"""A secret the model echoes back in pieces: where its pieces are in the raw stream.

The byte scrubber (:class:`~streamscope.core.redact.StreamScrubber`) masks a secret wherever
its bytes are contiguous in the stream, even split across reads. A model that repeats the key
token by token puts it in several frames — ``{"content":"sk-pr"}``, ``{"content":"oj-AB"}`` —
with the frames' own bytes between the pieces, so no byte form of it is in the stream, yet a
replay joins the pieces again. :func:`echoed_spans` reads the stream as the dialect does,
joins each channel's pieces (answer text, reasoning, each tool call's arguments), finds the
secrets there and maps every character of them back to its bytes in its frame; the caller
masks those bytes in place (same length: the reads keep their boundaries).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.wire.events import ReasoningDelta, TextDelta, ToolCallDelta
from streamscope.core.wire.sse_fields import RawFrame

__all__ = ["echoed_spans", "mask_spans"]

_Encode = Callable[[str], bytes]
_ENCODINGS: tuple[_Encode, ...] = (
    lambda t: json.dumps(t)[1:-1].encode(),  # (\u escapes, as most servers write)
    lambda t: json.dumps(t, ensure_ascii=False)[1:-1].encode(),
)


def _channel(event: object) -> tuple[Any, str] | None:
    if isinstance(event, TextDelta):
        return "text", event.text
    if isinstance(event, ReasoningDelta):
        return "reasoning", event.text
    if isinstance(event, ToolCallDelta):
        return ("tool", event.index), event.arguments
    return None


def _locate(raw: bytes, piece: str) -> tuple[int, _Encode] | None:
    """Where ``piece`` is written in ``raw`` as a whole JSON string (the offset just past its
    opening quote), and how it was encoded."""
    for encode in _ENCODINGS:
        found = raw.find(b'"' + encode(piece) + b'"')
        if found >= 0:
            return found + 1, encode
    return None


def echoed_spans(body: bytes, dialect: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """Byte ranges of ``body`` that hold a piece of a secret the stream's text, reasoning or
    tool-call arguments spell out across frames (a piece that cannot be found as a JSON
    string in its frame is left: nothing else there is known to be it)."""
    wanted = [s for s in secrets if s]
    if not wanted or not body:
        return []
    pipeline = StreamPipeline(dialect, keep_frames=True)
    frames = [*pipeline.feed(body, 0.0).frames, *pipeline.flush(0.0).frames]
    pieces: dict[Any, list[tuple[int, str, RawFrame]]] = {}
    lengths: dict[Any, int] = {}
    for parsed in frames:
        for event in parsed.events:
            found = _channel(event)
            if found is None or not found[1]:
                continue
            key, text = found
            start = lengths.get(key, 0)
            pieces.setdefault(key, []).append((start, text, parsed.frame))
            lengths[key] = start + len(text)
    spans: list[tuple[int, int]] = []
    for parts in pieces.values():
        whole = "".join(text for _start, text, _frame in parts)
        for secret in wanted:
            at = whole.find(secret)
            while at >= 0:
                end = at + len(secret)
                for start, text, frame in parts:
                    if start >= end or start + len(text) <= at:
                        continue
                    located = _locate(frame.raw, text)
                    if located is None:
                        continue
                    offset, encode = located
                    first = max(at, start) - start
                    last = min(end, start + len(text)) - start
                    base = frame.offset + offset
                    spans.append(
                        (base + len(encode(text[:first])), base + len(encode(text[:last])))
                    )
                at = whole.find(secret, at + 1)
    return spans


def mask_spans(
    reads: Iterable[tuple[float, bytes]], spans: list[tuple[int, int]]
) -> list[tuple[float, bytes]]:
    """``reads`` with the bytes of ``spans`` (offsets in the joined reads) masked, each read
    keeping its length and time."""
    out: list[tuple[float, bytes]] = []
    pos = 0
    for t, data in reads:
        end = pos + len(data)
        hit = [(max(a, pos), min(b, end)) for a, b in spans if a < end and b > pos]
        if hit:
            buf = bytearray(data)
            for a, b in hit:
                buf[a - pos : b - pos] = b"*" * (b - a)
            data = bytes(buf)
        out.append((t, data))
        pos = end
    return out
