"""Reading a HAR file: which of its entries are LLM exchanges (and why the others are not),
and the small readers of HAR values the import shares."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import orjson

from streamscope.core.turn.outcome import EndKind
from streamscope.core.wire.dialects import (
    dialect_for_path,
    is_ndjson_content_type,
)

HAR_SUFFIX = ".har"
_MAGIC = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"log"\s*:')

NOT_LLM_RESOURCES = frozenset(
    {
        "document",
        "stylesheet",
        "image",
        "media",
        "font",
        "script",
        "texttrack",
        "manifest",
        "websocket",
        "ping",
        "cspviolationreport",
        "preflight",
        "signedexchange",
    }
)
"""Chrome ``_resourceType`` values no LLM exchange has (``fetch``, ``xhr``,
``eventsource`` and ``other`` may be one)."""

_CACHED_FETCH = frozenset({"memory cache", "disk cache"})  # Safari's _fetchType
END_KINDS = frozenset(get_args(EndKind))


class HarError(ValueError):
    """The file is not a HAR file (or a damaged one)."""


# -- reading ---------------------------------------------------------------------------------


def is_har(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a HAR file (a JSON object whose first key
    is ``log``, as every browser writes it)."""
    return _MAGIC.match(head) is not None


def read_har(source: Path | str | bytes) -> dict[str, Any]:
    """The ``log`` object of a HAR file (a path or its bytes); :class:`HarError` if it is
    not one."""
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    try:
        obj = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError as exc:
        raise HarError(f"not a HAR file: not valid JSON ({exc.msg} at byte {exc.pos})") from None
    log = obj.get("log") if isinstance(obj, dict) else None
    if not isinstance(log, dict):
        raise HarError('not a HAR file: no "log" object')
    if not isinstance(log.get("entries"), list):
        raise HarError('not a HAR file: "log.entries" is not a list')
    return log


@dataclass(frozen=True, slots=True)
class HarSkip:
    """An entry that is not imported, and why (``url`` redacted)."""

    entry: int  # 1-based position in log.entries
    method: str
    url: str
    reason: str


def as_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a HAR may hold anything)."""
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def milliseconds(value: Any) -> float | None:
    """A HAR time in milliseconds (``-1`` and missing: unknown) as seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value) / 1000.0


def header_pairs(headers: Any) -> list[tuple[str, str]]:
    """HAR ``headers`` (``[{"name", "value"}]``) as pairs; HTTP/2 pseudo-headers dropped."""
    pairs: list[tuple[str, str]] = []
    for h in headers if isinstance(headers, list) else ():
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            name = h["name"]
            if not name.startswith(":"):
                pairs.append((name, as_str(h.get("value"))))
    return pairs


def header_value(pairs: Iterable[tuple[str, str]], name: str) -> str | None:
    """The first value of the header ``name`` (lower case), if any."""
    return next((v for k, v in pairs if k.lower() == name), None)


def mime_type(response: dict[str, Any]) -> str:
    """A HAR response's content type: its header, else ``content.mimeType``."""
    pairs = header_pairs(response.get("headers"))
    return header_value(pairs, "content-type") or as_str(
        as_object(response.get("content")).get("mimeType")
    )


def is_stream_type(content_type: str) -> bool:
    """Whether a content type is an event stream or NDJSON."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "text/event-stream" or is_ndjson_content_type(media)


def why_not(
    entry: dict[str, Any],
    request: dict[str, Any],
    response: dict[str, Any],
    method: str,
    url: str,
) -> str:
    """Why an entry is not an LLM exchange ("" when it is one)."""
    if not url:
        return "no request URL"
    resource = as_str(entry.get("_resourceType")).lower()
    if resource in NOT_LLM_RESOURCES:
        return f"not an LLM exchange (resource type {resource})"
    if entry.get("_fromCache"):
        where = as_str(entry.get("_fromCache")).lower()
        return f"served from the browser's {where + ' ' if where else ''}cache"
    if as_str(entry.get("_fetchType")).lower() in _CACHED_FETCH:
        return f"served from the browser's {entry['_fetchType'].lower()}"
    known = method == "POST" and dialect_for_path(url) is not None
    if not known and not is_stream_type(mime_type(response)):
        return "not an LLM exchange (no dialect's path, not a stream)"
    return ""
