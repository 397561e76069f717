"""Stream-debugging power tools, in a "Stream" menu of the main window (which builds one
:class:`PowerTools` right after the first paint and puts its ``menu`` before Help).

- **Edit and resend…** (also a button in the Request tab): the last request in an editor;
  **New raw request…**: any JSON body to any URL, dialect ``auto``. Either is sent as a new
  turn in the same chat through the same runner, so the chat card, the inspector and the
  status bar follow it as they follow any turn.
- **Import curl…** (and pasting or sending a ``curl …`` command in the composer): the
  command becomes a raw request; its key moves to the keyring.
- **Copy as curl / Copy as Python (httpx)** for the last turn, the key as ``$API_KEY`` /
  ``os.environ["API_KEY"]``; **Export frames as JSON Lines…** for the turn in the inspector.
- **Compare two turns…** of this session (or two ``.sscap`` files); **Find in frames**
  (Ctrl+F).

History: a raw or edited request joins the conversation like a message the user sent — its
last user message (or a one-line description of the request) goes in with
``session.user_sent`` and shows as a user card; the controller records the answer (and its
capture) with ``session.answer_finished`` when the turn ends, as for any turn. User and
assistant entries keep alternating, so the next message from the composer has a well-formed
context (it is built from the history, not from the edited body).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from streamscope.core.capture.frames_export import FrameRecord, records_from_log, write_jsonl
from streamscope.core.net.curl import CurlParseError, parse_curl, to_curl, to_httpx_python
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.options import StreamTimeouts, TLSOptions
from streamscope.core.net.raw_request import (
    MovedSecret,
    RawRequest,
    RawRequestError,
    mask_secrets,
    raw_from_curl,
    raw_from_spec,
    secret_account,
    user_text,
)
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.sizes import plural
from streamscope.ui.base import shortcuts
from streamscope.ui.chat.turn_recorder import SessionTurnsRecorder
from streamscope.ui.inspector.frames_find import FramesFindBar
from streamscope.ui.inspector.inspector import TAB_FRAMES, InspectorPanel
from streamscope.ui.tools.compare_view import CompareDialog
from streamscope.ui.tools.curl_import import CurlImportDialog, CurlPasteFilter
from streamscope.ui.tools.request_editor import EditResendDialog

if TYPE_CHECKING:
    from streamscope.core.net.secrets import SecretStore
    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.status_panel import StatusPanel
    from streamscope.ui.endpoint.demo_service import DemoService

__all__ = ["PowerTools"]

_RAW_TEMPLATE: dict[str, Any] = {
    "model": "demo",
    "stream": True,
    "messages": [{"role": "user", "content": "Hello from raw mode"}],
}


class PowerTools(QObject):
    """The tools, their actions (``self.actions`` by name) and the Stream menu (``self.menu``):
    turns go through ``controller``, frames come from ``inspector``, keys from ``secrets``;
    dialogs open over ``window``."""

    def __init__(
        self,
        *,
        controller: ChatController,
        inspector: InspectorPanel,
        inspector_dock: QDockWidget,
        editor: QPlainTextEdit,
        status: StatusPanel,
        demo: DemoService,
        secrets: Callable[[], SecretStore],
        current_endpoint: Callable[[], Endpoint],
        window: QWidget,
    ) -> None:
        super().__init__(window)
        self._controller = controller
        self._inspector = inspector
        self._inspector_dock = inspector_dock
        self._status = status
        self._demo = demo
        self._secrets = secrets
        self._current_endpoint = current_endpoint
        self._window = window
        self.recorder = SessionTurnsRecorder(controller.runner, self)
        self.find_bar = FramesFindBar(inspector.frames_panel)
        self.paste_filter = CurlPasteFilter(editor, self.offer_curl_import)
        self.dialogs: list[QWidget] = []
        self.actions: dict[str, QAction] = {}
        self.menu = self._build_menu()
        self.edit_button = QPushButton("✎ Edit and resend…", inspector.request_panel)
        self.edit_button.setToolTip("Open this request in an editor and send it as a new turn")
        self.edit_button.clicked.connect(self.edit_and_resend)
        panel_layout = inspector.request_panel.layout()
        if panel_layout is not None:
            panel_layout.addWidget(self.edit_button)
        self.recorder.turnRecorded.connect(self._update_actions)
        self._busy = False
        controller.busyChanged.connect(self._on_controller_busy_changed)
        self._update_actions()

    def _build_menu(self) -> QMenu:
        menu = QMenu("&Stream", self._window)
        entries: list[tuple[str, str, Any, str | None]] = [  # (keys: shortcuts.SHORTCUTS)
            ("edit", "&Edit and resend…", self.edit_and_resend, "edit_and_resend"),
            ("raw", "New &raw request…", self.new_raw_request, None),
            ("import", "&Import curl…", self.import_curl, "import_curl"),
            ("", "", None, None),
            ("copy_curl", "Copy as &curl", self.copy_as_curl, "copy_curl"),
            ("copy_python", "Copy as &Python (httpx)", self.copy_as_python, None),
            ("export", "E&xport frames as JSON Lines…", self.export_frames, None),
            ("", "", None, None),
            ("compare", "C&ompare two turns…", self.compare, None),
            (
                "find",
                "&Find in frames",
                self.find_in_frames,
                "find",
            ),
        ]
        for name, text, slot, shortcut in entries:
            if not name:
                menu.addSeparator()
                continue
            action = QAction(text, self._window)
            if shortcut is not None:
                shortcuts.bind(action, shortcut)
            action.triggered.connect(slot)
            menu.addAction(action)
            self.actions[name] = action
        return menu

    def _update_actions(self, *_args: object) -> None:
        has_turn = self.recorder.last is not None
        for name in ("edit", "copy_curl", "copy_python"):
            self.actions[name].setEnabled(has_turn)
        self.edit_button.setEnabled(has_turn and not self._busy)

    def _on_controller_busy_changed(self, busy: bool) -> None:
        self._busy = busy  # (``controller.busy`` is still true while turnFinished runs)
        self._update_actions()

    def _message(self, text: str) -> None:
        self._status.show_message(text)

    def _keep(self, dialog: QWidget) -> QWidget:
        """Show a non-modal dialog; dialogs closed earlier are deleted."""
        for old in self.dialogs:
            if not old.isVisible():
                old.deleteLater()
        self.dialogs = [d for d in self.dialogs if d.isVisible()]
        self.dialogs.append(dialog)
        dialog.show()
        return dialog

    # -- edit and resend, raw mode -----------------------------------------------------------

    def edit_and_resend(self) -> EditResendDialog | None:
        """Open the last request (secrets masked) in the editor."""
        last = self.recorder.last
        if last is None:
            self._message("Nothing to edit yet: send a message first")
            return None
        raw, moved = raw_from_spec(last.start.spec, dialect=last.start.dialect)
        return self.open_editor(raw, moved, title="Edit and resend")

    def new_raw_request(self) -> EditResendDialog:
        """An empty raw-mode request (to the demo's OpenAI URL when it is running)."""
        demo = self._demo
        base = demo.base_url("openai") if demo.running else "http://127.0.0.1:8000/v1"
        raw = RawRequest("POST", base + "/chat/completions", (), dict(_RAW_TEMPLATE), "auto")
        return self.open_editor(raw, [], title="Raw request")

    def open_editor(
        self, raw: RawRequest, moved: list[MovedSecret], *, title: str
    ) -> EditResendDialog:
        dialog = EditResendDialog(raw, title=title, parent=self._window)
        secrets = {m.slot: m.value for m in moved}
        dialog.sendRequested.connect(lambda edited: self.send_raw(edited, secrets))
        self._keep(dialog)
        return dialog

    def send_raw(self, raw: RawRequest, secrets: Mapping[str, str] | None = None) -> bool:
        """Send ``raw`` as a new turn; ``secrets`` by slot, else from the keyring."""
        if self._controller.busy:
            self._message("A turn is running: stop it or wait before sending another")
            return False
        raw, typed = mask_secrets(raw)
        store = self._secrets()
        for s in typed:  # a key typed into the header table goes to the keyring
            store.set(secret_account(raw.url, s.slot), s.value)
        values = dict(secrets or {})
        values.update({s.slot: s.value for s in typed})
        for slot in raw.secret_slots():
            if slot not in values:
                stored = store.get(secret_account(raw.url, slot))
                if stored:
                    values[slot] = stored
        try:
            spec = raw.to_spec(values)
        except RawRequestError as exc:
            QMessageBox.warning(self._window, "Cannot send", str(exc))
            return False
        endpoint = self._current_endpoint()
        same_origin = _origin(endpoint.base_url) == _origin(raw.url)
        timeouts = endpoint.timeouts() if same_origin else StreamTimeouts()
        from streamscope.core.net.secrets import resolve_tls

        tls = resolve_tls(endpoint, self._secrets()) if same_origin else TLSOptions()
        text = user_text(raw.body) or f"(raw request) {raw.method} {urlsplit(raw.url).path}"
        model = raw.body.get("model")
        label = f"{'raw' if raw.dialect == 'auto' else '✎ edited'} · {model or raw.dialect}"
        self._start_turn(spec, raw.dialect, label, text, timeouts, tls)
        return True

    def _start_turn(
        self,
        spec: RequestSpec,
        dialect: str,
        label: str,
        text: str,
        timeouts: StreamTimeouts,
        tls: TLSOptions,
    ) -> None:
        """Start a turn from a ready request through the controller's runner.

        The controller streams the runner's batches into its current card and, when the
        turn ends, finishes that card, updates inspector and status, and records the answer
        (with its capture) in the session. So this does what the controller's own
        ``_start_turn`` does before it builds a request: the user entry, the card made
        current, the session told an answer started, a capture recorder, busy.
        """
        model = str(spec.json.get("model") or "")
        self._controller.start_request(
            spec,
            dialect=dialect,
            label=label,
            user_text=text,
            endpoint_name=f"raw · {_host(spec.url)}",
            model=model,
            timeouts=timeouts,
            tls=tls,
        )

    # -- curl ---------------------------------------------------------------------------------

    def import_curl(self, command: str = "") -> CurlImportDialog:
        """The Import curl dialog (``command`` prefilled)."""
        dialog = CurlImportDialog(command if isinstance(command, str) else "", self._window)
        dialog.importRequested.connect(self.import_curl_command)
        self._keep(dialog)
        return dialog

    def import_curl_command(self, command: str) -> EditResendDialog | None:
        """Parse ``command``, move its key to the keyring, open it as a raw request."""
        try:
            raw, moved = raw_from_curl(parse_curl(command))
        except (CurlParseError, RawRequestError) as exc:
            QMessageBox.warning(self._window, "Import curl", f"Cannot import: {exc}")
            return None
        store = self._secrets()
        for secret in moved:
            store.set(secret_account(raw.url, secret.slot), secret.value)
        if moved:
            self._message(f"Key moved to {store.location}: {', '.join(s.slot for s in moved)}")
        return self.open_editor(raw, [], title="Raw request (imported from curl)")

    def offer_curl_import(self, text: str) -> bool:
        """The composer got a curl command: offer to import it (``True``: imported)."""
        answer = QMessageBox.question(
            self._window,
            "Import curl",
            "This looks like a curl command. Import it as a raw request instead?",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return False
        return self.import_curl_command(text) is not None

    def _last_request(self) -> tuple[str, str, list[tuple[str, str]], bytes] | None:
        last = self.recorder.last
        if last is None or last.capture.request is None:
            self._message("No request yet: send a message first")
            return None
        r = last.capture.request  # redacted: the key is *** and becomes $API_KEY
        headers = [(k, v) for k, v in r.headers if k.lower() != "accept-encoding"]
        return r.method, r.url, headers, r.body

    def copy_as_curl(self) -> str | None:
        request = self._last_request()
        if request is None:
            return None
        text = to_curl(*request)
        QGuiApplication.clipboard().setText(text)
        self._message("Copied the last request as curl (key as $API_KEY)")
        return text

    def copy_as_python(self) -> str | None:
        request = self._last_request()
        if request is None:
            return None
        text = to_httpx_python(*request)
        QGuiApplication.clipboard().setText(text)
        self._message('Copied the last request as Python (key from os.environ["API_KEY"])')
        return text

    # -- frames -------------------------------------------------------------------------------

    def frame_records(self) -> list[FrameRecord]:
        """The Frames table's rows as records (time since the request)."""
        return records_from_log(self._inspector.frames_model.log)

    def export_frames_to(self, path: Path) -> int:
        """Write the current turn's frames to ``path`` as JSON Lines; lines written."""
        return write_jsonl(path, self.frame_records())

    def export_frames(self) -> None:
        if not self._inspector.frames_model.rowCount():
            self._message("No frames to export yet")
            return
        name, _ = QFileDialog.getSaveFileName(
            self._window, "Export frames", "frames.jsonl", "JSON Lines (*.jsonl);;All files (*)"
        )
        if name:
            n = self.export_frames_to(Path(name))
            self._message(f"Exported {plural(n, 'frame')} to {name}")

    def find_in_frames(self) -> FramesFindBar:
        self._inspector_dock.show()
        self._inspector.setCurrentIndex(TAB_FRAMES)
        self.find_bar.open_bar()
        return self.find_bar

    # -- compare ------------------------------------------------------------------------------

    def compare(self) -> CompareDialog:
        dialog = CompareDialog(list(self.recorder.turns), self._window)
        self._keep(dialog)
        return dialog


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, parts.hostname or "", port
