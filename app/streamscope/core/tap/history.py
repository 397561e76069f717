"""The tap's earlier exchanges, as its captures keep them: the window's Tapped list forgets
its exchanges when it closes, the capture folder does not. The tap (window or
``streamscope tap``) names its captures ``<time>-tap-<random>.sscap``
(:func:`tap_capture_store`); :func:`past_exchanges` reads each one's first line (when,
the request) and last line (how it ended), not its reads.

    for past in past_exchanges(capture_dir()):
        print(past.started, past.method, past.target, past.outcome, past.reason)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import orjson

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format.model import CAPTURE_SUFFIX

__all__ = ["TAP_TAG", "PastExchange", "past_exchanges", "tap_capture_store"]

TAP_TAG = "tap"
"""The word in a tap capture's id."""

MAX_END_LINE = 4 << 20
"""An end line longer than this (an error body of megabytes) is not read: the exchange is
listed without its outcome."""


def tap_capture_store(directory: Path | None = None) -> CaptureStore:
    """Where the tap stores its captures: the profile's capture folder, each id tagged."""
    return CaptureStore(directory, tag=TAP_TAG)


@dataclass(frozen=True, slots=True)
class PastExchange:
    """One earlier tapped exchange, from its capture."""

    path: Path
    started: datetime
    """When it started, local time (from the capture's id: nanoseconds since the epoch)."""
    method: str
    target: str
    """The path (and query) the client asked for, as recorded (secrets masked)."""
    status: int | None
    outcome: str | None
    """``completed``, ``truncated``, ``cancelled`` or ``error``; ``None`` when the capture
    has no end (the tap was killed while it streamed)."""
    reason: str


def past_exchanges(directory: Path, *, limit: int = 300) -> list[PastExchange]:
    """The tap's captures in ``directory``, oldest first (the newest ``limit``); a file that
    cannot be read as one is left out."""
    marker = f"-{TAP_TAG}-"
    try:
        with os.scandir(directory) as entries:
            names = sorted(
                e.name for e in entries if e.name.endswith(CAPTURE_SUFFIX) and marker in e.name
            )
    except OSError:
        return []
    found = []
    for name in names[-limit:] if limit else []:
        past = _read(directory / name)
        if past is not None:
            found.append(past)
    return found


def _read(path: Path) -> PastExchange | None:
    try:
        nanos = int(path.name.partition("-")[0])
        with path.open("rb") as fp:
            head = orjson.loads(fp.readline())
            end = _end(fp)
    except (OSError, ValueError):
        return None
    if not isinstance(head, dict) or not isinstance(head.get("request"), dict):
        return None
    request, response = head["request"], head.get("response")
    url = str(request.get("url", ""))
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    status = response.get("status") if isinstance(response, dict) else None
    if not isinstance(status, int):  # (the tap answered 502 itself: upstream unreachable)
        status = 502 if end.get("kind") == "connect_error" else None
    outcome = end.get("outcome")
    return PastExchange(
        path=path,
        started=datetime.fromtimestamp(nanos / 1e9),
        method=str(request.get("method", "")),
        target=target,
        status=status,
        outcome=outcome if isinstance(outcome, str) else None,
        reason=str(end.get("reason") or ""),
    )


def _end(fp: IO[bytes]) -> dict[str, Any]:
    """The capture's end line (``{}`` when it has none), read from the file's end."""
    size = fp.seek(0, os.SEEK_END)
    start = max(0, size - 65536)
    while True:
        fp.seek(start)
        tail = fp.read().rstrip(b"\n")
        cut = tail.rfind(b"\n")
        if cut >= 0 or start == 0:
            break
        if size - start >= MAX_END_LINE:
            return {}
        start = max(0, start - 4 * (size - start))
    try:
        line = orjson.loads(tail[cut + 1 :])
    except orjson.JSONDecodeError:
        return {}
    end = line.get("end") if isinstance(line, dict) else None
    return end if isinstance(end, dict) else {}
