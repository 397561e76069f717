"""The window's files: open a capture or repro bundle and replay it (read off the UI thread),
save the last turn's capture, export its repro bundle, export a conversation (Markdown or
JSON). File dialogs are parented to the window; what happened shows in the status bar."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from streamscope import __version__
from streamscope.core.capture.format import Capture, CaptureError, read_capture, write_capture

if TYPE_CHECKING:
    from streamscope.core.store.database import Store
    from streamscope.ui.chat_controller import ChatController
    from streamscope.ui.status_panel import StatusPanel

__all__ = ["FileActions"]


class FileActions(QObject):
    """Capture files in and out of ``controller``; conversations out of ``store``."""

    def __init__(
        self, controller: ChatController, status: StatusPanel, store: Store | None, window: QWidget
    ) -> None:
        super().__init__(window)
        self._controller = controller
        self._status = status
        self._store = store
        self._window = window
        self._tasks: set[asyncio.Task[None]] = set()
        self._io = ThreadPoolExecutor(1, thread_name_prefix="capture-io")
        self.opening: asyncio.Task[None] | None = None
        """The last capture being opened (read, then replayed)."""

    def open_capture_dialog(self) -> None:
        """File > Open capture…: pick a file and a replay speed."""
        path, _ = QFileDialog.getOpenFileName(
            self._window,
            "Open capture",
            "",
            "Captures and bundles (*.sscap *.zip);;All files (*)",
        )
        if not path:
            return
        speeds = {"Instantly": None, "At recorded speed": 1.0, "10× faster": 10.0}
        choice, ok = QInputDialog.getItem(
            self._window, "Replay", "Replay the capture:", list(speeds), 0, False
        )
        if ok:
            self.open_capture(Path(path), speed=speeds[choice])

    def open_capture(self, path: Path, *, speed: float | None = None) -> bool:
        """Replay a capture or repro bundle through the pipeline into the window."""
        from streamscope.core.capture.bundle import is_bundle, read_repro_bundle

        def load() -> Capture:
            with path.open("rb") as f:
                head = f.read(64)
            if is_bundle(head):
                return read_repro_bundle(path, background=True)
            return read_capture(path, background=True)

        async def open_and_replay() -> None:
            self._status.show_message(f"Opening {path.name}…")
            try:  # a 100 MB capture takes a moment: read it off the UI thread
                capture = await asyncio.get_running_loop().run_in_executor(self._io, load)
            except (OSError, CaptureError, ValueError) as exc:
                self._status.show_message(f"Could not open {path.name}: {exc}")
                QMessageBox.warning(self._window, "Open capture", f"{path.name}: {exc}")
                return
            self._controller.replay(capture, speed=speed, label=f"replay · {path.name}")

        if self._controller.busy:
            return False
        task = asyncio.ensure_future(open_and_replay())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.opening = task
        return True

    def save_capture(self) -> None:
        """File > Save capture of the last turn…"""
        capture = self._controller.last_capture
        if capture is None:
            self._status.show_message("No turn to save yet")
            return
        path, _ = QFileDialog.getSaveFileName(
            self._window, "Save capture", "turn.sscap", "StreamScope captures (*.sscap)"
        )
        if path:
            write_capture(Path(path), capture)
            self._status.show_message(f"Capture saved to {path}")

    def export_bundle(self) -> None:
        """File > Export repro bundle of the last turn…"""
        from streamscope.core.capture.bundle import write_repro_bundle

        capture = self._controller.last_capture
        turn = self._controller.runner.last_saved_turn  # (its secrets masked)
        if capture is None or turn is None:
            self._status.show_message("No turn to export yet")
            return
        path, _ = QFileDialog.getSaveFileName(
            self._window, "Export repro bundle", "streamscope-repro.sscap.zip", "Zip files (*.zip)"
        )
        if path:
            write_repro_bundle(Path(path), capture, turn, app_version=__version__)
            self._status.show_message(f"Repro bundle written to {path}")

    def export_conversation(self, conversation_id: int, fmt: str) -> None:
        """Write a stored conversation as Markdown (``fmt`` "md") or JSON."""
        from streamscope.core.store.export import conversation_to_json, conversation_to_markdown

        if self._store is None:
            return
        suffix = "md" if fmt == "md" else "json"
        path, _ = QFileDialog.getSaveFileName(
            self._window, "Export conversation", f"conversation-{conversation_id}.{suffix}"
        )
        if not path:
            return
        conv = self._store.load_conversation(conversation_id, limit=None)
        if fmt == "md":
            text = conversation_to_markdown(conv)
        else:
            text = json.dumps(conversation_to_json(conv), ensure_ascii=False, indent=2)
        Path(path).write_text(text, encoding="utf-8")
        self._status.show_message(f"Exported to {path}")

    async def shutdown(self) -> None:
        """Stop opening captures."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._io.shutdown(wait=False)
