"""A long conversation is sent whole from the window — through the real window, a real profile
of a year's shape and the built-in demo endpoint (which refuses a history that opens with an
assistant message or an orphan tool result, as the providers do) — and a context policy's cut
is said in the composer and the Request tab."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.store.database import Store
from streamscope.core.store.records import to_chat_history
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.context import ContextPolicy
from streamscope.ui.shell.main_window import MainWindow
from support.big_profile import ProfileFacts, cached_profile


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> ProfileFacts:
    return cached_profile(tmp_path_factory.mktemp("built"), small=True)


@pytest.fixture
def window(
    qtbot: QtBot, aloop: qasync.QEventLoop, built: ProfileFacts, tmp_path: Path
) -> Iterator[tuple[MainWindow, Store]]:
    shutil.copyfile(built.path, tmp_path / "streamscope.db")
    store = Store(tmp_path / "streamscope.db")
    win = MainWindow(demo_speed=25, store=store, captures=CaptureStore(tmp_path / "c", index=store))
    qtbot.addWidget(win)
    win.show()
    yield win, store
    aloop.run_until_complete(win.shutdown())
    store.close()


def send(window: MainWindow, aloop: qasync.QEventLoop, text: str) -> Turn:
    window.model_combo.setCurrentText("demo")
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()

    async def wait() -> Turn:
        await asyncio.sleep(0.05)
        for _ in range(1000):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def open_conversation(window: MainWindow, aloop: qasync.QEventLoop, conv_id: int) -> None:
    window.switcher.open_conversation(conv_id)
    if window.switcher.loading is not None:  # (a long one is read on the switcher's thread)
        aloop.run_until_complete(window.switcher.loading)
    assert window.controller.session.conversation_id == conv_id


def sent_messages(window: MainWindow) -> list[dict[str, Any]]:
    capture = window.controller.runner.last_capture
    assert capture is not None and capture.request is not None
    messages: list[dict[str, Any]] = orjson.loads(capture.request.body)["messages"]
    return messages


def test_the_long_conversation_is_sent_whole(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, built: ProfileFacts
) -> None:
    win, store = window
    open_conversation(win, aloop, built.long_id)
    stored = to_chat_history(store.load_conversation(built.long_id, limit=None).messages)
    path = stored.messages()
    assert len(path) == 684
    assert not win.composer.context_label.isVisible()  # the whole conversation: nothing to say
    turn = send(win, aloop, "and what did I ask first?")
    assert turn.outcome is Outcome.COMPLETED, turn.reason  # (the demo accepted the history)
    messages = sent_messages(win)
    assert len(messages) == 685  # every message of the shown path, and the new one
    assert messages[0] == {"role": "user", "content": path[0].text}
    assert messages[-1] == {"role": "user", "content": "and what did I ask first?"}
    line = win.inspector.request_panel.sent_label.text()
    assert line.startswith("Sent 685 messages · ")
    assert " · body " in line


def test_a_policy_cuts_at_an_exchange_and_says_so(
    window: tuple[MainWindow, Store], aloop: qasync.QEventLoop, built: ProfileFacts
) -> None:
    win, store = window
    bar = win.endpoint_bar
    demo = replace(bar.current_endpoint(), context_policy=ContextPolicy("exchanges", 100))
    bar.set_endpoints(bar.endpoints.with_endpoint(demo))
    open_conversation(win, aloop, built.long_id)
    stored = to_chat_history(store.load_conversation(built.long_id, limit=None).messages)
    path = stored.messages()
    users = [i for i, m in enumerate(path) if m.role == "user"]
    keep = len(path) - users[-99]  # the last 99 exchanges stored, and the one being sent
    note = win.composer.context_label
    assert note.isVisible()
    assert note.text().startswith(f"Next message: sending {keep + 1} of 685 messages · ")
    assert note.text().endswith(" — policy: last 100 exchanges")
    turn = send(win, aloop, "go on")
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    messages = sent_messages(win)
    assert messages[0] == {"role": "user", "content": path[users[-99]].text}
    assert [m["role"] for m in messages].count("user") == 100
    line = win.inspector.request_panel.sent_label.text()
    assert line.startswith(f"Sent {keep + 1} of 685 messages · ")
    assert " — policy: last 100 exchanges · body " in line
