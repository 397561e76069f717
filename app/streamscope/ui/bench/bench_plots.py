"""The Bench window's plots, drawn with pyqtgraph (imported only when a bench opens).

Every point that stands for a request carries its :class:`~.bench_data.BenchData` row;
clicking it emits ``openRequest(row, metric key)`` and the window opens that request's capture
at the frame that defined the value. The views redraw from the data when the window's paint
job asks (:meth:`refresh`), never per request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from streamscope.core.bench import definitions as d
from streamscope.ui.bench.bench_data import GAP_ROWS, METRICS, BenchData

__all__ = ["DistributionView", "GapsView", "SweepView", "ThroughputView", "themed_plot"]

pg.setConfigOptions(antialias=False, useNumba=False)

PERCENTILES = (50.0, 90.0, 99.0)
_ACCENT = QColor("#3d8bfd")
_WARN = QColor("#e8a33d")
_HOT = QColor("#e5534b")


def themed_plot(title: str, x: str, y: str, parent: QWidget | None = None) -> pg.PlotWidget:
    """A plot in the window's palette (base background, text colour axes)."""
    plot = pg.PlotWidget(parent=parent)
    restyle(plot, parent.palette() if parent is not None else plot.palette())
    plot.setTitle(title)
    plot.setLabel("bottom", x)
    plot.setLabel("left", y)
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.setMouseEnabled(x=True, y=False)
    plot.getPlotItem().setMenuEnabled(False)
    plot.disableAutoRange()  # (see settle)
    return plot


def settle(
    plot: pg.PlotWidget, x: tuple[float, float] | None, y: tuple[float, float] | None
) -> None:
    """Fit the view to data spanning ``x`` and ``y``, but move it only when the data leaves
    it or fills less than a third of it: an axis repaints its labels — most of a plot's
    paint, 10–40 ms here — only when its range moves, not on every refresh."""
    for span, which in ((x, "x"), (y, "y")):
        if span is None:
            continue
        lo, hi = span
        a, b = plot.viewRange()[0 if which == "x" else 1]
        if lo >= a and hi <= b and (hi - lo) * 3 >= (b - a):
            continue
        pad = (hi - lo) * 0.15 or max(abs(hi) * 0.15, 1.0)
        lo, hi = (max(0.0, lo - pad) if lo >= 0 else lo - pad), hi + pad
        if which == "x":
            plot.setXRange(lo, hi, padding=0)
        else:
            plot.setYRange(lo, hi, padding=0)


def restyle(plot: pg.PlotWidget, palette: QPalette) -> None:
    """Follow the window's palette (a theme switch calls this again)."""
    text = palette.color(QPalette.ColorRole.WindowText)
    plot.setBackground(palette.color(QPalette.ColorRole.Base))
    item = plot.getPlotItem()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
    item.titleLabel.setAttr("color", text.name())
    item.titleLabel.setText(item.titleLabel.text)


class _Clickable(QWidget):
    openRequest = Signal(int, str)

    def _clicked(self, key: str) -> Any:
        def on_click(_item: object, points: Any, *_ev: object) -> None:
            if len(points):
                self.openRequest.emit(int(points[0].data()), key)

        return on_click


class DistributionView(_Clickable):
    """One metric's histogram and CDF (each request a point on the CDF), its p50/p90/p99
    marked, and buttons that open the request at each percentile."""

    def __init__(self, data: BenchData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bench = data
        self.metric_box = QComboBox(self)
        for i, m in enumerate(METRICS):
            self.metric_box.addItem(m.name, m.key)
            self.metric_box.setItemData(
                i, f"{m.definition}\n{d.PERCENTILES}", Qt.ItemDataRole.ToolTipRole
            )
        self.metric_box.currentIndexChanged.connect(self._on_metric_changed)
        self.summary = QLabel(self)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hist = themed_plot("", "ms", "requests", self)
        self.cdf = themed_plot("", "ms", "% of requests ≤", self)
        self._bars = self.hist.plot([0, 1], [0], stepMode="center", fillLevel=0)
        self._points = pg.ScatterPlotItem(size=6, pen=None, hoverable=True)
        self._points.sigClicked.connect(self._on_point)
        self.cdf.addItem(self._points)
        self._lines: list[tuple[pg.InfiniteLine, pg.InfiniteLine]] = []
        for q in PERCENTILES:
            colour = _HOT if q == 99.0 else _WARN
            pen = pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine)
            a = pg.InfiniteLine(angle=90, pen=pen, label=f"p{q:g}", labelOpts={"color": colour})
            b = pg.InfiniteLine(angle=90, pen=pen)
            self.cdf.addItem(a)
            self.hist.addItem(b)
            self._lines.append((a, b))
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout()
        row.addWidget(QLabel("Metric:", self))
        row.addWidget(self.metric_box)
        row.addWidget(self.summary, 1)
        for name in ("p50", "p90", "p99", "max"):
            button = QPushButton(f"Open {name}", self)
            button.setToolTip(
                f"Open the request whose value is nearest the {name} in the inspector, at the "
                "frame that defined it."
            )
            button.clicked.connect(lambda _=False, n=name: self.open_percentile(n))
            self.buttons[name] = button
            row.addWidget(button)
        plots = QHBoxLayout()
        plots.addWidget(self.hist)
        plots.addWidget(self.cdf)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addLayout(plots, 1)
        self._on_metric_changed()

    @property
    def key(self) -> str:
        return str(self.metric_box.currentData())

    def _on_metric_changed(self, *_: object) -> None:
        m = METRICS[self.metric_box.currentIndex()]
        self.hist.setTitle(f"{m.name} histogram")
        self.cdf.setTitle(f"{m.name} CDF — click a point to open its request")
        self.hist.setToolTip(m.definition)
        self.cdf.setToolTip(m.definition)
        self.refresh()

    def _on_point(self, item: object, points: Any, *ev: object) -> None:
        self._clicked(self.key)(item, points, *ev)

    def row_for(self, name: str) -> int | None:
        """The request a button opens (``p50``/``p90``/``p99``/``max``)."""
        q = 100.0 if name == "max" else float(name[1:])
        return self.bench.row_at_percentile(self.key, q)

    def open_percentile(self, name: str) -> bool:
        row = self.row_for(name)
        if row is not None:
            self.openRequest.emit(row, self.key)
        return row is not None

    def refresh(self) -> None:
        for part in self.parts():
            part()

    def parts(self) -> list[Callable[[], None]]:
        """The redraw in two parts (each plot paints on its own turn of the event loop)."""
        return [self._refresh_cdf, self._refresh_hist]

    def _percentiles(self) -> list[float | None]:
        return [self.bench.percentile(self.key, q) for q in PERCENTILES]

    def _refresh_cdf(self) -> None:
        vals, rows = self.bench.values(self.key)
        order = np.argsort(vals, kind="stable")
        xs = vals[order]
        n = len(xs)
        self._points.setData(
            x=xs, y=(np.arange(1, n + 1) / n * 100.0) if n else xs, data=rows[order],
            brush=pg.mkBrush(_ACCENT),
        )  # fmt: skip
        if n:
            settle(self.cdf, (float(xs[0]), float(xs[-1])), (0.0, 100.0))
        parts = [f"n = {n}"]
        for q, p, (line, _) in zip(PERCENTILES, self._percentiles(), self._lines, strict=True):
            _place(line, p)
            parts.append(f"p{q:g} {p:.2f} ms" if p is not None else f"p{q:g} –")
        if n:
            parts.append(f"max {xs[-1]:.2f} ms")
        self.summary.setText(" · ".join(parts))
        for name, button in self.buttons.items():
            button.setEnabled(self.row_for(name) is not None)

    def _refresh_hist(self) -> None:
        vals, _rows = self.bench.values(self.key)
        if len(vals):
            counts, edges = np.histogram(vals, bins=int(min(60, max(8, np.sqrt(len(vals))))))
            self._bars.setData(edges, counts, stepMode="center", fillLevel=0, brush=_ACCENT)
            settle(self.hist, (float(edges[0]), float(edges[-1])), (0.0, float(counts.max())))
        else:
            self._bars.setData([0, 1], [0], stepMode="center", fillLevel=0)
        for p, (_, line) in zip(self._percentiles(), self._lines, strict=True):
            _place(line, p)


def _place(line: pg.InfiniteLine, value: float | None) -> None:
    line.setVisible(value is not None)
    if value is not None:
        line.setValue(value)


class GapsView(_Clickable):
    """Gaps against position in the stream: per position the p50, p99 and max gap, and each
    request's max gap as a point (click: the frame after the gap)."""

    def __init__(self, data: BenchData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bench = data
        self.plot = themed_plot(
            "Gaps by position — click a point to open the frame after a request's max gap",
            "gap position (token frame n → n+1)",
            "gap ms",
            self,
        )
        self.plot.setToolTip(f"{d.GAPS}\n{d.MAX_GAP}\nLines: the latest {GAP_ROWS} requests.")
        self.plot.addLegend(offset=(-10, 10))
        self._p50 = self.plot.plot(pen=pg.mkPen(_ACCENT, width=2), name="p50")
        self._p99 = self.plot.plot(pen=pg.mkPen(_WARN, width=2), name="p99")
        self._max = self.plot.plot(pen=pg.mkPen(_HOT, width=1), name="max")
        self._points = pg.ScatterPlotItem(size=7, pen=None, brush=pg.mkBrush(_HOT), name="max gap")
        self._points.sigClicked.connect(self._clicked("max_gap"))
        self.plot.addItem(self._points)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def refresh(self) -> None:
        x, p50, p99, top, _counts = self.bench.gap_profile()
        self._p50.setData(x, p50)
        self._p99.setData(x, p99)
        self._max.setData(x, top)
        if len(x):
            settle(self.plot, (1.0, float(x[-1])), (0.0, float(np.max(top))))
        xs, ys, rows = self.bench.max_gap_points()
        self._points.setData(x=xs, y=ys, data=rows)


class ThroughputView(QWidget):
    """Output tokens/s and requests ended/s over the run (0.5 s bins)."""

    def __init__(self, data: BenchData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bench = data
        self.plot = themed_plot(
            "Throughput over time", "seconds since the first send", "tokens/s", self
        )
        self.plot.setToolTip(
            "Each request's output tokens spread evenly from its first to its last token "
            f"frame, in 0.5 s bins.\n{d.OUTPUT_THROUGHPUT}"
        )
        self.plot.addLegend(offset=(-10, 10))
        self._tokens = self.plot.plot(pen=pg.mkPen(_ACCENT, width=2), name="output tokens/s")
        self._ended = self.plot.plot(pen=pg.mkPen(_WARN, width=1), name="requests ended/s × 10")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def refresh(self) -> None:
        t, tokens, ended = self.bench.throughput_series()
        self._tokens.setData(t, tokens)
        self._ended.setData(t, ended * 10.0)
        if len(t):
            settle(
                self.plot, (0.0, float(t[-1])), (0.0, float(max(tokens.max(), ended.max() * 10)))
            )


class SweepView(_Clickable):
    """The sweep curve: TTFT p50 and p99 against output tokens/s, a point per step (click
    a p99 point: that step's p99-TTFT request)."""

    def __init__(self, data: BenchData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bench = data
        self.plot = themed_plot(
            "TTFT against throughput (one point per step)", "output tokens/s", "TTFT ms", self
        )
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.enableAutoRange()  # (a point per step: rarely redrawn)
        self.plot.addLegend(offset=(10, 10))
        self._p50 = self.plot.plot(pen=pg.mkPen(_ACCENT, width=2), symbol="o", name="TTFT p50")
        self._p99 = pg.PlotDataItem(
            pen=pg.mkPen(_HOT, width=2), symbol="s", symbolBrush=_HOT, name="TTFT p99"
        )
        self._p99.sigPointsClicked.connect(self._on_p99_clicked)
        self.plot.addItem(self._p99)
        self._labels: list[pg.TextItem] = []
        self._steps: list[int] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def _on_p99_clicked(self, _item: object, points: Any, *_ev: object) -> None:
        if len(points):
            step = self._steps[int(points[0].index())]
            row = self.bench.row_at_percentile("ttft", 99.0, step)
            if row is not None:
                self.openRequest.emit(row, "ttft")

    def refresh(self) -> None:
        points = self.bench.sweep_points()
        by_label = {label: step for step, label in self.bench.steps.items()}
        with_p50 = [(x, y) for _label, x, y, _ in points if y is not None]
        with_p99 = [(label, x, y) for label, x, _, y in points if y is not None]
        self._p50.setData([p[0] for p in with_p50], [p[1] for p in with_p50])
        self._p99.setData([p[1] for p in with_p99], [p[2] for p in with_p99])
        self._steps = [by_label[p[0]] for p in with_p99]
        for label in self._labels:
            self.plot.removeItem(label)
        self._labels = []
        for label, x, y in with_p99:
            text = pg.TextItem(
                label, anchor=(0, 1), color=self.palette().color(QPalette.ColorRole.WindowText)
            )
            text.setPos(x, y)
            self.plot.addItem(text)
            self._labels.append(text)
