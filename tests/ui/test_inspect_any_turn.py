"""Any turn opens in the inspector: the real window on a real profile against the demo
endpoint — older answers clicked (also after a restart), conversations switched, alternatives
paged, turns without a capture, a live turn clicked away from and back to, a 100k-frame
capture loaded with the event loop ticking."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QPoint, Qt, QTimer
from pytestqt.qtbot import QtBot

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
)
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.inspector.turn_feed import NO_CAPTURE, capture_gone
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards

DEMO, DEMO_FRAMES = "First question about streams", 108
"""A prompt and the frames of the ``demo`` scenario's answer to it (OpenAI dialect: role,
the echo of the prompt and a Markdown answer word by word, finish, usage, [DONE])."""
TOOLS, TOOLS_FRAMES = "Weather in Zürich?", 78
"""A prompt and the frames of ``demo-tools``' answer: two calls in tiny argument fragments."""
TOOLS_ON_DEMO_FRAMES = 79
"""``demo-tools``' answer to the ``DEMO`` prompt (it echoes one word more)."""

Profile = tuple[Store, CaptureStore]
OpenWindow = Callable[..., MainWindow]


@pytest.fixture
def profile(tmp_path: Path) -> Iterator[Profile]:
    store = Store(tmp_path / "streamscope.db")
    yield store, CaptureStore(tmp_path / "captures", index=store)
    store.close()


@pytest.fixture
def open_window(qtbot: QtBot, aloop: qasync.QEventLoop, profile: Profile) -> Iterator[OpenWindow]:
    """Open a window on the profile (again: a restart); each is shut down at the end."""
    store, captures = profile
    windows: list[MainWindow] = []

    def open_one(speed: float = 25, *, wait: bool = True) -> MainWindow:
        win = MainWindow(demo_speed=speed, store=store, captures=captures)
        qtbot.addWidget(win)
        win.resize(1200, 800)
        win.show()
        windows.append(win)
        if wait:
            settle(aloop, win)
        return win

    yield open_one
    for win in windows:
        aloop.run_until_complete(win.shutdown())


def settle(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    """Wait until the turn the inspector is loading (if any) is in its tabs."""
    loading = window.controller.feed.loading
    if loading is not None:
        aloop.run_until_complete(loading)


def close(aloop: qasync.QEventLoop, window: MainWindow) -> None:
    aloop.run_until_complete(window.shutdown())
    window.close()


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str) -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()
    return answer(window, aloop)


def answer(window: MainWindow, aloop: qasync.QEventLoop) -> Turn:
    """Wait for the answer to what was just sent (its request is prepared first)."""

    async def wait() -> Turn:
        deadline = time.monotonic() + 60  # (generous: the machine may be busy)
        while window.controller.busy:
            assert time.monotonic() < deadline, "no answer"
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def click(qtbot: QtBot, aloop: qasync.QEventLoop, window: MainWindow, card: AssistantCard) -> None:
    """Click the card's outcome footer, as a person would, and wait for its turn to load."""
    target = card.footer if card.footer.isVisible() else card.title
    qtbot.mouseClick(target, Qt.MouseButton.LeftButton, pos=QPoint(4, 4))
    settle(aloop, window)


def clock(started: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(started))


def frames_of(window: MainWindow) -> list[bytes]:
    model = window.inspector.frames_model
    return [model.frame_bytes(row) for row in range(model.rowCount())]


def test_an_older_turn_opens_after_a_restart(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot, profile: Profile
) -> None:
    store, _ = profile
    first = open_window()
    send(first, aloop, "demo", DEMO)
    live_demo = frames_of(first)
    demo_count = first.inspector.frames_panel.count_label.text()
    send(first, aloop, "demo-tools", TOOLS)
    live_tools = frames_of(first)
    assert (len(live_demo), len(live_tools)) == (DEMO_FRAMES, TOOLS_FRAMES)
    close(aloop, first)

    second = open_window()  # the restart: the last conversation, its last turn inspected
    conv_id = second.controller.session.conversation_id
    assert conv_id is not None
    answers = [m for m in store.load_conversation(conv_id).messages if m.role == "assistant"]
    header = second.inspector.header
    assert header.text() == (f"{DEMO} · {clock(answers[1].created)} · demo-tools · ✓ completed")
    assert frames_of(second) == live_tools
    assert second.inspector.toolcalls_panel.call_count() == 2
    cards = answer_cards(second.controller)
    assert [c.is_selected() for c in cards] == [False, True]

    click(qtbot, aloop, second, cards[0])
    assert header.text() == (f"{DEMO} · {clock(answers[0].created)} · demo · ✓ completed")
    assert second.inspector.frames_model.rowCount() == DEMO_FRAMES
    assert frames_of(second) == live_demo
    size = sum(map(len, live_demo))
    assert demo_count == f"{DEMO_FRAMES} frames · {size / 1024:.1f} KB"
    assert second.inspector.frames_panel.count_label.text() == demo_count
    assert second.inspector.toolcalls_panel.call_count() == 0
    assert "No tool calls in this turn." in second.inspector.toolcalls_panel.header.text()
    request = second.inspector.request_panel.request_view.toPlainText()
    assert request.startswith("POST http://127.0.0.1:")
    assert f'"content": "{DEMO}"' in request
    assert '"model": "demo"' in request
    assert second.inspector.request_panel.response_view.toPlainText().startswith("HTTP 200")
    assert second.inspector.timeline_panel.summary.text().startswith("<b>TTFT</b> ")
    assert "completed · [DONE] received" in second.inspector.timeline_panel.summary.text()
    assert [c.is_selected() for c in cards] == [True, False]
    assert not header.note.isVisibleTo(header) and not header.back_button.isVisibleTo(header)


def test_switching_conversation_shows_its_last_turn_and_new_clears(
    open_window: OpenWindow, aloop: qasync.QEventLoop, profile: Profile
) -> None:
    window = open_window()
    inspector, header = window.inspector, window.inspector.header
    send(window, aloop, "demo", DEMO)
    alpha = window.controller.session.conversation_id
    alpha_frames = frames_of(window)

    assert window.status.text().startswith("Completed · stop · ")
    window.switcher.new_conversation()  # the inspector is cleared, nothing stale stays
    assert window.status.text() == "Ready"
    assert header.text() == "No turn in this conversation yet"
    assert inspector.frames_model.rowCount() == 0
    assert inspector.frames_panel.count_label.text() == "0 frames · 0 B"
    assert inspector.toolcalls_panel.call_count() == 0
    assert inspector.request_panel.request_view.toPlainText() == ""
    assert inspector.request_panel.request_view.placeholderText() == (
        "No turn in this conversation yet"
    )

    send(window, aloop, "demo-tools", TOOLS)
    beta = window.controller.session.conversation_id
    assert alpha is not None and beta is not None and alpha != beta
    assert inspector.frames_model.rowCount() == TOOLS_FRAMES

    window.switcher.open_conversation(alpha)
    settle(aloop, window)
    assert header.text().startswith(f"{DEMO} · ")
    assert header.text().endswith(" · demo · ✓ completed")
    assert frames_of(window) == alpha_frames
    assert inspector.toolcalls_panel.call_count() == 0

    window.switcher.open_conversation(beta)
    settle(aloop, window)
    assert header.text().startswith(f"{TOOLS} · ")
    assert header.text().endswith(" · demo-tools · ✓ completed")
    assert inspector.frames_model.rowCount() == TOOLS_FRAMES
    assert inspector.toolcalls_panel.call_count() == 2


def test_paging_the_answers_shows_the_alternative_paged_to(
    open_window: OpenWindow, aloop: qasync.QEventLoop
) -> None:
    window = open_window()
    inspector = window.inspector
    send(window, aloop, "demo", DEMO)
    window.model_combo.setCurrentText("demo-tools")
    window.composer.regenerate_button.click()

    async def wait() -> None:
        await asyncio.sleep(0.05)
        await window.controller.runner.wait()
        while window.controller.busy:
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())
    assert window.alt_label.text().strip() == "answer 2/2"
    assert inspector.frames_model.rowCount() == TOOLS_ON_DEMO_FRAMES

    window.prev_alt.click()
    settle(aloop, window)
    assert inspector.header.text().endswith(" · demo · ✓ completed")
    assert inspector.frames_model.rowCount() == DEMO_FRAMES
    assert inspector.toolcalls_panel.call_count() == 0
    shown = [c for c in answer_cards(window.controller) if not c.isHidden()]
    shown[-1].next_alt.click()  # (the pager on the card shown)
    settle(aloop, window)
    assert inspector.header.text().endswith(" · demo-tools · ✓ completed")
    assert inspector.frames_model.rowCount() == TOOLS_ON_DEMO_FRAMES
    assert inspector.toolcalls_panel.call_count() == 2


def test_a_turn_without_its_capture_says_so_and_shows_nothing_stale(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot, profile: Profile
) -> None:
    _, captures = profile
    window = open_window()
    inspector, header = window.inspector, window.inspector.header
    send(window, aloop, "demo", DEMO)
    send(window, aloop, "demo-tools", TOOLS)
    cards = answer_cards(window.controller)
    first = cards[0].turn_ref
    assert first is not None and first.capture_id is not None
    path = captures.path(first.capture_id)
    path.unlink()  # the file is gone (the card still names it)
    assert inspector.toolcalls_panel.call_count() == 2  # (what is shown now)

    click(qtbot, aloop, window, cards[0])
    assert header.note.text() == capture_gone(path)
    assert header.note.isVisibleTo(header)
    assert header.text().startswith(f"{DEMO} · ")  # the turn is named
    assert header.text().endswith(" · demo · ✓ completed")
    assert inspector.frames_model.rowCount() == 0
    assert inspector.toolcalls_panel.call_count() == 0
    assert inspector.request_panel.request_view.toPlainText() == ""
    assert inspector.timeline_panel.summary.text() == header.note.text()

    captures.remove([first.capture_id])  # pruned: the saved turn no longer points at one
    conv = window.controller.session.conversation_id
    assert conv is not None
    window.switcher.open_conversation(conv)
    settle(aloop, window)
    assert inspector.frames_model.rowCount() == TOOLS_FRAMES and not header.note.isVisibleTo(header)
    click(qtbot, aloop, window, window.controller.answer_card(0))
    assert header.note.text() == NO_CAPTURE
    assert inspector.frames_model.rowCount() == 0
    assert inspector.request_panel.request_view.placeholderText() == NO_CAPTURE
    assert inspector.toolcalls_panel.header.text() == NO_CAPTURE


def wait_until(
    aloop: qasync.QEventLoop, condition: Callable[[], bool], timeout: float = 20
) -> None:
    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)

    aloop.run_until_complete(wait())


def test_a_live_turn_clicked_away_from_goes_on_and_comes_back_whole(
    open_window: OpenWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    """While a turn streams, clicking an older answer shows it at once; the live turn goes
    on (card, status bar, its frames kept aside) and "Back to live" shows it complete."""
    window = open_window(speed=2)  # demo-slow: a delta every 0.25 s, keep-alives between
    inspector, header, feed = window.inspector, window.inspector.header, window.controller.feed
    send(window, aloop, "demo", DEMO)
    old_frames = frames_of(window)
    window.model_combo.setCurrentText("demo-slow")
    window.composer.editor.setPlainText("Tell me slowly")
    window.composer._on_submit()
    old_card, live_card = answer_cards(window.controller)
    wait_until(aloop, lambda: feed.live_frames() >= 3)

    click(qtbot, aloop, window, old_card)  # (while it streams)
    assert window.controller.busy and not feed.following_live
    assert frames_of(window) == old_frames
    assert header.back_button.isVisibleTo(header)
    assert [old_card.is_selected(), live_card.is_selected()] == [True, False]
    parked_at, text_at = feed.live_frames(), len(live_card.text())
    wait_until(aloop, lambda: feed.live_frames() >= parked_at + 3)  # it goes on, unseen
    assert frames_of(window) == old_frames  # (nothing of it leaks into the turn shown)
    assert len(live_card.text()) > text_at  # the card streams on
    assert window.status.text().startswith("Streaming · ")

    qtbot.mouseClick(header.back_button, Qt.MouseButton.LeftButton)
    assert feed.following_live and not header.back_button.isVisibleTo(header)
    assert header.text().startswith(f"● live · {DEMO} · ")
    assert header.text().endswith(" · demo-slow · streaming…")
    live_rows = inspector.frames_model.rowCount()
    assert live_rows == feed.live_frames() >= parked_at + 3
    text_so_far = inspector.frames_model.log.text.span(0, len(live_card.text()))
    assert text_so_far == live_card.text()  # the reducer's text, as the card has it
    wait_until(aloop, lambda: inspector.frames_model.rowCount() >= live_rows + 2)  # live again

    click(qtbot, aloop, window, old_card)  # away again, and the turn ends meanwhile
    window.controller.stop()
    wait_until(aloop, lambda: not window.controller.busy)
    assert frames_of(window) == old_frames
    assert not header.back_button.isVisibleTo(header)  # (nothing streams now)
    total = feed.live_frames()
    # the status bar describes the turn shown, named (not the live turn's end: issue 28)
    assert old_card.turn_ref is not None and old_card.turn_ref.started is not None
    said = f"Turn of {clock(old_card.turn_ref.started)} — Completed · stop · "
    assert window.status.text().startswith(said)
    assert f" · {DEMO_FRAMES} frames · " in window.status.text()

    click(qtbot, aloop, window, live_card)  # the parked turn, complete, with its end
    assert header.text().endswith(" · demo-slow · ■ cancelled")
    assert window.status.text().startswith("Cancelled by you after ")
    assert f" · {total} frames · " in window.status.text()
    resumed = frames_of(window)
    assert len(resumed) == total
    assert "cancelled" in inspector.timeline_panel.summary.text()
    aloop.run_until_complete(window.controller.runner.wait())  # (its capture is written)

    click(qtbot, aloop, window, old_card)
    click(qtbot, aloop, window, live_card)  # now from its capture: the very same frames
    assert frames_of(window) == resumed


def firehose_capture(n: int) -> Capture:
    """An OpenAI chat stream of ``n`` one-word deltas and [DONE], read in 64 KB pieces."""
    import json

    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]}
    frames = []
    for i in range(n):
        chunk["choices"][0]["delta"] = {"content": f"t{i % 10} "}  # type: ignore[index]
        frames.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    body = b"".join(frames) + b"data: [DONE]\n\n"
    reads = ReadLog()
    for i, start in enumerate(range(0, len(body), 65536)):
        reads.append(0.01 + i * 1e-4, body[start : start + 65536])
    request = CaptureRequest("POST", "http://127.0.0.1:1/v1/chat/completions", (), b"{}")
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", request, response, reads, CaptureEnd("eof", elapsed=1.0))


def test_a_100k_frame_turn_loads_with_the_event_loop_ticking(
    open_window: OpenWindow,
    aloop: qasync.QEventLoop,
    profile: Profile,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, captures = profile
    capture_id = captures.save(firehose_capture(100_000))
    conv = store.create_conversation("Firehose", endpoint_name="Built-in demo", model="x")
    store.add_user_message(conv, "Firehose")
    message = store.begin_assistant_message(conv, model="demo-firehose")
    turn = Turn(text="(100k deltas)", outcome=Outcome.COMPLETED, reason="[DONE] received")
    store.finish_assistant_message(message, turn, capture_id)

    ticks = 0
    ticked = threading.Event()
    seen: dict[str, object] = {}

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        if ticks == 10:
            ticked.set()

    from streamscope.core.capture import format as capture_format

    real = capture_format.read_capture

    def read_after_ten_ticks(*args: Any, **kwargs: Any) -> Capture:
        seen["thread"] = threading.current_thread()
        seen["ticked"] = ticked.wait(timeout=30)  # on the UI thread this could never be set
        return real(*args, **kwargs)

    monkeypatch.setattr(capture_format, "read_capture", read_after_ten_ticks)
    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(0)  # once per pass of the event loop
    window = open_window(wait=False)  # the last conversation reopens: its turn loads
    loading = window.controller.feed.loading
    assert loading is not None
    header = window.inspector.header
    assert header.state.text() == "loading…"
    assert header.text().startswith("Firehose · ")
    ticks_before_replay = 0

    def on_started() -> None:
        nonlocal ticks_before_replay
        ticks_before_replay = ticks

    window.controller.feed._runner.turnStarted.connect(lambda _s: on_started())
    aloop.run_until_complete(loading)
    timer.stop()
    assert seen["ticked"] is True and seen["thread"] is not threading.main_thread()
    replay_ticks = ticks - ticks_before_replay
    # the replay let the loop run again and again (155 passes measured; 6 when it yielded
    # only every 64 reads)
    assert replay_ticks >= 60, replay_ticks
    assert window.inspector.frames_model.rowCount() == 100_001
    assert header.state.text() == "" and header.text().endswith(" · demo-firehose · ✓ completed")


# -- the minors that go with it ------------------------------------------------------------


def welcome_text(window: MainWindow) -> str:
    from streamscope.ui.chat.message_card import NoticeCard

    notices = [c for c in window.chat.cards() if isinstance(c, NoticeCard)]
    assert len(notices) == 1
    return notices[0].pane.toPlainText()


def test_the_welcome_names_the_endpoint_actually_selected(
    open_window: OpenWindow, aloop: qasync.QEventLoop
) -> None:
    from streamscope.core.net.endpoints import Endpoint

    window = open_window()
    assert "You are connected to the Built-in demo endpoint" in welcome_text(window)
    work = Endpoint(id="work", name="Work_vLLM", base_url="http://10.0.0.5:8000/v1", model="qwen")
    bar = window.endpoint_bar
    bar.set_endpoints(bar.endpoints.with_endpoint(work).select("work"))
    text = welcome_text(window)  # (the welcome follows the endpoint chosen)
    assert text.startswith("Welcome to StreamScope\nYou are connected to the Work_vLLM endpoint:")
    assert "http://10.0.0.5:8000/v1, model qwen, openai dialect." in text
    assert "demo-tools" not in text  # (the scenario menu is the demo's)

    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("builtin-demo"))
    assert "You are connected to the Built-in demo endpoint" in welcome_text(window)
    send(window, aloop, "demo", DEMO)
    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("work"))
    window.switcher.new_conversation()
    assert "You are connected to the Work_vLLM endpoint" in welcome_text(window)


def test_the_welcome_leaves_when_the_first_message_is_sent(
    open_window: OpenWindow, aloop: qasync.QEventLoop
) -> None:
    from streamscope.ui.chat.message_card import NoticeCard, UserCard

    window = open_window()
    assert "Welcome to StreamScope" in welcome_text(window)
    send(window, aloop, "demo", DEMO)
    cards = window.chat.cards()
    assert not [c for c in cards if isinstance(c, NoticeCard)]
    assert isinstance(cards[0], UserCard) and window.chat.row_count() == 2
    window.endpoint_bar.endpoint_combo.setCurrentIndex(0)  # (no welcome to update: no error)
    window.switcher.new_conversation()  # a new empty conversation has its welcome again
    assert "Welcome to StreamScope" in welcome_text(window)


def test_reloaded_answer_cards_keep_their_model(
    open_window: OpenWindow, aloop: qasync.QEventLoop, profile: Profile
) -> None:
    store, _ = profile
    window = open_window()
    send(window, aloop, "demo", DEMO)
    window.model_combo.setCurrentText("demo-length")
    window.controller.regenerate()
    answer(window, aloop)
    live = [c.title.text() for c in answer_cards(window.controller)]
    assert live == ["demo", "demo-length · answer 2"]
    close(aloop, window)

    again = open_window()
    assert [c.title.text() for c in answer_cards(again.controller)] == live
    # an answer saved before the model was kept: labelled with its conversation's model
    conv = store.create_conversation("Older", endpoint_name="OpenAI", model="gpt-x")
    store.add_user_message(conv, "hello")
    store.finish_assistant_message(
        store.begin_assistant_message(conv), Turn(text="hi", outcome=Outcome.COMPLETED)
    )
    again.switcher.open_conversation(conv)
    settle(aloop, again)
    assert [c.title.text() for c in answer_cards(again.controller)] == ["gpt-x"]


def test_regenerate_and_edit_are_enabled_exactly_when_the_conversation_has_an_answer(
    open_window: OpenWindow, aloop: qasync.QEventLoop
) -> None:
    window = open_window()
    composer = window.composer

    def enabled() -> tuple[bool, bool]:
        return (composer.regenerate_button.isEnabled(), composer.edit_button.isEnabled())

    assert enabled() == (False, False)
    send(window, aloop, "demo", DEMO)
    assert enabled() == (True, True)
    conv = window.controller.session.conversation_id
    assert conv is not None
    window.switcher.new_conversation()
    assert enabled() == (False, False)
    window.switcher.open_conversation(conv)
    settle(aloop, window)
    assert enabled() == (True, True)
    close(aloop, window)

    again = open_window()  # (the last conversation reopens)
    assert again.controller.session.conversation_id == conv
    assert again.composer.regenerate_button.isEnabled()
    assert again.composer.edit_button.isEnabled()
    again.conversations.delete(conv)  # the open one: a new, empty conversation
    assert not again.composer.regenerate_button.isEnabled()
    assert not again.composer.edit_button.isEnabled()


def test_the_model_chosen_is_remembered_per_endpoint(
    open_window: OpenWindow, aloop: qasync.QEventLoop
) -> None:
    from streamscope.core.net.endpoints import Endpoint

    window = open_window()
    bar = window.endpoint_bar
    bar.set_endpoints(bar.endpoints.with_endpoint(Endpoint(id="other", name="Other", model="m1")))
    window.model_combo.setCurrentText("demo-tools")
    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("other"))
    assert window.model_combo.currentText() == "m1"
    window.model_combo.setCurrentText("m2")
    assert window.endpoints.selected.model == "m2"  # (what Endpoints… edits: not stale)
    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("builtin-demo"))
    assert window.model_combo.currentText() == "demo-tools"
    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("other"))
    assert window.model_combo.currentText() == "m2"
    close(aloop, window)

    again = open_window()  # a restart: the endpoint chosen, each with its last model
    assert (again.current_endpoint().id, again.model_combo.currentText()) == ("other", "m2")
    bar = again.endpoint_bar
    bar.endpoint_combo.setCurrentIndex(bar.endpoint_combo.findData("builtin-demo"))
    assert again.model_combo.currentText() == "demo-tools"
    again.composer.editor.setPlainText(TOOLS)
    again.composer._on_submit()
    turn = answer(again, aloop)
    assert turn.finish_reason == "tool_calls"  # it went to demo-tools
    capture = again.controller.last_capture
    assert capture is not None and capture.request is not None
    assert b'"model":"demo-tools"' in capture.request.body.replace(b" ", b"")


def test_the_header_elides_the_title_first_and_never_widens_the_inspector(qtbot: QtBot) -> None:
    from streamscope.ui.chat.turn_ref import TurnRef
    from streamscope.ui.inspector.inspector import InspectorPanel

    inspector = InspectorPanel()
    dock = inspector.container()
    qtbot.addWidget(dock)
    dock.show()
    qtbot.waitExposed(dock)
    empty_minimum = dock.minimumSizeHint().width()
    header, line = inspector.header, inspector.header.title
    title = "A conversation with a long title about streams, tokens and everything else"
    started = time.mktime((2026, 11, 29, 14, 3, 12, 0, 0, -1))  # (not today: with its date)
    ref = TurnRef(7, title, started, "gpt-4o-mini-2024-07-18", Outcome.COMPLETED, "c1")
    header.show_turn(ref, live=False)
    header.set_live_elsewhere(True)
    header.set_note(capture_gone("/home/someone/.local/share/streamscope/captures/c1.sscap"))
    qtbot.wait(20)  # (the layouts are redone)
    assert dock.minimumSizeHint().width() == empty_minimum  # the header asks for no width
    facts = "· 2026-11-29 14:03 · gpt-4o-mini-2024-07-18 ·"
    assert header.text() == f"{title} {facts} ✓ completed"
    assert line.toolTip() == f"{title} {facts}"
    assert line.shown(2000) == (title, facts)
    wide = line.sizeHint().width()
    assert line.shown(wide) == (title, facts)
    shown_title, shown_facts = line.shown(wide - 60)  # short of room: the title gives way
    assert shown_facts == facts
    assert shown_title.endswith("…") and title.startswith(shown_title[:-1])
    shown_title, shown_facts = line.shown(80)  # the title down to a few letters: facts too
    assert shown_title.endswith("…") and len(shown_title) < 10
    assert shown_facts.endswith("…") and facts.startswith(shown_facts[:-1])

    dock.resize(empty_minimum, 600)  # the narrowest inspector: still one line of title
    qtbot.wait(20)
    assert header.title.height() == line.minimumSizeHint().height()
    assert header.width() <= empty_minimum


def test_without_a_profile_the_latest_captures_are_kept_in_memory(
    qtbot: QtBot, aloop: qasync.QEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamscope.ui.chat import chat_controller

    monkeypatch.setattr(chat_controller, "MEMORY_CAPTURES", 2)
    window = MainWindow(demo_speed=25)  # no store, no capture folder
    qtbot.addWidget(window)
    window.show()
    try:
        inspector, header = window.inspector, window.inspector.header
        send(window, aloop, "demo", DEMO)
        live_demo = frames_of(window)
        send(window, aloop, "demo-tools", TOOLS)
        first, second = answer_cards(window.controller)
        click(qtbot, aloop, window, first)
        assert frames_of(window) == live_demo and not header.note.isVisibleTo(header)
        assert header.text().endswith(" · demo · ✓ completed")
        click(qtbot, aloop, window, second)
        assert inspector.frames_model.rowCount() == TOOLS_FRAMES
        assert inspector.toolcalls_panel.call_count() == 2

        send(window, aloop, "demo", "A third question")  # the first answer's capture goes
        click(qtbot, aloop, window, first)
        assert header.note.text() == chat_controller.MEMORY_NOTE
        assert inspector.frames_model.rowCount() == 0
        click(qtbot, aloop, window, second)  # (still kept)
        assert inspector.frames_model.rowCount() == TOOLS_FRAMES
        assert not header.note.isVisibleTo(header)
    finally:
        aloop.run_until_complete(window.shutdown())
