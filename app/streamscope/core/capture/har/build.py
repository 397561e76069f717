"""A HAR entry as a capture: its bodies, headers and times, secrets masked, its outcome
decided by replaying it through the pipeline; a whole file imported into the capture store."""

from __future__ import annotations

import asyncio
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    now_iso,
)
from streamscope.core.capture.har.read import (
    END_KINDS,
    HarError,
    HarSkip,
    as_object,
    as_str,
    header_pairs,
    header_value,
    milliseconds,
    read_har,
    why_not,
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
)


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
    content = as_object(response.get("content"))
    size = content.get("size")
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None
    text = content.get("text")
    if not isinstance(text, str):
        return None, size
    if as_str(content.get("encoding")).lower() == "base64":
        try:
            return binascii.a2b_base64(text.encode("ascii"), strict_mode=False), size
        except (ValueError, UnicodeEncodeError):
            raise HarError("response.content.text: not valid base64") from None
    return text.encode("utf-8", "surrogatepass"), size


def _request_body(request: dict[str, Any]) -> bytes:
    post = as_object(request.get("postData"))
    text = post.get("text")
    if isinstance(text, str):
        if as_str(post.get("encoding")).lower() == "base64":  # not in HAR 1.2; some tools
            try:
                return binascii.a2b_base64(text.encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise HarError("request.postData.text: not valid base64") from None
        return text.encode("utf-8", "surrogatepass")
    params = post.get("params")
    if isinstance(params, list):
        return "&".join(
            f"{as_str(p.get('name'))}={as_str(p.get('value'))}"
            for p in params
            if isinstance(p, dict)
        ).encode()
    return b""


def _times(entry: dict[str, Any]) -> tuple[float, float]:
    """When the headers came and when the body ended (seconds since the entry started)."""
    timings = as_object(entry.get("timings"))
    before = [milliseconds(timings.get(k)) for k in ("blocked", "dns", "connect", "send", "wait")]
    receive = milliseconds(timings.get("receive"))
    total = milliseconds(entry.get("time"))
    if milliseconds(timings.get("wait")) is None and total is not None:
        headers = max(0.0, total - (receive or 0.0))
    else:
        headers = sum(t for t in before if t is not None)
    end = headers + receive if receive is not None else max(headers, total or 0.0)
    return round(headers, 6), round(end, 6)


def _own_record(entry: dict[str, Any], body_size: int) -> dict[str, Any]:
    """The ``_streamscope`` record of an exported capture, if it fits this entry's body."""
    own = as_object(entry.get("_streamscope"))
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
    req_pairs = header_pairs(request.get("headers"))
    scrub = _scrubber(request, response, req_pairs, url)
    body, size = _body(response)
    status = response.get("status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else 0
    res_pairs = header_pairs(response.get("headers"))
    mime = as_str(as_object(response.get("content")).get("mimeType"))
    if header_value(res_pairs, "content-type") is None and mime and status:
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
    own_end = as_object(own.get("end"))
    if status < 100 or status > 999:  # no response (Chrome: status 0 and an _error) …
        detail = as_str(entry.get("_error")) or as_str(response.get("_error")) or "no response"
        capture.end = CaptureEnd("connect_error", t_end, detail=scrub.text(detail))
        return capture
    ctype = header_value(res_pairs, "content-type")
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
    if own_end.get("kind") in END_KINDS and kind == "eof":
        kind = own_end["kind"]
        detail = scrub.text(as_str(own_end.get("detail")))
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
    text = as_str(entry.get("startedDateTime"))
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return now_iso()
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.isoformat(timespec="milliseconds")


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
        request = as_object(entry.get("request"))
        response = as_object(entry.get("response"))
        method = as_str(request.get("method")).upper() or "GET"
        url = as_str(request.get("url"))
        shown = redact_url(url)
        reason = why_not(entry, request, response, method, url)
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
