"""What every dialect provides: a request builder and a stream parser factory.

A dialect is a plain object satisfying :class:`Dialect`; its parser turns each decoded
:class:`~streamscope.core.wire.sse.SSEEvent` (for NDJSON: one line) into
:data:`~streamscope.core.wire.events.StreamEvent` values. Parsers do no I/O and read no clocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from streamscope.core.wire.conversation import Conversation
from streamscope.core.wire.events import MalformedFrame, ServerError, StreamEvent
from streamscope.core.wire.sse import SSEEvent

Framing = Literal["sse", "ndjson"]

EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """An HTTP request, ready for the client: ``json`` is the body to serialize."""

    method: str
    url: str
    headers: dict[str, str]
    json: dict[str, Any] = field(default_factory=dict)


class StreamParser(Protocol):
    """Stateful per-turn parser: one decoded frame in, zero or more events out."""

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        """Map one decoded event (an SSE event or one NDJSON line) to stream events."""
        ...

    def end_of_body(self) -> list[StreamEvent]:
        """The body ended cleanly (EOF); return any events that implies (Gemini: Terminal)."""
        ...


class Dialect(Protocol):
    """A wire dialect: its name, its framing, its request shape and its parser."""

    @property
    def name(self) -> str: ...

    @property
    def framing(self) -> Framing: ...

    @property
    def terminal(self) -> str:
        """How the terminal signal is named in reasons ("no [DONE]")."""
        ...

    def build_request(
        self,
        conv: Conversation,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> RequestSpec:
        """Build the streaming request for ``conv``."""
        ...

    def new_parser(self) -> StreamParser:
        """A fresh parser for one response body."""
        ...


def join_url(base_url: str, path: str) -> str:
    """``base_url`` (which includes the API's version prefix) + ``path``."""
    return base_url.rstrip("/") + path


def headers_with(base: dict[str, str], extra_headers: Mapping[str, str] | None) -> dict[str, str]:
    """``base`` updated with the endpoint's extra headers (they win)."""
    if extra_headers:
        base.update(extra_headers)
    return base


def openai_tools(conv: Conversation) -> list[dict[str, Any]]:
    """Tool definitions in the OpenAI chat shape (also Ollama's)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in conv.tools
    ]


def arguments_object(arguments: str) -> dict[str, Any]:
    """A tool call's raw arguments as the JSON object some wire shapes need.

    Valid JSON objects pass through; anything else is wrapped so nothing is lost.
    """
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"raw_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def result_object(text: str) -> dict[str, Any]:
    """A tool result as a JSON object (Gemini's ``functionResponse.response``)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}


def excerpt(data: str) -> str:
    """A short excerpt of frame data for the inspector."""
    if len(data) <= EXCERPT_CHARS:
        return data
    return data[:EXCERPT_CHARS] + "…"


def load_object(data: str) -> dict[str, Any] | MalformedFrame:
    """Parse ``data`` as a JSON object, or describe why it is malformed."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return MalformedFrame(f"invalid JSON: {exc}", excerpt(data))
    if not isinstance(obj, dict):
        return MalformedFrame(f"expected a JSON object, got {type(obj).__name__}", excerpt(data))
    return obj


def compact_json(value: Any) -> str:
    """Serialize compactly, non-ASCII kept (how object-valued tool arguments are reported)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def error_event(err: Any, raw: Any = None) -> ServerError:
    """A :class:`ServerError` from a provider's ``error`` value (an object or a string)."""
    if isinstance(err, dict):
        message = err.get("message")
        # prefer a symbolic code (rate_limit_exceeded, overloaded_error, UNAVAILABLE)
        code = next(
            (v for k in ("code", "type", "status") if isinstance(v := err.get(k), str) and v),
            err.get("code"),
        )
        return ServerError(
            message=str(message) if message is not None else compact_json(err),
            code=str(code) if code is not None else None,
            raw=raw if raw is not None else err,
        )
    return ServerError(message=str(err), code=None, raw=raw if raw is not None else err)


def as_str(value: Any) -> str | None:
    """``value`` if it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """``value`` if it is an int (not a bool), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None
