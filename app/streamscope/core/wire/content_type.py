"""Is a response body a stream? Decided from its Content-Type, or its first bytes."""

from __future__ import annotations

__all__ = ["NOT_STREAM_TYPES", "STREAM_TYPES", "classify_content_type"]

STREAM_TYPES = frozenset(
    {"text/event-stream", "application/x-ndjson", "application/ndjson", "application/jsonl"}
)
NOT_STREAM_TYPES = ("text/html", "application/json", "application/xml", "text/xml")


def classify_content_type(content_type: str | None, head: bytes) -> tuple[bool, str | None]:
    """Whether a 2xx body is a stream, and a warning when that was only guessed.

    Event-stream and NDJSON types are streams; HTML, JSON and XML are not; anything else
    (missing, ``text/plain`` ...) is judged by its first bytes.
    """
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in STREAM_TYPES:
        return True, None
    if media.startswith(NOT_STREAM_TYPES):
        return False, None
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:6]
    if start.startswith((b"data:", b"event:", b":", b"id:", b"{")):
        shown = media or "no Content-Type"
        return True, f"response has {shown}, not text/event-stream; decoded as a stream anyway"
    return False, None
