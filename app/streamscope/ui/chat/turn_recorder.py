"""Every finished turn of the session, with its capture (for Compare, Copy as curl, Edit and
resend).

:class:`SessionTurnsRecorder` listens to a :class:`~streamscope.ui.chat.turn_runner.TurnRunner`:
``turnStarted`` gives what was sent, ``turnRecorded`` the turn's capture (written by the one
capture recorder, or the capture replayed) — nothing is recorded twice — and the runner the
turn as saved (its secrets masked). The last :data:`MAX_TURNS` turns are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from PySide6.QtCore import QObject, Signal

from streamscope.core.capture.format import Capture
from streamscope.core.turn.model import Turn
from streamscope.ui.chat.turn_runner import TurnRunner
from streamscope.ui.chat.turn_start import TurnStart

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

    def __init__(self, runner: TurnRunner, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.turns: list[SessionTurn] = []
        self._runner = runner
        self._count = 0
        self._start: TurnStart | None = None
        runner.turnStarted.connect(self._on_runner_turn_started)
        runner.turnRecorded.connect(self._on_runner_turn_recorded)

    @property
    def last(self) -> SessionTurn | None:
        return self.turns[-1] if self.turns else None

    def _on_runner_turn_started(self, start: TurnStart) -> None:
        self._start = start

    def _on_runner_turn_recorded(self, capture: Capture) -> None:
        start, self._start = self._start, None
        turn = self._runner.last_saved_turn
        if start is None or turn is None:
            return
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
