"""What every dialect provides: every per-dialect fact the app needs, behind one protocol.

A dialect is a plain object satisfying :class:`Dialect` (its name and label, framing,
terminal signal, request builder and auth headers, models API, auto-detect recognition,
raw-request reading, frame summaries, the demo's name for it) and is listed by registering
it (:func:`streamscope.core.wire.dialects.register`). Its parser turns each decoded
:class:`~streamscope.core.wire.sse.SSEEvent` (for NDJSON: one line) into
:data:`~streamscope.core.wire.events.StreamEvent` values. Parsers do no I/O and read no clocks.
:class:`DialectDefaults` holds what most built-ins share (a dialect may override any of it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar, Literal, Protocol

import orjson

from streamscope.core.wire.context import ContextCut
from streamscope.core.wire.conversation import Conversation
from streamscope.core.wire.events import MalformedFrame, ServerError, StreamEvent
from streamscope.core.wire.sse import SSEEvent
from streamscope.core.wire.summary import SummaryLabels, summarize_events

Framing = Literal["sse", "ndjson"]

EXCERPT_CHARS = 200


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """An HTTP request, ready for the client: ``json`` is the body to serialize;
    ``context``: how much of the conversation its messages are (set by whoever built it from
    a conversation, for the Request tab to say)."""

    method: str
    url: str
    headers: dict[str, str]
    json: dict[str, Any] = field(default_factory=dict)
    context: ContextCut | None = None


class StreamParser(Protocol):
    """Stateful per-turn parser: one decoded frame in, zero or more events out."""

    def parse(self, ev: SSEEvent) -> list[StreamEvent]:
        """Map one decoded event (an SSE event or one NDJSON line) to stream events."""
        ...

    def end_of_body(self) -> list[StreamEvent]:
        """The body ended cleanly (EOF); return any events that implies (Gemini: Terminal)."""
        ...


class Evidence(IntEnum):
    """How surely one decoded event says "this is my dialect" (``auto`` picks the surest;
    among equals, the first registered)."""

    NONE = 0
    SHAPE = 1
    """Fields typical of the dialect (``choices``, ``candidates``, ``done`` + ``message``)."""
    TYPE_FIELD = 2
    """A discriminator in the data names one of its events (``"type": "message_start"``)."""
    EVENT_NAME = 3
    """The SSE event name is one of its events (``event: message_start``)."""
    CONTENT_TYPE = 4
    """The response's Content-Type is the dialect's own."""


class Dialect(Protocol):
    """A wire dialect: every fact about it the app needs (see the module docstring)."""

    @property
    def name(self) -> str:
        """What settings, captures and ``--dialect`` call it (``openai``)."""
        ...

    @property
    def label(self) -> str:
        """For people ("OpenAI chat completions")."""
        ...

    @property
    def framing(self) -> Framing: ...

    @property
    def terminal(self) -> str:
        """How the terminal signal is named in reasons ("no [DONE]")."""
        ...

    @property
    def demo_name(self) -> str | None:
        """Which of the built-in demo endpoint's dialects serves this one (``None``: none)."""
        ...

    @property
    def request_paths(self) -> tuple[str, ...]:
        """How the URL path of this dialect's streaming request ends (``/chat/completions``):
        how a recorded exchange (a HAR entry) is known to be this dialect's."""
        ...

    @property
    def lint(self) -> str | None:
        """The module holding this dialect's lint rules (its ``LINT``), which the verdict stage
        loads by name (``None``: the common rules only). Wire never imports it."""
        ...

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Authentication (and API version) headers, for streaming requests and plain GETs."""
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

    def models_url(self, base_url: str) -> str:
        """Where an endpoint at ``base_url`` lists its models."""
        ...

    def parse_models(self, doc: Any) -> list[str]:
        """Model names from the models listing, in the server's order, without duplicates."""
        ...

    def recognize(self, content_type: str | None, ev: SSEEvent) -> Evidence:
        """How surely this response (its content type, one decoded event) is this dialect."""
        ...

    def user_text(self, body: Mapping[str, Any]) -> str | None:
        """The last user message of a request body in this dialect's shape, or ``None``."""
        ...

    def summarize(self, events: Sequence[StreamEvent]) -> str:
        """A frame's one-line summary from the events this dialect parsed out of it (cheap:
        formats events, parses nothing)."""
        ...


class DialectDefaults:
    """What most built-in dialects share: Bearer auth, ``{base}/models``, a tolerant models
    listing parser, ``messages`` request bodies and the generic frame summary with
    :attr:`summary_labels`. Mixed into the built-ins' dataclasses; override what differs."""

    __slots__ = ()

    summary_labels: ClassVar[SummaryLabels] = SummaryLabels()

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def models_url(self, base_url: str) -> str:
        return join_url(base_url, "/models")

    def parse_models(self, doc: Any) -> list[str]:
        return model_names(doc)

    def user_text(self, body: Mapping[str, Any]) -> str | None:
        return last_user_text(body.get("messages"), "content")

    def summarize(self, events: Sequence[StreamEvent]) -> str:
        return summarize_events(events, self.summary_labels)


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


def data_object(ev: SSEEvent) -> dict[str, Any] | None:
    """An event's data as a JSON object, or ``None`` (for recognition, not parsing)."""
    try:
        obj = orjson.loads(ev.data)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def model_names(doc: Any) -> list[str]:
    """Model names from a models listing of any common shape, in order, without duplicates.

    ``{"data": [{"id": ...}]}`` (OpenAI-style, Anthropic); ``{"models": [{"name": ...}]}``
    (Gemini ``models/x``, prefix dropped, models that cannot generate content skipped;
    Ollama ``name`` or ``model``). Other shapes give ``[]``.
    """
    if not isinstance(doc, dict):
        return []
    names: list[str] = []
    data = doc.get("data")
    if isinstance(data, list):
        names += [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
    models = doc.get("models")
    if isinstance(models, list):
        for m in models:
            if not isinstance(m, dict):
                continue
            name = m.get("name") if isinstance(m.get("name"), str) else m.get("model")
            if not isinstance(name, str):
                continue
            methods = m.get("supportedGenerationMethods")
            if isinstance(methods, list) and not (
                {"generateContent", "streamGenerateContent"} & set(methods)
            ):
                continue
            names.append(name.removeprefix("models/"))
    return list(dict.fromkeys(names))


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text")
            for p in content
            if isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p.get("type", "text") in ("text", "input_text")
        ]
        return "".join(str(p) for p in parts) if parts else None
    return None


def last_user_text(items: Any, content_key: str) -> str | None:
    """The text of the last user item of a request body's message list (``content``: a
    string or text parts; Gemini ``parts``), or ``None``."""
    if not isinstance(items, list):
        return None
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role", "user") == "user":
            text = _text_of(item.get(content_key))
            if text is not None:
                return text
    return None
