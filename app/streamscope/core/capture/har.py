"""HAR in and out: the LLM exchanges of a browser's HAR file as captures, and any capture as
a HAR 1.2 file.

**Import** (:func:`har_exchanges`, :func:`import_har`): a HAR 1.2 file as Chrome, Firefox or
Safari developer tools save it. An entry is an LLM exchange when it is a ``POST`` to a path a
dialect answers (``/chat/completions``, ``/messages``, ``/responses``, ``/api/chat``,
``:streamGenerateContent`` …) or its response is ``text/event-stream`` or NDJSON; everything
else (pages, scripts, images, telemetry, entries served from the browser cache — Chrome's
``_fromCache``, Safari's ``_fetchType``) is skipped with a reason. The response body is
``content.text`` (``content.encoding == "base64"`` decoded); browsers store it decompressed,
so ``content.size`` (decoded) is what it must measure — ``bodySize`` is the compressed
transfer. A body shorter than ``content.size`` (Firefox cuts long ones) is a capture ending
``broken``. Timings may be missing or ``-1``: the headers arrive after ``blocked + dns +
connect + send + wait`` (what is known), the stream ends ``receive`` later (else at
``time``); the body is one read when the headers arrive, unless the entry carries
StreamScope's own ``_streamscope`` record (an exported capture), whose read times and sizes
are restored.

Secrets never reach a file: the request's ``Authorization``/``x-api-key``/``Cookie`` headers,
key query parameters and cookies go through :class:`~streamscope.core.redact.Scrubber`, which
then masks every echo of them in bodies and response headers.

Each exchange's outcome is decided by replaying its capture through the same pipeline as any
capture (:func:`~streamscope.core.capture.replay.replay_capture`): there is no second parser.

**Export** (:func:`capture_to_har`): HAR 1.2 with one entry per capture: the stream body as
``response.content.text`` (base64 with ``encoding: "base64"`` when it is not UTF-8, so a
HAR → capture → HAR round trip keeps it byte-exact), timings from the capture (``send`` 0,
``wait`` until the headers, ``receive`` until the end) and a ``_streamscope`` record (read
times and sizes, how the stream ended) that a re-import restores.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any, get_args
from urllib.parse import parse_qsl, urlsplit

import orjson

from streamscope import __version__
from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    now_iso,
)
from streamscope.core.capture.replay import replay_capture
from streamscope.core.redact import Scrubber, redact_url, secret_values
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import EndKind
from streamscope.core.turn.pipeline import PipelineUpdate
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects import (
    AUTO,
    dialect_for_path,
    dialect_names,
    is_ndjson_content_type,
)

__all__ = [
    "HAR_SUFFIX",
    "HarError",
    "HarExchange",
    "HarImport",
    "HarSkip",
    "ImportedExchange",
    "capture_to_har",
    "decide",
    "dump_har",
    "har_entry",
    "har_exchanges",
    "import_har",
    "is_har",
    "read_har",
]

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
_END_KINDS = frozenset(get_args(EndKind))


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


@dataclass(frozen=True, slots=True)
class HarExchange:
    """An LLM exchange found in a HAR file: its capture (redacted; no outcome yet)."""

    entry: int  # 1-based position in log.entries
    capture: Capture


def har_exchanges(log: dict[str, Any]) -> tuple[list[HarExchange], list[HarSkip]]:
    """The LLM exchanges in a HAR ``log`` as captures, and the entries skipped."""
    found: list[HarExchange] = []
    skipped: list[HarSkip] = []
    for n, entry in enumerate(log["entries"], start=1):
        if not isinstance(entry, dict):
            skipped.append(HarSkip(n, "", "", "not an entry object"))
            continue
        request = _obj(entry.get("request"))
        response = _obj(entry.get("response"))
        method = _str(request.get("method")).upper() or "GET"
        url = _str(request.get("url"))
        shown = redact_url(url)
        reason = _why_not(entry, request, response, method, url)
        if reason:
            skipped.append(HarSkip(n, method, shown, reason))
            continue
        try:
            capture = _capture(entry, request, response, method, url)
        except HarError as exc:
            skipped.append(HarSkip(n, method, shown, str(exc)))
            continue
        found.append(HarExchange(n, capture))
    return found, skipped


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _ms(value: Any) -> float | None:
    """A HAR time in milliseconds (``-1`` and missing: unknown) as seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value) / 1000.0


def _pairs(headers: Any) -> list[tuple[str, str]]:
    """HAR ``headers`` (``[{"name", "value"}]``) as pairs; HTTP/2 pseudo-headers dropped."""
    pairs: list[tuple[str, str]] = []
    for h in headers if isinstance(headers, list) else ():
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            name = h["name"]
            if not name.startswith(":"):
                pairs.append((name, _str(h.get("value"))))
    return pairs


def _header(pairs: Iterable[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in pairs if k.lower() == name), None)


def _mime(response: dict[str, Any]) -> str:
    pairs = _pairs(response.get("headers"))
    return _header(pairs, "content-type") or _str(_obj(response.get("content")).get("mimeType"))


def _is_stream_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "text/event-stream" or is_ndjson_content_type(media)


def _why_not(
    entry: dict[str, Any],
    request: dict[str, Any],
    response: dict[str, Any],
    method: str,
    url: str,
) -> str:
    """Why an entry is not an LLM exchange ("" when it is one)."""
    if not url:
        return "no request URL"
    resource = _str(entry.get("_resourceType")).lower()
    if resource in NOT_LLM_RESOURCES:
        return f"not an LLM exchange (resource type {resource})"
    if entry.get("_fromCache"):
        where = _str(entry.get("_fromCache")).lower()
        return f"served from the browser's {where + ' ' if where else ''}cache"
    if _str(entry.get("_fetchType")).lower() in _CACHED_FETCH:
        return f"served from the browser's {entry['_fetchType'].lower()}"
    known = method == "POST" and dialect_for_path(url) is not None
    if not known and not _is_stream_type(_mime(response)):
        return "not an LLM exchange (no dialect's path, not a stream)"
    return ""


def _scrubber(
    request: dict[str, Any], response: dict[str, Any], pairs: Sequence[tuple[str, str]], url: str
) -> Scrubber:
    """Every secret the entry carries: key headers (each, duplicates too), key query
    values, a URL password, and cookie values (request and response)."""
    secrets: list[bytes] = [*secret_values({}, url)]
    for name, value in pairs:
        secrets += secret_values({name: value})
    for side in (request, response):
        for cookie in side.get("cookies") or ():
            if isinstance(cookie, dict) and isinstance(cookie.get("value"), str):
                secrets += secret_values({"cookie": cookie["value"]})
    return Scrubber(secrets)


def _body(response: dict[str, Any]) -> tuple[bytes | None, int | None]:
    """The response body as bytes (``None``: the HAR has none) and ``content.size``."""
    content = _obj(response.get("content"))
    size = content.get("size")
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None
    text = content.get("text")
    if not isinstance(text, str):
        return None, size
    if _str(content.get("encoding")).lower() == "base64":
        try:
            return binascii.a2b_base64(text.encode("ascii"), strict_mode=False), size
        except (ValueError, UnicodeEncodeError):
            raise HarError("response.content.text: not valid base64") from None
    return text.encode("utf-8", "surrogatepass"), size


def _request_body(request: dict[str, Any]) -> bytes:
    post = _obj(request.get("postData"))
    text = post.get("text")
    if isinstance(text, str):
        if _str(post.get("encoding")).lower() == "base64":  # not in HAR 1.2; some tools
            try:
                return binascii.a2b_base64(text.encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise HarError("request.postData.text: not valid base64") from None
        return text.encode("utf-8", "surrogatepass")
    params = post.get("params")
    if isinstance(params, list):
        return "&".join(
            f"{_str(p.get('name'))}={_str(p.get('value'))}" for p in params if isinstance(p, dict)
        ).encode()
    return b""


def _times(entry: dict[str, Any]) -> tuple[float, float]:
    """When the headers came and when the body ended (seconds since the entry started)."""
    timings = _obj(entry.get("timings"))
    before = [_ms(timings.get(k)) for k in ("blocked", "dns", "connect", "send", "wait")]
    receive = _ms(timings.get("receive"))
    total = _ms(entry.get("time"))
    if _ms(timings.get("wait")) is None and total is not None:
        headers = max(0.0, total - (receive or 0.0))
    else:
        headers = sum(t for t in before if t is not None)
    end = headers + receive if receive is not None else max(headers, total or 0.0)
    return round(headers, 6), round(end, 6)


def _own_record(entry: dict[str, Any], body_size: int) -> dict[str, Any]:
    """The ``_streamscope`` record of an exported capture, if it fits this entry's body."""
    own = _obj(entry.get("_streamscope"))
    reads = own.get("reads")
    if isinstance(reads, list):
        ok = all(
            isinstance(r, list)
            and len(r) == 2
            and isinstance(r[0], int | float)
            and isinstance(r[1], int)
            and r[1] >= 0
            for r in reads
        )
        if not ok or sum(r[1] for r in reads) != body_size:
            own = {k: v for k, v in own.items() if k != "reads"}
    return own


def _capture(
    entry: dict[str, Any],
    request: dict[str, Any],
    response: dict[str, Any],
    method: str,
    url: str,
) -> Capture:
    req_pairs = _pairs(request.get("headers"))
    scrub = _scrubber(request, response, req_pairs, url)
    body, size = _body(response)
    status = response.get("status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else 0
    res_pairs = _pairs(response.get("headers"))
    mime = _str(_obj(response.get("content")).get("mimeType"))
    if _header(res_pairs, "content-type") is None and mime and status:
        res_pairs.append(("content-type", mime))
    t_headers, t_end = _times(entry)
    own = _own_record(entry, len(body or b""))
    dialect = own.get("dialect") if own.get("dialect") in dialect_names(with_auto=True) else None
    capture = Capture(
        dialect or dialect_for_path(url) or AUTO,
        CaptureRequest(
            method,
            scrub.text(redact_url(url)),
            scrub.headers(req_pairs),
            scrub.bytes(_request_body(request)),
        ),
        created=_created(entry),
    )
    own_end = _obj(own.get("end"))
    if status < 100 or status > 999:  # no response (Chrome: status 0 and an _error) …
        detail = _str(entry.get("_error")) or _str(response.get("_error")) or "no response"
        capture.end = CaptureEnd("connect_error", t_end, detail=scrub.text(detail))
        return capture
    ctype = _header(res_pairs, "content-type")
    capture.response = CaptureResponse(status, scrub.headers(res_pairs), t_headers)
    data = scrub.bytes(body or b"")
    kind: EndKind = "eof"
    detail = ""
    end_body: bytes | None = None
    if body is None and size:
        kind, detail = "broken", f"the HAR file holds no response body (content.size {size})"
    elif size is not None and len(data) < size:
        kind, detail = "broken", f"the HAR file holds {len(data)} of {size} bytes of the body"
    if status >= 400:
        kind, end_body = "http_error", data
    elif not classify_content_type(ctype, data[:64])[0]:
        kind, end_body = "not_a_stream", data
    elif data:
        reads = own.get("reads")
        if reads is not None:
            start = 0
            for t, n in reads:
                capture.reads.append(float(t), data[start : start + n])
                start += n
        else:
            capture.reads.append(t_headers, data)
    if own_end.get("kind") in _END_KINDS and kind == "eof":
        kind = own_end["kind"]
        detail = scrub.text(_str(own_end.get("detail")))
    elapsed = own_end.get("elapsed")
    timeout = own_end.get("timeout")
    capture.end = CaptureEnd(
        kind,
        float(elapsed) if isinstance(elapsed, int | float) and elapsed >= 0 else t_end,
        detail=detail,
        timeout=float(timeout) if isinstance(timeout, int | float) else None,
        body=end_body,
    )
    return capture


def _created(entry: dict[str, Any]) -> str:
    text = _str(entry.get("startedDateTime"))
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return now_iso()
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.isoformat(timespec="milliseconds")


# -- deciding outcomes, importing ------------------------------------------------------------


class _FrameCounter(TurnObserver):
    def __init__(self) -> None:
        self.frames = 0

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.frames += len(update.frames)


async def decide(capture: Capture) -> tuple[Capture, Turn, int]:
    """Replay ``capture`` through the pipeline: the capture with the turn's outcome and
    reason in its end record, the turn, and how many frames it had."""
    counter = _FrameCounter()
    turn = await replay_capture(capture, observer=counter, keep_frames=True)
    end = capture.end or CaptureEnd("broken")
    outcome = turn.outcome.value if turn.outcome is not None else None
    decided = replace(capture, end=replace(end, outcome=outcome, reason=turn.reason))
    return decided, turn, counter.frames


@dataclass(frozen=True, slots=True)
class ImportedExchange:
    """One exchange imported: where it was in the HAR, its stored id, the replayed turn."""

    entry: int
    capture_id: str | None
    capture: Capture
    turn: Turn
    frames: int


@dataclass(frozen=True, slots=True)
class HarImport:
    imported: tuple[ImportedExchange, ...]
    skipped: tuple[HarSkip, ...]


async def import_har_async(
    source: Path | str | bytes, store: CaptureStore | None = None
) -> HarImport:
    """Every LLM exchange in a HAR file, replayed to decide its outcome and (with a
    ``store``) saved as a capture."""
    exchanges, skipped = har_exchanges(read_har(source))
    imported: list[ImportedExchange] = []
    for ex in exchanges:
        capture, turn, frames = await decide(ex.capture)
        capture_id = store.save(capture) if store is not None else None
        imported.append(ImportedExchange(ex.entry, capture_id, capture, turn, frames))
    return HarImport(tuple(imported), tuple(skipped))


def import_har(source: Path | str | bytes, store: CaptureStore | None = None) -> HarImport:
    """:func:`import_har_async` in its own event loop (call it from a worker thread when
    a loop is running)."""
    return asyncio.run(import_har_async(source, store))


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
    req_type = _header(req.headers, "content-type") or "application/json"
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
    encoding = (_header(headers, "content-encoding") or "identity").strip().lower()
    response: dict[str, Any] = {
        "status": status,
        "statusText": status_text,
        "httpVersion": "HTTP/1.1" if res is not None else "",
        "cookies": [],
        "headers": _nv(headers),
        "content": {
            "size": len(body),
            "mimeType": _header(headers, "content-type") or "",
            **_text(body),
        },
        "redirectURL": _header(headers, "location") or "",
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
