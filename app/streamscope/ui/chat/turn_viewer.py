"""What the chat asks of whatever shows its turns (the inspector's feed, given it by the
window): show a turn, follow the live one as it streams, say what it shows. The chat never
holds the inspector itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from streamscope.core.turn.liveness import Liveness
    from streamscope.core.turn.model import Turn
    from streamscope.ui.chat.turn_ref import TurnRef
    from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart

__all__ = ["TurnViewer"]


class TurnViewer(Protocol):
    """See the module docstring. ``shown(key)``: it now shows that turn (``-1``: none);
    ``loaded(key)``: an older turn's bytes are in its tabs; ``ended(turn, frames, which,
    verdict)``: the turn shown has ended in its tabs while none streams (what the status bar
    describes; ``which`` names it, "" for the latest live turn)."""

    shown: Any
    loaded: Any
    ended: Any
    ref: TurnRef | None
    """The turn shown."""

    @property
    def following_live(self) -> bool:
        """Whether it shows the live turn as it arrives."""
        ...

    def show(self, ref: TurnRef) -> None: ...

    def update(self, ref: TurnRef) -> None:
        """A turn's facts changed (its outcome, its capture)."""
        ...

    def clear(self, message: str) -> None: ...

    def taken(self, ref: TurnRef) -> None:
        """Another part of the window shows ``ref`` itself (a tapped exchange)."""
        ...

    def live_started(self, ref: TurnRef) -> None: ...

    def live_request(self, start: TurnStart, ref: TurnRef) -> None: ...

    def live_response(self, status: int, headers: list[tuple[str, str]]) -> None: ...

    def live_progress(self, batch: ProgressBatch) -> None: ...

    def live_finished(self, turn: Turn, ref: TurnRef) -> None: ...

    def live_frames(self) -> int:
        """How many frames the live turn has so far."""
        ...

    def show_liveness(self, live: Liveness) -> None:
        """How the live turn is doing (its silence), while it is the one shown."""
        ...

    def when_checked(self, callback: Callable[[str], None]) -> None:
        """Call ``callback`` with the live turn's verdict line once all its frames are
        checked (if it is the one shown)."""
        ...

    def show_malformed_frame(self, reason: str) -> bool:
        """Select the frame a "malformed frame" warning names in the turn shown; whether
        it is there."""
        ...

    async def aclose(self) -> None: ...
