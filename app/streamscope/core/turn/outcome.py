"""Outcome rules: how a stream ended (:class:`StreamEnd`) and what arrived decide a turn's
:class:`Outcome` and its one-line human reason.

``completed`` needs the dialect's terminal signal; a body that ends or breaks before it is
``truncated`` (the finish reason that did arrive is still named); the user's stop is
``cancelled``; HTTP errors, in-stream errors, bodies that are not streams and protocol errors
are ``error`` — with the server's message and ``Retry-After``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Literal

from streamscope.core.turn.error_body import (
    error_body_fields,
    header,
    html_title,
    json_object,
    looks_like_html,
    retry_after,
)
from streamscope.core.wire.events import ServerError
from streamscope.core.wire.sizes import format_bytes


class Outcome(enum.Enum):
    """How a turn ended."""

    COMPLETED = "completed"
    TRUNCATED = "truncated"
    CANCELLED = "cancelled"
    ERROR = "error"


EndKind = Literal[
    "eof",  # the body ended cleanly (EOF / complete chunked body)
    "broken",  # the connection broke mid-body (reset, incomplete chunked body ...)
    "idle_timeout",  # no semantic progress for too long
    "first_byte_timeout",  # headers (or nothing) but no body byte in time
    "cancelled",  # the user stopped it
    "http_error",  # status >= 400; ``body`` holds (a bounded part of) the error body
    "not_a_stream",  # 2xx but not an event stream (HTML page, plain JSON ...)
    "protocol_error",  # the framing layer gave up (line too long)
    "connect_error",  # no response at all (DNS, refused, TLS ...)
]


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """How the byte stream ended, as the client (or a replay) saw it.

    ``elapsed``: seconds since the request was sent. ``bytes_received``: body bytes (the
    pipeline fills it in when left at 0). ``status``/``headers``/``content_type``/``body``
    describe the response for ``http_error`` and ``not_a_stream`` (``body`` bounded by the
    caller, e.g. 1 MB). ``detail``: exception text. ``timeout``: the limit that fired.
    """

    kind: EndKind
    elapsed: float | None = None
    bytes_received: int = 0
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    body: bytes = b""
    detail: str = ""
    timeout: float | None = None


def describe_end(
    end: StreamEnd,
    *,
    elapsed: float | None,
    terminal: str | None,
    expected_terminal: str,
    finish_reason: str | None,
    server_error: ServerError | None,
    partial_frame: bool = False,
) -> tuple[Outcome, str]:
    """The outcome and its one-line reason, from how the stream ended and what arrived."""
    size = format_bytes(end.bytes_received)
    match end.kind:
        case "cancelled":
            after = f" after {elapsed:.1f} s" if elapsed is not None else ""
            return Outcome.CANCELLED, f"Cancelled by you{after}"
        case "http_error":
            return Outcome.ERROR, describe_http_error(end)
        case "not_a_stream":
            return Outcome.ERROR, describe_not_a_stream(end)
        case "connect_error":
            return Outcome.ERROR, connect_reason(end.detail)
        case "protocol_error":
            detail = end.detail or "framing error"
            return Outcome.ERROR, f"protocol error after {size}: {detail}"
    if server_error is not None:
        code = f"{server_error.code}: " if server_error.code else ""
        return Outcome.ERROR, f"in-stream error: {code}{_one_line(server_error.message)}"
    if terminal is not None:
        fr = f" (finish_reason={finish_reason})" if finish_reason else ""
        return Outcome.COMPLETED, f"{terminal} received{fr}"
    had = (
        f" ({_finish_label(expected_terminal)}={finish_reason} had arrived)"
        if finish_reason
        else ""
    )
    missing = f"no {expected_terminal}"
    mid = " mid-frame" if partial_frame else ""
    match end.kind:
        case "eof":
            return Outcome.TRUNCATED, f"connection closed{mid} after {size}, {missing}{had}"
        case "broken":
            detail = f": {_one_line(end.detail)}" if end.detail else ""
            return Outcome.TRUNCATED, f"connection broken{mid} after {size}, {missing}{had}{detail}"
        case "idle_timeout":
            limit = f" after {end.timeout:g} s" if end.timeout is not None else ""
            return (
                Outcome.TRUNCATED,
                f"idle timeout{limit} with no progress ({size} received), {missing}{had}",
            )
        case _:  # first_byte_timeout
            limit = f" within {end.timeout:g} s" if end.timeout is not None else ""
            return Outcome.TRUNCATED, f"no response body{limit}, {missing}"


_EXCEPTION_TEXT = re.compile(r"[A-Z]\w*(?:Error|Exception|Timeout)\b")


def connect_reason(detail: str) -> str:
    """The reason of a turn that got no response: the client's sentence as it is
    (:func:`~streamscope.core.net.connect_errors.describe_connect_error`: ``Connection refused
    by 127.0.0.1:9 — is the server running?``); a bare exception text, as older captures
    hold, after ``could not connect:``."""
    detail = _one_line(detail)
    if not detail:
        return "could not connect: no response"
    return f"could not connect: {detail}" if _EXCEPTION_TEXT.match(detail) else detail


def _finish_label(expected_terminal: str) -> str:
    return "finishReason" if expected_terminal == "finishReason" else "finish_reason"


def _one_line(text: str) -> str:
    """``text`` on one line (whitespace runs as one space), whole: only views elide."""
    return " ".join(text.split())


def _content_type(end: StreamEnd) -> str:
    return (end.content_type or header(end.headers, "content-type") or "").strip()


def _looks_like_html(end: StreamEnd) -> bool:
    return looks_like_html(end.body, _content_type(end))


def is_error_document(end: StreamEnd, *, whole: bool) -> bool:
    """Whether ``end.body`` — the start of a response body, or all of it when ``whole`` —
    is what a server or proxy sends instead of a stream: an HTML page, or one JSON object
    that is an error (``{"error": ...}``, ``{"type": "error", ...}``,
    ``{"object": "error", ...}``). :func:`describe_not_a_stream` then says what it was."""
    if _looks_like_html(end):
        return True
    obj = json_object(end.body) if whole else None
    return obj is not None and bool(
        obj.get("error") or "error" in (obj.get("type"), obj.get("object"))
    )


def _retry_after(headers: Mapping[str, str]) -> str | None:
    wait = retry_after(headers)
    return f"retry after {wait}" if wait is not None else None


def describe_http_error(end: StreamEnd) -> str:
    """``429 rate_limit_exceeded · You exceeded your quota · retry after 20 s``."""
    status = end.status or 0
    parts: list[str] = []
    if _looks_like_html(end):
        title = html_title(end.body)
        head = f"{status} HTML page, not an event stream"
        parts.append(f"{head}: {_one_line(title)}" if title else head)
    else:
        code, message = error_body_fields(end.body)
        if code is None:
            try:
                code = HTTPStatus(status).phrase
            except ValueError:
                code = "HTTP error"
        parts.append(f"{status} {code}")
        if message:
            parts.append(_one_line(message))
        elif not end.body.strip():
            parts.append("empty body")
    retry = _retry_after(end.headers)
    if retry:
        parts.append(retry)
    return " · ".join(parts)


def describe_not_a_stream(end: StreamEnd) -> str:
    """Why a body is not an event stream, with what it was instead: against its status and
    content type (``200 HTML page, not an event stream: Sign in``), or, for a body alone (a
    saved one), by what it is (:func:`_describe_body`)."""
    if end.status is None and not _content_type(end):
        return _describe_body(end)
    ctype = _content_type(end) or "no content type"
    status = f"{end.status} " if end.status is not None else ""
    if _looks_like_html(end):
        title = html_title(end.body)
        head = f"{status}HTML page, not an event stream"
        return f"{head}: {_one_line(title)}" if title else head
    code, message = error_body_fields(end.body)
    if message:
        label = f"{code}: " if code else ""
        return f"{status}{ctype} body, not an event stream · {label}{_one_line(message)}"
    return f"{status}{ctype} body, not an event stream"


def _describe_body(end: StreamEnd) -> str:
    """``HTML error page: 502 Bad Gateway``, ``JSON error body: invalid_api_key: Incorrect
    API key provided``."""
    if _looks_like_html(end):
        title = html_title(end.body)
        return f"HTML error page: {_one_line(title)}" if title else "HTML error page"
    code, message = error_body_fields(end.body)
    label = f"{code}: " if code else ""
    return f"JSON error body: {label}{_one_line(message)}" if message else "JSON error body"


__all__ = [
    "EndKind",
    "Outcome",
    "StreamEnd",
    "connect_reason",
    "describe_end",
    "describe_http_error",
    "describe_not_a_stream",
    "error_body_fields",
    "format_bytes",
    "is_error_document",
]
