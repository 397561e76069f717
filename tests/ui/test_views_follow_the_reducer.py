"""Every view shows what the reducer says, at every batch boundary — not only at the end.

Each recorded fixture (and synthetic index-less, id-less and index-reused tool-call
streams) is fed one byte per read through the window's path: the pipeline, the progress
encoder, the turn runner and the paint clock, into the chat card, the Tool calls tab, the
status bar, the timeline, the frames table and the saved answer. At every ``turnProgressed``
each view is compared with an independent pipeline fed exactly the bytes read so far; at the
end, with the finished Turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.store.database import Store
from streamscope.core.store.session import ChatSession
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import Progress
from streamscope.core.wire.events import StreamEvent
from streamscope.core.wire.sizes import plural
from streamscope.ui.base import pacing
from streamscope.ui.chat.chat_controller import ChatController
from streamscope.ui.chat.chat_view import ChatView
from streamscope.ui.chat.status_panel import StatusPanel
from streamscope.ui.endpoint.demo_service import DemoService
from streamscope.ui.inspector.inspector import InspectorPanel
from streamscope.ui.inspector.turn_feed import InspectorFeed

FIXTURES = Path(__file__).parents[1] / "core" / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in {".sse", ".ndjson"})
CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson"}
DT = 0.001  # seconds between two reads (one byte each)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    obj = {"object": "chat.completion.chunk", "choices": [choice]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _call(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [fields]}


SYNTHETIC = {
    # no index anywhere: placed by position (the id says which call a fragment is of)
    "index-less": [
        _chunk(_call(id="a", function={"name": "f", "arguments": '{"x"'})),
        _chunk(_call(id="b", function={"name": "g", "arguments": '{"y"'})),
        _chunk(_call(id="a", function={"arguments": ":1}"})),
        _chunk(_call(id="b", function={"arguments": ":2}"})),
        _chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ],
    # no id anywhere: the index says which call
    "id-less": [
        _chunk(_call(index=0, function={"name": "f", "arguments": ""})),
        _chunk(_call(index=1, function={"name": "g", "arguments": '{"q":'})),
        _chunk(_call(index=0, function={"arguments": '{"p":'})),
        _chunk(_call(index=0, function={"arguments": "true}"})),
        _chunk(_call(index=1, function={"arguments": '"z"}'})),
        _chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ],
    # neither: every fragment continues the last call
    "index-and-id-less": [
        _chunk(_call(function={"name": "f", "arguments": '{"a":'})),
        _chunk(_call(function={"arguments": "[1,"})),
        _chunk(_call(function={"arguments": "2]}"})),
        _chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ],
    # index 0 reused for another id: a second call, not a merged one
    "index-reused": [
        _chunk(_call(index=0, id="c1", function={"name": "f", "arguments": "{}"})),
        _chunk(_call(index=0, id="c2", function={"name": "g", "arguments": '{"k":'})),
        _chunk(_call(index=0, function={"arguments": "1}"})),
        _chunk({"content": "done"}, "tool_calls"),
        b"data: [DONE]\n\n",
    ],
}


def _cases() -> Iterator[Any]:
    for path in CASES:
        expected = json.loads(path.with_name(path.stem + ".expected.json").read_text("utf-8"))
        dialect = path.parent.name
        yield pytest.param(
            dialect, path.read_bytes(), CONTENT_TYPES[path.suffix], expected["end"],
            id=f"{dialect}/{path.stem}",
        )  # fmt: skip
    for name, chunks in SYNTHETIC.items():
        yield pytest.param("openai", b"".join(chunks), CONTENT_TYPES[".sse"], "eof", id=name)


def _capture(dialect: str, body: bytes, content_type: str, end: str) -> Capture:
    reads = ReadLog()
    for i in range(len(body)):
        reads.append((i + 1) * DT, body[i : i + 1])
    response = CaptureResponse(200, (("content-type", content_type),), DT / 2)
    return Capture(dialect, None, response, reads, CaptureEnd(end, elapsed=(len(body) + 1) * DT))  # type: ignore[arg-type]


class Reference:
    """An independent pipeline, fed the same one-byte reads as far as the views got."""

    def __init__(self, dialect: str, body: bytes, content_type: str, end: str) -> None:
        self.pipe = StreamPipeline(dialect, content_type=content_type, request_sent=0.0)
        self.body = body
        self.t_end = (len(body) + 1) * DT  # (when the capture says the body ended)
        self.end = StreamEnd(end, elapsed=self.t_end)  # type: ignore[arg-type]
        self.fed = 0
        self.frames: list[list[StreamEvent]] = []

    def feed_to(self, size: int, frames: int) -> Turn:
        """Fed ``size`` bytes; past the end of the input when the views saw more frames than
        the bytes make (the unterminated last frame comes with the end of the body)."""
        while self.fed < size:
            self.fed += 1
            update = self.pipe.feed(self.body[self.fed - 1 : self.fed], self.fed * DT)
            self.frames += [events for _frame, events in update.frames]
        if frames > len(self.frames) and self.fed == len(self.body):
            tail = self.pipe.end_input(self.end, self.t_end)
            self.frames += [events for _frame, events in tail.frames]
        return self.pipe.snapshot()

    def close(self) -> Turn:
        tail = self.pipe.end_input(self.end, self.t_end)
        self.frames += [events for _frame, events in tail.frames]
        return self.pipe.close(self.end, self.t_end)

    def progress(self) -> int:
        return self.pipe.assembler.take_delta().progress


def _calls(calls: Any) -> list[tuple[Any, ...]]:
    return [(c.index, c.id, c.name, c.arguments, [f.text for f in c.fragments]) for c in calls]


@pytest.mark.parametrize(("dialect", "body", "content_type", "end"), list(_cases()))
def test_every_view_equals_the_reducer_at_every_batch(
    dialect: str,
    body: bytes,
    content_type: str,
    end: str,
    qtbot: QtBot,
    aloop: qasync.QEventLoop,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A batch at every frame (the clock also cuts batches at its ticks): a boundary everywhere.
    monkeypatch.setattr(pacing, "MAX_BATCH_FRAMES", 1)
    chat, inspector, status = ChatView(), InspectorPanel(), StatusPanel()
    for widget in (chat, inspector, status):
        qtbot.addWidget(widget)
    controller = ChatController(
        chat=chat,
        viewer=InspectorFeed(inspector, None),
        status=status,
        endpoint=lambda: None,  # type: ignore[arg-type,return-value]
        api_key=lambda _e: None,
        headers=lambda _e: {},
        tools=lambda: [],
        demo=DemoService(),
    )
    store = Store(tmp_path / "s.db")
    session = ChatSession(store, save_interval=0.0)  # saves every batch
    session.user_sent("hi", endpoint_name="e", model="m")
    session.answer_started(alternative=False)
    reference = Reference(dialect, body, content_type, end)
    checked: list[int] = []

    def on_progress(batch: Progress) -> None:
        turn = reference.feed_to(batch.total_bytes, batch.total_frames)
        if batch.delta is not None and batch.delta.finished:  # the last batch: after the end
            turn = reference.close()
        card = chat.cards()[-1]
        assert card.text() == turn.text  # type: ignore[attr-defined]
        assert card.reasoning() == turn.reasoning  # type: ignore[attr-defined]
        assert _calls(card.calls) == _calls(turn.tool_calls)  # type: ignore[attr-defined]
        assert _calls(inspector.toolcalls_panel.calls) == _calls(turn.tool_calls)
        assert status._deltas == reference.progress()
        assert f" · {plural(len(reference.frames), 'frame')} · " in status.text()
        m = inspector.timeline_panel.milestones
        tm = turn.timings
        assert (m.first_byte, m.first_reasoning, m.first_token, m.last_token, m.terminal) == (
            tm.first_byte, tm.first_reasoning, tm.first_answer, tm.last_token, tm.terminal
        )  # fmt: skip
        if batch.delta is not None:
            session.answer_progressed(batch.delta)
        saved = store.load_conversation(session.conversation_id or 0).messages[-1]
        assert saved.text == turn.text
        assert [(c.id, c.name, c.arguments) for c in saved.tool_calls] == [
            (c.id, c.name or "", c.arguments) for c in turn.tool_calls
        ]
        checked.append(batch.total_bytes)

    controller.runner.turnProgressed.connect(on_progress)
    assert controller.replay(_capture(dialect, body, content_type, end), speed=None, label="x")
    turn = aloop.run_until_complete(controller.runner.wait())
    assert turn is not None and turn.outcome is not None
    assert checked and checked[-1] == len(body)
    assert len(checked) >= len(reference.frames) // 2  # boundaries all along the stream

    # the end: every view equals the finished Turn, without having been overwritten by it
    final = reference.close()
    assert (turn.text, _calls(turn.tool_calls)) == (final.text, _calls(final.tool_calls))
    card = chat.cards()[-1]
    assert card.text() == turn.text and card.reasoning() == turn.reasoning  # type: ignore[attr-defined]
    assert _calls(card.calls) == _calls(inspector.toolcalls_panel.calls) == _calls(turn.tool_calls)  # type: ignore[attr-defined]
    assert all(c.done for c in card.calls)  # type: ignore[attr-defined]
    log = inspector.frames_model.log
    assert [log.events(row) for row in range(len(log))] == reference.frames
    session.answer_finished(turn)
    saved = store.load_conversation(session.conversation_id or 0).messages[-1]
    assert saved.text == turn.text
    store.close()
