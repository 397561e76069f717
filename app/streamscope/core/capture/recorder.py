"""Recording a turn as a :class:`~streamscope.core.capture.format.Capture`: the request, the
response head, every network read with its time, and how it ended — every value through the
request's :class:`~streamscope.core.redact.Scrubber` (a key split across reads included).

Given a ``path``, the capture is also written there as the turn goes: the header line when
the response starts, each read as it is safe to write, the end line at the end. The writing
(and the scrubbing) happens on a thread of its own: the caller's thread only queues the reads,
so a long turn ends without a pause, and a turn cut short by a crash leaves its reads on disk
(a capture with no end line replays as a broken connection). ``done`` resolves with the
capture once the last line is written.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from streamscope import __version__
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    end_line,
    header_line,
    now_iso,
    read_capture,
    read_line,
    write_capture,
)
from streamscope.core.redact import LOG_FILTER, Scrubber, StreamScrubber, mask_value, redact_url
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["RELEASE_AFTER_S", "CaptureRecorder", "end_from_turn", "redact_request"]

_log = logging.getLogger("streamscope.capture")

RELEASE_AFTER_S = 0.25
"""When the stream has been quiet this long, reads held back (they might end in the start of
a secret) are written anyway, all but that start: what arrived a second ago is on disk."""

MAX_PENDING = 1024 * 1024
"""Bytes of reads queued for the writer thread at most: past this a new read waits for the
writer (a flood faster than the disk or the scrubber must not pile up in memory)."""


def redact_request(
    spec: RequestSpec, body: bytes, scrubber: Scrubber, *, client_defaults: bool = True
) -> CaptureRequest:
    """The request as the client sends it (``client_defaults``: with the headers our client
    adds — another app's request, through the tap, is recorded with its own only), redacted."""
    headers = {"accept-encoding": "identity", "content-type": "application/json"}
    if not client_defaults:
        headers = {}
    headers.update(spec.headers)
    return CaptureRequest(
        spec.method,
        redact_url(spec.url),
        tuple((k, mask_value(k, v)) for k, v in headers.items()),
        scrubber.bytes(body),
    )


class CaptureRecorder(TurnObserver):
    """Records a turn; see the module docstring. ``capture`` is complete once ``done`` is.

    ``keep_reads=False`` (with a ``path``): the reads go to the file only, never into
    ``capture.reads``, so an endless stream costs no memory (the tap records this way)."""

    def __init__(
        self,
        dialect: str,
        *,
        path: Path | None = None,
        app_version: str = __version__,
        keep_reads: bool = True,
        secrets: tuple[str, ...] = (),
        client_defaults: bool = True,
    ) -> None:
        """``secrets``: more to mask than the request's own (a proxy password);
        ``client_defaults``: see :func:`redact_request`."""
        self._secrets = secrets
        self._client_defaults = client_defaults
        self.capture = Capture(dialect, app_version=app_version, created=now_iso())
        self.path = path
        self.keep_reads = keep_reads or path is None
        self.turn: Turn | None = None
        self.faults: tuple[dict[str, Any], ...] = ()
        """Faults on cue that changed what the client was sent (the tap sets them before
        ``finished``): kept in the end line."""
        self.scrubber = Scrubber()
        self.done: Future[Capture] = Future()
        self._pending = 0  # bytes of reads queued, not yet written
        self._room = threading.Condition()
        self._t0 = 0.0
        self._end: StreamEnd | None = None
        self._stream: StreamScrubber = self.scrubber.stream()
        self._echoed: list[str] = []  # secrets the turn's text spelled out (see finished)
        self._queue: queue.SimpleQueue[tuple[Any, ...]] | None = None
        self._fp: IO[bytes] | None = None

    # -- the caller's thread ------------------------------------------------------------------

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self._t0 = t
        self.scrubber = Scrubber.for_request(spec.headers, spec.url, extra=self._secrets)
        self._stream = self.scrubber.stream()
        LOG_FILTER.learn(self.scrubber.secrets)
        self.capture.request = redact_request(
            spec, body, self.scrubber, client_defaults=self._client_defaults
        )

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        masked = self.scrubber.headers(headers)
        self.capture.response = CaptureResponse(status, masked, t - self._t0)
        self._put("head")

    def read(self, data: bytes, t: float) -> None:
        self._put("read", t - self._t0, data)

    def ended(self, end: StreamEnd) -> None:
        """The exact :class:`StreamEnd` (the client reports it before ``finished``): it
        carries the error body of an HTTP error, which never reaches ``read``."""
        self._end = end

    def finished(self, turn: Turn) -> None:
        self.turn = turn
        scrub = self.scrubber
        said = (turn.text, turn.reasoning, *(call.arguments for call in turn.tool_calls))
        secrets = (s.decode("utf-8", "replace") for s in scrub.secrets)
        self._echoed = [s for s in secrets if any(s in text for text in said)]
        end = self._end
        if end is None:
            self.capture.end = end_from_turn(turn, scrub)
        else:
            outcome = turn.outcome.value if turn.outcome is not None else None
            body = scrub.bytes(end.body) if end.kind in ("http_error", "not_a_stream") else None
            self.capture.end = CaptureEnd(
                end.kind,
                end.elapsed,
                scrub.text(end.detail),
                end.timeout,
                body,
                outcome,
                scrub.text(turn.reason),
            )
        if self.faults:
            self.capture.end = replace(self.capture.end, faults=self.faults)
        self._put("end")

    def _put(self, *item: Any) -> None:
        if self.path is None:  # nothing to write: record here, at once
            self._handle(item)
            return
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            threading.Thread(target=self._write, name="capture-writer", daemon=True).start()
        if item[0] == "read":
            size = len(item[2])
            with self._room:
                while self._pending > MAX_PENDING and not self.done.done():
                    self._room.wait(0.05)  # (the writer catches up: it never waits on us)
                self._pending += size
        self._queue.put(item)

    # -- the writer's thread (or the caller's, without a path) ----------------------------------

    def _write(self) -> None:
        assert self._queue is not None and self.path is not None
        quiet_since = time.monotonic()
        try:
            while True:
                try:
                    item = self._queue.get(timeout=RELEASE_AFTER_S)
                except queue.Empty:
                    if self._stream.held and time.monotonic() - quiet_since >= RELEASE_AFTER_S:
                        self._keep(self._stream.release())
                        self._flush()
                    continue
                if self._handle(item):
                    return
                if item[0] == "read":
                    with self._room:
                        self._pending -= len(item[2])
                        self._room.notify_all()
                quiet_since = time.monotonic()
                if self._queue.empty():
                    self._flush()
        except BaseException as exc:  # a full disk: the turn itself goes on
            self._close()
            if not self.done.done():
                self.done.set_exception(exc)

    def _handle(self, item: tuple[Any, ...]) -> bool:
        """Record one item; whether it was the last."""
        kind = item[0]
        if kind == "head":
            self._open()
        elif kind == "read":
            self._keep(self._stream.feed(item[1], item[2]))
        elif kind == "end":
            self._open()
            self._keep(self._stream.close())
            end = self.capture.end
            if self._fp is not None and end is not None:
                self._fp.write(end_line(end))
            self._close()
            if self._echoed:
                self._mask_echoes()
            self.done.set_result(self.capture)
            return True
        return False

    def _mask_echoes(self) -> None:
        """The turn spelled out a secret in pieces (see :mod:`.echoes`): mask them in the
        reads kept and in the file, which is written again (through a temporary file)."""
        from streamscope.core.capture.echoes import echoed_spans, mask_spans

        try:
            keep = self.keep_reads or self.path is None
            capture = self.capture if keep else read_capture(self.path)  # type: ignore[arg-type]
            dialect = (self.turn.dialect if self.turn else None) or capture.dialect
            spans = echoed_spans(capture.reads.body(), dialect, self._echoed)
            if not spans:
                return
            capture.reads = ReadLog(mask_spans(capture.reads, spans))
            if self.path is not None:
                write_capture(self.path, capture)
        except (OSError, ValueError) as exc:  # (the turn goes on; the log says why)
            _log.warning("could not mask a secret echoed in pieces: %s", exc)

    def _open(self) -> None:
        if self._fp is None and self.path is not None:
            self._fp = open(self.path, "wb")  # noqa: SIM115 - closed by _close()
            self._fp.write(header_line(self.capture))

    def _keep(self, reads: list[tuple[float, bytes]]) -> None:
        keep = self.keep_reads
        append = self.capture.reads.append
        fp = self._fp
        for t, data in reads:
            if keep:
                append(t, data)
            if fp is not None:
                fp.write(read_line(t, data))

    def _flush(self) -> None:
        if self._fp is not None:
            self._fp.flush()  # (into the OS: a killed app loses nothing written)

    def _close(self) -> None:
        fp, self._fp = self._fp, None
        if fp is not None:
            fp.close()


def end_from_turn(turn: Turn, scrubber: Scrubber | None = None) -> CaptureEnd:
    """How the stream ended, when the transport could not say (the stream worker died, or a
    cancel was not answered): cancelled, or broken — with the turn's outcome and reason."""
    t = turn.timings
    elapsed = t.end - t.request_sent if t.end is not None and t.request_sent is not None else None
    cancelled = turn.outcome is Outcome.CANCELLED
    outcome = turn.outcome.value if turn.outcome is not None else None
    reason = scrubber.text(turn.reason) if scrubber is not None else turn.reason
    return replace(
        CaptureEnd("cancelled" if cancelled else "broken", elapsed),
        detail="" if cancelled else reason,
        outcome=outcome,
        reason=reason,
    )
