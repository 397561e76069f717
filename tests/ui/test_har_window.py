"""File > Import HAR…, File > Export as HAR… and Export conversation as HAR… in the window."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtWidgets import QFileDialog, QInputDialog
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import Capture, read_capture
from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn
from streamscope.demo.server import DemoServer
from streamscope.ui.inspector.turn_header import turn_clock
from streamscope.ui.shell.main_window import MainWindow
from support.memory_keyring import MemoryKeyring, installed

HAR = Path(__file__).parents[1] / "fixtures" / "har"
KEY = b"sk-planted-OPENAI-key-0123456789abcdef"


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop, tmp_path: Path) -> Iterator[MainWindow]:
    store = Store(tmp_path / "streamscope.db")
    win = MainWindow(
        demo_speed=25, store=store, captures=CaptureStore(tmp_path / "captures", index=store)
    )
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())
    store.close()


def test_import_har_stores_each_exchange_and_replays_the_chosen_one(
    window: MainWindow,
    aloop: qasync.QEventLoop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    offered: list[list[str]] = []

    def pick(*args: Any) -> tuple[str, bool]:
        offered.append(list(args[3]))
        return args[3][1], True

    monkeypatch.setattr(QInputDialog, "getItem", staticmethod(pick))
    assert window.files.import_har(HAR / "firefox.har")

    async def wait() -> Turn | None:
        assert window.files.opening is not None
        await window.files.opening
        return await window.controller.runner.wait()

    turn = aloop.run_until_complete(wait())
    assert offered == [
        [
            "entry 2 · POST https://llm.example.test/v1/chat/completions?api_key=*** · "
            "Completed · stop · TTFT 0.25 s",
            "entry 3 · POST https://api.anthropic.com/v1/messages · "
            "Error · 200 application/json body, not an event stream",
        ]
    ]
    assert turn is not None and turn.reason == "200 application/json body, not an event stream"
    files = sorted((tmp_path / "captures").glob("*.sscap"))
    assert len(files) == 2
    assert [read_capture(f).end.outcome for f in files] == ["completed", "error"]  # type: ignore[union-attr]
    assert not any(KEY in f.read_bytes() for f in files)
    assert window.files.har_imported is not None
    assert len(window.files.har_imported.skipped) == 1
    assert window.status.text().startswith("Error")
    # the replay is dated by the entry's startedDateTime (11:00:04+01:00), not the import
    entry_time = datetime(2026, 11, 30, 10, 0, 4, tzinfo=UTC).timestamp()
    ref = window.controller.feed.ref
    assert ref is not None and ref.started == entry_time
    assert window.inspector.header.text() == (
        f"HAR · firefox.har · entry 3 · {turn_clock(entry_time)} · claude-sonnet-4-5 · ✕ error"
    )


def test_export_the_inspected_turn_as_har(
    window: MainWindow,
    aloop: qasync.QEventLoop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    window.model_combo.setCurrentText("demo")
    window.composer.editor.setPlainText("hello")
    window.composer._on_submit()

    async def wait() -> Turn | None:
        await asyncio.sleep(0.05)
        for _ in range(500):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        return await window.controller.runner.wait()

    live = aloop.run_until_complete(wait())
    assert live is not None
    capture = window.controller.last_capture
    assert capture is not None
    out = tmp_path / "turn.har"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), ""))
    )
    window.files.export_har()
    assert window.files.exporting is not None
    aloop.run_until_complete(window.files.exporting)
    (entry,) = json.loads(out.read_text())["log"]["entries"]
    assert entry["response"]["content"]["text"].encode() == capture.reads.body()
    assert entry["response"]["content"]["size"] == capture.reads.size
    assert entry["_streamscope"]["end"]["outcome"] == "completed"
    assert window.status.text() == f"HAR written to {out}"

    # an older turn shown in the inspector is the one exported (loaded from the store)
    window.composer.editor.setPlainText("again")
    window.model_combo.setCurrentText("demo-length")
    window.composer._on_submit()
    second = aloop.run_until_complete(wait())
    assert second is not None and second.reason == "[DONE] received (finish_reason=length)"
    first_card = window.controller.answer_card(0)
    window.controller.inspect(window.controller.answers[0])
    assert first_card.turn_ref is not None and first_card.turn_ref.capture_id is not None
    window.files.export_har()
    assert window.files.exporting is not None
    aloop.run_until_complete(window.files.exporting)
    (entry,) = json.loads(out.read_text())["log"]["entries"]
    assert entry["response"]["content"]["text"].encode() == capture.reads.body()
    assert entry["_streamscope"]["end"]["reason"] == "[DONE] received (finish_reason=stop)"


def test_a_har_file_dropped_on_the_window_is_imported(
    window: MainWindow,
    aloop: qasync.QEventLoop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    monkeypatch.setattr(QInputDialog, "getItem", staticmethod(lambda *a: (a[3][0], True)))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(HAR / "chrome.har"))])
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(window, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPoint(20, 20), Qt.DropAction.CopyAction, mime, buttons, mods)
    QApplication.sendEvent(window, drop)
    assert drop.isAccepted()

    async def wait() -> Turn | None:
        assert window.files.opening is not None
        await window.files.opening
        return await window.controller.runner.wait()

    turn = aloop.run_until_complete(wait())
    assert turn is not None
    assert window.files.har_imported is not None
    stored = sorted((tmp_path / "captures").glob("*.sscap"))
    assert len(stored) == len(window.files.har_imported.imported) >= 1


def test_export_a_whole_conversation_as_har(
    window: MainWindow,
    aloop: qasync.QEventLoop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Export conversation as HAR…: one entry per turn, in order, each the turn's capture;
    the endpoint's key (sent, and echoed by the demo in one prompt) is nowhere in the file."""
    key = "sk-planted-CONVHAR-key-5150"
    out = tmp_path / "conversation.har"
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), ""))
    )
    captures: list[Capture] = []
    with installed(MemoryKeyring()), DemoServer(speed=100) as demo:
        endpoint = replace(
            new_endpoint("custom", name="HAR test"),
            base_url=demo.base_url("openai"),
            key_source="keyring",
        )
        window.secrets().set(endpoint.id, key)
        window.endpoint_bar.set_endpoints(
            window.endpoints.with_endpoint(endpoint).select(endpoint.id)
        )
        for n, model in enumerate(("demo", "demo-length", "demo"), start=1):
            window.model_combo.setCurrentText(model)
            window.controller.send(f"turn {n}: my key is {key}" if n == 2 else f"turn {n}")

            async def wait() -> Turn | None:
                await asyncio.sleep(0.05)
                return await window.controller.runner.wait()

            assert aloop.run_until_complete(wait()) is not None
            capture = window.controller.last_capture
            assert capture is not None
            captures.append(capture)
        assert window.controller.session.conversation_id is not None
        # (from the File menu: the open conversation)
        (action,) = [
            a
            for a in window.menuBar().actions()[0].menu().actions()
            if a.text() == "Export conversation as HAR…"
        ]
        action.trigger()
        assert window.files.exporting is not None
        aloop.run_until_complete(window.files.exporting)
    assert window.status.text() == f"HAR written to {out} (3 turns)"
    data = out.read_bytes()
    entries = json.loads(data)["log"]["entries"]
    assert len(entries) == 3
    for n, (entry, capture) in enumerate(zip(entries, captures, strict=True), start=1):
        assert entry["response"]["content"]["text"].encode() == capture.reads.body()
        assert json.loads(entry["request"]["postData"]["text"])["messages"][-1]["content"] == (
            f"turn {n}: my key is {'*' * len(key)}" if n == 2 else f"turn {n}"
        )
        assert entry["startedDateTime"] == datetime.fromisoformat(capture.created).isoformat(
            timespec="milliseconds"
        )
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", entry["startedDateTime"]
        )
    assert [e["_streamscope"]["end"]["reason"] for e in entries] == [
        "[DONE] received (finish_reason=stop)",
        "[DONE] received (finish_reason=length)",
        "[DONE] received (finish_reason=stop)",
    ]
    # strictly later each turn: to the millisecond, not the second
    assert (
        entries[0]["startedDateTime"]
        < entries[1]["startedDateTime"]
        < entries[2]["startedDateTime"]
    )
    assert key.encode() not in data
    assert base64.b64encode(key.encode())[:16] not in data
    assert b"Bearer ***" in data  # (the key was sent, and masked)
    # (the demo echoed it in its answer: masked there too)
    assert f'"content":"{"*" * len(key)}\u201d\\n\\n"'.encode() in captures[1].reads.body()

    # the conversation list's menu exports the same file
    out.unlink()
    conv_id = window.controller.session.conversation_id
    window.conversations.exportRequested.emit(conv_id, "har")
    assert window.files.exporting is not None
    aloop.run_until_complete(window.files.exporting)
    assert out.read_bytes() == data
