"""The main window's menu bar, and the actions that reach its parts from the keyboard (Chat
menu, Go to …): made from what the window holds, its keys from the shortcuts table."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDialog, QMainWindow, QMenu, QWidget

from streamscope import __version__
from streamscope.core import paths
from streamscope.ui.base import shortcuts
from streamscope.ui.base.shortcuts import bind

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget

    from streamscope.ui.base.theme import ThemeManager
    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.chat_view import ChatView
    from streamscope.ui.chat.composer import Composer
    from streamscope.ui.chat.conversation_switcher import ConversationSwitcher
    from streamscope.ui.chat.conversations_panel import ConversationsPanel
    from streamscope.ui.endpoint.endpoint_bar import EndpointBar
    from streamscope.ui.inspector.inspector import InspectorPanel
    from streamscope.ui.shell.file_actions import FileActions

__all__ = ["HelpMenu", "MenuWindow", "build_menus"]


class MenuWindow(Protocol):
    """What the menus reach in the window (the window's parts and commands)."""

    switcher: ConversationSwitcher
    files: FileActions
    endpoint_bar: EndpointBar
    theme: ThemeManager
    composer: Composer
    controller: ChatController
    conversations: ConversationsPanel
    chat: ChatView
    inspector: InspectorPanel
    conversations_dock: QDockWidget
    tapped_dock: QDockWidget
    inspector_dock: QDockWidget
    tools_dock: QDockWidget

    def open_tap_dialog(self) -> object: ...

    def stop_or_cancel_edit(self) -> None: ...


def build_menus(window: QMainWindow, parts: MenuWindow) -> HelpMenu:
    """The menu bar of ``window``: File, Chat, Endpoint, View, Help (the Stream menu comes
    later, with the power tools, before Help); ``parts``: what its actions reach (the window
    itself). Returns the Help menu's."""
    menu = window.menuBar()
    file_menu = menu.addMenu("&File")
    new_action = shortcuts.bind(QAction("&New conversation", window), "new_conversation")
    new_action.triggered.connect(parts.switcher.new_conversation)
    file_menu.addAction(new_action)
    file_menu.addSeparator()
    for text, slot in (
        ("Open capture…", parts.files.open_capture_dialog),
        ("Save capture of the last turn…", parts.files.save_capture),
        ("Export repro bundle of the last turn…", parts.files.export_bundle),
        ("Export as HAR…", parts.files.export_har),
        # (a lambda: triggered's ``checked`` is no conversation id)
        ("Export conversation as HAR…", lambda: parts.files.export_conversation_har()),
        ("Import HAR…", parts.files.import_har_dialog),
    ):
        action = QAction(text, window)
        action.triggered.connect(slot)
        file_menu.addAction(action)
    file_menu.addSeparator()
    quit_action = shortcuts.bind(QAction("&Quit", window), "quit")
    quit_action.triggered.connect(window.close)
    file_menu.addAction(quit_action)
    add_chat_menu(window, parts)
    endpoint_menu = menu.addMenu("&Endpoint")
    edit = QAction("&Edit current endpoint…", window)
    edit.triggered.connect(parts.endpoint_bar.edit_endpoint)
    manage = QAction("Endpoints…", window)
    manage.triggered.connect(parts.endpoint_bar.manage_endpoints)
    endpoint_menu.addAction(edit)
    endpoint_menu.addAction(manage)
    endpoint_menu.addSeparator()
    tap = QAction("&Tap another app…", window)
    tap.triggered.connect(parts.open_tap_dialog)
    endpoint_menu.addAction(tap)
    view = menu.addMenu("&View")
    for dock in (
        parts.conversations_dock,
        parts.tapped_dock,
        parts.inspector_dock,
        parts.tools_dock,
    ):
        view.addAction(dock.toggleViewAction())
    parts.theme.add_actions(view, window, zoomed=(parts.chat, parts.inspector))
    view.addSeparator()
    add_go_to_actions(window, parts, view)
    return HelpMenu(window)


class HelpMenu(QObject):
    """Help: the keyboard shortcuts (one dialog, raised when asked again), the log folder,
    About."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self._window = window
        self.shortcuts_dialog: QDialog | None = None
        self.log_folder_dialog: QDialog | None = None
        self.menu = window.menuBar().addMenu("&Help")
        keys = shortcuts.bind(QAction("&Keyboard shortcuts", window), "shortcuts")
        keys.triggered.connect(self.show_shortcuts)
        logs = QAction("Open &log folder", window)
        logs.triggered.connect(self.open_log_folder)
        about = QAction("&About StreamScope", window)
        about.triggered.connect(self.about)
        self.menu.addActions([keys, logs, about])

    def show_shortcuts(self) -> QDialog:
        if self.shortcuts_dialog is None:
            self.shortcuts_dialog = shortcuts.ShortcutsDialog(self._window)
        self.shortcuts_dialog.show()
        self.shortcuts_dialog.raise_()
        return self.shortcuts_dialog

    def open_log_folder(self) -> None:
        from streamscope.ui.shell.log_folder import open_log_folder

        self.log_folder_dialog = open_log_folder(paths.log_dir(), self._window)

    def about(self) -> None:
        from PySide6.QtWidgets import QMessageBox

        QMessageBox.about(
            self._window,
            "About StreamScope",
            f"<b>StreamScope {__version__}</b><br>A desktop chat client for LLM endpoints "
            "that shows the stream itself.<br>Data folder: " + str(paths.home()),
        )


def _action(window: QWidget, name: str, text: str, slot: Callable[[], object]) -> QAction:
    action = bind(QAction(text, window), name)
    action.triggered.connect(slot)
    window.addAction(action)  # (works while its menu is closed, and with no menu at all)
    return action


def add_chat_menu(window: QMainWindow, parts: MenuWindow) -> QMenu:
    """The Chat menu: Regenerate, Edit last, Stop. They press the message box's buttons, so
    they do exactly what the buttons do, and nothing while a button is disabled."""
    composer = parts.composer
    menu = QMenu("&Chat", window)
    regenerate = _action(window, "regenerate", "&Regenerate", composer.regenerate_button.click)
    edit_last = _action(window, "edit_last", "&Edit last message", composer.edit_button.click)
    stop = _action(window, "stop", "&Stop", parts.stop_or_cancel_edit)
    menu.addActions([regenerate, edit_last])
    menu.addSeparator()
    menu.addAction(stop)

    def sync() -> None:  # the menu shows what a click would do now
        regenerate.setEnabled(composer.regenerate_button.isEnabled())
        edit_last.setEnabled(composer.edit_button.isEnabled())
        stop.setEnabled(parts.controller.busy or parts.controller.history.editing)

    def keys_work_again() -> None:  # a disabled action would swallow its keys
        for action in (regenerate, edit_last, stop):
            action.setEnabled(True)

    menu.aboutToShow.connect(sync)
    menu.aboutToHide.connect(keys_work_again)
    window.menuBar().addMenu(menu)
    return menu


def add_go_to_actions(window: QMainWindow, parts: MenuWindow, menu: QMenu) -> None:
    """Choose the model, and Go to: the conversation list, the message box, the inspector."""
    bar = parts.endpoint_bar

    def choose_model() -> None:
        combo = bar.model_combo
        combo.setFocus(Qt.FocusReason.ShortcutFocusReason)
        line = combo.lineEdit()
        if line is not None:
            line.selectAll()
        else:
            combo.showPopup()

    def go_conversations() -> None:
        parts.conversations_dock.show()
        parts.conversations_dock.raise_()
        parts.conversations.focus_list()

    def go_message() -> None:
        parts.composer.editor.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def go_inspector() -> None:
        parts.inspector_dock.show()
        parts.inspector_dock.raise_()
        parts.inspector.setFocus(Qt.FocusReason.ShortcutFocusReason)
        page = parts.inspector.currentWidget()
        if page is not None:
            page.setFocus(Qt.FocusReason.ShortcutFocusReason)
            page.focusNextChild()

    menu.addAction(_action(window, "choose_model", "Choose &model", choose_model))
    menu.addSeparator()
    menu.addAction(_action(window, "go_conversations", "Go to &conversations", go_conversations))
    menu.addAction(_action(window, "go_message", "Go to the &message box", go_message))
    menu.addAction(_action(window, "go_inspector", "Go to the &inspector", go_inspector))
