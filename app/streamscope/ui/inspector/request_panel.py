"""The Request tab: what was sent and what came back, with every secret masked.

Everything shown passes through :func:`~streamscope.core.redact.redact_url` and
:func:`~streamscope.core.redact.redact_headers` first; the raw spec never reaches a widget.
A response body that was no stream (an HTTP error's JSON, a proxy's HTML page) is shown
under the response headers — the provider's error fields, then the body as text — and as a
hex dump; it is the body row of the Frames table (scrubbed by the client, like the capture).
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.redact import MASK, redact_headers, redact_url
from streamscope.core.turn.error_body import header, pretty_body, read_body
from streamscope.core.turn.outcome import format_bytes
from streamscope.core.wire.context import ContextCut, body_messages
from streamscope.ui.base.theme import monospace_font
from streamscope.ui.chat.turn_start import TurnStart
from streamscope.ui.inspector.frame_detail import MAX_DETAIL_BYTES, hex_dump

__all__ = ["RequestPanel", "body_text", "pretty_body"]

_KINDS = {"json": "JSON", "html": "HTML", "text": "text", "empty": "empty"}

REQUEST_HINT = "The request appears here when a turn starts."
RESPONSE_HINT = "Waiting for the response headers."


def body_text(body: bytes, headers: Iterable[tuple[str, str]]) -> str:
    """What the Response pane shows under the headers for a body that was no stream: the
    error fields (``name: value``), then ``Body · JSON · 133 B`` and the body as text."""
    items = list(headers)
    read = read_body(body, items)
    lines: list[str] = []
    if read.fields:
        width = max(len(name) for name, _ in read.fields)
        lines += ["Error fields", *(f"  {n.ljust(width)}  {v}" for n, v in read.fields), ""]
    ctype = header(items, "content-type")
    what = f"{_KINDS[read.kind]} ({ctype})" if ctype else _KINDS[read.kind]
    lines += [f"Body · {what} · {format_bytes(len(body))}", read.text]
    return "\n".join(lines)


def sent_summary(body: bytes, context: ContextCut | None) -> str:
    """The Request tab's line on what was sent: ``Sent 201 of 727 messages · 402.3 KB —
    policy: last 100 exchanges · body 431.0 KB`` (how the context was cut, when the request
    was built from a conversation), else what the body says (``Sent 12 messages · body 4.1
    KB``)."""
    size = f"body {format_bytes(len(body))}"
    if context is not None:
        return f"Sent {context.summary()} · {size}"
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        parsed = None
    count = body_messages(parsed) if isinstance(parsed, dict) else None
    if count is None:
        return f"Sent {size}"
    return f"Sent {count} message{'s' if count != 1 else ''} · {size}"


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
    """Request line, headers and body above; response status, headers and (when it was no
    stream) body below, as text and hex."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        mono = monospace_font()  # (its size follows the text zoom)
        self.request_view = QPlainTextEdit(self)
        self.response_view = QPlainTextEdit(self)
        self.body_hex = QPlainTextEdit(self)
        for view in (self.request_view, self.response_view, self.body_hex):
            view.setReadOnly(True)
            view.setFont(mono)
            view.setUndoRedoEnabled(False)
        self.body_hex.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.request_view.setPlaceholderText(REQUEST_HINT)
        self.response_view.setPlaceholderText(RESPONSE_HINT)
        self.body_hex.setPlaceholderText("The body of a response that was no stream, in hex.")
        self.response_tabs = QTabWidget(self)
        self.response_tabs.setDocumentMode(True)
        self.response_tabs.addTab(self.response_view, "Text")
        self.response_tabs.addTab(self.body_hex, "Body hex")
        self.response_tabs.setTabEnabled(1, False)
        self.sent_label = QLabel(self)  # what the request carried of the conversation
        self.sent_label.setWordWrap(True)
        self.sent_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.sent_label.hide()
        request = QWidget(self)
        box = QVBoxLayout(request)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.sent_label)
        box.addWidget(self.request_view, 1)
        self.split = QSplitter(Qt.Orientation.Vertical, self)
        self.split.addWidget(_titled("Request", request))
        self.split.addWidget(_titled("Response", self.response_tabs))
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 1)
        self.split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.split)
        self.headers: list[tuple[str, str]] | None = None
        """The response headers, once they arrived (``None``: no response yet)."""

    def show_request(self, start: TurnStart) -> None:
        spec = start.spec
        text = (
            f"{spec.method} {redact_url(spec.url)}\n"
            f"{_header_lines(spec.headers.items())}\n\n"
            f"{pretty_body(start.body)}"
        )
        self.request_view.setPlainText(text)
        self.sent_label.setText(sent_summary(start.body, spec.context))
        self.sent_label.show()
        self.response_view.clear()
        self.body_hex.clear()
        self.response_tabs.setCurrentIndex(0)
        self.response_tabs.setTabEnabled(1, False)
        self.headers = None
        self.request_view.setPlaceholderText(REQUEST_HINT)
        self.response_view.setPlaceholderText(RESPONSE_HINT)

    def clear(self, message: str = "") -> None:
        """Show no request (``message``: why, in place of the usual hints)."""
        self.request_view.clear()
        self.sent_label.clear()
        self.sent_label.hide()
        self.response_view.clear()
        self.body_hex.clear()
        self.response_tabs.setCurrentIndex(0)
        self.response_tabs.setTabEnabled(1, False)
        self.headers = None
        self.request_view.setPlaceholderText(message or REQUEST_HINT)
        self.response_view.setPlaceholderText(message or RESPONSE_HINT)

    def show_response(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.headers = list(headers)
        self.response_view.setPlainText(f"HTTP {status}\n{_header_lines(headers)}")

    def show_body(self, body: bytes) -> None:
        """The response was no stream: show its body (already scrubbed) under the headers,
        and in hex; the Response half grows to show it."""
        text = body_text(body, self.headers or [])
        self.response_view.appendPlainText(f"\n{text}")
        self.response_view.moveCursor(self.response_view.textCursor().MoveOperation.Start)
        shown = body[:MAX_DETAIL_BYTES]
        more = len(body) - len(shown)
        note = f"\n… {more:,} more bytes (the Frames tab's body row has them all)" if more else ""
        self.body_hex.setPlainText(hex_dump(shown, []).text + note)
        self.response_tabs.setTabEnabled(1, True)
        total = sum(self.split.sizes()) or 3  # (not laid out yet: the ratio is kept)
        self.split.setSizes([total // 3, total - total // 3])

    def show_no_response(self, reason: str) -> None:
        """The turn ended before any response arrived (refused, DNS, TLS, timeout …)."""
        self.response_view.setPlainText(f"No response\n{reason}" if reason else "No response")

    def texts(self) -> list[str]:
        """Everything this tab shows (for checks that no secret leaks)."""
        return [
            self.request_view.toPlainText(),
            self.response_view.toPlainText(),
            self.body_hex.toPlainText(),
            self.sent_label.text(),
        ]


def _titled(title: str, widget: QWidget) -> QWidget:
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(2)
    layout.addWidget(QLabel(f"<b>{title}</b>", box))
    layout.addWidget(widget, 1)
    return box
