"""The chat's rows as data: what each card shows, kept whether or not the card is built.

The chat view (:mod:`streamscope.ui.chat.chat_view`) holds every row of the conversation and
builds cards only for the rows near the viewport; a card built later (or again, after it was
released) shows its row's current state. A row is a user message (:class:`UserRow`, with its
versions), an answers step (:class:`AnswersRow`: every alternative answer to one message, an
:class:`AnswerSlot` each, one of them shown), a note from the app (:class:`NoticeRow`), or a
card somebody built (:class:`WidgetRow`: the view keeps it as it is).

Everything the user or the controller changes on a card lives here too: which alternative
and version are shown, the message being edited, the results tool calls got or that they
were skipped, the Verdict tab's line, an expanded reasoning, the turn the card opens in the
inspector. Nothing here imports Qt widgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from streamscope.ui.chat.row_estimate import Metrics, TextShape, text_shape

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from streamscope.core.turn.model import Turn
    from streamscope.core.wire.conversation import Message
    from streamscope.ui.chat.turn_ref import TurnRef

__all__ = ["AnswerSlot", "AnswersRow", "CardKey", "ChatRow", "NoticeRow", "UserRow", "WidgetRow"]


@dataclass(eq=False)
class ChatRow:
    """One row of the chat. ``index`` (its place) and ``measured`` (its height is a built
    card's, not an estimate) are kept by the view that shows it."""

    kind: ClassVar[str] = "row"
    index: int = field(default=-1, init=False, repr=False)
    measured: bool = field(default=False, init=False, repr=False)

    def card_key(self) -> CardKey:
        """What the card showing this row is built for (the row itself, or the answer an
        answers step shows)."""
        return self

    @property
    def pinned(self) -> bool:
        """Whether its card must never be released (it holds what nothing else does)."""
        return False

    def estimate(self, metrics: Metrics) -> float:
        """The card's height before it is built."""
        return 2 * metrics.line + 20

    def read_texts(self) -> None:
        """Read the shape of its texts now (for :meth:`estimate`: pure Python, done where
        a conversation is loaded, off the UI thread)."""


@dataclass(eq=False)
class UserRow(ChatRow):
    """What the user sent: version ``chosen + 1`` of ``count`` of the message at ``depth``
    of the shown path; ``editing`` while Edit last holds it in the box."""

    kind: ClassVar[str] = "user"
    text: str = ""
    depth: int = 0
    chosen: int = 0
    count: int = 1
    editing: bool = False
    shape: TextShape | None = field(default=None, repr=False)

    def read_texts(self) -> None:
        if self.shape is None:
            self.shape = text_shape(self.text, markdown=False)

    def estimate(self, metrics: Metrics) -> float:
        self.read_texts()
        assert self.shape is not None
        return metrics.line + 20 + metrics.height(self.shape, markdown=False)


@dataclass(eq=False)
class NoticeRow(ChatRow):
    """A short Markdown note from the app (the welcome)."""

    kind: ClassVar[str] = "notice"
    markdown: str = ""

    def estimate(self, metrics: Metrics) -> float:
        return 20 + metrics.height(text_shape(self.markdown))


@dataclass(eq=False)
class WidgetRow(ChatRow):
    """A card built by the caller (a replay's card in a test, a note): shown as it is and
    never released."""

    kind: ClassVar[str] = "widget"
    widget: QWidget | None = None

    @property
    def pinned(self) -> bool:
        return True

    def estimate(self, metrics: Metrics) -> float:
        return self.widget.sizeHint().height() if self.widget is not None else 0


@dataclass(eq=False)
class AnswerSlot:
    """One answer (an alternative of its step) as its card shows it.

    ``turn`` is ``None`` while it streams (the live card is the only copy of what arrived
    so far: it is never released). ``index`` of ``count``: its pager. ``results``: the
    results its tool calls got on the shown path (shown sent); ``unanswered``: how many of
    its calls have none, ``skipped`` when the conversation went on without them.
    ``verdict``: the Verdict tab's short line for it; ``message_id``: its saved row (its
    verdict is kept there).
    """

    label: str
    ref: TurnRef | None = None
    turn: Turn | None = None
    message_id: int | None = None
    index: int = 0
    count: int = 1
    results: tuple[Message, ...] = ()
    unanswered: int = 0
    skipped: bool = False
    verdict: str = ""
    redacted: bool = False
    reasoning_expanded: bool = False
    row: AnswersRow | None = field(default=None, repr=False)
    shape: TextShape | None = field(default=None, repr=False)

    @property
    def live(self) -> bool:
        return self.turn is None

    @property
    def open_calls(self) -> bool:
        """Its tool calls wait for results the user may be typing into its card."""
        return bool(self.turn is not None and self.turn.tool_calls and self.unanswered) and not (
            self.skipped or self.results
        )

    @property
    def pinned(self) -> bool:
        return self.live or self.open_calls

    def read_texts(self) -> None:
        if self.shape is None and self.turn is not None:
            self.shape = text_shape(self.turn.text)

    def estimate(self, metrics: Metrics) -> float:
        turn = self.turn
        height = 2 * metrics.line + 26  # title, footer and margins
        if turn is None:
            return height
        self.read_texts()
        if turn.text and self.shape is not None:
            height += metrics.height(self.shape)
        if turn.reasoning:
            height += metrics.line + 10
        if turn.tool_calls:
            height += len(turn.tool_calls) * (6.6 * metrics.line + 20) + 30
        return height


@dataclass(eq=False)
class AnswersRow(ChatRow):
    """An answers step: its alternatives (:class:`AnswerSlot`), ``chosen`` of them shown,
    at ``depth`` of the shown path. A ``replay`` is not part of the conversation."""

    kind: ClassVar[str] = "answers"
    slots: list[AnswerSlot] = field(default_factory=list)
    chosen: int = 0
    depth: int = 0
    replay: bool = False

    def __post_init__(self) -> None:
        for slot in self.slots:
            slot.row = self

    def add(self, slot: AnswerSlot) -> AnswerSlot:
        """Add an alternative and show it."""
        slot.row = self
        self.slots.append(slot)
        self.chosen = len(self.slots) - 1
        return slot

    @property
    def shown(self) -> AnswerSlot:
        return self.slots[self.chosen]

    def card_key(self) -> CardKey:
        return self.shown

    @property
    def pinned(self) -> bool:
        return self.shown.pinned

    def estimate(self, metrics: Metrics) -> float:
        return self.shown.estimate(metrics)

    def read_texts(self) -> None:
        self.shown.read_texts()  # (another alternative is read when it is shown)


CardKey = ChatRow | AnswerSlot
"""What a card is built for."""
