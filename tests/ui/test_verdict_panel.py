"""The Verdict tab: findings appear live as their frames arrive (the batches the window
gets), the whole-stream ones at the end; a click selects the frame in Frames; the card's
footer and the status bar show the short verdict."""

from __future__ import annotations

from functools import partial

import orjson
import pytest
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import ProgressEncoder
from streamscope.core.verdict.rules import Finding
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.ui.chat.answer_card import AssistantCard
from streamscope.ui.chat.status_panel import StatusPanel
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from streamscope.ui.inspector import InspectorPanel
from streamscope.ui.inspector.inspector import TAB_FRAMES, TAB_VERDICT
from streamscope.ui.inspector.verdict_panel import (
    COL_FRAME,
    COL_MESSAGE,
    COL_RULE,
    end_of,
    finding_text,
)
from support.batches import pipeline_batches
from support.verdict_streams import DONE, body, frame_bytes, oa, openai_text

T0 = 50.0
stream = partial(pipeline_batches, t0=T0, lead=0.2, tail=0.005)


def start() -> TurnStart:
    spec = RequestSpec("POST", "http://127.0.0.1:9/v1/chat/completions", {}, {"stream": True})
    return TurnStart(spec, orjson.dumps(spec.json), "openai", T0)


def rows(inspector: InspectorPanel) -> list[tuple[str, str]]:
    tree = inspector.verdict_panel.tree
    out = []
    for i in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(i)
        assert item is not None
        out.append((item.text(COL_RULE), item.text(COL_FRAME)))
    return out


def test_findings_arrive_live_then_at_the_end_and_a_click_selects_the_frame(
    qtbot: QtBot,
) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    assert inspector.tabText(TAB_VERDICT) == "Verdict"
    frames = [*openai_text()[:-1], oa({}, "stop"), DONE]  # finish_reason twice (frames 4, 5)
    reads = [frame_bytes(f, "openai") for f in frames]
    batches, turn = stream("openai", reads)
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    lines: list[str] = []
    inspector.verdict_panel.verdictChanged.connect(lines.append)
    for n, batch in enumerate(batches):
        inspector.add_progress(batch)
        inspector.verdict_panel.drain()  # (what the paint clock's next tick does)
        if n == 4:  # frame 5 has not arrived: nothing yet
            assert rows(inspector) == []
        if n == 5:  # it has: the finding is there before the turn ends
            assert rows(inspector) == [("openai.finish-reason-once", "5")]
            assert "(so far)" in inspector.verdict_panel.header.text()
    inspector.finish_turn(turn)
    assert rows(inspector) == [("openai.finish-reason-once", "5")]
    panel = inspector.verdict_panel
    assert panel.header.text() == "1 error · 0 warnings · 0 notes"
    assert inspector.tabText(TAB_VERDICT) == "Verdict · 1"
    assert lines[-1] == "1 spec error"
    assert panel.diagnosis() == "1 spec error"
    item = panel.tree.topLevelItem(0)
    assert item is not None
    assert item.text(COL_MESSAGE).startswith("finish_reason is set more than once for a choice")
    finding = panel.findings[0]
    # the message column is elided: the row's tooltip and the line under the list say it whole
    assert item.toolTip(COL_MESSAGE) == f"frame 5: {finding.message}\n\n{finding.hint}"
    assert "Exactly one chunk per choice" in finding.hint
    # the first finding is selected at the end: said whole without a click
    assert panel.tree.currentItem() is item
    assert panel.detail.text() == f"frame 5: {finding.message}"
    assert panel.hint.text() == finding.hint
    assert panel.detail.isVisibleTo(panel) and panel.hint.isVisibleTo(panel)
    inspector.setCurrentIndex(TAB_VERDICT)
    panel.tree.itemActivated.emit(item, COL_RULE)
    assert inspector.currentIndex() == TAB_FRAMES
    assert inspector.frames_panel.selected_row() == 5
    # a new turn clears the tab
    inspector.begin_turn(start())
    assert rows(inspector) == []
    assert panel.detail.text() == "" and not panel.detail.isVisibleTo(panel)
    assert panel.header.text() == "Checking the stream as it arrives…"
    assert inspector.tabText(TAB_VERDICT) == "Verdict"


def test_a_clean_turn_says_so_and_whole_stream_findings_have_no_frame(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    batches, turn = stream("openai", [frame_bytes(f, "openai") for f in openai_text()])
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    inspector.verdict_panel.drain()
    assert rows(inspector) == []
    panel = inspector.verdict_panel
    assert panel.header.text() == "No findings: the stream follows its dialect's rules."
    assert panel.diagnosis() == ""
    # no [DONE], served as text/plain: two whole-stream findings, no frame to click
    batches, turn = stream("openai", [body(openai_text()[:-1], "openai")])
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/plain")])
    for batch in batches:
        inspector.add_progress(batch)
    inspector.verdict_panel.drain()
    assert rows(inspector) == [("transport.content-type", "")]  # the other is known at the end
    inspector.finish_turn(turn)  # (everything was checked: the verdict comes at once)
    assert rows(inspector) == [("transport.content-type", ""), ("stream.terminal-missing", "")]
    item = panel.tree.topLevelItem(0)
    assert item is not None
    inspector.setCurrentIndex(TAB_VERDICT)
    panel.tree.itemActivated.emit(item, COL_RULE)
    assert inspector.currentIndex() == TAB_VERDICT  # nothing to select


def test_the_card_and_the_status_bar_show_the_verdict(qtbot: QtBot) -> None:
    card = AssistantCard("demo")
    qtbot.addWidget(card)
    turn = Turn(text="hi", outcome=Outcome.COMPLETED, reason="stop", finish_reason="stop")
    card.finish(turn)
    before = card.footer.text()
    card.show_verdict("2 spec errors · buffered by a proxy")
    assert card.footer.text().startswith(before)
    assert "2 spec errors · buffered by a proxy" in card.footer.text()
    assert card.verdict == "2 spec errors · buffered by a proxy"
    status = StatusPanel()
    qtbot.addWidget(status)
    status.show_turn(turn)
    line = status.text()
    status.show_verdict("stalled")
    assert status.text() == f"{line} · stalled"


def test_the_check_runs_on_the_paint_clock_then_calls_on_final_once(
    qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    panel = inspector.verdict_panel
    frames = [*openai_text(50)[:-1], oa({}, "stop"), DONE]
    batches, turn = stream("openai", [frame_bytes(f, "openai") for f in frames])
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    finals: list[str] = []
    panel.on_final = finals.append
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)  # reads are still queued: the verdict comes on the clock
    assert finals == []
    assert panel.clock.pending(panel._check)
    qtbot.waitUntil(lambda: finals != [], timeout=5000)
    assert finals == ["1 spec error"]
    assert rows(inspector) == [("openai.finish-reason-once", "52")]
    assert not panel.clock.pending(panel._check)
    # too long to check here: the tab says so, and says nothing else
    monkeypatch.setattr("streamscope.ui.inspector.verdict_panel.LIVE_LIMIT", 2000)
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    panel.on_final = finals.append
    for batch in batches:
        inspector.add_progress(batch)
    panel.drain()
    inspector.finish_turn(turn)
    assert rows(inspector) == []
    assert "longer than 0 MiB: not checked here" in panel.header.text()
    assert "streamscope lint FILE" in panel.header.text()
    assert finals == ["1 spec error"]  # (no verdict for the unchecked turn)


def test_checking_waits_for_the_tab_except_for_a_short_finished_turn(qtbot: QtBot) -> None:
    """Checking costs about what reading did: a hidden tab checks nothing live; a short turn
    is checked at its end (the card gets its verdict), a long one when the tab is shown."""
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    inspector.show()
    inspector.setCurrentIndex(TAB_FRAMES)
    panel = inspector.verdict_panel
    for size, immediate in ((5, True), (400_000, False)):  # 3 frames of 5 B vs 1.2 MB
        frames = [*openai_text(text="x" * size)[:-1], oa({}, "stop"), DONE]
        batches, turn = stream("openai", [frame_bytes(f, "openai") for f in frames])
        inspector.begin_turn(start())
        inspector.set_response(200, [("Content-Type", "text/event-stream")])
        finals: list[str] = []
        panel.on_final = finals.append
        got_it = partial(lambda seen: seen == ["1 spec error"], finals)
        for batch in batches:
            inspector.add_progress(batch)
        qtbot.wait(150)  # (ticks of the paint clock)
        assert rows(inspector) == []  # nothing checked while hidden and streaming
        inspector.finish_turn(turn)
        if immediate:
            qtbot.waitUntil(got_it, timeout=5000)
        else:
            qtbot.wait(150)
            assert finals == [] and rows(inspector) == []
            assert panel.header.text() == (
                "This turn is long (over 1 MiB): it is checked when this tab is shown."
            )
            inspector.setCurrentIndex(TAB_VERDICT)
            qtbot.waitUntil(got_it, timeout=10000)
        assert rows(inspector) == [("openai.finish-reason-once", "5")]
        inspector.setCurrentIndex(TAB_FRAMES)


def test_a_request_that_got_no_response_says_only_that(qtbot: QtBot) -> None:
    """Connection refused: no status, not a byte — "no response", and no stream.empty or
    stream.terminal-missing (there was no stream to judge)."""
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    panel = inspector.verdict_panel
    inspector.begin_turn(start())
    finals: list[str] = []
    panel.on_final = finals.append
    refused = Turn(
        outcome=Outcome.ERROR, reason="could not connect: Connection refused (127.0.0.1:9)"
    )
    inspector.finish_turn(refused)
    panel.drain()
    assert rows(inspector) == []
    assert panel.header.text() == "no response"
    assert panel.diagnosis() == ""
    assert finals == [""]
    assert inspector.tabText(TAB_VERDICT) == "Verdict"
    # a response with no body is a stream to judge: the empty-stream finding stays
    batches, turn = stream("openai", [])
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    panel.drain()
    assert ("stream.empty", "") in rows(inspector)


def test_the_detail_line_says_a_repeated_finding_whole() -> None:
    def finding(frame: int | None, count: int = 1, frames: tuple[int, ...] = ()) -> Finding:
        return Finding("stream.malformed-frame", "error", frame, "m", "h", count, frames)

    assert finding_text(finding(None)) == "the whole stream: m"
    assert finding_text(finding(7)) == "frame 7: m"
    assert finding_text(finding(4, 3, (4, 9, 12))) == "3 times (frames 4, 9, 12): m"
    assert finding_text(finding(4, 2, (4,))) == "2 times (frame 4): m"


def _ended(reads: list[bytes], end: StreamEnd) -> tuple[list[ProgressBatch], Turn]:
    """``reads`` through the pipeline, ended as ``end`` says (as the client met it)."""
    pipe = StreamPipeline("openai", keep_frames=True, request_sent=T0)
    encoder = ProgressEncoder()
    t = T0 + 0.2
    for data in reads:
        t += 0.01
        encoder.read(data, t)
        encoder.progressed(pipe.feed(data, t), t)
    encoder.progressed(pipe.end_input(end, t), t)
    return [encoder.take()], pipe.close(end, t + 0.005)


@pytest.mark.parametrize(
    ("end", "said"),
    [
        (StreamEnd("eof"), "connection closed after "),
        (StreamEnd("broken", detail="peer closed connection"), "connection broken after "),
        (StreamEnd("idle_timeout", timeout=30), "idle timeout after 30 s with no progress ("),
    ],
)
def test_the_verdict_says_the_end_in_the_cards_words(
    qtbot: QtBot, end: StreamEnd, said: str
) -> None:
    """The Verdict tab checks the turn's bytes again, ended as the turn met its end: a body
    that closed is "connection closed" there too (it said "connection broken" for every
    stream without its terminal signal)."""
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    batches, turn = _ended([frame_bytes(f, "openai") for f in openai_text()[:-1]], end)
    assert turn.outcome is Outcome.TRUNCATED and turn.reason.startswith(said)
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    inspector.verdict_panel.drain()
    missing = [f for f in inspector.verdict_panel.findings if f.rule == "stream.terminal-missing"]
    assert [f.message for f in missing] == [
        f"the body ended without the dialect's terminal signal: [DONE] ({turn.reason})"
    ]


def test_a_turn_that_does_not_say_its_end_is_judged_by_its_outcome() -> None:
    assert end_of(Turn(outcome=Outcome.TRUNCATED, status=200)).kind == "broken"
    assert end_of(Turn(outcome=Outcome.COMPLETED, status=200)).kind == "eof"
    closed = StreamEnd("eof", elapsed=1.5, bytes_received=10)
    turn = Turn(outcome=Outcome.TRUNCATED, status=200, stream_end=closed)
    assert end_of(turn) is closed
    failed = Turn(outcome=Outcome.ERROR, status=429, stream_end=StreamEnd("http_error"))
    assert end_of(failed, 429).kind == "http_error"
