"""How an answer's text is shown (a part of
:class:`~streamscope.ui.chat.answer_card.AssistantCard`).

Streamed text goes to a *tail* pane as plain text (cost per append independent of the
answer's length); a few times a second the finished blocks at the head of the tail are
rendered as Markdown into the *rendered* pane above it and removed from the tail; the end
renders the rest. All of that runs as the card's job on the window's
:class:`~streamscope.ui.base.paint_clock.PaintClock`, paced as :mod:`streamscope.ui.base.pacing`
says, in slices, so a long answer never freezes the window.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument

from streamscope.ui.base import pacing
from streamscope.ui.chat.markdown import MarkdownWriter, split_markdown
from streamscope.ui.chat.text_pane import PlainAppender, TextPane

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QWidget

    from streamscope.core.turn.model import Turn
    from streamscope.ui.base.paint_clock import PaintClock

__all__ = ["AnswerText"]


class AnswerText:
    """The text part of the answer card (the attributes below are the card's)."""

    clock: PaintClock
    turn: Turn | None
    last_render_max_slice_ms: float
    render_slices: int

    if TYPE_CHECKING:
        rendered: SignalInstance

        def palette(self) -> QPalette: ...

    def _card(self) -> QWidget:
        return cast("QWidget", self)

    def _init_text(self) -> None:
        self._source: list[str] = []
        self._source_text: str | None = ""
        self._length = 0  # of the source (known without joining it)
        self._unshown: list[str] = []  # the source after ``_shown``, not in the tail yet
        self._rendered_upto = 0  # source offset rendered into ``_rendered``
        # The tail shows the source from ``_tail_from`` to ``_shown``; what arrived after
        # that waits for the next append.
        self._tail_from = 0
        self._shown = 0
        self._next_append = 0.0  # monotonic time streamed text may be appended next
        self._live_due: float | None = None  # when finished blocks are rendered next
        self._live_started: float | None = None  # the first delta's arrival
        self._live_spent = 0.0  # seconds spent rendering while streaming
        self._jobs: deque[Iterator[None]] = deque()
        self._writer = MarkdownWriter(self.palette())

    def _panes(self) -> tuple[TextPane, TextPane]:
        """The rendered pane and the tail below it (children of the card)."""
        self._rendered = TextPane(self._card())
        self._rendered.codes = self._writer.codes
        self._rendered.hide()
        self._cursor = QTextCursor(self._rendered.document())
        self._tail = TextPane(self._card())
        self._tail_appender = PlainAppender(self._tail.document())
        return self._rendered, self._tail

    def text(self) -> str:
        """The answer text so far, exactly as received."""
        if self._source_text is None:
            self._source_text = "".join(self._source)
            self._source = [self._source_text]
        return self._source_text

    def append_text(self, text: str) -> None:
        """Append answer text (shown on the next loop turn, then at most every
        :data:`~streamscope.ui.base.pacing.LIVE_APPEND_MS`)."""
        if not text:
            return
        if self._live_started is None:
            self._live_started = time.perf_counter()
        self._source.append(text)
        self._source_text = None
        self._length += len(text)
        self._unshown.append(text)
        self.clock.wake(self._layout, self._next_append, widget=self._card())
        if self.turn is None and self._live_due is None:
            self._live_due = time.monotonic() + pacing.LIVE_RENDER_MS / 1000
            self.clock.wake(self._layout, self._live_due, widget=self._card())

    def _show_more(self) -> None:
        """Append what arrived since the last append to the tail, at most
        :data:`~streamscope.ui.base.pacing.LIVE_APPEND_CHARS` (a flood is shown at a bounded
        pace, and whole at the end)."""
        pending = "".join(self._unshown)  # (only what arrived since: no join of the answer)
        shown, rest = pending[: pacing.LIVE_APPEND_CHARS], pending[pacing.LIVE_APPEND_CHARS :]
        self._unshown = [rest] if rest else []
        if shown:
            self._tail_appender.append(shown)
            self._shown += len(shown)

    def rendered_pane(self) -> TextPane:
        """The pane holding the rendered Markdown (the live tail is below it)."""
        return self._rendered

    def is_rendering(self) -> bool:
        """Whether Markdown rendering is still in progress."""
        return bool(self._jobs)

    def height_settled(self) -> bool:
        """Whether the card is as tall as it will be (not while a finished answer's
        Markdown is rendered: it grows slice by slice)."""
        return self.turn is None or not self._jobs

    def _render_again(self) -> None:
        """Render the finished answer's Markdown again (links and code in the new theme's
        colours), in slices on the paint clock as the first time."""
        self._writer = MarkdownWriter(self.palette())
        self._rendered.codes = self._writer.codes
        self._rendered.document().clear()
        self._cursor = QTextCursor(self._rendered.document())
        self._rendered_upto = 0
        self._jobs.append(self._render_job(final=True))
        self.clock.wake(self._layout, widget=self._card())

    def _live_over_budget(self) -> bool:
        if self._live_started is None:
            return False
        elapsed = time.perf_counter() - self._live_started
        return self._live_spent > pacing.LIVE_RENDER_SHARE * elapsed

    def _layout(self, deadline: float) -> float | None:
        """Append streamed text, start live rendering when due, render until ``deadline``;
        when to run next (see :mod:`streamscope.ui.base.pacing`)."""
        now = time.monotonic()
        streaming = self.turn is None
        wanted: list[float] = []
        if streaming and self._shown < self._length:
            if now >= self._next_append:
                self._show_more()
                self._next_append = now + pacing.LIVE_APPEND_MS / 1000
            if self._shown < self._length:
                wanted.append(self._next_append)
        if streaming and self._live_due is not None and now >= self._live_due and not self._jobs:
            self._live_due = None
            if self._live_over_budget():  # a flood: look again later
                self._live_due = now + pacing.LIVE_RENDER_MS / 1000
            else:
                self._jobs.append(self._render_job(final=False))
        if self._jobs:
            self._render(deadline)
        if self._jobs:
            paused = self.turn is None and self._live_over_budget()
            wanted.append(now + pacing.LIVE_RENDER_MS / 1000 if paused else 0.0)
        elif streaming and self._live_due is not None:  # (not while a rendering waits)
            wanted.append(self._live_due)
        return min(wanted) if wanted else None

    def _render(self, deadline: float) -> None:
        start = time.perf_counter()
        while self._jobs and time.perf_counter() < deadline:
            job = self._jobs[0]
            try:
                next(job)
            except StopIteration:
                self._jobs.popleft()
        elapsed = time.perf_counter() - start
        self.render_slices += 1
        self.last_render_max_slice_ms = max(self.last_render_max_slice_ms, elapsed * 1000)
        if self.turn is None:
            self._live_spent += elapsed

    def _render_job(self, final: bool) -> Iterator[None]:
        """Render the finished blocks of the tail (all of it when ``final``), then show
        only what is left in the tail."""
        start = self._rendered_upto
        segments, used = split_markdown(self.text()[start:], final=final)
        self._rendered_upto = start + used
        yield
        if segments:
            self._rendered.show()
        for segment in segments:
            yield from self._writer.write(self._cursor, segment)
            yield
        if final:
            _flatten_trailing_block(self._rendered.document())
        if final and self._rendered.held:
            self._rendered.hold(False)  # (and the tail goes below: one swap, one paint)
        if used:
            # Drop what was just rendered from the head of the tail (cheap, unlike
            # appending the rest again); what was not shown yet need not be.
            upto = self._rendered_upto
            self._tail_appender.remove_prefix(min(upto, self._shown) - self._tail_from)
            self._tail_from = min(upto, self._shown)
            if upto > self._shown:
                self._tail_from = self._shown = upto
                self._unshown = [self.text()[upto:]] if upto < self._length else []
        if used or final:
            self._tail.setVisible(not self._tail.document().isEmpty())
        if final:
            self._rendered.setVisible(not self._rendered.document().isEmpty())
            self.rendered.emit()


def _flatten_trailing_block(document: QTextDocument) -> None:
    """A table or code block at the end leaves an empty paragraph after it (a document
    always ends with one): a blank line above the footer. Make it take no height."""
    last = document.lastBlock()
    if document.blockCount() < 2 or last.length() > 1:
        return
    cursor = QTextCursor(last)
    block = last.blockFormat()
    block.setLineHeight(0, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
    block.setTopMargin(0)
    block.setBottomMargin(0)
    cursor.setBlockFormat(block)
    chars = QTextCharFormat()
    chars.setFontPointSize(1)
    cursor.setBlockCharFormat(chars)
