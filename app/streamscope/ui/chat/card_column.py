"""A scrollable column of cards over rows, which builds cards only for the rows in view
(and about a screen around them), and follows the end only when the user is there.

The column knows every row (:mod:`streamscope.ui.chat.chat_rows`) and its height — measured from
its card once built, estimated before (:mod:`streamscope.ui.chat.row_estimate`) — in a
:class:`~streamscope.ui.chat.row_heights.RowHeights`; the scroll range is their sum. Cards are
children of the viewport, placed at their rows' offsets. A card that leaves the margin is
hidden and kept for a while (:data:`KEPT_CARDS`, least recently shown first out), then
deleted, unless its key says it is *pinned* (the live answer, tool calls waiting for
results). When a built card's height changes (Markdown rendering, a resize: the viewport
gets a layout request), only the built cards move and the range changes; when it is above
the row at the top of the viewport, the scroll value moves with it, so what the user reads
stays still. At the end (following), the end stays in view instead.

Cards come from a :class:`CardFactory`: ``build`` one for a row's *card key* (the row, or
the answer an answers step shows) and ``sync`` one with its key's current state (a card
built later, or taken back from the kept ones, shows it as it is now).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from itertools import zip_longest
from typing import Protocol

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QFontMetricsF, QPalette, QResizeEvent
from PySide6.QtWidgets import QAbstractScrollArea, QFrame, QWidget

from streamscope.ui.base.theme import monospace_font
from streamscope.ui.chat.chat_rows import CardKey, ChatRow
from streamscope.ui.chat.row_estimate import Metrics
from streamscope.ui.chat.row_heights import RowHeights

__all__ = ["CardColumn", "CardFactory"]

MARGIN = 12
"""Pixels around the column of cards."""

SPACING = 10
"""Pixels between two cards."""

AHEAD_SCREENS = 1.0
"""Cards are built this many viewport heights above and below what is in view."""

AHEAD_BUDGET_MS = 6.0
"""Building the cards ahead of the viewport takes at most this long per pass of the event
loop (the cards in view are always built at once)."""

KEPT_CARDS = 24
"""Cards that left the margin are kept (hidden) this many at most, to be shown again without
being built again when the user scrolls back."""


class CardFactory(Protocol):
    """Builds the card for a row's card key, and shows a key's current state on its card."""

    def build(self, key: CardKey, parent: QWidget) -> QWidget: ...

    def sync(self, key: CardKey, card: QWidget) -> None: ...


def _settled(card: QWidget) -> bool:
    """Whether the card's height is final (not while an answer's Markdown renders: see
    ``AssistantCard.height_settled``)."""
    settled = getattr(card, "height_settled", None)
    return bool(settled()) if callable(settled) else True


class CardColumn(QAbstractScrollArea):
    """A scrollable column of cards over rows; see the module docstring."""

    def __init__(self, factory: CardFactory, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.viewport().setBackgroundRole(QPalette.ColorRole.Window)
        self.factory = factory
        self._rows: list[ChatRow] = []
        self._heights = RowHeights()
        self._cards: OrderedDict[CardKey, QWidget] = OrderedDict()  # built: oldest use first
        self._placed: dict[ChatRow, QWidget] = {}  # the rows near the viewport: their cards
        self._metrics: Metrics | None = None
        self._width = 0
        self._updating = False
        self._again = False
        self.built = 0
        """How many cards this view built (for tests: a card shown again is not rebuilt)."""
        self._more = QTimer(self)  # (building ahead goes on after a pass of the loop)
        self._more.setSingleShot(True)
        self._more.timeout.connect(self._update)
        self.verticalScrollBar().setSingleStep(20)

    # -- the rows -----------------------------------------------------------------------

    def set_rows(self, rows: Sequence[ChatRow]) -> None:
        """Show ``rows`` (a conversation opened, redrawn). Cards built for keys of the new
        rows are kept; the others are deleted."""
        keys = {id(key) for row in rows for key in (row, *getattr(row, "slots", ()))}
        for row in list(self._placed):
            self._release(row)
        for key in [k for k in self._cards if id(k) not in keys]:
            self._delete(key)
        self._rows = list(rows)
        metrics = self.metrics()
        for i, row in enumerate(self._rows):
            row.index = i
            row.measured = False
        self._heights.reset(round(row.estimate(metrics)) + SPACING for row in self._rows)
        self._update()

    def append_row(self, row: ChatRow, card: QWidget | None = None) -> None:
        """Add ``row`` at the end (``card``: its card, built by the caller)."""
        if card is not None:
            self._cards[row.card_key()] = card
        row.index = len(self._rows)
        row.measured = False
        self._rows.append(row)
        self._heights.append(round(row.estimate(self.metrics())) + SPACING)
        self._update()

    def row_changed(self, row: ChatRow) -> None:
        """``row`` shows something else (another alternative) or its state changed: its
        card is swapped or told (built later, it shows the row as it is)."""
        if not 0 <= row.index < len(self._rows) or self._rows[row.index] is not row:
            return
        key = row.card_key()
        placed = self._placed.get(row)
        if placed is not None and self._cards.get(key) is not placed:
            anchor = self._anchor()
            self._release(row)
            row.measured = False
            self._heights.set(row.index, round(row.estimate(self.metrics())) + SPACING)
            self._restore(anchor)
        elif placed is None and not row.measured:
            self._heights.set(row.index, round(row.estimate(self.metrics())) + SPACING)
        self.refresh(key)
        self._update()

    def refresh(self, key: CardKey) -> None:
        """Show ``key``'s current state on its card, if it is built."""
        card = self._cards.get(key)
        if card is not None:
            self.factory.sync(key, card)

    def clear(self) -> None:
        self.set_rows([])

    # -- cards ----------------------------------------------------------------------------

    def card_of(self, key: CardKey) -> QWidget | None:
        """``key``'s card if it is built (shown or kept), else ``None``."""
        return self._cards.get(key)

    def ensure_card(self, key: CardKey) -> QWidget:
        """``key``'s card, built now if it is not (not shown unless its row is in view):
        the live answer, an alternative not shown."""
        card = self._cards.get(key)
        if card is None:
            card = self._build(key)
            card.hide()
            self._evict()
        else:
            self.factory.sync(key, card)
        return card

    def card_for(self, row: ChatRow) -> QWidget:
        """``row``'s card, shown: scrolled into view first if it is not near it."""
        if row not in self._placed:
            self.scroll_to_row(row)
        if row not in self._placed:  # (a view with no height: place it all the same)
            anchor = self._anchor()
            self._place(row)
            self._restore(anchor)
            self._position()
        return self._placed[row]

    def scroll_to_row(self, row: ChatRow) -> None:
        """Scroll the least that brings ``row``'s top into view (as a user would)."""
        top = MARGIN + self._heights.offset(row.index)
        bar = self.verticalScrollBar()
        height = self.viewport().height()
        if top < bar.value():
            bar.setValue(top)
        elif top + min(self._heights[row.index], height) > bar.value() + height:
            bar.setValue(top + min(self._heights[row.index], height) - height)
        self._update()

    def cards(self) -> list[QWidget]:
        """The cards shown (in or near the viewport), top to bottom."""
        return [self._placed[row] for row in sorted(self._placed, key=lambda r: r.index)]

    def pending(self) -> bool:
        """Whether cards ahead of the viewport wait to be built (on the next passes of the
        event loop)."""
        return self._more.isActive()

    def settle(self) -> None:
        """Build the cards ahead of the viewport now, not over the next passes of the event
        loop (a screenshot, a test)."""
        while self._more.isActive():
            self._more.stop()
            self._update()

    def built_cards(self) -> list[tuple[CardKey, QWidget]]:
        """Every card built, shown or kept, with its key."""
        return list(self._cards.items())

    def row_count(self) -> int:
        return len(self._rows)

    def row_height(self, row: ChatRow) -> int:
        """``row``'s card's height: measured once built, estimated before."""
        return self._heights[row.index] - SPACING

    def content_height(self) -> int:
        """The height of the whole column (rows not built: estimated)."""
        if not self._rows:
            return 2 * MARGIN
        return 2 * MARGIN + self._heights.total() - SPACING

    # -- Qt -------------------------------------------------------------------------------

    def metrics(self) -> Metrics:
        """The sizes estimates are made with (the font and width now)."""
        if self._metrics is None:
            text = QFontMetricsF(self.font())
            code = QFontMetricsF(monospace_font())
            self._width = max(self.viewport().width() - 2 * MARGIN, 120)
            self._metrics = Metrics(
                text.lineSpacing(), text.averageCharWidth(), code.lineSpacing(), self._width - 30
            )
        return self._metrics

    def resizeEvent(self, event: QResizeEvent) -> None:  # (the viewport's)
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._reflow()
        else:
            self._update()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._reflow()

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # a card's height changed
            self._remeasure()
            return True
        return super().viewportEvent(event)

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        self.viewport().scroll(dx, dy)  # (the cards move with what is painted: only the
        self._update()  # strip scrolled into view is painted)

    def following(self) -> bool:
        """Whether the end stays in view as heights change (else the row at the top)."""
        return False

    # -- placing cards ----------------------------------------------------------------------

    def _reflow(self) -> None:
        """The width or the font changed: every height is measured or estimated again."""
        anchor = self._anchor()
        self._metrics = None
        metrics = self.metrics()
        for row in self._rows:
            row.measured = False
            if row not in self._placed:
                self._heights.set(row.index, round(row.estimate(metrics)) + SPACING)
        for row, card in self._placed.items():
            card.resize(self._width, card.height())
            self._measure(row, card)
        self._restore(anchor)
        self._update()

    def _remeasure(self) -> None:
        anchor = self._anchor()
        changed = False
        for row, card in self._placed.items():
            changed |= self._measure(row, card)
        if changed:
            self._restore(anchor)
            self._update()
        else:
            self._position()

    def _anchor(self) -> tuple[int, int] | None:
        """The row at the top of the viewport and how far into it the view is (``None``
        when following the end)."""
        if self.following() or not self._rows:
            return None
        value = self.verticalScrollBar().value()
        index = self._heights.index_at(value - MARGIN)
        return index, value - MARGIN - self._heights.offset(index)

    def _restore(self, anchor: tuple[int, int] | None) -> None:
        """Set the range to the rows' heights; keep ``anchor`` where it was."""
        bar = self.verticalScrollBar()
        height = self.viewport().height()
        bar.setPageStep(max(height, 1))
        bar.setRange(0, max(0, self.content_height() - height))
        if anchor is not None and anchor[0] < len(self._rows):
            index, into = anchor
            bar.setValue(MARGIN + self._heights.offset(index) + into)

    def _update(self) -> None:
        """Build and show the cards near the viewport, release the others, place them."""
        if self._updating:
            self._again = True
            return
        self._updating = True
        try:
            for _ in range(6):
                self._again = False
                self._place_window()
                if not self._again:
                    break
        finally:
            self._updating = False

    def _place_window(self) -> None:
        self.metrics()
        anchor = self._anchor()
        if not self._rows:
            self._restore(None)
            return
        self._restore(anchor)  # (the range first: following moves the value to the end)
        value = self.verticalScrollBar().value() - MARGIN
        height = self.viewport().height()
        ahead = int(height * AHEAD_SCREENS)
        first, last = self._heights.index_at(value), self._heights.index_at(value + height)
        low = self._heights.index_at(value - ahead)
        high = self._heights.index_at(value + height + ahead)
        changed = pending = False
        for i in range(first, last + 1):  # (in view: now)
            changed |= self._place(self._rows[i])
        deadline = time.perf_counter() + AHEAD_BUDGET_MS / 1000
        for i in _interleave(range(last + 1, high + 1), range(first - 1, low - 1, -1)):
            row = self._rows[i]
            if row in self._placed and self._placed[row] is self._cards.get(row.card_key()):
                continue
            if time.perf_counter() > deadline:  # (ahead: as time allows)
                pending = True
                break
            changed |= self._place(row)
        for row in [r for r in self._placed if not low <= r.index <= high]:
            self._release(row)
        self._evict()
        if changed:
            self._restore(anchor)
            self._again = True
        self._position()
        if pending and not self._more.isActive():
            self._more.start(0)

    def _place(self, row: ChatRow) -> bool:
        """Show ``row``'s card (built, or taken back from the kept ones); whether the row's
        height changed."""
        key = row.card_key()
        card = self._cards.get(key)
        old = self._placed.pop(row, None)
        if old is not None and old is card:
            self._placed[row] = card
            return False
        if old is not None:
            old.hide()
        if card is None:
            card = self._build(key)
        else:
            self._cards.move_to_end(key)
            self.factory.sync(key, card)
        self._placed[row] = card
        card.setGeometry(MARGIN, self._top(row), self._width, max(card.height(), 1))
        card.show()
        return self._measure(row, card)

    def _build(self, key: CardKey) -> QWidget:
        card = self.factory.build(key, self.viewport())
        self._cards[key] = card
        self.built += 1
        return card

    def _measure(self, row: ChatRow, card: QWidget) -> bool:
        """Take ``card``'s height for ``row`` at the column's width; whether it changed.
        While an answer's Markdown renders, its row keeps at least the estimate (the card
        grows into it instead of pushing what is below down and up again)."""
        layout = card.layout()
        width = self._width
        if layout is None:
            height = card.sizeHint().height()
        elif layout.hasHeightForWidth():
            height = layout.totalHeightForWidth(width)
        else:
            height = layout.totalSizeHint().height()
        if card.height() != height or card.width() != width:
            card.resize(width, height)
        settled = _settled(card)
        if not settled:
            height = max(height, round(row.estimate(self.metrics())))
        row.measured = settled
        return self._heights.set(row.index, height + SPACING) != 0

    def _release(self, row: ChatRow) -> None:
        card = self._placed.pop(row, None)
        if card is not None:
            card.hide()
            key = row.card_key()
            if self._cards.get(key) is card:
                self._cards.move_to_end(key)

    def _evict(self) -> None:
        """Delete the kept cards beyond :data:`KEPT_CARDS`, least recently shown first
        (never a pinned one)."""
        shown = set(map(id, self._placed.values()))
        excess = len(self._cards) - len(shown) - KEPT_CARDS
        if excess <= 0:
            return
        for key, card in list(self._cards.items()):
            if excess <= 0:
                break
            if id(card) in shown or key.pinned:
                continue
            self._delete(key)
            excess -= 1

    def _delete(self, key: CardKey) -> None:
        card = self._cards.pop(key)
        card.hide()
        card.deleteLater()

    def _top(self, row: ChatRow) -> int:
        return MARGIN + self._heights.offset(row.index) - self.verticalScrollBar().value()

    def _position(self) -> None:
        """Move the shown cards to their rows (O(cards shown))."""
        for row, card in self._placed.items():
            top = self._top(row)
            if card.y() != top or card.x() != MARGIN:
                card.move(MARGIN, top)


def _interleave(below: range, above: range) -> Iterator[int]:
    """The rows ahead, nearest first: below and above in turns."""
    for pair in zip_longest(below, above):
        yield from (i for i in pair if i is not None)
