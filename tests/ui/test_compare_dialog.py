"""Compare two turns on long answers: the work runs off the UI thread while the dialog says
"Comparing…", and a diff coarsened for length says so."""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable, Iterator

import pytest
import qasync
from PySide6.QtCore import Qt, QTimer
from pytestqt.qtbot import QtBot

from streamscope.core.capture import text_diff as text_diff_module
from streamscope.core.capture.compare import Comparison
from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.ui.base.theme import colour
from streamscope.ui.tools import compare_view
from streamscope.ui.tools.compare_view import CompareDialog

WORDS = 10_000


def answer(seed: int, changed_every: int = 0) -> list[str]:
    """A 10,000-word answer as deltas (one word each), a paragraph every 40 words."""
    rng = random.Random(seed)
    vocab = ["the", "a", "of", "and", "to", "in", *(f"w{i}" for i in range(2000))]
    words = [rng.choice(vocab) for _ in range(WORDS)]
    if changed_every:
        words[5::changed_every] = ["CHANGED"] * len(words[5::changed_every])
    return [w + ("\n\n" if i % 40 == 39 else " ") for i, w in enumerate(words)]


def capture_of(deltas: list[str]) -> Capture:
    """An OpenAI chat stream of ``deltas`` (one frame each, 64 frames a read)."""
    frames = [
        b"data: "
        + json.dumps(
            {"object": "chat.completion.chunk", "choices": [{"delta": {"content": d}}]}
        ).encode()
        + b"\n\n"
        for d in deltas
    ] + [b"data: [DONE]\n\n"]
    reads = ReadLog()
    for i in range(0, len(frames), 64):
        reads.append(0.01 + i * 1e-4, b"".join(frames[i : i + 64]))
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", None, response, reads, CaptureEnd("eof", elapsed=1.0))


@pytest.fixture
def dialog(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[CompareDialog]:
    dlg = CompareDialog([])
    qtbot.addWidget(dlg)
    dlg.add_capture("long A", capture_of(answer(1)))
    dlg.add_capture("long B", capture_of(answer(1, changed_every=50)))
    dlg.select(0, 1)
    dlg.show()
    yield dlg
    dlg.close()


def test_a_10000_word_compare_leaves_the_event_loop_ticking(
    dialog: CompareDialog, aloop: qasync.QEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = 0
    ticked = threading.Event()
    seen: dict[str, object] = {}

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        if ticks == 10:
            seen["busy"] = (dialog.busy, dialog.progress.isVisible(), dialog.status.text())
            ticked.set()

    real = compare_view.compare_captures

    def compare_after_ten_ticks(*args: object, **kwargs: bool) -> Comparison:
        seen["thread"] = threading.current_thread()
        seen["ticked"] = ticked.wait(timeout=30)  # on the UI thread this could never be set
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compare_view, "compare_captures", compare_after_ten_ticks)
    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(5)
    task = dialog.compare()
    assert task is not None
    assert dialog.busy and not dialog.compare_button.isEnabled()
    result = aloop.run_until_complete(task)
    timer.stop()
    assert seen["ticked"] is True and seen["thread"] is not threading.main_thread()
    assert seen["busy"] == (True, True, "Comparing…")
    assert not dialog.busy and not dialog.progress.isVisible()
    assert dialog.compare_button.isEnabled()
    assert result.text.unit == "word"
    differences = result.differences()
    assert "text: 200 words differ" in differences
    assert dialog.status.text() == f"{len(differences)} differences (timings aside)"
    assert "line-through" in dialog.text_view.toHtml()
    assert dialog.comparison is result


def test_a_coarsened_diff_is_announced(
    dialog: CompareDialog, aloop: qasync.QEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(text_diff_module, "MAX_TOKENS", 30)  # < a 40-word paragraph
    task = dialog.compare()
    assert task is not None
    result = aloop.run_until_complete(task)
    assert result.text.coarsened
    assert dialog.status.text().endswith(" · text compared as a whole (too long for a word diff)")
    assert "Text compared as a whole, not word by word" in dialog.text_view.toPlainText()


def test_closing_drops_a_comparison_under_way(
    dialog: CompareDialog, aloop: qasync.QEventLoop
) -> None:
    task = dialog.compare()
    assert task is not None
    dialog.close()
    aloop.run_until_complete(asyncio.sleep(0))
    assert task.cancelled() or task.done()
    assert dialog.comparison is None


def volatile_capture(run_id: str, created: int) -> Capture:
    """A short OpenAI chat stream whose chunks carry ``id`` and ``created``."""
    frames = [
        b"data: "
        + json.dumps(
            {"id": run_id, "object": "chat.completion.chunk", "created": created,
             "choices": [{"delta": {"content": d}}]}
        ).encode()
        + b"\n\n"
        for d in ("Same", " answer")
    ] + [b"data: [DONE]\n\n"]  # fmt: skip
    reads = ReadLog()
    for i, frame in enumerate(frames):
        reads.append(0.01 * (i + 1), frame)
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", None, response, reads, CaptureEnd("eof", elapsed=0.1))


def settle(aloop: qasync.QEventLoop, done: Callable[[], bool]) -> None:
    """Run the loop (Qt and asyncio) until ``done()``."""

    async def poll() -> None:
        while not done():
            await asyncio.sleep(0.01)

    aloop.run_until_complete(asyncio.wait_for(poll(), 20))


def test_it_compares_on_open_and_can_ignore_ids_and_timestamps(
    qtbot: QtBot, aloop: qasync.QEventLoop
) -> None:
    dialog = CompareDialog([])
    qtbot.addWidget(dialog)
    dialog.add_capture("turn 1", volatile_capture("chatcmpl-1", 1_700_000_000))
    dialog.add_capture("turn 2", volatile_capture("chatcmpl-2", 1_700_000_009))
    dialog.resize(1100, 720)
    dialog.show()
    # no click: the last two turns are compared at once, ids and timestamps aside
    settle(aloop, lambda: dialog.comparison is not None and not dialog.busy)
    assert dialog.ignore_volatile.isChecked()
    assert dialog.comparison is not None and dialog.comparison.differences() == []
    assert dialog.status.text() == "0 differences (timings aside)"
    assert dialog.frames_table.item(0, 2).background().style() == Qt.BrushStyle.NoBrush
    # unticked: compared again by itself, byte for byte
    first = dialog.comparison
    qtbot.mouseClick(dialog.ignore_volatile, Qt.MouseButton.LeftButton)
    settle(aloop, lambda: dialog.comparison is not first and not dialog.busy)
    assert dialog.comparison.differences() == ["frames: 2 of 3 differ in content"]
    assert "• frames: 2 of 3 differ in content" in dialog.summary.toPlainText()
    assert dialog.frames_table.item(0, 2).background().color() == colour(
        "compare_diff", dialog.palette()
    )
    assert dialog.frames_table.item(2, 2).background().style() == Qt.BrushStyle.NoBrush
    # A's and B's columns are equal halves, in the frames and in the metrics
    dialog.tabs.setCurrentIndex(3)
    qtbot.wait(10)
    frames = dialog.frames_table
    assert frames.columnWidth(2) > 200
    assert abs(frames.columnWidth(2) - frames.columnWidth(5)) <= 1
    assert frames.columnWidth(0) == frames.columnWidth(3)
    metrics = dialog.metrics_table
    assert abs(metrics.columnWidth(1) - metrics.columnWidth(2)) <= 1
    # picking the same turn on both sides compares again too
    second = dialog.comparison
    dialog.combo_a.setCurrentIndex(1)
    settle(aloop, lambda: dialog.comparison is not second and not dialog.busy)
    assert dialog.comparison.differences() == []
    dialog.close()
