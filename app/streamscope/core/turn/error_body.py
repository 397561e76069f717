"""A response body that is not a stream, read for people: the provider's error fields, the
body as text (indented JSON, an HTML page as its source) and a one-line summary.

Providers' error shapes::

    OpenAI     {"error": {"message": …, "type": …, "param": …, "code": …}}
    Anthropic  {"type": "error", "error": {"type": …, "message": …}}
    Gemini     {"error": {"code": 429, "message": …, "status": "RESOURCE_EXHAUSTED"}}
    Ollama     {"error": "…"}

Proxies send HTML pages. Headers add ``Retry-After`` (seconds or an HTTP date) and a request
id. Pure: bytes and headers in, text out (no Qt, no I/O).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

__all__ = [
    "BodyKind",
    "ReadBody",
    "body_kind",
    "body_summary",
    "error_body_fields",
    "error_fields",
    "header",
    "html_title",
    "json_object",
    "looks_like_html",
    "pretty_body",
    "read_body",
    "retry_after",
]

BodyKind = Literal["json", "html", "text", "empty"]

_ERROR_KEYS = ("type", "code", "status", "param", "message")
"""The fields of a provider's error object that are listed, in this order."""
_HEADER_FIELDS = (
    ("retry-after-ms", "retry-after-ms"),
    ("x-request-id", "request id"),
    ("request-id", "request id"),
)
_SUMMARY_CHARS = 160
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_LINE_ENDS = re.compile(r"\r\n|\r")


def header(headers: Mapping[str, str] | Iterable[tuple[str, str]], name: str) -> str | None:
    """The value of header ``name`` (any case), or ``None``."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in items:
        if key.lower() == name:
            return value
    return None


def json_object(body: bytes) -> dict[str, Any] | None:
    """``body`` as a JSON object, or ``None`` (not JSON, or not an object)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def looks_like_html(body: bytes, content_type: str | None = None) -> bool:
    """An HTML page: by its content type, or by how it starts."""
    if content_type is not None and "html" in content_type.lower():
        return True
    head = body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def html_title(body: bytes) -> str | None:
    """The ``<title>`` of an HTML page (whitespace collapsed), or ``None``."""
    m = _TITLE.search(body[:65536])
    if m is None:
        return None
    title = " ".join(m.group(1).decode("utf-8", "replace").split())
    return title or None


def _error_object(obj: dict[str, Any]) -> dict[str, Any] | str | None:
    """The error in a JSON body: its ``error`` member, or the body itself when it is one
    (``{"object": "error", …}``, ``{"type": "error", …}``, ``{"detail": …}``, a string
    ``message``); ``None`` for a body that is no error (a non-streamed answer)."""
    if "error" in obj:
        err = obj["error"]
        return err if isinstance(err, dict | str) else None
    if (
        "error" in (obj.get("object"), obj.get("type"))
        or "detail" in obj
        or isinstance(obj.get("message"), str)
    ):
        return obj
    return None


def error_body_fields(body: bytes) -> tuple[str | None, str | None]:
    """``(code, message)`` from a provider's JSON error body (OpenAI, Anthropic, Gemini,
    Ollama shapes), or ``(None, None)``."""
    obj = json_object(body)
    err = _error_object(obj) if obj is not None else None
    if isinstance(err, str):
        return None, err
    if err is None:
        return None, None
    code: Any = None
    for key in ("code", "status", "type"):
        value = err.get(key)
        if isinstance(value, str) and value:
            code = value
            break
    message = err.get("message") or err.get("detail")
    return code, (str(message) if message is not None else None)


def retry_after(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> str | None:
    """``20 s`` (``Retry-After: 20``), or the header's date as sent, or ``None``."""
    value = header(headers, "retry-after")
    if value is None:
        return None
    value = value.strip()
    return f"{value} s" if value.isdigit() else value


def _shown(value: Any) -> str:
    """A field's value: a string as it is, anything else as compact JSON (``null``, 429)."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def error_fields(
    body: bytes, headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """The provider's error fields, as ``(name, value)``: ``type``, ``code``, ``status``,
    ``param``, ``message`` — those the body has, even ``null`` —, an HTML page's ``title``,
    then ``Retry-After`` and the request id from ``headers``."""
    items = list(headers.items() if isinstance(headers, Mapping) else headers)
    fields: list[tuple[str, str]] = []
    obj = json_object(body)
    err = _error_object(obj) if obj is not None else None
    if isinstance(err, str):
        fields.append(("message", err))
    elif err is not None:
        fields += [(key, _shown(err[key])) for key in _ERROR_KEYS if key in err]
        if "message" not in err and "detail" in err:
            fields.append(("detail", _shown(err["detail"])))
    elif obj is None and looks_like_html(body, header(items, "content-type")):
        title = html_title(body)
        if title:
            fields.append(("title", title))
    wait = retry_after(items)
    if wait is not None:
        fields.append(("Retry-After", wait))
    for name, label in _HEADER_FIELDS:
        value = header(items, name)
        if value is not None and all(label != shown for shown, _ in fields):
            fields.append((label, value))
    return fields


def body_kind(body: bytes, content_type: str | None = None) -> BodyKind:
    """What the body is: JSON, an HTML page, other text, or nothing."""
    if not body.strip():
        return "empty"
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return "html" if looks_like_html(body, content_type) else "text"
    return "json"


def pretty_body(body: bytes) -> str:
    """The body as indented JSON, or as text (line ends as LF) when it is not JSON."""
    if not body:
        return "(empty body)"
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return _LINE_ENDS.sub("\n", body.decode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class ReadBody:
    """A body read for people: what it is, its text (:func:`pretty_body`) and the error
    fields (:func:`error_fields`)."""

    kind: BodyKind
    text: str
    fields: tuple[tuple[str, str], ...]


def read_body(body: bytes, headers: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> ReadBody:
    """See :class:`ReadBody`."""
    items = list(headers.items() if isinstance(headers, Mapping) else headers)
    kind = body_kind(body, header(items, "content-type"))
    return ReadBody(kind, pretty_body(body), tuple(error_fields(body, items)))


def _clip(text: str, limit: int = _SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def body_summary(body: bytes) -> str:
    """One line for the Frames table: ``rate_limit_exceeded: Rate limit reached``, ``HTML
    page: 502 Bad Gateway``, ``JSON object (id, object, choices)``, or the text's start."""
    match body_kind(body):
        case "empty":
            return "(empty body)"
        case "html":
            title = html_title(body)
            return f"HTML page: {_clip(title)}" if title else "HTML page"
        case "json":
            code, message = error_body_fields(body)
            if message is not None:
                return _clip(f"{code}: {message}" if code else message)
            obj = json_object(body)
            if obj is not None:
                return _clip(f"JSON object ({', '.join(obj)})")
            return "JSON " + _clip(body.decode("utf-8", "replace"))
    return _clip(body.decode("utf-8", "replace"))
