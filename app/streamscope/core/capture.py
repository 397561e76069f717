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
- ``end`` is how the byte stream ended (:class:`~streamscope.core.turn.StreamEnd`:
  ``kind``, ``elapsed``, ``detail``, ``timeout``; ``body_b64`` for an error body when
  known), plus the live turn's ``outcome`` and ``reason``. A capture cut short (the app
  was killed) has no ``end`` line and replays as a broken connection.
- Secrets never reach the file: request headers and URL go through
  :mod:`streamscope.core.redact`. Readers ignore unknown keys; a newer ``version`` is
  refused.

The data types, the writer and the reader live in :mod:`streamscope.core.capture_format`
(re-exported here); this module records (:class:`CaptureRecorder`), replays
(:func:`replay_capture`) and keeps stored captures under a size cap (:class:`CaptureStore`).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from streamscope import __version__
from streamscope.core.capture_format import (
    CAPTURE_SUFFIX,
    FORMAT,
    FORMAT_VERSION,
    Capture,
    CaptureEnd,
    CaptureError,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    dump_capture,
    is_capture,
    now_iso,
    read_capture,
    write_capture,
)
from streamscope.core.content_type import classify_content_type
from streamscope.core.dialects.base import RequestSpec
from streamscope.core.events import DialectWarning
from streamscope.core.observer import TurnObserver
from streamscope.core.paths import capture_dir
from streamscope.core.pipeline import PipelineUpdate, StreamPipeline
from streamscope.core.progress import Progress
from streamscope.core.redact import mask_value, redact_url, scrub, secret_values
from streamscope.core.store import Store
from streamscope.core.turn import EndKind, Outcome, StreamEnd, Turn

__all__ = [
    "CAPTURE_SUFFIX",
    "DEFAULT_CAP_BYTES",
    "FORMAT",
    "FORMAT_VERSION",
    "Capture",
    "CaptureEnd",
    "CaptureError",
    "CaptureRecorder",
    "CaptureRequest",
    "CaptureResponse",
    "CaptureStore",
    "MultiObserver",
    "ReadLog",
    "dump_capture",
    "end_from_turn",
    "is_capture",
    "read_capture",
    "redact_request",
    "replay_capture",
    "write_capture",
]

DEFAULT_CAP_BYTES = 1 << 30
_YIELD_EVERY = 64  # instant replay: let the event loop breathe every N reads


# -- recording ---------------------------------------------------------------------------


class MultiObserver(TurnObserver):
    """Fans every callback out to several observers, in order."""

    def __init__(self, *observers: TurnObserver) -> None:
        self.observers = observers

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        for o in self.observers:
            o.request_started(spec, body, t)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        for o in self.observers:
            o.response_started(status, headers, t)

    def read(self, data: bytes, t: float) -> None:
        for o in self.observers:
            o.read(data, t)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        for o in self.observers:
            o.progressed(update, t)

    def batch(self, progress: Progress) -> None:
        for o in self.observers:
            o.batch(progress)

    def ended(self, end: StreamEnd) -> None:
        """Forwarded to every observer (see :meth:`CaptureRecorder.ended`)."""
        for o in self.observers:
            o.ended(end)

    def finished(self, turn: Turn) -> None:
        for o in self.observers:
            o.finished(turn)


def redact_request(spec: RequestSpec, body: bytes) -> CaptureRequest:
    """The request as the client sends it (its default headers included), redacted."""
    headers = {"accept-encoding": "identity", "content-type": "application/json"}
    headers.update(spec.headers)
    return CaptureRequest(
        spec.method,
        redact_url(spec.url),
        tuple((k, mask_value(k, v)) for k, v in headers.items()),
        body,
    )


class CaptureRecorder(TurnObserver):
    """Records a live turn; ``capture`` is complete once ``finished`` was called."""

    def __init__(self, dialect: str, *, app_version: str = __version__) -> None:
        self.capture = Capture(dialect, app_version=app_version, created=now_iso())
        self.turn: Turn | None = None
        self._t0 = 0.0
        self._end: StreamEnd | None = None
        self._secrets: tuple[bytes, ...] = ()

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self._t0 = t
        self.capture.request = redact_request(spec, body)
        self._secrets = secret_values(spec.headers, spec.url)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        redacted = tuple((k, mask_value(k, v)) for k, v in headers)
        self.capture.response = CaptureResponse(status, redacted, t - self._t0)

    def read(self, data: bytes, t: float) -> None:
        self.capture.reads.append(t - self._t0, scrub(data, self._secrets))

    def ended(self, end: StreamEnd) -> None:
        """The exact :class:`StreamEnd` (the client reports it before ``finished``): it
        carries the error body of an HTTP error, which never reaches ``read``. A server
        that echoes the key into its body gets it masked here. Without it the end is
        recovered from the Turn (:func:`end_from_turn`)."""
        self._end = replace(end, body=scrub(end.body, self._secrets))

    def finished(self, turn: Turn) -> None:
        self.turn = turn
        end = self._end
        if end is None:
            self.capture.end = end_from_turn(turn)
            return
        outcome = turn.outcome.value if turn.outcome is not None else None
        body = end.body if end.kind in ("http_error", "not_a_stream") else None
        self.capture.end = CaptureEnd(
            end.kind, end.elapsed, end.detail, end.timeout, body, outcome, turn.reason
        )


def end_from_turn(turn: Turn) -> CaptureEnd:
    """How the stream ended, recovered from a finished turn's outcome and reason (the
    observer interface hands over the Turn, not the StreamEnd)."""
    t = turn.timings
    elapsed = t.end - t.request_sent if t.end is not None and t.request_sent is not None else None
    reason = turn.reason
    kind: EndKind = "eof"
    detail = ""
    timeout: float | None = None
    match turn.outcome:
        case Outcome.CANCELLED:
            kind = "cancelled"
        case Outcome.ERROR if turn.server_error is None:
            if turn.status is not None and turn.status >= 400:
                kind = "http_error"
            elif reason.startswith("protocol error"):
                kind, detail = "protocol_error", reason.partition(": ")[2]
            elif reason.startswith("could not connect"):
                kind, detail = "connect_error", reason.partition(": ")[2]
            else:
                kind = "not_a_stream"
        case Outcome.TRUNCATED:
            if reason.startswith("connection broken"):
                kind, detail = "broken", reason.partition(": ")[2]
            elif reason.startswith("idle timeout"):
                kind, timeout = "idle_timeout", _seconds(reason, "after")
            elif reason.startswith("no response body"):
                kind, timeout = "first_byte_timeout", _seconds(reason, "within")
    outcome = turn.outcome.value if turn.outcome is not None else None
    return CaptureEnd(kind, elapsed, detail, timeout, None, outcome, reason)


def _seconds(reason: str, word: str) -> float | None:
    m = re.search(rf"\b{word} ([0-9.e+-]+) s\b", reason)
    return float(m.group(1)) if m else None


# -- replay ----------------------------------------------------------------------------------


async def replay_capture(
    capture: Capture,
    *,
    speed: float | None = None,
    observer: TurnObserver | None = None,
    dialect: str | None = None,
    keep_frames: bool = True,
) -> Turn:
    """Feed a capture through the pipeline as the client did live and return the Turn.

    ``speed=None`` replays instantly (yielding to the event loop now and then); ``1.0`` at
    the recorded times, ``10.0`` ten times faster. ``dialect`` overrides the capture's.
    Times given to the pipeline and the observer are the recorded ones (seconds since the
    request), whatever the speed. The observer sees the same calls as live.
    """
    if speed is not None and speed <= 0:
        raise ValueError(f"speed must be > 0, not {speed}")
    obs = observer or TurnObserver()
    own_dialect = dialect is None
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def wait_until(t: float) -> None:
        if speed is not None:
            delay = start + t / speed - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)

    if capture.request is not None:
        r = capture.request
        try:
            body_json = orjson.loads(r.body) if r.body else {}
        except orjson.JSONDecodeError:
            body_json = {}
        obs.request_started(
            RequestSpec(
                r.method, r.url, dict(r.headers), body_json if isinstance(body_json, dict) else {}
            ),
            r.body,
            0.0,
        )
    response = capture.response
    ctype: str | None = None
    if response is not None:
        await wait_until(response.t)
        obs.response_started(response.status, list(response.headers), response.t)
        ctype = response.header("content-type")
    pipeline = StreamPipeline(
        dialect or capture.dialect,
        keep_frames=keep_frames,
        content_type=ctype,
        request_sent=0.0,
        headers=response.t if response is not None else None,
    )
    end = capture.end or CaptureEnd("broken", detail="capture ended without an end record")
    t_last = response.t if response is not None else 0.0
    first = True
    for n, (t, data) in enumerate(capture.reads):
        await wait_until(t)
        if speed is None and n % _YIELD_EVERY == _YIELD_EVERY - 1:
            await asyncio.sleep(0)
        if first:
            first = False
            _initial_warnings(pipeline, response, data, t)
        obs.read(data, t)
        update = pipeline.feed(data, t)
        obs.progressed(update, t)
        t_last = t
        if update.protocol_error:
            break
    t_end = end.elapsed if end.elapsed is not None else t_last
    await wait_until(t_end)
    stream_end = StreamEnd(
        end.kind,
        elapsed=end.elapsed,
        status=response.status if response is not None else None,
        headers=dict(response.headers) if response is not None else {},
        content_type=ctype,
        body=end.body or b"",
        detail=end.detail,
        timeout=end.timeout,
    )
    tail = pipeline.end_input(stream_end, t_end)
    if tail.frames or tail.events:  # (as the client does)
        obs.progressed(tail, t_end)
    turn = pipeline.close(stream_end, t_end)
    if (
        own_dialect
        and end.body is None
        and end.kind in ("http_error", "not_a_stream")
        and end.outcome is not None
    ):
        # The error body is not in the capture: keep the reason the live turn gave.
        turn = replace(turn, outcome=Outcome(end.outcome), reason=end.reason)
    obs.finished(turn)
    return turn


def _initial_warnings(
    pipeline: StreamPipeline, response: CaptureResponse | None, head: bytes, t: float
) -> None:
    """The warnings the client adds before the first read (as it did live)."""
    if response is None:
        return
    ctype = response.header("content-type")
    _, guess = classify_content_type(ctype, head)
    if guess:
        pipeline.assembler.apply(DialectWarning(guess), t)
    encoding = (response.header("content-encoding") or "identity").strip().lower()
    if encoding not in ("", "identity"):
        pipeline.assembler.apply(
            DialectWarning(
                f"server compressed the body (Content-Encoding: {encoding}) despite "
                "Accept-Encoding: identity; frames show the decompressed bytes"
            ),
            t,
        )


# -- the stored captures --------------------------------------------------------------------


class CaptureStore:
    """Stored captures in ``capture_dir()`` with a total size cap (oldest removed first).

    With a :class:`~streamscope.core.store.Store`, each capture also gets a ``captures``
    row, removed when the file is pruned (turns keep their text and outcome).
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        cap_bytes: int = DEFAULT_CAP_BYTES,
        store: Store | None = None,
    ) -> None:
        self.directory = directory if directory is not None else capture_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cap_bytes = cap_bytes
        self.store = store

    def path(self, capture_id: str) -> Path:
        return self.directory / f"{capture_id}{CAPTURE_SUFFIX}"

    def save(self, capture: Capture) -> str:
        """Write ``capture``; returns its id (ids sort by creation time). Prunes after."""
        capture_id = f"{time.time_ns():020d}-{os.urandom(3).hex()}"
        size = write_capture(self.path(capture_id), capture)
        if self.store is not None:
            self.store.add_capture(capture_id, self.path(capture_id).name, size)
        self.prune(keep=capture_id)
        return capture_id

    def load(self, capture_id: str) -> Capture:
        return read_capture(self.path(capture_id))

    def exists(self, capture_id: str) -> bool:
        return self.path(capture_id).exists()

    def remove(self, capture_ids: Sequence[str]) -> None:
        for capture_id in capture_ids:
            self.path(capture_id).unlink(missing_ok=True)
            if self.store is not None:
                self.store.remove_capture(capture_id)

    def total_size(self) -> int:
        return sum(size for _, size in self._files())

    def prune(self, *, keep: str | None = None) -> list[str]:
        """Remove the oldest captures until the total is within the cap (never ``keep``)."""
        files = self._files()
        total = sum(size for _, size in files)
        removed: list[str] = []
        for capture_id, size in files:
            if total <= self.cap_bytes:
                break
            if capture_id == keep:
                continue
            removed.append(capture_id)
            total -= size
        self.remove(removed)
        return removed

    def _files(self) -> list[tuple[str, int]]:
        found = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.endswith(CAPTURE_SUFFIX) and not entry.name.startswith("."):
                    found.append((entry.name[: -len(CAPTURE_SUFFIX)], entry.stat().st_size))
        return sorted(found)
