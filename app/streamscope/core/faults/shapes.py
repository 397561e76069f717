"""What each dialect says when something goes wrong, as bytes: its in-stream error frame, its
HTTP error body, and the two ways a frame is garbled.

In-stream error frames (each parses as a ``ServerError`` in core's own dialect parser, so a
replay of what the client received ends ``error``):

- ``openai``: ``data: {"error": {"message", "type": "server_error", "param", "code"}}`` — what
  the openai SDK raises ``APIError`` on;
- ``anthropic``: ``event: error`` with ``{"type": "error", "error": {"type":
  "overloaded_error", "message"}}`` — the documented mid-stream error;
- ``responses``: ``event: error`` with ``{"type": "error", "code": "server_error", "message",
  "param": null, "sequence_number"}`` (the number after the previous event's);
- ``gemini``: ``data: {"error": {"code": 500, "message", "status": "INTERNAL"}}`` — the error
  object the API sends as a chunk;
- ``ollama``: the line ``{"error": "…"}`` (Ollama's documented mid-stream error).

A dialect registered later gets the ``openai`` shape (SSE) or the ``ollama`` one (NDJSON).
The frame uses the line ends of the recorded body (CRLF for a Gemini body that has them).
HTTP error bodies follow each API's documented error object, with the status's own type
(429: ``rate_limit_exceeded`` / ``rate_limit_error`` / ``RESOURCE_EXHAUSTED``).
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

import orjson

from streamscope.core.faults.frames import BodyFrames

__all__ = ["error_frame", "garble_edit", "http_error_body"]

_STATUS_TEXT: Final = {429: "Rate limit exceeded", 500: "Internal server error"}
_ANTHROPIC_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}
_GEMINI_STATUS: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def status_message(status: int) -> str:
    """A provider-like message for an HTTP status."""
    if status in _STATUS_TEXT:
        return _STATUS_TEXT[status]
    return "Service unavailable" if status == 503 else f"HTTP {status}"


def http_error_body(dialect: str, status: int, message: str) -> bytes:
    """The JSON error body ``dialect``'s API answers ``status`` with."""
    match dialect:
        case "anthropic":
            kind = _ANTHROPIC_TYPES.get(
                status, "api_error" if status >= 500 else "invalid_request_error"
            )
            return _dumps({"type": "error", "error": {"type": kind, "message": message}})
        case "gemini":
            grpc = _GEMINI_STATUS.get(status, "UNKNOWN")
            return _dumps({"error": {"code": status, "message": message, "status": grpc}})
        case "ollama":
            return _dumps({"error": message})
    code: str | None = None
    if status == 429:
        type_, code = "requests", "rate_limit_exceeded"
    elif status >= 500:
        type_, code = "server_error", "server_overloaded" if status == 503 else None
    else:
        type_, code = "invalid_request_error", None
    return _dumps({"error": {"message": message, "type": type_, "param": None, "code": code}})


def error_frame(frames: BodyFrames, index: int, message: str) -> bytes:
    """The dialect's in-stream error frame, to stand as frame ``index`` of ``frames``."""
    le = frames.line_end
    data: dict[str, Any]
    match frames.dialect:
        case "anthropic":
            data = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
            return b"event: error" + le + b"data: " + _dumps(data) + le + le
        case "responses":
            data = {
                "type": "error",
                "code": "server_error",
                "message": message,
                "param": None,
                "sequence_number": _next_sequence(frames, index),
            }
            return b"event: error" + le + b"data: " + _dumps(data) + le + le
        case "gemini":
            data = {"error": {"code": 500, "message": message, "status": "INTERNAL"}}
            return b"data: " + _dumps(data) + le + le
    if frames.framing == "ndjson":
        return _dumps({"error": message}) + le
    data = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return b"data: " + _dumps(data) + le + le


def _next_sequence(frames: BodyFrames, index: int) -> int:
    """One more than the last ``sequence_number`` before frame ``index`` (``index`` if none)."""
    for ev in reversed(frames.events[:index]):
        if ev is None:
            continue
        try:
            obj = orjson.loads(ev.data)
        except orjson.JSONDecodeError:
            continue
        number = obj.get("sequence_number") if isinstance(obj, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            return number + 1
    return index


def garble_edit(
    raw: bytes, framing: str, how: Literal["json", "utf8"]
) -> tuple[int, int, bytes] | None:
    """How to garble a frame: replace ``raw[start:end]`` with the bytes returned.

    The payload is the frame's first ``data:`` line's value (SSE; one space after the colon is
    not part of it) or its line (NDJSON). ``json``: its last byte is removed (``{"a":1}`` becomes
    ``{"a":1``: the event still arrives, its JSON is broken). ``utf8``: the byte ``0xFF`` (never
    valid in UTF-8) goes in after the payload's first ``"`` (or at its start): the JSON stays
    well-formed once decoded with replacement, the bytes are not UTF-8. ``None``: the frame
    has no payload (a comment, blank lines).
    """
    start, end = _payload(raw, framing)
    if end <= start:
        return None
    if how == "json":
        return end - 1, end, b""
    quote = raw.find(b'"', start, end)
    at = quote + 1 if quote >= 0 else start
    return at, at, b"\xff"


def _payload(raw: bytes, framing: str) -> tuple[int, int]:
    """Where the payload of a frame lies in ``raw`` (empty span: none)."""
    if framing == "ndjson":
        text = raw.rstrip(b"\r\n")
        start = 3 if text.startswith(b"\xef\xbb\xbf") else 0
        return (start, len(text)) if text.strip() else (0, 0)
    pos = 3 if raw.startswith(b"\xef\xbb\xbf") else 0
    while pos < len(raw):
        nl = min((i for i in (raw.find(b"\r", pos), raw.find(b"\n", pos)) if i >= 0), default=-1)
        line_end = nl if nl >= 0 else len(raw)
        if raw.startswith(b"data:", pos):
            start = pos + 5
            if raw[start : start + 1] == b" ":
                start += 1
            return start, line_end
        if nl < 0:
            break
        pos = nl + (2 if raw[nl : nl + 2] == b"\r\n" else 1)
    return 0, 0
