"""A secret the model echoes back in pieces: where its pieces are in the raw stream.

The byte scrubber (:class:`~streamscope.core.redact.StreamScrubber`) masks a secret wherever
its bytes are contiguous in the stream, even split across reads. A model that repeats the key
token by token puts it in several frames — ``{"content":"sk-pr"}``, ``{"content":"oj-AB"}`` —
with the frames' own bytes between the pieces, so no byte form of it is in the stream, yet a
replay joins the pieces again. :func:`echoed_spans` reads the stream as the dialect does,
joins each channel's pieces (answer text, reasoning, each tool call's arguments), finds the
secrets there and maps every character of them back to its bytes in its frame; the caller
masks those bytes in place (same length: the reads keep their boundaries).

A piece is found in its frame as a whole JSON string value, read as JSON reads it, so however
the server wrote it: raw UTF-8 or ``\\u`` escapes (either case of hex: .NET writes
``\\u041A``), surrogate pairs, Go's ``\\u003c`` for ``<``, PHP's ``\\/``. Every value in the
frame that is the piece is masked (OpenAI's logprobs repeat each token); an object's key
never is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.wire.events import ReasoningDelta, TextDelta, ToolCallDelta
from streamscope.core.wire.sse_fields import RawFrame

__all__ = ["echoed_spans", "mask_spans"]

_STRING = re.compile(rb'("(?:[^"\\]|\\.)*")(\s*:)?', re.DOTALL)
"""A JSON string literal, and the colon after it when it is an object's key."""
_HIGH, _LOW = range(0xD800, 0xDC00), range(0xDC00, 0xE000)


def _channel(event: object) -> tuple[Any, str] | None:
    if isinstance(event, TextDelta):
        return "text", event.text
    if isinstance(event, ReasoningDelta):
        return "reasoning", event.text
    if isinstance(event, ToolCallDelta):
        return ("tool", event.index), event.arguments
    return None


def _offsets(body: bytes, base: int) -> list[int]:
    """The offset of each character of a (valid) JSON string literal's ``body`` that starts
    at ``base``, and of its end: an escape is one character (a surrogate pair too), a raw
    UTF-8 character is its bytes."""
    offsets: list[int] = []
    i = 0
    while i < len(body):
        offsets.append(base + i)
        if body[i] != 0x5C:  # (a UTF-8 lead byte: 0xxxxxxx, 110xxxxx, 1110xxxx, 11110xxx)
            i += 1 if body[i] < 0xC0 else 2 if body[i] < 0xE0 else 3 if body[i] < 0xF0 else 4
        elif body[i + 1] != 0x75:  # \n, \", \/ …
            i += 2
        elif (
            int(body[i + 2 : i + 6], 16) in _HIGH
            and body[i + 6 : i + 8] == b"\\u"
            and int(body[i + 8 : i + 12], 16) in _LOW
        ):
            i += 12
        else:
            i += 6
    offsets.append(base + i)
    return offsets


def _locate(raw: bytes, piece: str) -> list[list[int]]:
    """Each place ``piece`` is written in ``raw`` as a whole JSON string value: the offsets
    of its characters and of its end (see :func:`_offsets`)."""
    found: list[list[int]] = []
    for literal in _STRING.finditer(raw):
        if literal.group(2):  # an object's key
            continue
        try:
            if json.loads(literal.group(1)) != piece:
                continue
        except ValueError:
            continue
        offsets = _offsets(literal.group(1)[1:-1], literal.start(1) + 1)
        if len(offsets) == len(piece) + 1:  # (always: the JSON reading counted the same)
            found.append(offsets)
    return found


def echoed_spans(body: bytes, dialect: str, secrets: Iterable[str]) -> list[tuple[int, int]]:
    """Byte ranges of ``body`` that hold a piece of a secret the stream's text, reasoning or
    tool-call arguments spell out across frames (a piece that cannot be found as a JSON
    string value in its frame is left: nothing else there is known to be it)."""
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
                    first = max(at, start) - start
                    last = min(end, start + len(text)) - start
                    for offsets in _locate(frame.raw, text):
                        spans.append((frame.offset + offsets[first], frame.offset + offsets[last]))
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
