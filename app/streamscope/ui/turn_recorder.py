"""Every finished turn of the session, with its capture, rebuilt from the runner's signals.

The runner's core observer is internal, so :class:`SessionTurnsRecorder` assembles a core
:class:`~streamscope.core.capture.recorder.Capture` from the coarse signals instead —
``turnStarted``
(request), ``responseStarted`` (status and headers), ``turnProgressed`` (every network read
with its time) and ``turnFinished`` (how it ended) — redacted exactly as
:class:`~streamscope.core.capture.recorder.CaptureRecorder` does. When the owner of the turn kept
a core capture of it (``capture()``, e.g. the controller's ``last_capture``), that one is
used instead (and no reads are copied here): it has the exact end of the stream. The
session keeps the last :data:`MAX_TURNS` turns (for Compare, Copy as curl, Edit and
resend).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from PySide6.QtCore import QObject, Signal

from streamscope.core.capture.format import Capture, CaptureResponse, now_iso
from streamscope.core.capture.recorder import end_from_turn, redact_request
from streamscope.core.redact import mask_value, scrub, secret_values
from streamscope.core.turn.model import Turn
from streamscope.ui.turn_runner import ProgressBatch, TurnRunner, TurnStart

__all__ = ["MAX_TURNS", "SessionTurn", "SessionTurnsRecorder"]

MAX_TURNS = 50


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """A finished turn: what was sent (``start``, unredacted, memory only), the capture
    (redacted) and the Turn."""

    number: int
    label: str
    start: TurnStart
    capture: Capture
    turn: Turn


class SessionTurnsRecorder(QObject):
    """Listens to a :class:`TurnRunner`; ``turnRecorded(SessionTurn)`` after each turn."""

    turnRecorded = Signal(object)

    def __init__(
        self,
        runner: TurnRunner,
        parent: QObject | None = None,
        *,
        capture: Callable[[], Capture | None] | None = None,
    ) -> None:
        super().__init__(parent)
        self._recorded_capture = capture
        self.turns: list[SessionTurn] = []
        self._count = 0
        self._start: TurnStart | None = None
        self._capture: Capture | None = None
        self._secrets: tuple[bytes, ...] = ()
        runner.turnStarted.connect(self._on_runner_turn_started)
        runner.responseStarted.connect(self._on_runner_response_started)
        runner.turnProgressed.connect(self._on_runner_turn_progressed)
        runner.turnFinished.connect(self._on_runner_turn_finished)

    @property
    def last(self) -> SessionTurn | None:
        return self.turns[-1] if self.turns else None

    def _on_runner_turn_started(self, start: TurnStart) -> None:
        self._start = start
        capture = Capture(start.dialect, created=now_iso())
        capture.request = redact_request(start.spec, start.body)
        if start.recorded is not None:  # a replay: its reads are the capture's (no copy)
            capture.reads = start.recorded
        self._capture = capture
        self._secrets = secret_values(start.spec.headers, start.spec.url)

    def _on_runner_response_started(self, status: int, headers: list[tuple[str, str]]) -> None:
        if self._capture is None or self._start is None:
            return
        redacted = tuple((k, mask_value(k, v)) for k, v in headers)
        t = time.monotonic() - self._start.t0
        self._capture.response = CaptureResponse(status, redacted, t)

    def _on_runner_turn_progressed(self, batch: ProgressBatch) -> None:
        if self._capture is None or self._start is None or self._start.recorded is not None:
            return
        if self._recorded_capture is not None:
            return  # the owner keeps a capture of the turn: no second copy of its bytes
        t0 = self._start.t0
        for data, t in batch.reads:
            self._capture.reads.append(t - t0, scrub(data, self._secrets))

    def _on_runner_turn_finished(self, turn: Turn) -> None:
        start, capture = self._start, self._capture
        self._start = self._capture = None
        if start is None or capture is None:
            return
        capture.end = end_from_turn(turn)
        if capture.response is not None and len(capture.reads):
            first_read = next(iter(capture.reads))[0]
            if capture.response.t > first_read:  # a replay: signal time is not replay time
                capture.response = replace(capture.response, t=first_read)
        kept = self._recorded_capture() if self._recorded_capture is not None else None
        if kept is not None and kept.end is not None and kept.request is not None:
            capture = kept  # the core recorder's (the exact end and error body)
        self._count += 1
        outcome = turn.outcome.value if turn.outcome is not None else "?"
        what = turn.finish_reason or turn.reason.split(" (")[0][:40]
        clock = datetime.now().strftime("%H:%M:%S")
        model = turn.model or start.spec.json.get("model") or start.spec.url.rsplit("/", 1)[-1]
        label = f"#{self._count} {clock} · {model} · {outcome} · {what}"
        recorded = SessionTurn(self._count, label, start, capture, turn)
        self.turns.append(recorded)
        del self.turns[:-MAX_TURNS]
        self.turnRecorded.emit(recorded)
