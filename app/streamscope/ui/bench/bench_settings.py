"""The Bench window's settings: the load (closed or open loop, sweep), how long, the prompt —
the same choices as ``streamscope bench``'s flags, turned into
:class:`~streamscope.core.bench.load.LoadStep` values."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from streamscope.core.bench.load import LoadStep

__all__ = ["DEMO_BENCH_MODEL", "BenchSettings", "SettingsError"]

DEMO_BENCH_MODEL = "demo-bench?ttft=200&itl=20&tokens=64"
"""The model a bench of the built-in demo starts with (see the README's demo-bench table)."""

DEFAULT_PROMPT = "Write a short story about a lighthouse."


class SettingsError(ValueError):
    """A setting that cannot be run (the message names it)."""


def _spin(low: int, high: int, value: int, parent: QWidget, special: str = "") -> QSpinBox:
    box = QSpinBox(parent)
    box.setRange(low, high)
    box.setValue(value)
    if special:
        box.setSpecialValueText(special)
    return box


class BenchSettings(QWidget):
    """See the module docstring. Every field has the CLI flag it matches as its tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QLineEdit(self)
        self.model.setToolTip("--model: the model sent in each request.")
        self.prompt = QLineEdit(DEFAULT_PROMPT, self)
        self.prompt.setToolTip("--prompt: the user message of every request.")
        self.mode = QComboBox(self)
        self.mode.addItem("Closed loop: concurrency", "closed")
        self.mode.addItem("Open loop: request rate", "open")
        self.mode.setToolTip(
            "Closed loop (--concurrency C): C workers, each sends its next request when the "
            "last ends. Open loop (--rate R): requests on a precomputed schedule, whatever "
            "the endpoint does; latency is also counted from the scheduled time."
        )
        self.concurrency = _spin(1, 1024, 4, self)
        self.concurrency.setToolTip("--concurrency: requests in flight at once.")
        self.rate = QDoubleSpinBox(self)
        self.rate.setRange(0.01, 10_000.0)
        self.rate.setValue(4.0)
        self.rate.setSuffix(" /s")
        self.rate.setToolTip("--rate: requests per second (open loop).")
        self.arrival = QComboBox(self)
        self.arrival.addItems(["poisson", "constant", "gamma"])
        self.arrival.setToolTip("--arrival: how the open loop's requests are spaced.")
        self.burstiness = QDoubleSpinBox(self)
        self.burstiness.setRange(0.01, 100.0)
        self.burstiness.setValue(1.0)
        self.burstiness.setToolTip("--burstiness: gamma's shape (1 = Poisson; < 1 burstier).")
        self.seed = _spin(0, 2**31 - 1, 0, self)
        self.seed.setToolTip("--seed: the open loop's schedule is the same for the same seed.")
        self.cap = _spin(0, 100_000, 0, self, special="no limit")
        self.cap.setToolTip("--max-in-flight: open loop, at most this many in flight.")
        self.requests = _spin(1, 1_000_000, 64, self)
        self.requests.setToolTip("--requests: measured requests per step (warm-up not counted).")
        self.warmup = _spin(0, 10_000, 0, self)
        self.warmup.setToolTip("--warmup: requests sent first and kept out of the figures.")
        self.max_tokens = _spin(0, 1_000_000, 0, self, special="endpoint's")
        self.max_tokens.setToolTip("--max-tokens: the output cap sent with each request.")
        self.sweep = QLineEdit(self)
        self.sweep.setPlaceholderText("e.g. 1,2,4,8 (a step per value)")
        self.sweep.setToolTip(
            "--sweep / --sweep-rates: a step per value (concurrencies, or rates in the open "
            "loop), one report, a TTFT-against-throughput curve."
        )
        self.connection = QComboBox(self)
        self.connection.addItem("pooled (a connection per worker)", "pooled")
        self.connection.addItem("new (a connection per request)", "new")
        self.connection.setToolTip("--connection: keep each worker's connection, or open anew.")
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Model", self.model)
        form.addRow("Prompt", self.prompt)
        form.addRow("Load", self.mode)
        form.addRow("Concurrency", self.concurrency)
        form.addRow("Rate", self.rate)
        form.addRow("Arrival", self.arrival)
        form.addRow("Burstiness", self.burstiness)
        form.addRow("Seed", self.seed)
        form.addRow("In flight at most", self.cap)
        form.addRow("Requests", self.requests)
        form.addRow("Warm-up", self.warmup)
        form.addRow("Max tokens", self.max_tokens)
        form.addRow("Sweep", self.sweep)
        form.addRow("Connections", self.connection)
        self._form = form
        self.mode.currentIndexChanged.connect(self._show_mode)
        self._show_mode()

    @property
    def closed_loop(self) -> bool:
        return bool(self.mode.currentData() == "closed")

    def _show_mode(self, *_: object) -> None:
        closed = self.closed_loop
        self._form.setRowVisible(self.concurrency, closed)
        opened: tuple[QWidget, ...] = (
            self.rate,
            self.arrival,
            self.burstiness,
            self.seed,
            self.cap,
        )
        for widget in opened:
            self._form.setRowVisible(widget, not closed)

    def sweep_values(self) -> list[float]:
        text = self.sweep.text().strip()
        if not text:
            return []
        try:
            values = [float(part) for part in text.replace(";", ",").split(",") if part.strip()]
        except ValueError:
            raise SettingsError(f"Sweep: {text!r} is not a list of numbers") from None
        if not values or any(v <= 0 for v in values):
            raise SettingsError("Sweep: every value must be above 0")
        if self.closed_loop and any(v != int(v) for v in values):
            raise SettingsError("Sweep: concurrencies are whole numbers")
        return values

    def steps(self) -> list[LoadStep]:
        """The run's steps; :class:`SettingsError` when a setting cannot be run."""
        connection = self.connection.currentData()
        common = {
            "requests": self.requests.value(),
            "warmup": self.warmup.value(),
            "connection": connection,
        }
        values = self.sweep_values()
        if self.closed_loop:
            return [
                LoadStep(concurrency=int(c), **common)
                for c in (values or [self.concurrency.value()])
            ]
        return [
            LoadStep(
                rate=r,
                arrival=self.arrival.currentText(),  # type: ignore[arg-type]
                burstiness=self.burstiness.value(),
                seed=self.seed.value(),
                cap=self.cap.value() or None,
                **common,
            )
            for r in (values or [self.rate.value()])
        ]

    def prompt_text(self) -> str:
        text = self.prompt.text().strip()
        if not text:
            raise SettingsError("Prompt: say something to send")
        return text

    def model_name(self) -> str:
        text = self.model.text().strip()
        if not text:
            raise SettingsError("Model: name the model to bench")
        return text
