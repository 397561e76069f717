"""A turn as the chat and the lists name it for the inspector: which conversation, when it
started, the model asked, its outcome, where its bytes are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamscope.core.turn.outcome import Outcome

if TYPE_CHECKING:
    from streamscope.core.capture.format import Capture

__all__ = ["TurnRef"]


@dataclass(frozen=True, slots=True)
class TurnRef:
    """A turn the inspector can show. ``key`` stays the same while the turn is updated
    (its outcome, its capture); ``started`` is a Unix time; ``outcome`` is ``None`` while it
    streams. Its bytes: ``capture_id`` in the profile's capture store, or ``capture`` in
    memory (a window without a profile); ``note`` says why there is none, when known;
    ``stopped_at_limit``: it completed, cut by the token limit (the header says so, as the
    card does)."""

    key: int
    conversation: str
    started: float | None
    model: str
    outcome: Outcome | None = None
    capture_id: str | None = None
    capture: Capture | None = None
    note: str = ""
    stopped_at_limit: bool = False

    @property
    def has_capture(self) -> bool:
        return self.capture is not None or self.capture_id is not None
