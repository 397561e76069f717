"""The endpoint dialog's "Context sent" row: how much of the conversation each request sends
(:class:`~streamscope.core.wire.context.ContextPolicy`): the whole conversation, the last N
exchanges, or a size budget."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QSpinBox, QWidget

from streamscope.core.wire.context import POLICY_KINDS, ContextPolicy, PolicyKind

__all__ = ["ContextPolicyBox"]

_LABELS: dict[PolicyKind, str] = {
    "all": "Whole conversation",
    "exchanges": "Last exchanges",
    "budget": "Size budget",
}
_DEFAULTS: dict[PolicyKind, int] = {"all": 0, "exchanges": 50, "budget": 200}
"""What the number starts at when a kind is picked (exchanges; KB)."""

TIP = (
    "How much of the conversation each request sends. A cut falls only between exchanges (a"
    " message of yours and everything answering it), so what is sent always opens with one of"
    " your messages. The composer and the Inspector's Request tab say what was left out."
)


class ContextPolicyBox(QWidget):
    """A kind (combo box) and its number (exchanges, or KB of message text)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = QComboBox(self)
        for kind in POLICY_KINDS:
            self.kind.addItem(_LABELS[kind], kind)
        self.kind.setToolTip(TIP)
        self.kind.setAccessibleName("Context sent")
        self.number = QSpinBox(self)
        self.number.setRange(1, 10_000_000)
        self.number.setMaximumWidth(150)
        self.number.setAccessibleName("Context limit")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.kind)
        row.addWidget(self.number)
        row.addStretch(1)
        self.kind.currentIndexChanged.connect(self._on_kind_currentIndexChanged)
        self.load(ContextPolicy())

    def load(self, policy: ContextPolicy) -> None:
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(POLICY_KINDS.index(policy.kind))
        self.kind.blockSignals(False)
        shown = policy.limit // 1024 if policy.kind == "budget" else policy.limit
        self._show_kind(policy.kind, max(1, shown) if policy.kind != "all" else None)

    def policy(self) -> ContextPolicy:
        kind: PolicyKind = self.kind.currentData()
        if kind == "all":
            return ContextPolicy()
        limit = self.number.value() * (1024 if kind == "budget" else 1)
        return ContextPolicy(kind, limit)

    def _show_kind(self, kind: PolicyKind, value: int | None) -> None:
        self.number.setVisible(kind != "all")
        self.number.setSuffix(" KB of text" if kind == "budget" else " exchanges")
        if value is not None:
            self.number.setValue(value)

    def _on_kind_currentIndexChanged(self, _index: int) -> None:
        kind: PolicyKind = self.kind.currentData()
        self._show_kind(kind, _DEFAULTS[kind] or None)
