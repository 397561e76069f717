"""The Request tab: what was sent and what came back, with every secret masked.

Everything shown passes through :func:`~streamscope.core.redact.redact_url` and
:func:`~streamscope.core.redact.redact_headers` first; the raw spec never reaches a widget.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

from streamscope.core.redact import MASK, redact_headers, redact_url
from streamscope.ui.turn_runner import TurnStart

__all__ = ["RequestPanel", "pretty_body"]

REQUEST_HINT = "The request appears here when a turn starts."
RESPONSE_HINT = "Waiting for the response headers."


def pretty_body(body: bytes) -> str:
    """The body as indented JSON, or as text when it is not JSON."""
    if not body:
        return "(empty body)"
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return body.decode("utf-8", "replace")


def _header_lines(headers: Iterable[tuple[str, str]]) -> str:
    """One ``name: value`` line per header, secrets masked, repeated headers kept."""
    lines = []
    for name, value in headers:
        for shown_name, shown in redact_headers([(name, value)]).items():
            if shown_name.lower() == "set-cookie":
                shown = MASK
            lines.append(f"{shown_name}: {shown}")
    return "\n".join(lines)


class RequestPanel(QWidget):
    """Request line, headers and body above; response status and headers below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.request_view = QPlainTextEdit(self)
        self.response_view = QPlainTextEdit(self)
        for view in (self.request_view, self.response_view):
            view.setReadOnly(True)
            view.setFont(mono)
            view.setUndoRedoEnabled(False)
        self.request_view.setPlaceholderText(REQUEST_HINT)
        self.response_view.setPlaceholderText(RESPONSE_HINT)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(_titled("Request", self.request_view))
        split.addWidget(_titled("Response", self.response_view))
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(split)

    def show_request(self, start: TurnStart) -> None:
        spec = start.spec
        text = (
            f"{spec.method} {redact_url(spec.url)}\n"
            f"{_header_lines(spec.headers.items())}\n\n"
            f"{pretty_body(start.body)}"
        )
        self.request_view.setPlainText(text)
        self.response_view.clear()
        self.request_view.setPlaceholderText(REQUEST_HINT)
        self.response_view.setPlaceholderText(RESPONSE_HINT)

    def clear(self, message: str = "") -> None:
        """Show no request (``message``: why, in place of the usual hints)."""
        self.request_view.clear()
        self.response_view.clear()
        self.request_view.setPlaceholderText(message or REQUEST_HINT)
        self.response_view.setPlaceholderText(message or RESPONSE_HINT)

    def show_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.response_view.setPlainText(f"HTTP {status}\n{_header_lines(headers)}")

    def texts(self) -> list[str]:
        """Everything this tab shows (for checks that no secret leaks)."""
        return [self.request_view.toPlainText(), self.response_view.toPlainText()]


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(QLabel(f"<b>{title}</b>", box))
    layout.addWidget(widget, 1)
    return box
