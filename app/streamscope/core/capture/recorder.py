"""Recording a live turn as a :class:`~streamscope.core.capture.format.Capture`: the request
(secrets redacted), the response head, every network read with its time, and how it ended."""

from __future__ import annotations

import re
from dataclasses import replace

from streamscope import __version__
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    now_iso,
)
from streamscope.core.redact import mask_value, redact_url, scrub, secret_values
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import EndKind, Outcome, StreamEnd
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["CaptureRecorder", "end_from_turn", "redact_request"]


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
