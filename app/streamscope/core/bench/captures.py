"""Every request of a bench is a capture: an :class:`~streamscope.core.bench.transport.Exchange`
recorded through the same :class:`~streamscope.core.capture.recorder.CaptureRecorder` a chat
turn uses (secrets masked in the request, headers and reads), then replayed once through the
same pipeline (:func:`~streamscope.core.capture.replay.replay_capture`) with a
:class:`~streamscope.core.bench.metrics.FrameLog` watching: that one replay decides the
outcome written in the capture and gives the request's figures
(:func:`~streamscope.core.bench.metrics.metrics_of`), so
:func:`~streamscope.core.bench.metrics.measure` on the capture later gives the same figures.

On disk (``--out DIR`` only; without it nothing is written): one ``.sscap`` per request,
``DIR/captures/step-S/request-NNNNNN.sscap``, at most :data:`MAX_CAPTURES` files and
:data:`MAX_CAPTURE_BYTES` bytes per run — past either, the oldest capture written is deleted
(its report row keeps the figures and says ``"capture": null``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path

from streamscope.core.bench.metrics import FrameLog, RequestMetrics, metrics_of
from streamscope.core.bench.tokenizer import TokenCounter
from streamscope.core.bench.transport import Exchange
from streamscope.core.capture.format import Capture, CaptureEnd, write_capture
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.capture.replay import replay_capture
from streamscope.core.turn.outcome import EndKind, StreamEnd
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["MAX_CAPTURES", "MAX_CAPTURE_BYTES", "CaptureShelf", "record_exchange"]

MAX_CAPTURES = 20_000
MAX_CAPTURE_BYTES = 1 << 30


def _end_kind(ex: Exchange) -> EndKind:
    if ex.status is not None and ex.status >= 400 and ex.end == "eof":
        return "http_error"
    return ex.end or "broken"  # type: ignore[return-value]


async def record_exchange(
    ex: Exchange, spec: RequestSpec, dialect: str, *, tokenizer: TokenCounter | None = None
) -> tuple[Capture, RequestMetrics]:
    """``ex`` as a capture (secrets masked) and its figures, from one replay. The figures
    carry the run's context (send and scheduled times on the runner's clock, worker,
    warm-up); their ``capture`` is empty until the caller knows where the capture went.
    ``tokenizer``: the user's, to count output tokens with."""
    recorder = CaptureRecorder(dialect)
    sent = ex.sent if ex.sent is not None else ex.scheduled
    recorder.request_started(spec, _body(spec), sent)
    if ex.status is not None and ex.headers_at is not None:
        recorder.response_started(ex.status, ex.headers, ex.headers_at)
    for t, data in ex.reads:
        recorder.read(data, t)
    kind = _end_kind(ex)
    elapsed = (ex.ended - sent) if ex.ended is not None else None
    headers = dict(ex.headers)
    body = ex.error_body if kind == "http_error" else b""
    content_type = next((v for k, v in ex.headers if k.lower() == "content-type"), None)
    end = StreamEnd(
        kind,
        elapsed=elapsed,
        status=ex.status,
        headers=headers,
        content_type=content_type,
        body=body,
        detail=ex.detail,
    )
    recorder.ended(end)
    capture = recorder.capture
    capture.end = CaptureEnd(kind, elapsed, ex.detail, None, recorder.scrubber.bytes(body))
    log = FrameLog()
    turn = await replay_capture(capture, observer=log)
    recorder.finished(turn)  # (the end line, with the outcome the replay decided)
    metrics = metrics_of(
        capture,
        turn,
        log.frames,
        sent_at=sent,
        scheduled_at=ex.scheduled,
        worker=ex.worker,
        warmup=ex.warmup,
        tokenizer=tokenizer,
    )
    return recorder.capture, metrics


def _body(spec: RequestSpec) -> bytes:
    import orjson

    return orjson.dumps(spec.json)


@dataclass(slots=True)
class _Kept:
    path: Path
    size: int


class CaptureShelf:
    """Writes captures under ``root`` and keeps the run within its bounds (module
    docstring). :meth:`put` returns the file's path relative to ``root``."""

    def __init__(
        self, root: Path, *, max_files: int = MAX_CAPTURES, max_bytes: int = MAX_CAPTURE_BYTES
    ) -> None:
        self.root = root
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._kept: deque[_Kept] = deque()
        self._bytes = 0
        self.evicted: set[str] = set()

    def put(self, step: int, index: int, capture: Capture) -> str:
        folder = self.root / "captures" / f"step-{step}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"request-{index:06d}.sscap"
        size = write_capture(path, capture)
        self._kept.append(_Kept(path, size))
        self._bytes += size
        while self._kept and (len(self._kept) > self.max_files or self._bytes > self.max_bytes):
            old = self._kept.popleft()
            old.path.unlink(missing_ok=True)
            self._bytes -= old.size
            self.evicted.add(self.relative(old.path))
        return self.relative(path)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()
