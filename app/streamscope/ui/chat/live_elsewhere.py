"""Reading another conversation while a turn streams (a part of the chat controller).

The controller shows one conversation and runs one turn at a time. Opening another
conversation while a turn streams *parks* the one it streams into (:class:`Parked`: its
session, its rows, the rows its chat showed): the turn goes on there, unseen — its session
saves what arrives on its save clock, its answer's slot and card take the deltas (the chat
view keeps a live card built, hidden: it is the only copy on screen of what arrived), the
inspector parks it ("● Back to live"), the capture is written as before — while the chat
shows the other conversation. Opening the streaming conversation again shows its rows as
they are now: the card, grown, still live, Stop at hand.

The status bar keeps the live turn's figures and names its conversation: it is the one
place to watch a 5-minute stall or a long reasoning turn end while reading elsewhere (a
status bar about the conversation read would only say "Ready"). Sending stays one turn at a
time: the composer says where the turn streams.

When the turn ends while another conversation is shown, everything is saved (its session
ends the answer as always) and the parked rows are let go: opening it again reads it from
the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamscope.ui.chat.chat_rows import WidgetRow

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from streamscope.core.store.session import ChatSession
    from streamscope.ui.chat.chat_rows import AnswerSlot, ChatRow
    from streamscope.ui.chat.chat_view import ChatView
    from streamscope.ui.chat.conversation_rows import ConversationRows, PreparedRows
    from streamscope.ui.chat.status_panel import StatusPanel

__all__ = ["LiveElsewhere", "Parked"]


@dataclass(slots=True)
class Parked:
    """The conversation a turn streams into, while another one is shown."""

    session: ChatSession
    rows: ConversationRows
    shown: list[ChatRow]


class LiveElsewhere:
    """See the module docstring (the attributes below are the controller's)."""

    chat: ChatView
    status: StatusPanel
    session: ChatSession
    rows: ConversationRows
    _live: AnswerSlot | None
    _away: Parked | None

    if TYPE_CHECKING:
        elsewhereChanged: SignalInstance

        @property
        def busy(self) -> bool: ...

        def prepare(self, session: ChatSession) -> PreparedRows: ...

        def _show_rows(self, prepared: PreparedRows) -> None: ...

    @property
    def live_session(self) -> ChatSession:
        """The conversation the turn runs in (the one shown, unless another was opened
        meanwhile)."""
        return self._away.session if self._away is not None else self.session

    @property
    def live_elsewhere(self) -> int | None:
        """The id of the conversation a turn streams into while another one is shown
        (``None``: none does)."""
        return self._away.session.conversation_id if self._away is not None else None

    def _open_while_busy(self, session: ChatSession, prepared: PreparedRows | None) -> None:
        """Show ``session`` while a turn streams (into the one shown, parked now, or into
        one parked already)."""
        if self._away is None:
            # (a note the app added, the welcome, is not kept: its card goes with the rows)
            shown = [row for row in self.chat.rows() if not isinstance(row, WidgetRow)]
            self._away = Parked(self.session, self.rows, shown)
        self.session = session
        self._show_rows(prepared if prepared is not None else self.prepare(session))
        self._say_elsewhere()

    def show_live_conversation(self) -> bool:
        """Show the conversation the turn streams into again, as it is now (its live
        card in its place, the inspector following it); whether one was parked."""
        away, self._away = self._away, None
        if away is None:
            return False
        self.session = away.session
        self._show_rows((away.rows, away.shown))  # (the inspector shows its last: the live one)
        self._say_elsewhere()
        return True

    def _on_busy_changed_elsewhere(self, busy: bool) -> None:
        """The turn ended: a parked conversation is let go (all of it is saved)."""
        if not busy and self._away is not None:
            self._away = None
            self._say_elsewhere(status=False)  # (its outcome names its conversation)

    def _say_elsewhere(self, *, status: bool = True) -> None:
        title = (self._away.session.title or "Untitled") if self._away is not None else ""
        if status:
            self.status.set_conversation(title)
        self.elsewhereChanged.emit(title)
