"""The window with a real profile: conversations saved and reopened, captures replayed,
one instance per profile, and a killed app process losing at most a second of text."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.ui.shell.main_window import MainWindow


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[tuple[Store, CaptureStore]]:
    store = Store(tmp_path / "streamscope.db")
    yield store, CaptureStore(tmp_path / "captures", index=store)
    store.close()


@pytest.fixture
def window(
    qtbot: QtBot, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> Iterator[MainWindow]:
    store, captures = profile
    win = MainWindow(demo_speed=25, store=store, captures=captures)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str) -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()

    async def wait() -> Turn:
        await asyncio.sleep(0.05)
        for _ in range(500):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def test_conversations_are_saved_listed_reopened_and_deleted_with_undo(
    window: MainWindow, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> None:
    store, _ = profile
    send(window, aloop, "demo", "First question about streams")
    send(window, aloop, "demo-length", "And a follow-up")
    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    assert window.conversations.ids() == [conv_id]
    saved = store.load_conversation(conv_id)
    assert [m.role for m in saved.messages] == ["user", "assistant", "user", "assistant"]
    assert saved.messages[1].turn is not None
    assert saved.messages[1].turn.outcome is Outcome.COMPLETED
    assert saved.messages[1].turn.capture_id  # every turn keeps its bytes

    window.switcher.new_conversation()
    send(window, aloop, "demo-cut", "Second conversation")
    assert len(window.conversations.ids()) == 2

    window.conversations.search.setText("follow-up")
    window.conversations.refresh()

    async def searched() -> None:  # (its rows come from the search thread, queued)
        for _ in range(500):
            if not window.conversations.searching:
                return
            await asyncio.sleep(0.01)

    aloop.run_until_complete(searched())
    assert window.conversations.ids() == [conv_id]
    window.conversations.search.setText("")
    window.conversations.refresh()

    window.switcher.open_conversation(conv_id)  # reopen the first one
    assert window.controller.session.conversation_id == conv_id
    texts = [m.text for m in window.controller.history.messages()]
    assert texts[0] == "First question about streams" and len(texts) == 4
    assert "First question about streams" in window.controller.answer_card(0).text()

    window.conversations.delete(conv_id)
    assert conv_id not in window.conversations.ids()
    assert window.conversations.undo_button.isVisibleTo(window)
    window.conversations.undo_delete()
    assert conv_id in window.conversations.ids()


def test_a_saved_capture_replays_into_the_window_identically(
    window: MainWindow, aloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    from streamscope.core.capture.format import write_capture

    live = send(window, aloop, "demo-tools", "tools please")
    capture = window.controller.last_capture
    assert capture is not None
    path = tmp_path / "turn.sscap"
    write_capture(path, capture)
    live_frames = window.inspector.frames_model.rowCount()

    assert window.open_capture(path, speed=None)

    async def wait() -> Turn | None:
        assert window.opening is not None
        await window.opening  # read off the UI thread, then replayed
        return await window.controller.runner.wait()

    replayed = aloop.run_until_complete(wait())
    assert replayed is not None
    assert replayed.outcome is live.outcome
    assert [c.arguments for c in replayed.tool_calls] == [c.arguments for c in live.tool_calls]
    assert window.inspector.frames_model.rowCount() == live_frames
    # the Frames table indexes the capture it replayed (one copy of the bytes, not two)
    replaying = window.controller.last_capture
    assert replaying is not None and replaying is not capture
    assert window.inspector.frames_model.log.stream is replaying.reads.buffer()
    assert window.status.text().startswith("Completed · tool_calls")
    # a replay is shown, not added to the conversation
    assert len(window.controller.history.messages()) == 2


def test_a_second_instance_brings_the_first_to_the_front(qapp: object) -> None:
    from streamscope.ui.shell.single_instance import SingleInstance

    first, second = SingleInstance(), SingleInstance()
    raised: list[bool] = []
    first.raiseRequested.connect(lambda: raised.append(True))
    try:
        assert first.acquire()
        first.listen()
        assert not second.acquire()
        deadline = time.monotonic() + 5
        from PySide6.QtCore import QCoreApplication

        while not raised and time.monotonic() < deadline:
            QCoreApplication.processEvents()
            time.sleep(0.01)
        assert raised
    finally:
        first.release()


SECOND_START = r"""
import sys
from PySide6.QtCore import QCoreApplication
from streamscope.ui.shell.single_instance import SingleInstance
app = QCoreApplication([])
print("second acquired" if SingleInstance().acquire() else "second deferred", flush=True)
"""


def test_a_second_start_while_the_first_is_still_starting_is_not_lost(qapp: object) -> None:
    """The first instance listens only after its window painted; a start in between waits."""
    import subprocess
    import sys

    from PySide6.QtCore import QCoreApplication

    from streamscope.ui.shell.single_instance import SingleInstance

    first = SingleInstance()
    raised: list[bool] = []
    first.raiseRequested.connect(lambda: raised.append(True))
    assert first.acquire()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", SECOND_START], stdout=subprocess.PIPE, text=True
        )
        time.sleep(0.4)  # the second start is already knocking
        first.listen()
        deadline = time.monotonic() + 10
        while not raised and time.monotonic() < deadline:
            QCoreApplication.processEvents()
            time.sleep(0.01)
        out, _ = child.communicate(timeout=10)
        assert out.strip() == "second deferred"
        assert raised
    finally:
        first.release()


CHILD = r"""
import asyncio, os, sys, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
import qasync
from streamscope.ui.shell.app import open_profile
from streamscope.ui.shell.gc_guard import MainThreadCollector
from streamscope.ui.shell.main_window import MainWindow

app = QApplication([])
collector = MainThreadCollector()
from streamscope.ui.base.event_loop import AppLoop
loop = AppLoop(app)
asyncio.set_event_loop(loop)
store, captures = open_profile()
window = MainWindow(demo_speed=4, store=store, captures=captures)
window.show()

def on_progress(batch):
    text = batch.delta.text if batch.delta is not None else ""
    if text:
        print(f"{time.time():.3f}\t{text!r}", flush=True)

window.controller.runner.turnProgressed.connect(on_progress)

async def main():
    window.model_combo.setCurrentText(sys.argv[1])
    window.controller.send("tell me slowly")
    await asyncio.sleep(120)

with loop:
    loop.run_until_complete(main())
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
@pytest.mark.parametrize("scenario", ["demo-slow", "demo-stall"])
def test_killing_the_app_mid_stream_loses_at_most_a_second(tmp_path: Path, scenario: str) -> None:
    """``demo-slow`` drips steadily; ``demo-stall`` sends a burst, then goes silent: killed
    during the silence, nothing it had received may be lost (it is all over a second old).
    Either way the turn keeps its capture: the bytes received before the kill."""
    env = dict(os.environ, STREAMSCOPE_HOME=str(tmp_path))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, scenario],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None
    os.set_blocking(child.stdout.fileno(), False)
    received: list[tuple[float, str]] = []
    pending = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        chunk = child.stdout.read() or b""
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            stamp, text = line.decode().split("\t", 1)
            received.append((float(stamp), eval(text)))  # repr of a str, from our own child
        # (the burst is several deltas, but a busy machine may show them in one paint)
        quiet = len(received) >= 1 and time.time() - received[-1][0] > 1.5
        if (scenario == "demo-slow" and len(received) >= 10) or (
            scenario == "demo-stall" and quiet
        ):
            break
        time.sleep(0.02)
    killed_at = time.time()
    child.send_signal(signal.SIGKILL)
    _, err = child.communicate(timeout=10)
    assert len(received) >= (10 if scenario == "demo-slow" else 1), err.decode()

    store = Store(tmp_path / "data" / "streamscope.db")
    try:
        recovered = store.recover_interrupted()
        assert len(recovered) == 1
        conv = store.most_recent_conversation()
        assert conv is not None
        messages = store.load_conversation(conv.id).messages
        answer = messages[-1]
        assert answer.role == "assistant" and answer.turn is not None
        assert answer.turn.outcome is Outcome.TRUNCATED
        assert answer.turn.reason == "app closed during the stream"
        full = "".join(text for _, text in received)
        assert full.startswith(answer.text)  # what was saved is what arrived
        one_second_before = "".join(t for stamp, t in received if stamp <= killed_at - 1.0)
        assert answer.text.startswith(one_second_before), (answer.text, one_second_before)
        if scenario == "demo-stall":
            assert answer.text == full  # silent for 1.5 s: all of it is on disk
        assert json.dumps(answer.text)  # readable text, not bytes
        # the capture of the killed turn: linked, and its reads replay to the saved text
        capture_id = answer.turn.capture_id
        assert capture_id is not None
        capture = CaptureStore(tmp_path / "captures").load(capture_id)
        assert capture.end is None  # (cut short: replays as a broken connection)
        pipe = StreamPipeline("openai")
        for t, data in capture.reads:
            pipe.feed(data, t)
        replayed = pipe.snapshot().text
        assert replayed.startswith(one_second_before)
        assert full.startswith(replayed)
        if scenario == "demo-stall":
            assert replayed == full
    finally:
        store.close()


def test_opening_a_capture_file_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`streamscope turn.sscap` (a file association) opens the window and replays it."""
    import streamscope.ui.shell.app
    from streamscope.cli import main

    seen: list[object] = []
    monkeypatch.setattr(streamscope.ui.shell.app, "run_app", lambda **kw: seen.append(kw) or 0)
    capture = tmp_path / "turn.sscap"
    assert main([str(capture)]) == 0
    assert seen == [{"open_path": capture}]


def test_tool_results_continue_the_turn_and_tools_stay_with_the_conversation(
    window: MainWindow, aloop: qasync.QEventLoop, profile: tuple[Store, CaptureStore]
) -> None:
    store, _ = profile
    window.tools_panel.set_enabled(True)
    window.tools_panel.examples_button.click()
    assert [t.name for t in window.tools_panel.tools()] == ["get_weather", "get_time"]
    first = send(window, aloop, "demo-tools", "weather?")
    assert first.finish_reason == "tool_calls"
    card = window.controller.answer_card(-1)
    for box, result in zip(card.tool_call_boxes(), ['{"temp_c": 21}', "09:41"], strict=True):
        box.result.setPlainText(result)
    window.model_combo.setCurrentText("demo")
    card.send_button.click()

    async def wait() -> Turn | None:
        await asyncio.sleep(0.05)
        return await window.controller.runner.wait()

    second = aloop.run_until_complete(wait())
    assert second is not None and second.outcome is Outcome.COMPLETED
    capture = window.controller.last_capture
    assert capture is not None and capture.request is not None
    sent = json.loads(capture.request.body)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert sent["messages"][1]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert sent["messages"][2]["content"] == '{"temp_c": 21}'
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_weather", "get_time"]

    conv_id = window.controller.session.conversation_id
    assert conv_id is not None
    assert [t.name for t in store.load_conversation(conv_id).tools] == ["get_weather", "get_time"]
    window.switcher.new_conversation()
    assert window.tools_panel.tools() == []
    window.switcher.open_conversation(conv_id)
    assert [t.name for t in window.tools_panel.tools()] == ["get_weather", "get_time"]
