"""How the chat's parts answer each other in the window: the composer sends, stops,
regenerates and edits through the controller; the controller's state enables the composer's
buttons, lists a new conversation and says the context sent; the endpoint bar names the
window and pages the answers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel

    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.composer import Composer
    from streamscope.ui.chat.conversation_switcher import ConversationSwitcher
    from streamscope.ui.chat.conversations_panel import ConversationsPanel
    from streamscope.ui.chat.tools_panel import ToolsPanel
    from streamscope.ui.endpoint.endpoint_bar import EndpointBar

__all__ = ["ChatParts", "ChatWiring"]


class ChatParts(Protocol):
    """The window's parts the wiring connects."""

    controller: ChatController
    composer: Composer
    endpoint_bar: EndpointBar
    conversations: ConversationsPanel
    tools_panel: ToolsPanel
    switcher: ConversationSwitcher
    tls_label: QLabel

    def setWindowTitle(self, title: str) -> None: ...


class ChatWiring(QObject):
    """Connects ``w``'s chat parts (see the module docstring)."""

    def __init__(self, w: ChatParts, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._w = w
        w.switcher.opened.connect(self._update_alternatives)
        w.endpoint_bar.endpointChanged.connect(self._on_endpoint_bar_endpoint_changed)
        w.endpoint_bar.alternativeStepped.connect(self._on_endpoint_bar_alternative_stepped)
        self._on_endpoint_bar_endpoint_changed()
        w.tools_panel.toolsChanged.connect(self._on_tools_panel_tools_changed)
        composer, controller = w.composer, w.controller
        composer.sendRequested.connect(controller.send)
        composer.stopRequested.connect(controller.stop)
        composer.regenerateRequested.connect(controller.regenerate)
        composer.editLastRequested.connect(self._on_composer_edit_last)
        composer.editCancelRequested.connect(controller.cancel_edit)
        controller.editingChanged.connect(self._on_controller_editing_changed)
        controller.busyChanged.connect(self._on_controller_busy_changed)
        controller.elsewhereChanged.connect(composer.show_elsewhere)
        controller.historyChanged.connect(self._on_controller_history_changed)

    def _on_endpoint_bar_endpoint_changed(self) -> None:
        ep = self._w.endpoint_bar.current_endpoint()
        self._w.setWindowTitle(f"StreamScope — {ep.name} · {ep.model}")
        self._w.tls_label.setVisible(not ep.tls_verify)
        self._show_context()

    def _show_context(self) -> None:
        """The composer says what the next message sends when the endpoint's policy limits
        it (the whole stored conversation otherwise: nothing to say)."""
        policy = self._w.endpoint_bar.current_endpoint().context_policy
        session = self._w.controller.session
        self._w.composer.show_context(None if policy.kind == "all" else session.next_cut(policy))

    def _update_alternatives(self) -> None:
        """The pagers sit on the answers they page (every step's, kept by the controller),
        not on the toolbar."""
        chosen, _count = self._w.controller.history.alternatives()
        self._w.endpoint_bar.show_alternatives(chosen, 0)
        self._w.controller.sync_answer_pagers()

    def _on_endpoint_bar_alternative_stepped(self, step: int) -> None:
        chosen, _count = self._w.controller.history.alternatives()
        self._w.controller.choose_alternative(chosen + step)
        self._update_alternatives()

    def _on_tools_panel_tools_changed(self) -> None:
        self._w.controller.session.set_tools(self._w.tools_panel.tools())

    def _on_composer_edit_last(self) -> None:
        text = self._w.controller.edit_last()
        if text is not None:
            self._w.composer.begin_edit(text)

    def stop_or_cancel_edit(self) -> None:
        """Esc: stop the stream, or — editing, with nothing streaming — cancel the edit."""
        if not self._w.controller.busy and self._w.controller.history.editing:
            self._w.controller.cancel_edit()  # (Esc outside the box while editing)
        else:
            self._w.controller.stop()

    def _on_controller_editing_changed(self, editing: bool) -> None:
        if not editing:
            self._w.composer.end_edit()

    def _on_controller_busy_changed(self, busy: bool) -> None:
        self._w.composer.set_running(busy)
        self._w.endpoint_bar.endpoint_combo.setEnabled(not busy)
        live = self._w.controller.live_session.conversation_id
        self._w.conversations.set_busy(busy, live)  # usable while a turn streams, it marked
        if busy:  # a new conversation is listed as its first turn starts, not as it ends
            self._list_open_conversation()
        if not busy:
            self._w.composer.set_history(
                has_answer=self._w.controller.history.alternatives()[1] > 0
            )
            self._update_alternatives()

    def _on_controller_history_changed(self) -> None:
        self._list_open_conversation()
        self._update_alternatives()
        self._show_context()

    def _list_open_conversation(self) -> None:
        session = self._w.controller.session
        if session.conversation_id is not None and session.conversation_id not in (
            self._w.conversations.ids()
        ):
            self._w.conversations.set_current(session.conversation_id)
        self._update_alternatives()
        self._w.composer.set_history(has_answer=self._w.controller.history.alternatives()[1] > 0)
