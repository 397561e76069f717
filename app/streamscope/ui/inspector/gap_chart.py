"""The Timeline's chart of inter-arrival gaps: the gaps kept with their block maxima
(:class:`GapSeries`, so a million frames downsample cheaply) and the bars drawn from them
(:class:`GapChart`)."""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from streamscope.ui.base.theme import colour

if TYPE_CHECKING:
    pass

__all__ = ["GapChart", "GapSeries"]


class GapSeries:
    """Inter-arrival gaps (seconds), one float per frame, with max-downsampling.

    The largest gap of every :attr:`BLOCK` frames is kept as well, so downsampling a
    million frames to a few hundred pixels reads ~16k numbers, not a million.
    """

    BLOCK = 64

    def __init__(self) -> None:
        self.clear(None)

    def clear(self, t0: float | None) -> None:
        self.gaps = array("f")
        self.blocks = array("f")
        self.total = 0.0
        self.peak = 0.0
        """The largest gap."""
        self.last = t0

    def extend(self, times: Iterable[float]) -> None:
        times = list(times)
        if not times:
            return
        gaps = self.gaps
        start = len(gaps)
        previous = [times[0] if self.last is None else self.last, *times[:-1]]
        gaps.extend([d if d > 0.0 else 0.0 for d in map(operator.sub, times, previous)])
        self.last = times[-1]
        self.total += sum(gaps[start:])
        self.peak = max(self.peak, max(gaps[start:]))
        block = self.BLOCK
        first = start // block
        del self.blocks[first:]
        for b in range(first, (len(gaps) + block - 1) // block):
            self.blocks.append(max(gaps[b * block : (b + 1) * block]))

    def mean(self) -> float:
        return self.total / len(self.gaps) if self.gaps else 0.0

    def buckets(self, width: int) -> list[float]:
        """At most ``width`` values: the largest gap in each slice of the series."""
        n = len(self.gaps)
        if n <= width:
            return list(self.gaps)
        if n < width * self.BLOCK * 4:
            gaps = self.gaps
            return [max(gaps[i * n // width : (i + 1) * n // width]) for i in range(width)]
        # Whole blocks per pixel (the last pixel takes the remainder): at most one block
        # of imprecision at a pixel's edges, invisible at this density.
        blocks = self.blocks
        m = len(blocks)
        return [max(blocks[i * m // width : (i + 1) * m // width]) for i in range(width)]


class GapChart(QWidget):
    """Inter-arrival gaps as bars (log scale), downsampled to the widget width."""

    def __init__(self, series: GapSeries, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.series = series
        self.open_gap: float | None = None
        """While a turn is silent: the gap since the last frame, drawn as the last bar."""
        self.setMinimumHeight(90)
        self.setMaximumHeight(240)
        self.setAccessibleName("Inter-arrival gaps")

    def describe(self) -> str:
        """The chart's header line, also its text alternative."""
        open_gap = self.open_gap
        n = len(self.series.gaps)
        if not n and open_gap is None:
            return "inter-arrival gaps: no frames yet"
        mean = self.series.mean()
        closed = self.series.peak
        now = f" · open gap {open_gap:.1f} s" if open_gap is not None else ""
        return (
            f"inter-arrival gaps{now} · {n:,} frames · max {closed * 1000:.1f} ms · "
            f"mean {mean * 1000:.2f} ms · log scale"
        )
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def sizeHint(self) -> QSize:
        return QSize(360, 140)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        fm = self.fontMetrics()
        pal = self.palette()
        dim = pal.color(QPalette.ColorRole.PlaceholderText)
        top = fm.height() + 4
        rect = QRectF(0, top, self.width(), self.height() - top - 2)
        axis = QColor(dim)
        axis.setAlpha(90)
        p.fillRect(QRectF(rect.left(), rect.bottom(), rect.width(), 1), axis)
        open_gap = self.open_gap
        values = self.series.buckets(max(1, int(rect.width()) - (open_gap is not None)))
        if open_gap is not None:
            values.append(open_gap)
        p.setPen(pal.color(QPalette.ColorRole.Text))
        header = self.describe()
        p.drawText(QRectF(0, 0, self.width(), top), Qt.AlignmentFlag.AlignLeft,
                   fm.elidedText(header, Qt.TextElideMode.ElideRight, self.width()))  # fmt: skip
        if not values:
            p.end()
            return
        peak = max(values)
        scale = math.log1p(peak * 1000) or 1.0
        bar_w = min(12.0, rect.width() / len(values))
        for i, gap in enumerate(values):
            h = rect.height() * math.log1p(gap * 1000) / scale
            if h <= 0:
                continue
            if open_gap is not None and i == len(values) - 1:
                color = colour("silence_mark", pal)
                color.setAlpha(150)  # (still open: lighter than the gaps that closed)
            else:
                quick = gap < 0.25 * peak or peak < 0.05
                color = colour("gap", pal) if quick else colour("silence_mark", pal)
            p.fillRect(QRectF(rect.left() + i * bar_w, rect.bottom() - h, max(1.0, bar_w - 1), h),
                       color)  # fmt: skip
        p.end()
