"""Captures: a turn's request (secrets redacted), response head and every network read
with its time, in one ``.sscap`` file; recorded live, replayed through the same pipeline.

The ``.sscap`` format (version 1) is UTF-8 JSON Lines, one object per line::

    {"format": "streamscope-capture", "version": 1, "created": "2026-11-29T21:30:00+00:00",
     "app_version": "0.1.0", "dialect": "openai",
     "request": {"method": "POST", "url": "https://host/v1/chat/completions?key=***",
                 "headers": [["authorization", "Bearer ***"], ...],
                 "body": {...}            # the JSON body, or "body_b64": "..." if not JSON
                },
     "response": {"status": 200, "headers": [["content-type", "text/event-stream"], ...],
                  "t": 0.012}}
    {"t": 0.0153, "b64": "ZGF0YTogey4uLn0KCg=="}        # one line per network read
    ...
    {"end": {"kind": "eof", "elapsed": 1.25, "detail": "", "timeout": null,
             "outcome": "completed", "reason": "[DONE] received (finish_reason=stop)"}}

- The first line identifies the file: it starts with ``{"format":"streamscope-capture"``
  (see :func:`is_capture`). ``request``/``response`` are ``null`` when unknown (the
  request failed before any response).
- ``t`` is seconds since the request was sent (monotonic clock); ``b64`` the exact bytes
  of that read (standard base64).
- ``end`` is how the byte stream ended (:class:`~streamscope.core.turn.outcome.StreamEnd`:
  ``kind``, ``elapsed``, ``detail``, ``timeout``; ``body_b64`` for an error body when
  known), plus the live turn's ``outcome`` and ``reason``. A capture cut short (the app
  was killed) has no ``end`` line and replays as a broken connection.
- Secrets never reach the file: request headers and URL go through
  :mod:`streamscope.core.redact`. Readers ignore unknown keys; a newer ``version`` is
  refused.

This module holds the data types, the writer and the reader. Reading is streaming-friendly:
the file is read line by line as bytes and the reads are kept in one ``bytearray`` with
arrays of offsets and times (:class:`ReadLog`), so a 100 MB capture needs little more than
100 MB.
"""

from __future__ import annotations

import array
import base64
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from streamscope import __version__
from streamscope.core.turn.outcome import EndKind
from streamscope.core.wire.dialects import Framing, get_dialect

__all__ = [
    "CAPTURE_SUFFIX",
    "FORMAT",
    "FORMAT_VERSION",
    "Capture",
    "CaptureEnd",
    "CaptureError",
    "CaptureRequest",
    "CaptureResponse",
    "ReadLog",
    "dump_capture",
    "end_line",
    "header_line",
    "is_capture",
    "now_iso",
    "read_capture",
    "read_line",
    "write_capture",
]

FORMAT = "streamscope-capture"
FORMAT_VERSION = 1
CAPTURE_SUFFIX = ".sscap"
_MAGIC = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"format"\s*:\s*"streamscope-capture"')


class CaptureError(ValueError):
    """The file is not a capture, or is a damaged or newer one."""


# -- the data --------------------------------------------------------------------------


class ReadLog:
    """Network reads ``(t, bytes)`` in compact form: one buffer, offsets and times."""

    __slots__ = ("_data", "_ends", "_times")

    def __init__(self, reads: Sequence[tuple[float, bytes]] = ()) -> None:
        self._data = bytearray()
        self._ends = array.array("q")
        self._times = array.array("d")
        for t, data in reads:
            self.append(t, data)

    def append(self, t: float, data: bytes) -> None:
        self._data += data
        self._ends.append(len(self._data))
        self._times.append(t)

    def __len__(self) -> int:
        return len(self._times)

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        start = 0
        view = memoryview(self._data)
        try:
            for end, t in zip(self._ends, self._times, strict=True):
                yield t, bytes(view[start:end])
                start = end
        finally:
            view.release()

    @property
    def size(self) -> int:
        """Total bytes."""
        return len(self._data)

    def body(self) -> bytes:
        """All reads joined: the response body as received."""
        return bytes(self._data)

    def buffer(self) -> bytearray:
        """All reads joined, without a copy (a view of a replay indexes it): read it, never
        modify it."""
        return self._data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReadLog):
            return NotImplemented
        return (self._data, self._ends, self._times) == (other._data, other._ends, other._times)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class CaptureRequest:
    """The request as sent, with secrets already redacted."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class CaptureResponse:
    """Status and headers; ``t`` when they arrived (seconds since the request)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    t: float = 0.0

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True, slots=True)
class CaptureEnd:
    """How the stream ended (a :class:`StreamEnd` without the response fields, which the
    capture holds already) and the live turn's outcome and reason."""

    kind: EndKind
    elapsed: float | None = None
    detail: str = ""
    timeout: float | None = None
    body: bytes | None = None  # error body, when it was known
    outcome: str | None = None
    reason: str = ""


@dataclass(slots=True)
class Capture:
    """One turn on the wire. ``dialect`` is what the turn was run with (may be ``auto``)."""

    dialect: str
    request: CaptureRequest | None = None
    response: CaptureResponse | None = None
    reads: ReadLog = field(default_factory=ReadLog)
    end: CaptureEnd | None = None
    created: str = ""
    app_version: str = __version__

    @property
    def size(self) -> int:
        return self.reads.size

    def framing(self) -> Framing:
        """``"ndjson"`` or ``"sse"``: what the body is (for a file extension): NDJSON if the
        content type says so, else the dialect's framing (SSE for ``auto``)."""
        ctype = (self.response.header("content-type") if self.response else None) or ""
        if "ndjson" in ctype or "jsonl" in ctype:
            return "ndjson"
        try:
            return get_dialect(self.dialect).framing
        except KeyError:  # auto, or a dialect not registered here
            return "sse"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- the file format -------------------------------------------------------------------------


def _header_object(capture: Capture) -> dict[str, Any]:
    request: dict[str, Any] | None = None
    if capture.request is not None:
        r = capture.request
        request = {"method": r.method, "url": r.url, "headers": [list(h) for h in r.headers]}
        try:
            request["body"] = orjson.loads(r.body) if r.body else None
        except orjson.JSONDecodeError:
            request["body_b64"] = base64.b64encode(r.body).decode("ascii")
    response = None
    if capture.response is not None:
        s = capture.response
        response = {"status": s.status, "headers": [list(h) for h in s.headers], "t": s.t}
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "created": capture.created or now_iso(),
        "app_version": capture.app_version,
        "dialect": capture.dialect,
        "request": request,
        "response": response,
    }


def header_line(capture: Capture) -> bytes:
    """The first line of a ``.sscap`` file: what identifies it, the request, the response."""
    return orjson.dumps(_header_object(capture)) + b"\n"


def read_line(t: float, data: bytes) -> bytes:
    """One network read's line."""
    return b'{"t":%r,"b64":"%s"}\n' % (t, base64.b64encode(data))


def end_line(e: CaptureEnd) -> bytes:
    """The last line: how the stream ended."""
    end: dict[str, Any] = {
        "kind": e.kind,
        "elapsed": e.elapsed,
        "detail": e.detail,
        "timeout": e.timeout,
        "outcome": e.outcome,
        "reason": e.reason,
    }
    if e.body is not None:
        end["body_b64"] = base64.b64encode(e.body).decode("ascii")
    return orjson.dumps({"end": end}) + b"\n"


def dump_capture(capture: Capture, fp: IO[bytes]) -> int:
    """Write ``capture`` in the ``.sscap`` format to a binary stream; returns bytes written."""
    n = fp.write(header_line(capture))
    b64 = base64.b64encode
    for t, data in capture.reads:
        n += fp.write(b'{"t":%r,"b64":"%s"}\n' % (t, b64(data)))
    if capture.end is not None:
        n += fp.write(end_line(capture.end))
    return n


def write_capture(path: Path | str, capture: Capture) -> int:
    """Write ``capture`` to ``path`` atomically; returns the file size."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=CAPTURE_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fp:
            n = dump_capture(capture, fp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


def is_capture(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first bytes) is a ``.sscap`` capture."""
    return _MAGIC.match(head) is not None


YIELD_EVERY_LINES = 32
"""With ``background=True``, the reader lets other threads run this often (see below)."""


def read_capture(source: Path | str | IO[bytes], *, background: bool = False) -> Capture:
    """Read a ``.sscap`` file (a path or a binary stream), line by line.

    ``background``: this runs in a worker thread while a UI thread waits for the
    interpreter lock; yield it every :data:`YIELD_EVERY_LINES` lines (measured: without
    it, reading a 300 MB capture stalled the window's event loop up to ~90 ms at a time;
    with it, < 10 ms)."""
    if isinstance(source, (str, Path)):
        with open(source, "rb") as fp:
            return _parse(fp, background)
    return _parse(source, background)


def _parse(fp: IO[bytes], background: bool = False) -> Capture:
    first = fp.readline()
    if not is_capture(first):
        raise CaptureError("not a StreamScope capture (first line does not identify one)")
    try:
        head = orjson.loads(first)
    except orjson.JSONDecodeError as exc:
        raise CaptureError(f"damaged capture header: {exc}") from None
    version = head.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CaptureError(f"capture format version {version!r} is not supported")
    capture = Capture(
        str(head.get("dialect") or "auto"),
        _request(head.get("request")),
        _response(head.get("response")),
        created=str(head.get("created") or ""),
        app_version=str(head.get("app_version") or ""),
    )
    b64decode = base64.b64decode
    append = capture.reads.append
    for lineno, line in enumerate(fp, start=2):
        if background and lineno % YIELD_EVERY_LINES == 0:
            time.sleep(0)
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
            if "b64" in obj:
                append(float(obj["t"]), b64decode(obj["b64"], validate=True))
            elif "end" in obj:
                capture.end = _end(obj["end"])
        except (orjson.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
            if not line.endswith(b"\n"):  # the writer was killed mid-line: keep what came
                break
            raise CaptureError(f"damaged capture, line {lineno}: {exc}") from None
    return capture


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        return tuple((str(k), str(v)) for k, v in value.items())
    return tuple((str(k), str(v)) for k, v in value or ())


def _request(obj: Any) -> CaptureRequest | None:
    if not isinstance(obj, dict):
        return None
    if "body_b64" in obj:
        body = base64.b64decode(obj["body_b64"])
    elif obj.get("body") is not None:
        body = orjson.dumps(obj["body"])
    else:
        body = b""
    return CaptureRequest(
        str(obj.get("method", "POST")), str(obj.get("url", "")), _pairs(obj.get("headers")), body
    )


def _response(obj: Any) -> CaptureResponse | None:
    if not isinstance(obj, dict):
        return None
    return CaptureResponse(int(obj["status"]), _pairs(obj.get("headers")), float(obj.get("t", 0)))


def _end(obj: dict[str, Any]) -> CaptureEnd:
    body = obj.get("body_b64")
    return CaptureEnd(
        kind=obj["kind"],
        elapsed=obj.get("elapsed"),
        detail=obj.get("detail") or "",
        timeout=obj.get("timeout"),
        body=base64.b64decode(body) if body is not None else None,
        outcome=obj.get("outcome"),
        reason=obj.get("reason") or "",
    )
