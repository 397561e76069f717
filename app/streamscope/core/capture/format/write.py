"""Writing the ``.sscap`` format: the header line, a read's line, the end line, a whole file
(atomically)."""

from __future__ import annotations

import base64
import os
import tempfile
from pathlib import Path
from typing import IO, Any

import orjson

from streamscope.core.capture.format.model import (
    CAPTURE_SUFFIX,
    FORMAT,
    FORMAT_VERSION,
    Capture,
    CaptureEnd,
    now_iso,
)


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
    if e.faults:
        end["faults"] = list(e.faults)
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
