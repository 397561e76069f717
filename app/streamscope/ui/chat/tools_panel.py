"""The Tools panel: function definitions sent with each request of a conversation.

An enable switch, a monospace JSON editor validated as you type (green "2 tools: get_weather,
get_time" or red "line 3, column 7: Expecting ',' delimiter"), and "Insert examples".
``tools()`` is what the next request offers: empty when disabled or invalid.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from streamscope.core.wire.conversation import ToolDefinition
from streamscope.core.wire.tools import (
    EXAMPLE_TOOLS_JSON,
    ToolDefinitionError,
    parse_tool_definitions,
    tools_to_json,
)
from streamscope.ui.base.theme import set_text_colour

__all__ = ["ToolsPanel"]

_OK = "ok_window"
_BAD = "error_window"
_PLACEHOLDER = (
    "[\n"
    '  {"type": "function", "function": {"name": "get_weather", "description": "...",\n'
    '   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}\n'
    "]"
)


class ToolsPanel(QWidget):
    """Edit the tool definitions of one conversation.

    ``toolsChanged`` is emitted whenever what :meth:`tools` returns may have changed
    (enable switch toggled, text edited).
    """

    toolsChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tools: list[ToolDefinition] = []
        self._error: ToolDefinitionError | None = None

        self.enable_check = QCheckBox("Send tools with each request")
        self.examples_button = QPushButton("Insert examples")
        self.examples_button.setToolTip("get_weather(city, unit) and get_time(timezone)")
        self.editor = QPlainTextEdit()
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setPlaceholderText(_PLACEHOLDER)
        self.editor.setTabChangesFocus(False)
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.status = QLabel()
        self.status.setWordWrap(True)

        top = QHBoxLayout()
        top.addWidget(self.enable_check)
        top.addStretch(1)
        top.addWidget(self.examples_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.status)

        self.enable_check.toggled.connect(self._on_enable_check_toggled)
        self.editor.textChanged.connect(self._on_editor_text_changed)
        self.examples_button.clicked.connect(self._on_examples_button_clicked)
        self._revalidate()

    # --- public API --------------------------------------------------------------------------

    def tools(self) -> list[ToolDefinition]:
        """The definitions to send: empty when disabled or when the JSON is invalid."""
        if not self.enable_check.isChecked() or self._error is not None:
            return []
        return list(self._tools)

    def is_enabled(self) -> bool:
        return self.enable_check.isChecked()

    def set_enabled(self, enabled: bool) -> None:
        self.enable_check.setChecked(enabled)

    def error(self) -> ToolDefinitionError | None:
        """The current validation error, if any."""
        return self._error

    def tools_json(self) -> str:
        """The editor's text (for saving with the conversation)."""
        return self.editor.toPlainText()

    def set_tools_json(self, text: str) -> None:
        """Replace the editor's text (validates, emits ``toolsChanged``)."""
        self.editor.setPlainText(text)

    def set_tools(self, tools: list[ToolDefinition]) -> None:
        """Show ``tools`` as pretty JSON and enable the panel when there are any."""
        self.set_tools_json(tools_to_json(tools) if tools else "")
        self.enable_check.setChecked(bool(tools))

    # --- handlers ------------------------------------------------------------------------------

    def _on_examples_button_clicked(self) -> None:
        self.set_tools_json(EXAMPLE_TOOLS_JSON)
        self.enable_check.setChecked(True)

    def _on_enable_check_toggled(self, _enabled: bool) -> None:
        self._show_status()
        self.toolsChanged.emit()

    def _on_editor_text_changed(self) -> None:
        self._revalidate()
        self.toolsChanged.emit()

    def _revalidate(self) -> None:
        try:
            self._tools = parse_tool_definitions(self.editor.toPlainText())
        except ToolDefinitionError as exc:
            self._tools, self._error = [], exc
        else:
            self._error = None
        self._show_status()

    def _show_status(self) -> None:
        if self._error is not None:
            self.status.setText(f"✗ {self._error}")
            set_text_colour(self.status, _BAD)
            return
        if not self._tools:
            self.status.setText("No tools defined. “Insert examples” adds two.")
            self.status.setStyleSheet("")
            return
        names = ", ".join(t.name for t in self._tools)
        count = f"{len(self._tools)} tool{'s' if len(self._tools) != 1 else ''}"
        off = "" if self.enable_check.isChecked() else " (not sent: tools are off)"
        self.status.setText(f"✓ {count}: {names}{off}")
        set_text_colour(self.status, _OK)

    def move_cursor_to_error(self) -> None:
        """Put the editor's cursor where the JSON error is (when it has a position)."""
        err = self._error
        if err is None or err.line is None:
            return
        block = self.editor.document().findBlockByLineNumber(err.line - 1)
        cursor = QTextCursor(block)
        cursor.movePosition(
            QTextCursor.MoveOperation.Right,
            QTextCursor.MoveMode.MoveAnchor,
            max(0, (err.column or 1) - 1),
        )
        self.editor.setTextCursor(cursor)
        self.editor.setFocus()
