"""What the window remembers between runs, in ``config_dir()/window.ini``: its geometry, the
layout of its docks and toolbar (by objectName), the inspector's open tab and its frames
splitter — and the rule that the chat column keeps room to read.

The chat column comes first: a restored layout that would leave it narrower than
:data:`CHAT_MIN_WIDTH` is dropped for the default one, and while the window is resized the
inspector (then the conversation list) gives way before the chat does (:class:`ChatRoom`).

The geometry is restored before the first paint, by :mod:`~streamscope.ui.base.first_paint`
(re-exported here); this module loads with the panels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QObject

from streamscope.ui.base.first_paint import restore_geometry
from streamscope.ui.base.first_paint import window_settings as _settings

if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

    from streamscope.ui.inspector.inspector import InspectorPanel

__all__ = [
    "CHAT_MIN_WIDTH",
    "DEFAULT_CONVERSATIONS_WIDTH",
    "DEFAULT_INSPECTOR_WIDTH",
    "ChatRoom",
    "restore_geometry",
    "restore_layout",
    "save",
]

CHAT_MIN_WIDTH = 400
"""The chat column (the cards and the composer's row) is never made narrower than this to
make room for a dock that can still give way."""

DEFAULT_CONVERSATIONS_WIDTH = 200
DEFAULT_INSPECTOR_WIDTH = 520


class ChatRoom(QObject):
    """Keeps the chat column at least :data:`CHAT_MIN_WIDTH` wide while docks can give way.

    Watches the chat's resizes; when it is squeezed (a narrower window, a dock shown), the
    inspector shrinks towards its minimum — until the chat is as wide as it, at least — then
    the conversation list; only when neither can give more does the chat get narrower — or
    when the user drags a dock's edge there."""

    # Class defaults: while a collected window is torn down, Qt may still call the filter
    # of this (C++-owned) object after Python cleared its attributes; it then does nothing.
    _chat: QWidget | None = None
    enabled = False

    def __init__(
        self,
        window: QMainWindow,
        chat: QWidget,
        *,
        conversations_dock: QDockWidget,
        inspector_dock: QDockWidget,
    ) -> None:
        super().__init__(window)  # (no reference back to the window: no cycle to collect)
        self._chat = chat
        self._docks = (inspector_dock, conversations_dock)  # who gives way first
        self._pending = False
        self.enabled = True
        chat.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Resize
            and self.enabled
            and self._chat is not None
            and watched is self._chat
            and not self._pending
            and self._chat.width() < CHAT_MIN_WIDTH
        ):
            from PySide6.QtCore import QTimer

            # Once the window's layout has settled (mid-resize the docks still have their
            # old widths): one pass, whatever the number of resize events.
            self._pending = True
            QTimer.singleShot(0, self, self.make_room)
        return False

    def make_room(self) -> None:
        """Shrink docks (inspector first) until the chat is wide enough (and no narrower than
        the inspector) or they are at their minimum."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QApplication, QMainWindow

        self._pending = False
        window = self.parent()
        if not isinstance(window, QMainWindow) or not window.isVisible():
            return
        if QApplication.mouseButtons() != Qt.MouseButton.NoButton:
            return  # a separator dragged by hand: the user's choice, not fought over
        if self._chat is None or not self._chat.isVisible():
            return
        chat = self._chat.width()
        beside = [d for d in self._docks if _docked_beside(window, d)]
        if chat >= CHAT_MIN_WIDTH or not beside:
            return
        widths = [d.width() for d in beside]
        for i, dock in enumerate(beside):
            floor = max(dock.minimumSizeHint().width(), dock.minimumWidth())
            wanted = CHAT_MIN_WIDTH - chat
            if dock is self._docks[0]:  # the inspector is left no wider than the chat either
                wanted = max(wanted, (widths[i] - chat + 1) // 2)
            give = min(max(0, wanted), max(0, widths[i] - floor))
            widths[i] -= give
            chat += give
        # Both sizes given: a dock not named would take up what the other gives.
        window.resizeDocks(beside, widths, Qt.Orientation.Horizontal)


def _docked_beside(window: QMainWindow, dock: QDockWidget) -> bool:
    """Whether ``dock`` takes width from the chat: shown, docked, left or right."""
    from PySide6.QtCore import Qt

    side = window.dockWidgetArea(dock)
    return (
        dock.isVisible()
        and not dock.isFloating()
        and side in (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea)
    )


def _show_pending(window: QMainWindow) -> None:
    """Show now the panels Qt would show a moment later.

    The panels are given to a window that is already on screen (its frame paints before
    ``build()``), and Qt shows such children by a queued call. Until then the layout treats
    them as absent: a state restored meanwhile is fitted with no chat column, the docks
    stretched over the whole window, and the chat, shown a moment later, gets only its
    minimum (the Conversations dock came back ~535 px wide, the message box ~70). So they
    are shown first — all but those hidden on purpose (the Tools dock)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget, QToolBar

    if not window.isVisible():
        return  # shown together with the window: nothing is pending
    children: list[QWidget] = [*window.findChildren(QDockWidget), *window.findChildren(QToolBar)]
    central = window.centralWidget()
    if central is not None:
        children.append(central)
    for child in children:
        hidden_on_purpose = child.isHidden() and child.testAttribute(
            Qt.WidgetAttribute.WA_WState_ExplicitShowHide
        )
        if not hidden_on_purpose:
            child.show()


def default_layout(
    window: QMainWindow, *, conversations_dock: QDockWidget, inspector_dock: QDockWidget
) -> None:
    """The docks at their default widths (the first time, or when the saved layout does not
    leave the chat room); :class:`ChatRoom` trims the inspector on a small window."""
    from PySide6.QtCore import Qt

    left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
    for dock, side in ((conversations_dock, left), (inspector_dock, right)):
        if dock.isFloating() or window.dockWidgetArea(dock) != side:
            dock.setFloating(False)
            window.addDockWidget(side, dock)
        dock.show()
    window.resizeDocks(
        [conversations_dock, inspector_dock],
        [DEFAULT_CONVERSATIONS_WIDTH, DEFAULT_INSPECTOR_WIDTH],
        Qt.Orientation.Horizontal,
    )


class _CheckOnShow(QObject):
    """Checks a restored layout once the window shows (a hidden window applies it then)."""

    def __init__(self, window: QMainWindow, check: object) -> None:
        super().__init__(window)
        self._check = check
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show:
            from PySide6.QtCore import QTimer

            watched.removeEventFilter(self)
            QTimer.singleShot(0, self, self._run)
        return False

    def _run(self) -> None:
        assert callable(self._check)
        self._check()
        self.deleteLater()


def _apply_now(window: QMainWindow) -> None:
    layout = window.layout()
    if layout is not None:
        layout.activate()


def restore_layout(
    window: QMainWindow,
    inspector: InspectorPanel,
    *,
    chat: QWidget,
    conversations_dock: QDockWidget,
    inspector_dock: QDockWidget,
) -> ChatRoom:
    """The saved layout — or the default one, the first time or when the saved one would
    leave the chat narrower than :data:`CHAT_MIN_WIDTH`. Returns the guard that keeps the
    chat's room from then on."""
    settings = _settings()
    room = ChatRoom(
        window, chat, conversations_dock=conversations_dock, inspector_dock=inspector_dock
    )
    _show_pending(window)
    state = settings.value("state")
    docks = {"conversations_dock": conversations_dock, "inspector_dock": inspector_dock}
    if isinstance(state, QByteArray) and window.restoreState(state):
        room.enabled = False  # judge the layout as saved, not as trimmed

        def check() -> None:
            room.enabled = True
            _apply_now(window)
            if chat.isVisible() and chat.width() < CHAT_MIN_WIDTH:
                default_layout(window, **docks)
                _apply_now(window)
            room.make_room()

        if window.isVisible():
            check()
        else:
            _CheckOnShow(window, check)
    else:
        default_layout(window, **docks)
    tab = settings.value("inspector_tab", 0)
    inspector.setCurrentIndex(int(str(tab)) if str(tab).isdigit() else 0)
    frames_split = settings.value("frames_splitter")
    if isinstance(frames_split, QByteArray):
        inspector.frames_panel.splitter.restoreState(frames_split)
    return room


def save(window: QMainWindow, inspector: InspectorPanel) -> None:
    settings = _settings()
    settings.setValue("geometry", window.saveGeometry())
    settings.setValue("state", window.saveState())
    settings.setValue("inspector_tab", inspector.currentIndex())
    settings.setValue("frames_splitter", inspector.frames_panel.splitter.saveState())
    settings.sync()
