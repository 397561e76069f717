"""What decides a tapped exchange's outcome: the same as what decides a chat turn's, so the
tap says of an exchange what ``streamscope send`` says of the same bytes, and its capture
replays to the same.

A request that asked for a stream (:func:`asks_for_stream`) answered with a body that is
none is ``error`` (the body kept as the chat's client keeps it: in the capture's end, not its
reads); a line over the cap ends the turn there (the capture ends ``protocol_error``, as a chat
turn's does) although the bytes keep flowing to the client; and a client hanging up once the
stream has said how it ends — its terminal signal, or an error — does not make it
``cancelled`` (:func:`said_end`).
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

import orjson

from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline

__all__ = ["asks_for_stream", "plain_turn", "said_end"]


def asks_for_stream(url: str, body: bytes) -> bool:
    """Whether a request (to ``url``, with ``body``) asked for a streamed answer, as the
    dialects ask for one: a JSON body with ``"stream": true`` (OpenAI, Anthropic, Responses);
    Gemini's ``:streamGenerateContent?alt=sse``; Ollama's ``/api/chat`` and ``/api/generate``,
    which stream unless the body says ``"stream": false``. (A models listing, a
    ``"stream": false`` completion: not.)"""
    parts = urlsplit(url)
    path = parts.path
    if path.endswith(":streamGenerateContent"):
        return "alt=sse" in parts.query.split("&")
    try:
        doc = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return False
    if not isinstance(doc, dict):
        return False
    if path.endswith(("/api/chat", "/api/generate")):
        return doc.get("stream", True) is True
    return doc.get("stream") is True


def said_end(end: StreamEnd, pipe: StreamPipeline, protocol_error: str | None) -> StreamEnd:
    """How the stream ended by what it said, not by who closed first: a line over the cap
    ended it there (the chat's client stops reading at it); a client (an SDK) hangs up once
    the terminal signal or an in-stream error is in — the stream had ended for it."""
    if protocol_error is not None and end.kind != "protocol_error":
        return replace(end, kind="protocol_error", detail=protocol_error)
    if end.kind == "cancelled" and (
        pipe.assembler.terminal_signal is not None or pipe.snapshot().server_error is not None
    ):
        return replace(end, kind="eof")
    return end


def plain_turn(
    end: StreamEnd, status: int | None, size: int, timings: Timings, *, note: str | None = None
) -> Turn:
    """A non-streaming answer to a request that asked for none (``/v1/models``, a
    ``"stream": false`` completion): its outcome by its status (``note``: said after it)."""
    ctype = end.content_type or "no content type"
    return Turn(
        outcome=Outcome.COMPLETED,
        reason=f"HTTP {status}, not a stream ({ctype}, {size} bytes)"
        + (f"; {note}" if note else ""),
        status=status,
        bytes_received=size,
        timings=timings,
    )
