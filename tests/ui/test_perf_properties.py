"""Performance properties that do not depend on the machine: counts, not times.

The timings live in ``tests/benchmarks`` (``run_all.py``). Here: a flood arrives in few
flushes with the exact text, a long line is laid out in bounded blocks, a code block is laid
out once per step (not per token), a huge line renders in many small steps, and the frames
model keeps numbers per frame, not copies of its bytes.
"""

from __future__ import annotations

import json

import qasync
from PySide6.QtGui import QTextCursor, QTextDocument
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.net.client import StreamClient
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.chat.chat_view import ChatView
from streamscope.ui.chat.markdown import (
    PLAIN_STEP,
    TOKENS_PER_STEP,
    CodeBlock,
    MarkdownWriter,
    Prose,
)
from streamscope.ui.chat.text_pane import LINE_PIECE, PlainAppender
from streamscope.ui.chat.turn_runner import TurnRunner
from streamscope.ui.chat.turn_start import ProgressBatch
from streamscope.ui.inspector import InspectorPanel


def frame(text: str) -> bytes:
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def capture_of(deltas: list[str], frames_per_read: int = 32) -> Capture:
    frames = [frame(d) for d in deltas] + [b"data: [DONE]\n\n"]
    reads = ReadLog()
    for i in range(0, len(frames), frames_per_read):
        reads.append(0.01 + i * 1e-5, b"".join(frames[i : i + frames_per_read]))
    response = CaptureResponse(200, (("content-type", "text/event-stream"),), 0.005)
    return Capture("openai", None, response, reads, CaptureEnd("eof", elapsed=1.0))


def test_20000_deltas_arrive_in_few_flushes_with_the_exact_text(
    qtbot: QtBot, aloop: qasync.QEventLoop
) -> None:
    n = 20_000
    deltas = [f"w{i} " if i % 50 else "\n\n" for i in range(n)]
    expected = "".join(deltas)
    runner = TurnRunner(StreamClient())
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    chat = ChatView()
    qtbot.addWidget(chat)
    card = chat.begin_assistant_message("replay")
    batches: list[ProgressBatch] = []
    runner.turnProgressed.connect(batches.append)
    runner.turnProgressed.connect(inspector.add_progress)
    runner.turnProgressed.connect(lambda b: b.delta is not None and card.take(b.delta))
    runner.turnFinished.connect(card.finish)

    async def main() -> Turn | None:
        runner.start_replay(capture_of(deltas))
        return await runner.wait()

    turn = aloop.run_until_complete(main())
    assert turn is not None and turn.outcome is Outcome.COMPLETED
    assert runner.flushes == len(batches) <= n // 100  # coalesced: far fewer than deltas
    assert "".join(b.delta.text for b in batches if b.delta is not None) == expected
    assert card.text() == turn.text == expected
    assert len(inspector.frames_model.log) == n + 1
    assert len(inspector.frames_model.log.side) == 0  # every frame points into the reads
    qtbot.waitUntil(lambda: not card.is_rendering(), timeout=20_000)


def test_an_endless_line_is_laid_out_in_bounded_blocks(qtbot: QtBot) -> None:
    document = QTextDocument()
    appender = PlainAppender(document)
    text = "".join(f"t{i % 10} " for i in range(100_000))  # 300 KB, no newline
    for start in range(0, len(text), 977):  # coalesced deltas of odd sizes
        appender.append(text[start : start + 977])
    blocks = []
    block = document.begin()
    while block.isValid():
        blocks.append(block.length() - 1)
        block = block.next()
    assert max(blocks) <= LINE_PIECE  # each insert lays out at most one short block
    assert len(blocks) <= 2 * len(text) // LINE_PIECE + 2
    assert "".join(document.toPlainText().split("\n")) == text


def test_a_code_block_is_laid_out_once_per_step_not_per_token(qtbot: QtBot) -> None:
    document = QTextDocument()
    document.documentLayout()  # laid out, as in a visible pane
    changes: list[int] = []
    document.contentsChange.connect(lambda *_: changes.append(1))
    code = "\n".join(f"value_{i} = compute({i}, 'x')  # step {i}" for i in range(1500))
    writer = MarkdownWriter(QApplication.palette())
    steps = sum(1 for _ in writer.write(QTextCursor(document), CodeBlock(code, "python")))
    tokens = 1500 * 14
    assert steps >= tokens // TOKENS_PER_STEP
    assert len(changes) <= steps + 10  # not one layout pass per token (~21,000)
    assert document.toPlainText().rstrip().endswith("# step 1499")


def test_a_huge_line_renders_in_many_small_steps(qtbot: QtBot) -> None:
    document = QTextDocument()
    line = "".join(f"t{i % 10} " for i in range(100_000))
    writer = MarkdownWriter(QApplication.palette())
    steps = sum(1 for _ in writer.write(QTextCursor(document), Prose(line)))
    assert steps >= len(line) // PLAIN_STEP
    block = document.begin()
    longest = 0
    while block.isValid():
        longest = max(longest, block.length() - 1)
        block = block.next()
    assert longest <= LINE_PIECE


def test_a_replayed_capture_is_held_once_not_copied_by_the_views(
    qtbot: QtBot, aloop: qasync.QEventLoop
) -> None:
    """The Frames table and the session's turn list index the capture's own reads."""
    import gc
    import tracemalloc
    from dataclasses import replace

    from streamscope.core.capture.format import CaptureRequest
    from streamscope.ui.chat.turn_recorder import SessionTurnsRecorder

    request = CaptureRequest("POST", "http://127.0.0.1:1/v1/chat/completions", (), b"{}")
    capture = replace(capture_of([f"w{i} " for i in range(20_000)]), request=request)
    raw = capture.reads.size
    runner = TurnRunner(StreamClient())
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    runner.turnStarted.connect(inspector.begin_turn)
    runner.turnProgressed.connect(inspector.add_progress)
    runner.turnFinished.connect(inspector.finish_turn)  # (shows the last rows at once)
    recorder = SessionTurnsRecorder(runner)  # no owner's capture: it builds its own

    async def main(replayed: Capture) -> Turn | None:
        runner.start_replay(replayed)
        return await runner.wait()

    aloop.run_until_complete(main(replace(capture_of(["warm up"]), request=request)))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    turn = aloop.run_until_complete(main(capture))
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    ours = [tracemalloc.Filter(True, "*/streamscope/*")]
    retained = sum(
        stat.size_diff
        for stat in after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    )
    assert turn is not None and turn.outcome is Outcome.COMPLETED
    # (a copy of the bytes would be >= raw; the Verdict tab's linter keeps ~10 KB of state
    # whatever the stream's size: tests/core/test_verdict_rules.py checks that it stays flat)
    assert retained < raw / 2 + 16 * 1024, (retained, raw)
    model = inspector.frames_model
    assert model.rowCount() == 20_001 and model.log.stream is capture.reads.buffer()
    assert model.frame_bytes(7) == frame("w7 ")
    assert recorder.last is not None and recorder.last.capture.reads is capture.reads


def test_the_tail_drops_a_rendered_prefix_without_laying_the_rest_out_again(
    qtbot: QtBot,
) -> None:
    document = QTextDocument()
    appender = PlainAppender(document)
    line = "".join(f"t{i % 10} " for i in range(40_000))  # 120 KB: continued in new blocks
    text = "para one\npara two\n\n" + line + "\nthe end\n"
    for start in range(0, len(text), 7_777):
        appender.append(text[start : start + 7_777])
    assert document.blockCount() > text.count("\n") + 1  # the long line was continued
    changes: list[tuple[int, int, int]] = []
    document.contentsChange.connect(lambda *change: changes.append(change))
    removed = 0
    for n in (9, 10, 50_000, 61_000):
        appender.remove_prefix(n - removed)
        removed = n
        shown = document.toPlainText()
        rest = text[n:]
        # the text left is the rest of the source; only continuation breaks differ
        assert shown.replace("\n", "") == rest.replace("\n", "")
        assert shown.endswith("\nthe end\n")
    assert all(added == 0 for _pos, _removed, added in changes)  # nothing appended again
    appender.remove_prefix(len(text))
    assert document.isEmpty()
    appender.append("again")
    assert document.toPlainText() == "again"
