"""The window's files: open a capture or repro bundle and replay it (read off the UI thread),
save the last turn's capture, export its repro bundle, export a conversation (Markdown,
JSON or HAR), import a HAR file's LLM exchanges as captures, export a turn as HAR. File
dialogs are parented to the window; what happened shows in the status bar."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from streamscope import __version__
from streamscope.core.capture.format import Capture, CaptureError, read_capture, write_capture

if TYPE_CHECKING:
    from streamscope.core.capture.har import HarImport
    from streamscope.core.store.database import Store
    from streamscope.ui.chat.chat_controller import ChatController
    from streamscope.ui.chat.status_panel import StatusPanel

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
        """The last capture being opened (read, then replayed), or HAR file imported."""
        self.exporting: asyncio.Task[None] | None = None
        """The last HAR export being written."""
        self.har_imported: HarImport | None = None
        """What the last HAR import found."""

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

    def import_har_dialog(self) -> None:
        """File > Import HAR…: pick a HAR file saved by a browser's developer tools."""
        path, _ = QFileDialog.getOpenFileName(
            self._window, "Import HAR", "", "HAR files (*.har);;All files (*)"
        )
        if path:
            self.import_har(Path(path))

    def import_har(self, path: Path) -> bool:
        """Every LLM exchange in a HAR file becomes a stored capture (its outcome decided by
        replaying it, off the UI thread); then pick one to replay into the window."""
        from streamscope.core.capture.har import HarError, import_har

        async def run() -> None:
            self._status.show_message(f"Importing {path.name}…")
            try:
                result: HarImport = await asyncio.get_running_loop().run_in_executor(
                    self._io, import_har, path
                )
            except (OSError, HarError) as exc:
                self._status.show_message(f"Could not import {path.name}: {exc}")
                QMessageBox.warning(self._window, "Import HAR", f"{path.name}: {exc}")
                return
            store = self._controller.runner.captures
            for ex in result.imported:
                if store is not None:
                    store.save(ex.capture)
            self.har_imported = result
            n, skipped = len(result.imported), len(result.skipped)
            self._status.show_message(
                f"Imported {n} LLM exchange{'s' if n != 1 else ''} from {path.name} "
                f"({skipped} other entr{'y' if skipped == 1 else 'ies'} skipped)"
            )
            if not result.imported:
                QMessageBox.information(
                    self._window, "Import HAR", f"{path.name} holds no LLM exchange."
                )
                return
            items = [
                f"entry {ex.entry} · {ex.capture.request.method if ex.capture.request else ''} "
                f"{ex.capture.request.url if ex.capture.request else ''} · {ex.turn.summary()}"
                for ex in result.imported
            ]
            choice, ok = QInputDialog.getItem(
                self._window, "Import HAR", "Replay an exchange:", items, 0, False
            )
            if ok:
                ex = result.imported[items.index(choice)]
                self._controller.replay(
                    ex.capture, speed=None, label=f"HAR · {path.name} · entry {ex.entry}"
                )

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.opening = task
        return True

    def export_har(self) -> None:
        """File > Export as HAR…: the turn shown in the inspector (any turn of the
        conversation, or a replay), else the last one; read and written off the UI thread."""
        ref = self._controller.feed.ref
        capture = ref.capture if ref is not None else None
        capture_id = ref.capture_id if ref is not None and capture is None else None
        store = self._controller.runner.captures
        if capture_id is not None and (store is None or not store.exists(capture_id)):
            capture_id = None
        if capture is None and capture_id is None:
            capture = self._controller.last_capture
        if capture is None and capture_id is None:
            self._status.show_message("No turn with a capture to export")
            return
        path, _ = QFileDialog.getSaveFileName(
            self._window, "Export as HAR", "turn.har", "HAR files (*.har)"
        )
        if not path:
            return

        def load() -> list[Capture]:
            if capture is not None:
                return [capture]
            assert store is not None and capture_id is not None
            return [store.load(capture_id)]

        self._write_har(Path(path), load)

    def export_conversation_har(self, conversation_id: int | None = None) -> None:
        """File > Export conversation as HAR…: one entry per turn of a conversation (the open
        one, or ``conversation_id``, from the list's menu) that has a capture, oldest first.
        The captures are written as stored, so their keys are masked as the one-turn
        export's are."""
        from streamscope.core.store.har_export import conversation_capture_ids

        conv_id = conversation_id
        if conv_id is None:
            conv_id = self._controller.session.conversation_id
        store = self._controller.runner.captures
        if self._store is None or store is None or conv_id is None:
            self._status.show_message("No saved conversation to export")
            return
        ids = conversation_capture_ids(self._store, conv_id, store)
        if not ids:
            self._status.show_message("This conversation has no turn with a capture to export")
            return
        path, _ = QFileDialog.getSaveFileName(
            self._window,
            "Export conversation as HAR",
            f"conversation-{conv_id}.har",
            "HAR files (*.har)",
        )
        if path:
            self._write_har(Path(path), lambda: [store.load(i) for i in ids])

    def _write_har(self, path: Path, load: Callable[[], list[Capture]]) -> None:
        """Load the captures and write them as one HAR file, off the UI thread."""
        from streamscope.core.capture.har import capture_to_har, dump_har

        def write() -> int:
            captures = load()
            path.write_bytes(dump_har(capture_to_har(captures)))
            return len(captures)

        async def run() -> None:
            try:
                n = await asyncio.get_running_loop().run_in_executor(self._io, write)
            except (OSError, CaptureError) as exc:
                self._status.show_message(f"Could not export {path.name}: {exc}")
                return
            turns = "" if n == 1 else f" ({n} turns)"
            self._status.show_message(f"HAR written to {path}{turns}")

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.exporting = task

    def export_conversation(self, conversation_id: int, fmt: str) -> None:
        """Write a stored conversation as Markdown (``fmt`` "md"), JSON or HAR."""
        from streamscope.core.store.export import conversation_to_json, conversation_to_markdown

        if fmt == "har":
            self.export_conversation_har(conversation_id)
            return
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
