"""The Timeline tab: the turn's milestones as a waterfall, the inter-arrival gaps as a bar
chart, and TTFT / tokens per second. Custom painted; paints only when visible.

The gaps chart keeps one float per frame and is downsampled to the widget's width at paint
time (the largest gap of each pixel column wins, so a stall is never averaged away).

While a live turn streams, :meth:`TimelinePanel.show_liveness` runs the axis up to now: a
silence is an amber band over the waterfall from where it began, the gap still open is the
chart's last bar, and the silence bar (:mod:`~streamscope.ui.inspector.silence_bar`) grows
toward the client's timeout.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from streamscope.core.turn.model import Timings, Turn, TurnDelta
from streamscope.ui.base.theme import colour, text_fill
from streamscope.ui.inspector.gap_chart import GapChart, GapSeries
from streamscope.ui.inspector.silence_bar import SilenceBar

if TYPE_CHECKING:
    from streamscope.core.turn.liveness import Liveness, Silence
    from streamscope.core.turn.progress import Progress

__all__ = ["GapChart", "GapSeries", "Milestones", "TimelinePanel", "WaterfallView"]


@dataclass(slots=True)
class Milestones:
    """Monotonic times of the turn's milestones (``None`` until seen).

    ``first_token`` is the first *answer* token (text or tool-call arguments);
    ``first_reasoning`` the first reasoning token. TTFT counts whichever came first, as the
    core's :class:`~streamscope.core.turn.model.Timings` does.
    """

    request_sent: float | None = None
    headers: float | None = None
    first_byte: float | None = None
    first_reasoning: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    terminal: float | None = None
    end: float | None = None

    def items(self) -> list[tuple[str, float | None]]:
        """``(name, time)`` in display order; a header time later than the first byte
        (measured on another clock) or before the request is dropped."""
        out: list[tuple[str, float | None]] = [
            (f.name, getattr(self, f.name)) for f in fields(self)
        ]
        t = self.headers
        if t is not None and (
            (self.request_sent is not None and t < self.request_sent)
            or (self.first_byte is not None and t > self.first_byte)
        ):
            out[1] = ("headers", None)
        return out


LABELS = {
    "request_sent": "request sent",
    "headers": "headers",
    "first_byte": "first byte",
    "first_reasoning": "first reasoning",
    "first_token": "first answer token",
    "last_token": "last token",
    "terminal": "terminal signal",
    "end": "end",
}

_COLORS = {
    # milestone: its bar's colour in theme.MARKS
    "request_sent": "timeline_request",
    "headers": "timeline_headers",
    "first_byte": "timeline_first_byte",
    "first_reasoning": "timeline_reasoning",
    "first_token": "timeline_token",
    "last_token": "timeline_token",
    "terminal": "timeline_terminal",
    "end": "timeline_request",
}


class WaterfallView(QWidget):
    """One row per milestone: a bar from the previous milestone to this one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.milestones = Milestones()
        self.now: float | None = None
        """While a turn streams: the axis runs to this time."""
        self.silence: Silence | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumHeight(self._row_height() * len(LABELS) + 8)
        self.setAccessibleName("Timeline")

    def describe(self) -> str:
        """The chart in words (its text alternative): each milestone's time since the
        request, ``—`` for one that has not happened, and a silence if there is one."""
        rows = self.milestones.items()
        t0 = self.milestones.request_sent
        parts = [
            f"{LABELS[name]} {(t - t0) * 1000:.1f} ms"
            if t is not None and t0 is not None
            else f"{LABELS[name]} —"
            for name, t in rows
        ]
        if self.silence is not None:
            parts.append(self.silence.words())
        return "; ".join(parts)

    def _row_height(self) -> int:
        return self.fontMetrics().height() + 6

    def sizeHint(self) -> QSize:
        return QSize(360, self._row_height() * len(LABELS) + 8)

    def _axis(self) -> tuple[float, float, float | None, float]:
        """``(left, track width, t0, span)``: where time ``t`` is drawn is
        ``left + track * (t - t0) / span``."""
        fm = self.fontMetrics()
        label_w = max(fm.horizontalAdvance(v) for v in LABELS.values()) + 12
        value_w = fm.horizontalAdvance("00000.0 ms") + 8
        t0 = self.milestones.request_sent
        known = [t for _, t in self.milestones.items() if t is not None]
        if self.now is not None:
            known.append(self.now)
        span = (max(known) - t0) if known and t0 is not None else 0.0
        return label_w, max(10, self.width() - value_w - label_w), t0, span

    def silence_rect(self) -> QRectF | None:
        """The band of the current silence (``None`` while the stream moves)."""
        silence, now = self.silence, self.now
        left, track, t0, span = self._axis()
        if silence is None or now is None or t0 is None or span <= 0:
            return None
        x1 = left + track * (silence.since - t0) / span
        x2 = left + track * (now - t0) / span
        return QRectF(x1, 2, max(1.0, x2 - x1), self._row_height() * len(LABELS) + 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text_color = pal.color(QPalette.ColorRole.Text)
        dim = pal.color(QPalette.ColorRole.PlaceholderText)
        rows = self.milestones.items()
        left, track, t0, span = self._axis()
        label_w, right = left, left + track
        value_w = self.width() - right
        rh = self._row_height()
        m = self.milestones
        if t0 is not None and span > 0 and m.first_token is not None and m.last_token is not None:
            band = colour("decode_band", pal)
            x1 = left + track * (m.first_token - t0) / span
            x2 = left + track * (m.last_token - t0) / span
            p.fillRect(QRectF(x1, 2, max(1.0, x2 - x1), rh * len(rows) + 4), band)
        quiet = self.silence_rect()
        if quiet is not None and self.silence is not None:
            p.fillRect(quiet, text_fill("silence_band", pal) or QColor())
            mark = colour("silence_mark", pal)
            p.fillRect(QRectF(quiet.left(), quiet.bottom() - 4, quiet.width(), 4), mark)
            p.setPen(colour("silence_band", pal))
            p.drawText(quiet.adjusted(4, 0, -4, -6), Qt.AlignmentFlag.AlignRight
                       | Qt.AlignmentFlag.AlignBottom, self.silence.words())  # fmt: skip
        for i, (name, t) in enumerate(rows):
            y = 4 + i * rh
            p.setPen(text_color if t is not None else dim)
            p.drawText(QRectF(0, y, label_w - 6, rh), Qt.AlignmentFlag.AlignRight
                       | Qt.AlignmentFlag.AlignVCenter, LABELS[name])  # fmt: skip
            grid = QColor(dim)
            grid.setAlpha(60)
            p.fillRect(QRectF(left, y + rh / 2, track, 1), grid)
            if t is None or t0 is None:
                p.drawText(QRectF(right + 6, y, value_w, rh), Qt.AlignmentFlag.AlignVCenter, "—")
                continue
            # The bar runs from the latest earlier milestone (in time) to this one.
            # (on a tie, only a milestone listed above counts as earlier).
            before = [u for _, u in rows[:i] if u is not None and u <= t]
            before += [u for _, u in rows[i + 1 :] if u is not None and u < t]
            start_t = max(before, default=t0)
            x = left + (track * (t - t0) / span if span > 0 else 0.0)
            start = left + (track * (start_t - t0) / span if span > 0 else 0.0)
            p.fillRect(
                QRectF(start, y + 3, max(2.0, x - start), rh - 6), colour(_COLORS[name], pal)
            )
            p.setPen(text_color)
            p.drawText(QRectF(right + 6, y, value_w, rh), Qt.AlignmentFlag.AlignVCenter,
                       f"{(t - t0) * 1000:.1f} ms")  # fmt: skip
        p.end()


class TimelinePanel(QWidget):
    """Summary line, waterfall and gaps chart; fed with batches, finalised with the Turn."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.milestones = Milestones()
        self.series = GapSeries()
        self.text_deltas = 0
        self._ttft: float | None = None
        self.summary = QLabel("No turn yet.", self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.waterfall = WaterfallView(self)
        self.waterfall.milestones = self.milestones
        self.chart = GapChart(self.series, self)
        self.silence_bar = SilenceBar(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.summary)
        layout.addWidget(self.silence_bar)
        layout.addWidget(self.waterfall)
        layout.addWidget(self.chart, 1)
        layout.addStretch(0)

    def begin_turn(self, t0: float) -> None:
        self._show_charts(True)
        self.milestones = Milestones(request_sent=t0)
        self.waterfall.milestones = self.milestones
        self.series.clear(t0)
        self.text_deltas = 0
        self._ttft = None
        self._show_live(None)
        self._update()

    def resume(
        self, headers_t: float | None, times: Iterable[float], delta: TurnDelta | None
    ) -> None:
        """Show a turn kept elsewhere (after :meth:`begin_turn`): when its headers came, its
        frames' times and the reducer's latest delta."""
        if headers_t is not None:
            self.milestones.headers = headers_t
        self.series.extend(times)
        if delta is not None:
            self._set_timings(delta.timings)
            self.text_deltas = delta.progress
        self._update()

    def mark_headers(self, t: float) -> None:
        if self.milestones.headers is None:
            self.milestones.headers = t
            self._update()

    def add_progress(self, batch: Progress) -> None:
        """A batch: its frames' gaps, and the milestones the reducer's delta says."""
        self.series.extend(batch.rows.times)
        if batch.delta is not None:
            self._set_timings(batch.delta.timings)
            self.text_deltas = batch.delta.progress
        self._update()

    def _set_timings(self, tm: Timings) -> None:
        m = self.milestones
        m.request_sent = tm.request_sent if tm.request_sent is not None else m.request_sent
        m.headers = tm.headers if tm.headers is not None else m.headers
        m.first_byte = tm.first_byte
        m.first_reasoning = tm.first_reasoning
        m.first_token = tm.first_answer
        m.last_token = tm.last_token
        m.terminal = tm.terminal
        m.end = tm.end
        self._ttft = tm.ttft

    def show_liveness(self, live: Liveness) -> None:
        """The live turn's clock ticked: run the axis to now, show a silence."""
        gap_shown = self.chart.open_gap is not None
        self._show_live(live)
        self.waterfall.update()
        if gap_shown or self.chart.open_gap is not None:
            self.chart.update()
        self._describe()

    def _show_live(self, live: Liveness | None) -> None:
        silence = live.silence if live is not None else None
        self.waterfall.now = live.now if live is not None else None
        self.waterfall.silence = silence
        last = self.series.last
        self.chart.open_gap = (
            max(0.0, live.now - last) if live and silence and last is not None else None
        )
        self.silence_bar.show_liveness(live)

    def finish(self, turn: Turn) -> None:
        self._set_timings(turn.timings)
        self._show_live(None)
        self._update(turn)
        no_stream = no_stream_line(turn)
        if no_stream is not None:  # (the charts would be one bar, or nothing)
            self.summary.setText(no_stream)
        self._show_charts(no_stream is None)

    def _show_charts(self, show: bool) -> None:
        for chart in (self.waterfall, self.chart):
            chart.setVisible(show)

    def ttft(self) -> float | None:
        """Time to the first token of any kind (reasoning, answer text or arguments)."""
        return self._ttft

    def _update(self, turn: Turn | None = None) -> None:
        m = self.milestones
        parts: list[str] = []
        ttft = self.ttft()
        parts.append(f"<b>TTFT</b> {ttft * 1000:.0f} ms" if ttft is not None else "<b>TTFT</b> —")
        rate = turn.tokens_per_second() if turn is not None else None
        if rate is not None:
            parts.append(f"<b>{rate:.1f} tok/s</b> over the decode window")
        elif (
            m.first_token is not None and m.last_token is not None and m.last_token > m.first_token
        ):
            deltas = self.text_deltas / (m.last_token - m.first_token)
            parts.append(f"<b>{deltas:.1f} deltas/s</b> over the decode window (no token count)")
        if m.first_token is not None and m.last_token is not None:
            parts.append(f"decode {(m.last_token - m.first_token) * 1000:.0f} ms")
        if turn is not None and turn.output_tokens is not None:
            parts.append(f"{turn.output_tokens} output tokens")
        if turn is not None and turn.outcome is not None:
            parts.append(f"{turn.outcome.value}" + (f" · {turn.reason}" if turn.reason else ""))
        self.summary.setText(" · ".join(parts))
        self.waterfall.update()
        self.chart.update()
        self._describe()

    def _describe(self) -> None:
        """Keep the charts' text alternatives (read by screen readers) what they show."""
        for chart in (self.waterfall, self.chart):
            text = chart.describe()
            if text != chart.accessibleDescription():
                chart.setAccessibleDescription(text)


def no_stream_line(turn: Turn) -> str | None:
    """What the Timeline says of a turn that got no stream (an HTTP error, or no response at
    all): "No stream: HTTP 429 after 12 ms"; ``None`` for a turn that got one."""
    if turn.status is not None and turn.status < 400:
        return None
    if turn.status is None and (turn.events or turn.bytes_received):
        return None  # (a body replayed without its response head)
    tm = turn.timings
    end = tm.headers if turn.status is not None and tm.headers is not None else tm.end
    after = (
        f" after {(end - tm.request_sent) * 1000:.0f} ms"
        if end is not None and tm.request_sent is not None
        else ""
    )
    if turn.status is not None:
        return f"<b>No stream</b>: HTTP {turn.status}{after}"
    why = f": {html.escape(turn.reason)}" if turn.reason else ""
    return f"<b>No stream</b>{after}{why}"
