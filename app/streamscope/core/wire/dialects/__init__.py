"""Wire dialects: the registry (the only list of them) and ``auto`` detection.

The built-ins (``openai``, ``anthropic``, ``gemini``, ``responses``, ``ollama``, in the order
the UI lists them) register themselves when this package is imported; :func:`register` adds
another. Everything that lists dialects asks :func:`dialect_names` at call time, so a dialect
registered later shows up in the CLI, the settings and ``auto`` with no other edit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit

from streamscope.core.wire.dialects.anthropic import ANTHROPIC
from streamscope.core.wire.dialects.base import (
    Dialect,
    Evidence,
    Framing,
    RequestSpec,
    StreamParser,
)
from streamscope.core.wire.dialects.gemini import GEMINI
from streamscope.core.wire.dialects.ollama import OLLAMA
from streamscope.core.wire.dialects.openai_chat import OPENAI_CHAT
from streamscope.core.wire.dialects.openai_responses import OPENAI_RESPONSES
from streamscope.core.wire.sse import SSEEvent

AUTO = "auto"
"""Not a dialect: "detect it from the response" (settings, ``replay``, raw requests)."""

_REGISTRY: dict[str, Dialect] = {}


def register(dialect: Dialect) -> Dialect:
    """Add ``dialect`` (after the ones already there); ``ValueError`` if its name is taken."""
    if dialect.name in _REGISTRY or dialect.name == AUTO:
        raise ValueError(f"a dialect named {dialect.name!r} is already registered")
    _REGISTRY[dialect.name] = dialect
    return dialect


def unregister(name: str) -> None:
    """Remove the dialect called ``name`` (no error if there is none)."""
    _REGISTRY.pop(name, None)


@contextmanager
def registered(dialect: Dialect) -> Iterator[Dialect]:
    """``dialect`` registered for the duration of a ``with`` block (tests, plugins)."""
    register(dialect)
    try:
        yield dialect
    finally:
        unregister(dialect.name)


def dialects() -> tuple[Dialect, ...]:
    """Every registered dialect, in registration order."""
    return tuple(_REGISTRY.values())


def dialect_names(*, with_auto: bool = False) -> tuple[str, ...]:
    """The registered dialects' names in order, then ``auto`` if asked for."""
    return (*_REGISTRY, AUTO) if with_auto else tuple(_REGISTRY)


def get_dialect(name: str) -> Dialect:
    """The dialect called ``name``; ``KeyError`` (listing the names) if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r}; choose one of {', '.join(_REGISTRY)}") from None


def dialect_for_path(url: str) -> str | None:
    """The dialect whose streaming request path ``url`` has (its ``request_paths``; ``None``:
    no registered one)."""
    path = urlsplit(url).path.rstrip("/")
    for dialect in dialects():
        if any(path.endswith(suffix) for suffix in getattr(dialect, "request_paths", ())):
            return dialect.name
    return None


def fallback_for_framing(framing: Framing) -> Dialect:
    """What ``auto`` assumes when the frames do not tell: the first registered dialect with
    this framing (``openai`` for SSE, ``ollama`` for NDJSON), else the first of all."""
    registered_now = dialects()
    return next((d for d in registered_now if d.framing == framing), registered_now[0])


def resolve(name: str) -> Dialect:
    """The dialect called ``name``, ``auto`` meaning the SSE fallback (what a request to an
    endpoint set to ``auto`` is built with)."""
    return fallback_for_framing("sse") if name == AUTO else get_dialect(name)


def is_ndjson_content_type(content_type: str | None) -> bool:
    """Whether a Content-Type names newline-delimited JSON."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media in {"application/x-ndjson", "application/ndjson", "application/jsonl"}


_NO_EVENT = (SSEEvent("message", ""),)


def detect_dialect(content_type: str | None, events: Sequence[SSEEvent]) -> str | None:
    """Guess the dialect from the content type and the first decoded events.

    An NDJSON content type that only one dialect uses names it. Otherwise each event in turn
    is offered to every dialect (:meth:`Dialect.recognize`): the surest claim wins, the first
    registered among equals. Returns ``None`` when nothing decides yet (a lone
    ``{"error": ...}``, ``[DONE]``).
    """
    candidates = dialects()
    if is_ndjson_content_type(content_type):
        candidates = tuple(d for d in candidates if d.framing == "ndjson") or candidates
        if len(candidates) == 1:
            return candidates[0].name
    for ev in events or _NO_EVENT:
        best, surest = None, Evidence.NONE
        for dialect in candidates:
            evidence = dialect.recognize(content_type, ev)
            if evidence > surest:
                best, surest = dialect, evidence
        if best is not None:
            return best.name
    return None


for _builtin in (OPENAI_CHAT, ANTHROPIC, GEMINI, OPENAI_RESPONSES, OLLAMA):
    register(_builtin)


__all__ = [
    "AUTO",
    "Dialect",
    "Evidence",
    "Framing",
    "RequestSpec",
    "StreamParser",
    "detect_dialect",
    "dialect_names",
    "dialects",
    "fallback_for_framing",
    "get_dialect",
    "is_ndjson_content_type",
    "register",
    "registered",
    "resolve",
    "unregister",
]
