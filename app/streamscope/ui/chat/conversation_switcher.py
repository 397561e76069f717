"""Which conversation the chat shows: at start the most recent one, then a new one, one
chosen in the list, a new one when the open one is deleted (none while a turn runs). An
opened conversation's tools fill the tools panel; an empty one shows the welcome, which names
the endpoint selected (and follows it when another is chosen).

While a turn streams, any conversation can be opened to read: the turn goes on into its own
(see :mod:`~streamscope.ui.chat.live_elsewhere`), and choosing that one again shows it as it
is now, still streaming — not a copy read from the store, which holds only what was saved.

A conversation opens whole (every message: the chat builds cards only near its viewport).
One of up to :data:`OPEN_AT_ONCE` messages is read and shown at once; a longer one is read
from the database and its rows prepared on a thread of the switcher's (reading 727 messages
and their texts' shapes took ~120 ms), then shown — the chat shows the conversation it had
meanwhile, and a later choice wins over a load still running (:attr:`loading`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDockWidget

from streamscope.core.store.session import ChatSession

if TYPE_CHECKING:
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.core.store.database import Store
    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.chat_view import ChatView
    from streamscope.ui.chat.conversation_rows import PreparedRows
    from streamscope.ui.chat.conversations_panel import ConversationsPanel
    from streamscope.ui.chat.message_card import NoticeCard
    from streamscope.ui.chat.tools_panel import ToolsPanel

__all__ = ["OPEN_AT_ONCE", "WELCOME", "ConversationSwitcher", "welcome"]

_log = logging.getLogger("streamscope.chat")

OPEN_AT_ONCE = 120
"""A conversation of at most this many messages is read and shown without waiting for a
thread (a few milliseconds); a longer one is loaded off the UI thread."""

WELCOME = """\
### Welcome to StreamScope

You are connected to the **{name}** endpoint: a real LLM-style server running on
127.0.0.1 inside the app — no key, no network. Type anything and press **Enter**.

The **model menu** above is its scenario menu: `demo-tools` streams two parallel tool calls,
`demo-reasoning` thinks first, `demo-cut` drops the connection mid-frame, `demo-no-done` ends
without `[DONE]`, `demo-error-429` is rate limited, and more. Watch the **Inspector** on the
right: every raw frame with its timing and bytes, tool-call arguments fragment by fragment, and
the timeline. The status bar says whether the turn **completed**, was **truncated**,
**cancelled**, or ended in an **error** — and why.

Use **Endpoint → Endpoints…** to add OpenAI, Anthropic, Gemini, Ollama or any compatible server.
"""

WELCOME_ENDPOINT = """\
### Welcome to StreamScope

You are connected to the **{name}** endpoint: `{url}`, model `{model}`, {dialect} dialect.
Type anything and press **Enter**.

Watch the **Inspector** on the right: every raw frame with its timing and bytes, tool-call
arguments fragment by fragment, and the timeline. The status bar says whether the turn
**completed**, was **truncated**, **cancelled**, or ended in an **error** — and why.

Use **Endpoint → Endpoints…** to switch to another endpoint or add one.
"""


def welcome(endpoint: Endpoint) -> str:
    """The welcome text (Markdown) for a new conversation on ``endpoint``."""
    name = re.sub(r"([\\`*_\[\]<>#|~])", r"\\\1", endpoint.name) or "unnamed"
    if endpoint.is_demo:
        return WELCOME.format(name=name)
    return WELCOME_ENDPOINT.format(
        name=name,
        url=endpoint.base_url.replace("`", "") or "no URL set",
        model=endpoint.model.replace("`", "") or "none chosen",
        dialect=endpoint.dialect,
    )


class ConversationSwitcher(QObject):
    """Opens conversations of ``store`` into ``controller`` (``None``: in memory only)."""

    opened = Signal()
    """A conversation was opened."""

    def __init__(
        self,
        *,
        store: Store | None,
        controller: ChatController,
        chat: ChatView,
        conversations: ConversationsPanel,
        tools_panel: ToolsPanel,
        tools_dock: QDockWidget,
        endpoint: Callable[[], Endpoint],
        parent: QObject | None = None,
    ) -> None:
        """``endpoint``: the endpoint selected (the welcome names it)."""
        super().__init__(parent)
        self._endpoint = endpoint
        self._welcome: NoticeCard | None = None
        self._store = store
        self._controller = controller
        self._chat = chat
        self._conversations = conversations
        self._tools_panel = tools_panel
        self._tools_dock = tools_dock
        self._io: ThreadPoolExecutor | None = None
        self.loading: asyncio.Future[None] | None = None
        """A long conversation being loaded (``None`` when none is)."""
        self._loading_id: int | None = None
        self._loading_busy = False  # (a turn streamed when the load was asked for)

    def restore(self) -> None:
        """At start: the most recent conversation (its last turn in the inspector), or a
        new one."""
        recent = self._store.most_recent_conversation() if self._store is not None else None
        if recent is None:
            self.open()
        else:
            self._load(recent.id, missing=self.open)

    def endpoint_changed(self) -> None:
        """Another endpoint (or model) was chosen: the welcome, if shown, names it."""
        if self._welcome is not None and not self._controller.history.root.children:
            self._welcome.set_markdown(welcome(self._endpoint()))

    def new_conversation(self) -> None:
        """A new conversation (unless a turn runs or this one is still empty)."""
        if self._controller.busy or not self._controller.history.root.children:
            return
        self.open()

    def open_conversation(self, conversation_id: int) -> None:
        """A stored conversation (while a turn streams too: to read)."""
        if self._store is None:
            return
        if self._controller.live_elsewhere == conversation_id:
            self._stop_loading()
            self._controller.show_live_conversation()  # (as it is: still streaming)
            self._opened(self._controller.session)
            return
        self._load(conversation_id, missing=self._conversations.refresh)

    def _load(self, conversation_id: int, *, missing: Callable[[], object]) -> None:
        """Open a stored conversation: at once when it is short, else on the thread; calls
        ``missing`` if it is not there (any more)."""
        store = self._store
        assert store is not None
        self._stop_loading()
        if len(store.load_messages(conversation_id, limit=OPEN_AT_ONCE + 1)) <= OPEN_AT_ONCE:
            try:
                session = ChatSession.open(store, conversation_id)
            except KeyError:
                missing()
                return
            self.open(session)
            return
        controller = self._controller

        def read() -> tuple[ChatSession, PreparedRows]:
            session = ChatSession.open(store, conversation_id)
            return session, controller.prepare(session)  # (pure Python: no Qt)

        if self._io is None:
            self._io = ThreadPoolExecutor(1, thread_name_prefix="conversation-load")
        self._loading_id = conversation_id
        self._loading_busy = controller.busy
        reading = asyncio.wrap_future(self._io.submit(read))  # (it starts now)
        self.loading = asyncio.ensure_future(self._open_later(reading, missing))

    async def _open_later(
        self,
        reading: asyncio.Future[tuple[ChatSession, PreparedRows]],
        missing: Callable[[], object],
    ) -> None:
        controller = self._controller
        try:
            session, rows = await reading
        except KeyError:
            self.loading = self._loading_id = None
            missing()
            return
        except Exception:  # (a database that cannot be read: the chat stays as it was)
            self.loading = self._loading_id = None
            _log.exception("could not load the conversation")
            return
        self.loading = self._loading_id = None
        if self._loading_busy or not controller.busy:  # (a turn started since: it stays)
            self.open(session, rows)

    def _stop_loading(self) -> None:
        """A later choice wins over a conversation still loading."""
        if self.loading is not None:
            self.loading.cancel()
            self.loading = self._loading_id = None

    def conversation_deleted(self, conversation_id: int) -> None:
        """The list deleted a conversation: a new one if it was the open one (or the one
        loading)."""
        if self._loading_id == conversation_id:
            self._stop_loading()
        if self._controller.session.conversation_id != conversation_id:
            return
        live = self._controller.live_elsewhere
        if live is not None:
            self.open_conversation(live)  # (back to the streaming one)
        elif not self._controller.busy:
            self.open()

    def open(self, session: ChatSession | None = None, rows: PreparedRows | None = None) -> None:
        """Show ``session`` (a new one by default; ``rows``: its rows, prepared) in the
        chat, its tools in the tools panel."""
        if session is None:
            session = ChatSession(self._store)
        if rows is None:
            self._stop_loading()  # (another choice: the one loading is not wanted)
        self._controller.open_session(session, rows)
        self._opened(session)

    def _opened(self, session: ChatSession) -> None:
        """``session`` is shown: its tools, the welcome if it is empty, its row listed."""
        self._tools_panel.blockSignals(True)
        self._tools_panel.set_tools(list(session.tools))
        self._tools_panel.set_enabled(bool(session.tools))
        self._tools_panel.blockSignals(False)
        if session.tools:
            self._tools_dock.show()
        self._welcome = None
        if not session.history.root.children:  # (empty: the welcome)
            self._welcome = self._chat.add_notice(welcome(self._endpoint()))
        self._conversations.set_current(session.conversation_id)
        self.opened.emit()
