"""Wire dialects: the registry and ``auto`` detection.

``get_dialect(name)`` returns one of ``openai``, ``anthropic``, ``gemini``, ``responses``,
``ollama``. ``detect_dialect`` picks one from a response's content type and first events.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from streamscope.core.wire.dialects.anthropic import ANTHROPIC
from streamscope.core.wire.dialects.base import Dialect, Framing, RequestSpec, StreamParser
from streamscope.core.wire.dialects.gemini import GEMINI
from streamscope.core.wire.dialects.ollama import OLLAMA
from streamscope.core.wire.dialects.openai_chat import OPENAI_CHAT
from streamscope.core.wire.dialects.openai_responses import OPENAI_RESPONSES
from streamscope.core.wire.sse import SSEEvent

DIALECTS: dict[str, Dialect] = {
    d.name: d for d in (OPENAI_CHAT, ANTHROPIC, GEMINI, OPENAI_RESPONSES, OLLAMA)
}
"""Every dialect by name, in the order the UI lists them."""

DIALECT_NAMES: tuple[str, ...] = (*DIALECTS, "auto")

_ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; ``KeyError`` (listing the names) if there is none."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r}; choose one of {', '.join(DIALECTS)}") from None


def is_ndjson_content_type(content_type: str | None) -> bool:
    """Whether a Content-Type names newline-delimited JSON (Ollama)."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media in {"application/x-ndjson", "application/ndjson", "application/jsonl"}


def detect_dialect(content_type: str | None, events: Sequence[SSEEvent]) -> str | None:
    """Guess the dialect from the content type and the first decoded events.

    Returns a dialect name, or ``None`` when the events seen so far do not decide it
    (e.g. a lone ``{"error": ...}``). NDJSON content types mean ``ollama``.
    """
    if is_ndjson_content_type(content_type):
        return "ollama"
    for ev in events:
        if ev.event in _ANTHROPIC_EVENTS:
            return "anthropic"
        if ev.event.startswith("response."):
            return "responses"
        guess = _detect_from_data(ev.data)
        if guess is not None:
            return guess
    return None


def _detect_from_data(data: str) -> str | None:
    if data.strip() == "[DONE]":
        return None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "responses"
        if kind in _ANTHROPIC_EVENTS:
            return "anthropic"
    if "candidates" in obj or "usageMetadata" in obj:
        return "gemini"
    if obj.get("object") == "chat.completion.chunk" or "choices" in obj:
        return "openai"
    if "done" in obj and ("message" in obj or "model" in obj):
        return "ollama"
    return None


__all__ = [
    "DIALECTS",
    "DIALECT_NAMES",
    "Dialect",
    "Framing",
    "RequestSpec",
    "StreamParser",
    "detect_dialect",
    "get_dialect",
    "is_ndjson_content_type",
]
