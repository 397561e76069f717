"""The endpoint dialog's Request tab: system prompt, sampling, ``include_usage``, the extra
body (JSON) and how much of the conversation each request sends."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.net.endpoints import Endpoint
from streamscope.ui.base.theme import set_text_colour
from streamscope.ui.endpoint.context_policy_box import ContextPolicyBox
from streamscope.ui.endpoint.endpoint_tabs import BAD, OK, page_form

__all__ = ["RequestTab"]


class RequestTab(QWidget):
    """System prompt, temperature, max tokens, ``include_usage``, the extra body (JSON) and
    how much of the conversation is sent."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        form = page_form(self)
        self.system_edit = QPlainTextEdit()
        self.system_edit.setPlaceholderText("Optional system prompt")
        self.system_edit.setFixedHeight(90)
        self.temperature_check = QCheckBox("Temperature")
        self.temperature_spin = QDoubleSpinBox()
        self.temperature_spin.setRange(0.0, 2.0)
        self.temperature_spin.setSingleStep(0.1)
        self.temperature_spin.setDecimals(2)
        self.temperature_spin.setValue(1.0)
        self.temperature_spin.setMaximumWidth(150)
        self.max_tokens_check = QCheckBox("Max tokens")
        self.max_tokens_spin = QSpinBox()
        self.max_tokens_spin.setRange(1, 10_000_000)
        self.max_tokens_spin.setValue(4096)
        self.max_tokens_spin.setMaximumWidth(150)
        self.include_usage_check = QCheckBox(
            "Send stream_options.include_usage (OpenAI chat; some servers reject it)"
        )
        self.extra_body_edit = QPlainTextEdit()
        self.extra_body_edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.extra_body_edit.setPlaceholderText(
            '{"top_p": 0.9}   (merged into the body; null removes)'
        )
        self.extra_body_edit.setFixedHeight(110)
        self.context_box = ContextPolicyBox()
        self.extra_body_status = QLabel()
        extra_box = QVBoxLayout()
        extra_box.addWidget(self.extra_body_edit)
        extra_box.addWidget(self.extra_body_status)
        self.temperature_check.toggled.connect(self.temperature_spin.setEnabled)
        self.max_tokens_check.toggled.connect(self.max_tokens_spin.setEnabled)
        form.addRow("System prompt", self.system_edit)
        form.addRow(self.temperature_check, self.temperature_spin)
        form.addRow(self.max_tokens_check, self.max_tokens_spin)
        form.addRow("", self.include_usage_check)
        form.addRow("Extra body", extra_box)
        form.addRow("Context sent", self.context_box)

    def load(self, ep: Endpoint) -> None:
        self.system_edit.setPlainText(ep.system_prompt)
        self.temperature_check.setChecked(ep.temperature is not None)
        self.temperature_spin.setValue(ep.temperature if ep.temperature is not None else 1.0)
        self.temperature_spin.setEnabled(ep.temperature is not None)
        self.max_tokens_check.setChecked(ep.max_tokens is not None)
        self.max_tokens_spin.setValue(ep.max_tokens or 4096)
        self.max_tokens_spin.setEnabled(ep.max_tokens is not None)
        self.include_usage_check.setChecked(ep.include_usage)
        body = json.dumps(dict(ep.extra_body), indent=2) if ep.extra_body else ""
        self.extra_body_edit.setPlainText(body)
        self.context_box.load(ep.context_policy)

    def extra_body(self) -> dict[str, Any]:
        """The extra body as typed; ``ValueError`` when it is not a JSON object."""
        text = self.extra_body_edit.toPlainText().strip()
        if not text:
            return {}
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("must be a JSON object")
        return value

    def extra_body_problem(self) -> str | None:
        """Why the extra body is not acceptable (``None``: it is)."""
        try:
            self.extra_body()
        except ValueError as exc:
            if isinstance(exc, json.JSONDecodeError):
                return f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
            return str(exc)
        return None

    def show_extra_body_status(self) -> None:
        problem = self.extra_body_problem()
        if problem is not None:
            self.extra_body_status.setText(f"✗ {problem}")
            set_text_colour(self.extra_body_status, BAD)
        else:
            text = self.extra_body_edit.toPlainText().strip()
            self.extra_body_status.setText("✓ valid JSON object" if text else "")
            set_text_colour(self.extra_body_status, OK)

    def edited(self, ep: Endpoint) -> Endpoint:
        """``ep`` with this tab's fields (its own extra body while the typed one is invalid)."""
        try:
            extra_body = self.extra_body()
        except ValueError:
            extra_body = dict(ep.extra_body)
        return replace(
            ep,
            system_prompt=self.system_edit.toPlainText(),
            temperature=self.temperature_spin.value()
            if self.temperature_check.isChecked()
            else None,
            max_tokens=self.max_tokens_spin.value() if self.max_tokens_check.isChecked() else None,
            include_usage=self.include_usage_check.isChecked(),
            extra_body=extra_body,
            context_policy=self.context_box.policy(),
        )
