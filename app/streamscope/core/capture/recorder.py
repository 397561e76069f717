"""Recording a live turn as a :class:`~streamscope.core.capture.format.Capture`: the request
(secrets redacted), the response head, every network read with its time, and how it ended."""

from __future__ import annotations

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
from streamscope.core.turn.outcome import Outcome, StreamEnd
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
    """How the stream ended, when the transport could not say (the stream worker died, or a
    cancel was not answered): cancelled, or broken — with the turn's outcome and reason."""
    t = turn.timings
    elapsed = t.end - t.request_sent if t.end is not None and t.request_sent is not None else None
    cancelled = turn.outcome is Outcome.CANCELLED
    outcome = turn.outcome.value if turn.outcome is not None else None
    return CaptureEnd(
        "cancelled" if cancelled else "broken",
        elapsed,
        "" if cancelled else turn.reason,
        None,
        None,
        outcome,
        turn.reason,
    )
