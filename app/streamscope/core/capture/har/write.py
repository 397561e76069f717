"""Any capture as a HAR 1.2 entry (and a file of them), with a ``_streamscope`` record of its
reads that a re-import restores."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from streamscope import __version__
from streamscope.core.capture.format import (
    Capture,
    CaptureRequest,
)
from streamscope.core.capture.har.read import (
    header_value,
)

# -- export ----------------------------------------------------------------------------------


def _ms_out(seconds: float) -> float:
    return round(max(seconds, 0.0) * 1000.0, 3)


def _started(created: str) -> str:
    try:
        when = datetime.fromisoformat(created)
    except ValueError:
        when = datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.isoformat(timespec="milliseconds")


def _nv(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in pairs]


def _text(data: bytes) -> dict[str, Any]:
    """A body as HAR ``text`` (base64 with ``encoding`` when it is not UTF-8)."""
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(data).decode("ascii"), "encoding": "base64"}


def har_entry(capture: Capture) -> dict[str, Any]:
    """One HAR 1.2 entry for a capture (already redacted: it is written as it is)."""
    req = capture.request or CaptureRequest("POST", "", (), b"")
    res = capture.response
    end = capture.end
    last = 0.0
    for t, _ in capture.reads:
        last = t
    t_headers = res.t if res is not None else 0.0
    t_end = end.elapsed if end is not None and end.elapsed is not None else max(last, t_headers)
    body = capture.reads.body() if len(capture.reads) else (end.body if end else None) or b""
    req_type = header_value(req.headers, "content-type") or "application/json"
    request: dict[str, Any] = {
        "method": req.method,
        "url": req.url,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": _nv(req.headers),
        "queryString": _nv(parse_qsl(urlsplit(req.url).query, keep_blank_values=True)),
        "headersSize": -1,
        "bodySize": len(req.body),
    }
    if req.body:
        request["postData"] = {"mimeType": req_type, **_text(req.body)}
    status = res.status if res is not None else 0
    try:
        status_text = HTTPStatus(status).phrase
    except ValueError:
        status_text = ""
    headers = res.headers if res is not None else ()
    encoding = (header_value(headers, "content-encoding") or "identity").strip().lower()
    response: dict[str, Any] = {
        "status": status,
        "statusText": status_text,
        "httpVersion": "HTTP/1.1" if res is not None else "",
        "cookies": [],
        "headers": _nv(headers),
        "content": {
            "size": len(body),
            "mimeType": header_value(headers, "content-type") or "",
            **_text(body),
        },
        "redirectURL": header_value(headers, "location") or "",
        "headersSize": -1,
        "bodySize": len(body) if encoding in ("", "identity") else -1,
    }
    timings = {
        "blocked": -1,
        "dns": -1,
        "connect": -1,
        "ssl": -1,
        "send": 0,
        "wait": _ms_out(t_headers),
        "receive": _ms_out(t_end - t_headers),
    }
    own: dict[str, Any] = {
        "dialect": capture.dialect,
        "reads": [[t, len(data)] for t, data in capture.reads],
    }
    if end is not None:
        own["end"] = {
            "kind": end.kind,
            "elapsed": end.elapsed,
            "detail": end.detail,
            "timeout": end.timeout,
            "outcome": end.outcome,
            "reason": end.reason,
        }
    entry: dict[str, Any] = {
        "startedDateTime": _started(capture.created),
        "time": round(timings["wait"] + timings["receive"], 3),
        "request": request,
        "response": response,
        "cache": {},
        "timings": timings,
        "_streamscope": own,
    }
    if res is None and end is not None and end.detail:
        entry["_error"] = end.detail
    return entry


def capture_to_har(captures: Sequence[Capture], *, comment: str = "") -> dict[str, Any]:
    """A HAR 1.2 document with one entry per capture."""
    log: dict[str, Any] = {
        "version": "1.2",
        "creator": {"name": "StreamScope", "version": __version__},
        "pages": [],
        "entries": [har_entry(c) for c in captures],
    }
    if comment:
        log["comment"] = comment
    return {"log": log}


def dump_har(har: dict[str, Any]) -> bytes:
    """A HAR document as the file's bytes (indented, as browsers write it)."""
    return orjson.dumps(har, option=orjson.OPT_INDENT_2) + b"\n"
