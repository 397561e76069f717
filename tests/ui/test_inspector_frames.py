"""The Frames tab: compact model, lazy summaries, kinds, filter, detail, dialect banner."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Sequence
from functools import partial

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QFont
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import TurnDelta
from streamscope.core.turn.pipeline import ParsedFrame
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import StreamEvent, TextDelta
from streamscope.core.wire.sse import RawFrame, SSEEvent
from streamscope.ui.chat.turn_start import ProgressBatch, TurnStart
from streamscope.ui.inspector import InspectorPanel
from streamscope.ui.inspector.frame_detail import MARK, hex_dump, visible_text
from streamscope.ui.inspector.frames_filter import FramesFilterModel
from streamscope.ui.inspector.frames_model import (
    COL_EVENT,
    COL_SUMMARY,
    FLAG_INCOMPLETE,
    FLAG_INVALID_UTF8,
    FrameKind,
    FramesModel,
    KindRole,
)
from streamscope.ui.inspector.frames_panel import FramesPanel
from support.batches import pipeline_batches

T0 = 50.0


stream = partial(pipeline_batches, t0=T0, lead=0.1, tail=0.001)


def chat(text: str) -> bytes:
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def filled(dialect: str, reads: Sequence[bytes], per_batch: int = 1) -> FramesModel:
    model = FramesModel()
    model.clear(T0)
    for batch in stream(dialect, reads, per_batch)[0]:
        model.append(batch)
    return model


def summaries(model: FramesModel) -> list[tuple[str, str]]:
    return [model.event_and_summary(row) for row in range(model.rowCount())]


# -- the model under qtmodeltester ---------------------------------------------------------


def test_model_passes_qtmodeltester_while_batches_arrive(qtmodeltester: ModelTester) -> None:
    model = FramesModel()
    model.clear(T0)
    qtmodeltester.check(model, force_py=True)  # type: ignore[no-untyped-call]
    reads = [b": keep-alive\n\n", *(chat(f"w{i} ") for i in range(30)), b"data: [DONE]\n\n"]
    for batch in stream("openai", reads, per_batch=4)[0]:
        model.append(batch)
    assert model.rowCount() == 32
    model.clear(T0)
    assert model.rowCount() == 0


def test_filter_model_passes_qtmodeltester(qtmodeltester: ModelTester, qtbot: QtBot) -> None:
    model = FramesModel()
    proxy = FramesFilterModel(model)
    proxy.set_needle("text")
    qtmodeltester.check(proxy, force_py=True)  # type: ignore[no-untyped-call]
    reads = [b": ping\n\n", *(chat(f"w{i}") for i in range(20)), b"data: [DONE]\n\n"]
    for batch in stream("openai", reads, per_batch=3)[0]:
        model.append(batch)
    qtbot.waitUntil(lambda: not proxy.scanning)  # frames that arrive are checked too
    assert proxy.rowCount() == 20
    assert model.data(proxy.mapToSource(proxy.index(0, COL_SUMMARY))) == 'text "w0"'
    assert proxy.mapFromSource(model.index(0, 0)).isValid() is False  # the ping
    assert proxy.mapFromSource(model.index(1, 0)).row() == 0
    proxy.set_needle("")
    qtbot.waitUntil(lambda: not proxy.scanning)
    assert proxy.rowCount() == 22
    model.clear(T0)
    assert proxy.rowCount() == 0


def test_a_million_frames_are_filtered_a_slice_at_a_time(qtbot: QtBot) -> None:
    """(Checking a frame means summarizing its bytes: all of them at once would freeze the
    window for seconds.)"""
    batches = _synthetic_batches(100_000, 10)
    model = FramesModel()
    for batch in batches:
        model.append(batch)
    proxy = FramesFilterModel(model)
    proxy.set_needle("tok")
    slices = 0
    while proxy.scanning:
        proxy.scan()
        slices += 1
    assert proxy.rowCount() == 100_000
    assert slices > 5  # many bounded slices, not one long pass
    assert proxy.progress() == 1.0


def test_qt_model_tester_reports_nothing(qtmodeltester: ModelTester, qtlog: object) -> None:
    model = FramesModel()
    qtmodeltester.check(model)  # type: ignore[no-untyped-call]  # the C++ QAbstractItemModelTester, reporting by warning
    for batch in stream("openai", [chat(f"{i}") for i in range(50)], per_batch=7)[0]:
        model.append(batch)
    failures = [r.message for r in qtlog.records if "FAIL" in r.message]  # type: ignore[attr-defined]
    assert failures == []


# -- scale: one insert per batch, compact storage -----------------------------------------


def _synthetic_batches(frames: int, batches: int) -> list[ProgressBatch]:
    """``frames`` identical chat frames in ``batches`` batches, one read per batch, encoded
    as the stream worker encodes them."""
    from streamscope.core.turn.pipeline import PipelineUpdate
    from streamscope.core.turn.progress import ProgressEncoder

    raw = chat("tok")
    event = SSEEvent("message", raw[6:-2].decode())
    events: list[StreamEvent] = [TextDelta("tok")]
    per = frames // batches
    encoder = ProgressEncoder()
    out = []
    offset = 0
    for b in range(batches):
        t = T0 + b * 0.016
        parsed = []
        for _ in range(per):
            parsed.append(ParsedFrame(RawFrame(offset, raw, event, (), False), events))
            offset += len(raw)
        encoder.read(raw * per, t)
        encoder.progressed(PipelineUpdate(frames=parsed), t)
        batch = encoder.take()
        batch.delta = TurnDelta(text="tok" * per)  # (what the reducer would say)
        out.append(batch)
    return out


def test_100k_frames_in_100_batches_insert_100_times_and_stay_compact() -> None:
    batches = _synthetic_batches(100_000, 100)
    model = FramesModel()
    model.clear(T0)
    inserts: list[tuple[int, int]] = []
    model.rowsAboutToBeInserted.connect(lambda _p, first, last: inserts.append((first, last)))
    inserted: list[int] = []
    model.rowsInserted.connect(lambda _p, first, _last: inserted.append(first))

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for batch in batches:
        model.append(batch)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()

    assert model.rowCount() == 100_000
    assert len(inserts) == len(inserted) == 100
    assert inserts[0] == (0, 999) and inserts[-1] == (99_000, 99_999)
    raw_bytes = len(model.log.stream) + len(model.log.side)
    assert raw_bytes == 100_000 * len(chat("tok"))
    assert len(model.log.side) == 0  # every frame indexes the read buffer
    per_frame = (after - before - raw_bytes) / 100_000
    print(f"retained per frame, excluding raw bytes: {per_frame:.1f} B")
    assert per_frame < 200
    # Rows are computed lazily from the bytes, anywhere in the table.
    assert model.event_and_summary(54_321) == ("message", 'text "tok"')
    index = model.index(99_999, COL_SUMMARY)
    assert model.data(index) == 'text "tok"'


def test_panel_shows_new_rows_on_the_paint_clock(qtbot: QtBot) -> None:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.begin_turn(T0, "openai")
    signals: list[int] = []
    panel.view.model().rowsInserted.connect(lambda *_: signals.append(1))
    batches, _turn = stream("openai", [chat(f"{i}") for i in range(120)], per_batch=12)
    for batch in batches:
        panel.add_progress(batch)
    qtbot.waitUntil(lambda: panel.shown_rows() == 120)
    # ten batches in one loop turn: the table shows them with one insert, on the clock
    assert len(signals) == 1
    assert panel.count_label.text().startswith("120 frames")


def test_a_replay_indexes_the_captures_buffer_instead_of_copying_it() -> None:
    reads = [chat(f"w{i} ") for i in range(40)] + [b"data: [DONE]\n\n"]
    recorded = bytearray(b"".join(reads))
    pristine = bytes(recorded)
    model = FramesModel()
    model.clear(T0, recorded)
    batches = stream("openai", reads, per_batch=7)[0]
    for n, batch in enumerate(batches):
        model.append(batch)
        if n == 0:  # what arrived so far, not the whole recording
            assert model.log.received == sum(len(r) for r in reads[:7])
    assert model.log.stream is recorded and bytes(recorded) == pristine
    assert model.log.received == len(pristine) and len(model.log.side) == 0
    assert model.rowCount() == 41
    assert [model.frame_bytes(row) for row in range(41)] == reads
    assert model.log.stream_offset(40) == len(pristine) - len(reads[-1])
    assert model.log.reads_spanned(3) == 1


def test_reads_that_differ_from_the_recording_are_kept_as_they_arrived() -> None:
    reads = [chat(f"w{i} ") for i in range(10)]
    recorded = bytearray(b"".join(reads))
    pristine = bytes(recorded)
    changed = [*reads[:4], chat("other"), *reads[5:]]
    model = FramesModel()
    model.clear(T0, recorded)
    for batch in stream("openai", changed, per_batch=3)[0]:
        model.append(batch)
    assert model.log.stream is not recorded and bytes(recorded) == pristine  # never written to
    assert bytes(model.log.stream) == b"".join(changed)
    assert [model.frame_bytes(row) for row in range(10)] == changed
    assert model.event_and_summary(4) == ("message", 'text "other"')


# -- summaries per dialect -----------------------------------------------------------------

ANTHROPIC = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
    b'"model":"claude-x","content":[],"usage":{"input_tokens":3}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
    b'"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"Hello"}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
    b'"delta":{"type":"input_json_delta","partial_json":"{\\"ci"}}\n\n'
    b'event: ping\ndata: {"type":"ping"}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":4}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
RESPONSES = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    b'"item_id":"m","output_index":0,"content_index":0,"delta":"Hi"}\n\n'
    b'data: {"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,'
    b'"delta":"{\\"a"}\n\n'
    b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r",'
    b'"status":"completed","output":[],"usage":{"output_tokens":2}}}\n\n'
)
GEMINI = (
    b'data: {"candidates":[{"content":{"parts":[{"text":"Hm","thought":true}],"role":"model"},'
    b'"index":0}]}\n\n'
    b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}\n\n'
    b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"x":1}}}],'
    b'"role":"model"},"index":0,"finishReason":"STOP"}],"usageMetadata":{"totalTokenCount":9}}\n\n'
)
OLLAMA = (
    b'{"model":"m","message":{"role":"assistant","content":"","thinking":"Hmm"},"done":false}\n'
    b'{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}\n'
    b'{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n'
)
OPENAI = (
    b": keep-alive\n\n"
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1",'
    b'"type":"function","function":{"name":"get_time","arguments":""}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,'
    b'"function":{"arguments":"{\\"ci"}}]}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":5}}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.mark.parametrize(
    ("dialect", "body", "expected"),
    [
        (
            "openai",
            OPENAI,
            [
                ("comment", ": keep-alive"),
                ("message", "message_start"),
                ("message", 'reasoning_content "think"'),
                ("message", 'text "Hel"'),
                ("message", "tool_calls[1] get_time call_1"),
                ("message", 'tool_calls[1].arguments +"{\\"ci"'),
                ("message", "finish_reason=tool_calls"),
                ("message", "usage in=3 out=5"),
                ("message", "[DONE]"),
            ],
        ),
        (
            "anthropic",
            ANTHROPIC,
            [
                ("message_start", "message_start msg_1 claude-x · usage in=3"),
                ("content_block_start", "tool_use[1] start get_weather toolu_1"),
                ("content_block_delta", 'text "Hello"'),
                ("content_block_delta", 'tool_use[1].input +"{\\"ci"'),
                ("ping", "ping"),
                ("message_delta", "stop_reason=end_turn · usage out=4"),
                ("message_stop", "message_stop"),
            ],
        ),
        (
            "responses",
            RESPONSES,
            [
                ("response.output_text.delta", 'text "Hi"'),
                ("message", 'output[1].arguments +"{\\"a"'),
                (
                    "response.completed",
                    "usage out=2 · finish_reason=completed · response.completed",
                ),
            ],
        ),
        (
            "gemini",
            GEMINI,
            [
                ("message", 'thought "Hm"'),
                ("message", 'text "Hi"'),
                (
                    "message",
                    'functionCall[0] f +"{\\"x\\":1}" · functionCall[0] done · finishReason=STOP'
                    " · usage totalTokenCount=9",
                ),
            ],
        ),
        (
            "ollama",
            OLLAMA,
            [
                ("ndjson", 'thinking "Hmm" · message_start m'),
                ("ndjson", 'text "Hi"'),
                ("ndjson", "done_reason=stop · done:true"),
            ],
        ),
    ],
)
def test_summaries_for_each_dialect(
    dialect: str, body: bytes, expected: list[tuple[str, str]]
) -> None:
    # Odd read sizes: frames span reads, and the rows still index the read buffer.
    reads = [body[i : i + 23] for i in range(0, len(body), 23)]
    model = filled(dialect, reads, per_batch=3)
    assert summaries(model) == expected
    assert len(model.log.side) == 0
    assert model.frame_bytes(0) == body[: model.log.lengths[0]]


def test_error_events_are_summarised_with_code_and_message() -> None:
    anthropic = (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    responses = b'event: error\ndata: {"type":"error","code":"rate_limit","message":"Slow"}\n\n'
    assert summaries(filled("anthropic", [anthropic])) == [
        ("error", 'error overloaded_error: "Overloaded"')
    ]
    assert summaries(filled("responses", [responses])) == [("error", 'error rate_limit: "Slow"')]
    assert filled("anthropic", [anthropic]).log.kinds[0] == FrameKind.ERROR


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
def test_a_run_of_blank_lines_is_one_row_that_says_how_many(dialect: str) -> None:
    line = chat("a") if dialect == "openai" else b'{"message":{"content":"a"},"done":false}\n'
    runs = [b"\n", b"\r\n\r\r\n\n", b"\n" * 100_000]
    body = runs[0] + line + runs[1] + line + runs[2]
    model = filled(dialect, [body[i : i + 4096] for i in range(0, len(body), 4096)])
    assert summaries(model)[::2] == [
        ("", "(blank line)"),
        ("", "(blank lines ×4)"),  # CRLF, CR, CRLF, LF
        ("", "(blank lines ×100000)"),
    ]
    assert [model.log.lengths[r] for r in (0, 2, 4)] == [1, 6, 100_000]
    assert [model.data(model.index(r, 0), KindRole) for r in (0, 2, 4)] == [FrameKind.COMMENT] * 3
    assert len(model.log.side) == 0


def test_long_text_is_clipped_in_the_summary() -> None:
    model = filled("openai", [chat("x" * 500)])
    summary = model.event_and_summary(0)[1]
    assert summary.startswith('text "xxxx') and summary.endswith('…"')
    assert len(summary) < 100


# -- kinds ---------------------------------------------------------------------------------


def test_kinds_are_flagged_and_styled_distinctly() -> None:
    body = (
        b": keep-alive\n\n"
        + chat("ok")
        + b"data: {not json\n\n"
        + b'data: {"choices":[{"index":0,"delta":{"content":"\xff"}}]}\n\n'
        + b'data: {"error":{"message":"boom","type":"server_error"}}\n\n'
        + b"data: [DONE]\n\n"
        + b'data: {"choi'
    )
    model = filled("openai", [body])
    kinds = [model.data(model.index(r, 0), KindRole) for r in range(model.rowCount())]
    assert kinds[0] == FrameKind.COMMENT
    assert kinds[1] == FrameKind.TEXT
    assert kinds[2] == FrameKind.MALFORMED
    assert model.log.flags[3] & FLAG_INVALID_UTF8
    assert kinds[4] == FrameKind.ERROR
    assert kinds[5] == FrameKind.TERMINAL
    assert model.log.flags[6] & FLAG_INCOMPLETE

    def style(row: int) -> tuple[QColor | None, QColor | None, QFont | None]:
        index = model.index(row, COL_EVENT)
        return (
            model.data(index, Qt.ItemDataRole.ForegroundRole),
            model.data(index, Qt.ItemDataRole.BackgroundRole),
            model.data(index, Qt.ItemDataRole.FontRole),
        )

    assert style(1) == (None, None, None)  # plain text delta
    foregrounds = [style(r)[0] for r in (0, 2, 3, 4, 5)]
    assert len({c.name() for c in foregrounds if c is not None}) == 5
    bold, italic = style(5)[2], style(6)[2]
    assert bold is not None and bold.bold()
    assert italic is not None and italic.italic()
    events = [model.data(model.index(r, COL_EVENT)) for r in range(7)]
    assert events[2].startswith("⚠") and events[3].startswith("�") and events[4].startswith("✖")
    assert events[5].startswith("■") and events[6].startswith("…")
    assert model.event_and_summary(2)[1].startswith("malformed: invalid JSON")
    assert model.event_and_summary(4)[1] == 'error server_error: "boom"'
    assert model.event_and_summary(6)[1].startswith("(incomplete)")


# -- filter --------------------------------------------------------------------------------


def test_filter_box_filters_by_event_and_text(qtbot: QtBot) -> None:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.begin_turn(T0, "anthropic")
    for batch in stream("anthropic", [ANTHROPIC], per_batch=1)[0]:
        panel.add_progress(batch)
    panel.repaint_now()  # (as the end of a turn does)
    assert panel.shown_rows() == 7
    panel.filter_edit.setText("content_block_delta")
    panel.apply_filter()
    assert panel.shown_rows() == 2
    panel.filter_edit.setText("HELLO")  # case-insensitive, on the summary text
    panel.apply_filter()
    assert panel.shown_rows() == 1
    assert panel.count_label.text().startswith("1 of 7 frames")
    panel.filter_edit.setText("keep-alive")  # the kind name matches too (ping)
    qtbot.waitUntil(lambda: panel.shown_rows() == 1)  # debounced
    panel.filter_edit.clear()
    panel.apply_filter()
    assert panel.shown_rows() == 7


def test_the_table_shows_the_filter_only_while_filtering_and_selection_survives(
    qtbot: QtBot,
) -> None:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.begin_turn(T0, "anthropic")
    for batch in stream("anthropic", [ANTHROPIC], per_batch=1)[0]:
        panel.add_progress(batch)
    panel.repaint_now()  # (as the end of a turn does)
    assert not panel.filtering and panel.view.model() is panel.model
    target = next(r for r in range(7) if panel.model.event_and_summary(r)[0] == "ping")
    panel.select_row(target)
    panel.filter_edit.setText("ping")
    panel.apply_filter()
    assert panel.filtering and panel.shown_rows() == 1
    assert panel.selected_row() == target  # kept across the switch
    panel.select_row(target)
    seen: list[int] = []
    panel.frameSelected.connect(seen.append)
    panel.view.selectRow(0)
    panel.select_row(0 if target else 1)  # hidden by the filter: not selectable
    assert panel.selected_row() == target
    panel.filter_edit.clear()
    panel.apply_filter()
    assert not panel.filtering and panel.view.model() is panel.model
    assert panel.selected_row() == target and panel.shown_rows() == 7
    panel.select_row(6)
    assert seen[-1] == 6  # selection signals are connected to the new view model


# -- the detail pane -----------------------------------------------------------------------


def test_detail_shows_text_hex_and_read_boundaries_for_a_frame_spanning_3_reads(
    qtbot: QtBot,
) -> None:
    first = b": hi\r\n\r\n"
    frame = 'data: {"choices":[{"index":0,"delta":{"content":"Zü"}}]}\r\n\r\n'.encode()
    split = frame.index("ü".encode()) + 1  # the second read starts inside "ü"
    reads = [first + frame[:10], frame[10:split], frame[split:]]
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 700)  # (wide enough for 16 bytes a hex line)
    panel.show()
    panel.begin_turn(T0, "openai")
    for batch in stream("openai", reads, per_batch=3)[0]:
        panel.add_progress(batch)
    panel.repaint_now()
    selected: list[int] = []
    panel.frameSelected.connect(selected.append)
    panel.select_row(1)
    assert selected == [1]
    bounds = panel.model.log.read_boundaries(1)
    assert [b for b, _t in bounds] == [10, split]
    assert [t for _b, t in bounds] == pytest.approx([T0 + 0.12, T0 + 0.13])

    header = panel.detail.header.text()
    assert f"{len(frame)} bytes" in header and f"stream offset {len(first)}" in header
    assert "3 reads" in header and f"+10, +{split}" in header

    text = panel.detail.text_view.toPlainText()
    glyphs = panel.detail.glyphs
    assert text.count(MARK) == 2
    assert text.startswith('data: {"ch' + MARK + "oices")
    assert MARK + "ü" in text  # the mark sits before the character the read split
    assert text.endswith(glyphs["\r"] + glyphs["\n"] + glyphs["\r"] + glyphs["\n"])
    assert len(panel.detail.text_view.extraSelections()) == 2

    hex_text = panel.detail.hex_view.toPlainText()
    lines = hex_text.splitlines()
    assert lines[0].startswith(f"{len(first):08x} ")
    assert lines[0].split("|")[1] == 'data: {"choices"'
    assert f"{MARK}6f" in lines[0]  # 'o' of "choices" starts the second read
    assert hex_text.count(MARK) == 2
    assert hex_text.split()[1:3] == ["64", "61"]
    assert len(panel.detail.hex_view.extraSelections()) == 2


def test_the_hex_ascii_column_fits_and_the_detail_header_stays_one_line(qtbot: QtBot) -> None:
    """At the inspector's default width a 16-byte hex line (78 characters) would clip its
    ASCII column: the dump takes 8 bytes a line there, 16 when the pane is wide enough. The
    long header is elided to one line, the whole of it in the tooltip."""
    frame = chat("A fairly long piece of text, to fill a few hex lines")
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.resize(420, 700)
    panel.show()
    panel.begin_turn(T0, "openai")
    for batch in stream("openai", [frame] * 2, per_batch=2)[0]:
        panel.add_progress(batch)
    panel.repaint_now()
    panel.select_row(1)
    detail = panel.detail
    view = detail.hex_view
    detail.tabs.setCurrentIndex(1)  # the Hex tab
    lines = view.toPlainText().splitlines()
    assert detail.per_row == 8 and lines[0].endswith('|data: {"|')
    digit = view.fontMetrics().horizontalAdvance("0")
    assert max(len(line) for line in lines) * digit <= view.viewport().width()
    assert view.horizontalScrollBar().maximum() == 0  # nothing to scroll to: it all shows
    header = detail.header
    cr, lf = detail.glyphs["\r"], detail.glyphs["\n"][0]
    assert header.text() == (
        f"Frame #1 · 148 bytes · stream offset 148 · t 120.0 ms · 1 read · {cr} CR {lf} LF · text"
    )
    assert header.elided() and header.shown_text().endswith("…")
    assert header.toolTip() == header.text()
    one_line = header.height()
    assert one_line <= header.fontMetrics().height() + 6
    panel.resize(1200, 700)  # wider: 16 bytes a line, laid out again by itself
    qtbot.waitUntil(lambda: detail.per_row == 16)
    lines = view.toPlainText().splitlines()
    assert lines[0].split("|")[1] == 'data: {"object":'
    assert max(len(line) for line in lines) * digit <= view.viewport().width()
    assert header.height() == one_line


def test_visible_text_and_hex_dump_units() -> None:
    rendered = visible_text(b"a\rb\r\nc\n\xff", [2])
    assert rendered.text == "a␍" + MARK + "b␍␊\nc␊\n\ufffd"
    assert rendered.marks == (2,)
    dump = hex_dump(bytes(range(20)), [16], base=0x100)
    first, second = dump.text.splitlines()
    assert first.startswith("00000100  00 01") and first.endswith("|................|")
    assert second.startswith("00000110 " + MARK + "10 11 12 13")
    assert dump.text[dump.marks[0]] == MARK


def test_frames_without_their_reads_are_kept_in_the_side_buffer() -> None:
    from streamscope.core.turn.pipeline import StreamPipeline
    from streamscope.core.turn.progress import FLAG_DETACHED, ProgressEncoder

    pipe = StreamPipeline("openai", keep_frames=True, request_sent=T0)
    encoder = ProgressEncoder()
    encoder.read(chat("a"), T0 + 0.1)
    encoder.progressed(pipe.feed(chat("a"), T0 + 0.1), T0 + 0.1)
    encoder.progressed(pipe.feed(chat("b"), T0 + 0.2), T0 + 0.2)  # its read was not seen
    rows = encoder.take().rows
    assert list(rows.flags) == [0, FLAG_DETACHED] and bytes(rows.detached) == chat("b")
    model = FramesModel()
    model.append(ProgressBatch(reads=[(chat("a"), T0 + 0.1)], rows=rows))
    model.append(ProgressBatch(rows=rows))  # a second batch: its side bytes follow the first's
    assert [model.frame_bytes(r) for r in range(4)] == [chat("a"), chat("b")] * 2
    assert model.log.stream_offset(0) == 0
    assert model.log.stream_offset(1) is None and model.log.read_boundaries(1) == []


# -- banner and autoscroll -----------------------------------------------------------------


def test_banner_warns_when_frames_look_like_another_dialect(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    spec = RequestSpec("POST", "http://x/v1/chat/completions", {}, {})
    inspector.begin_turn(TurnStart(spec, b"{}", "openai", T0))
    inspector.set_response(200, [("content-type", "text/event-stream")])
    for batch in stream("openai", [ANTHROPIC])[0]:
        inspector.add_progress(batch)
    banner = inspector.frames_panel.banner
    assert not banner.isHidden()
    assert "anthropic" in banner.text() and "openai" in banner.text()

    inspector.begin_turn(TurnStart(spec, b"{}", "openai", T0))
    assert banner.isHidden()
    for batch in stream("openai", [OPENAI])[0]:
        inspector.add_progress(batch)
    assert banner.isHidden()


def test_autoscroll_only_when_at_the_bottom(qtbot: QtBot) -> None:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.resize(600, 400)
    panel.show()
    panel.begin_turn(T0, "openai")
    batches, _turn = stream("openai", [chat(f"{i}") for i in range(300)], per_batch=50)
    bar = panel.view.verticalScrollBar()
    panel.add_progress(batches[0])
    panel.add_progress(batches[1])
    qtbot.waitUntil(lambda: panel.shown_rows() == 100)  # (the rows show on the paint clock)
    assert bar.maximum() > 0 and bar.value() == bar.maximum()
    bar.setValue(3)
    panel.add_progress(batches[2])
    qtbot.waitUntil(lambda: panel.shown_rows() == 150)
    qtbot.wait(20)  # (the view lays the new rows out on its own next turn)
    assert bar.value() == 3 and not panel.following
    assert not panel.follow_button.isChecked()
    bar.triggerAction(bar.SliderAction.SliderToMaximum)  # the user scrolls back to the end
    assert panel.following
    panel.add_progress(batches[3])
    qtbot.waitUntil(lambda: panel.shown_rows() == 200)
    assert bar.value() == bar.maximum()
    assert panel.view.verticalHeader().sectionResizeMode(0).name == "Fixed"


def test_selecting_a_frame_stops_following_and_the_follow_button_resumes(qtbot: QtBot) -> None:
    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.resize(600, 400)
    panel.show()
    panel.begin_turn(T0, "openai")
    batches, _turn = stream("openai", [chat(f"{i}") for i in range(300)], per_batch=50)
    bar = panel.view.verticalScrollBar()
    panel.add_progress(batches[0])
    panel.add_progress(batches[1])
    qtbot.waitUntil(lambda: panel.shown_rows() == 100)
    assert panel.following and bar.value() == bar.maximum() > 0
    # a click on the last row shown: the table stays there as rows arrive below
    last = panel.view.visualRect(panel.model.index(99, 0)).center()
    qtbot.mouseClick(panel.view.viewport(), Qt.MouseButton.LeftButton, pos=last)
    assert panel.selected_row() == 99 and not panel.following
    stay = bar.value()
    panel.add_progress(batches[2])
    qtbot.waitUntil(lambda: panel.shown_rows() == 150)
    qtbot.wait(20)
    assert bar.value() == stay < bar.maximum()
    assert panel.selected_row() == 99 and panel.detail.header.text().startswith("Frame #99 ")
    # Follow: back to the end at once, and it follows the next rows
    qtbot.mouseClick(panel.follow_button, Qt.MouseButton.LeftButton)
    assert panel.following and bar.value() == bar.maximum()
    panel.add_progress(batches[3])
    qtbot.waitUntil(lambda: panel.shown_rows() == 200)
    assert (
        bar.value() == bar.maximum() and panel.view.rowAt(panel.view.viewport().height() - 2) == 199
    )
    # filtering (and clearing the filter) keeps following
    panel.filter_edit.setText("text")
    panel.apply_filter()
    # (the table re-scrolls on the paint clock's tick: a loaded machine may take longer)
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() > 0, timeout=3000)
    assert panel.filtering and panel.following and bar.value() == bar.maximum() > 0
    assert panel.selected_row() == 99  # (kept, off-screen)
    panel.filter_edit.clear()
    panel.apply_filter()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=3000)
    assert not panel.filtering and panel.following and bar.value() == bar.maximum()
    # scrolling up (a page up on the scroll bar) stops following too
    qtbot.wait(20)
    panel.view.verticalScrollBar().triggerAction(bar.SliderAction.SliderPageStepSub)
    assert not panel.following
    panel.add_progress(batches[4])
    qtbot.waitUntil(lambda: panel.shown_rows() == 250)
    qtbot.wait(20)
    assert bar.value() < bar.maximum()
    # a new turn follows again
    panel.begin_turn(T0, "openai")
    assert panel.following


# -- find in frames -------------------------------------------------------------------------


def test_find_searches_as_you_type_a_slice_at_a_time_with_progress(qtbot: QtBot) -> None:
    """100k frames: the search starts by itself after the debounce, runs on the paint clock
    in slices (the loop keeps ticking) and says how far it got."""
    from streamscope.ui.inspector.frames_find import FramesFindBar

    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.begin_turn(T0, "openai")
    for batch in _synthetic_batches(100_000, 10):
        panel.model.append(batch)
    bar = FramesFindBar(panel)
    bar.open_bar()
    labels: list[str] = []
    qtbot.keyClicks(bar.edit, "TOK")
    assert bar.searching and bar.rows == [] and bar.count_label.text() == "searching…"
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1
        labels.append(bar.count_label.text())

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(1)
    qtbot.waitUntil(lambda: not bar.searching, timeout=60_000)
    timer.stop()
    assert len(bar.rows) == 100_000 and bar.rows[:3] == [0, 1, 2]
    assert bar.count_label.text() == "100,000 matches"
    progress = {t for t in labels if t.startswith("searching… ") and "%" in t}
    assert len(progress) >= 5, labels[:20]  # many slices, the window ticking in between
    assert all(" found" in t for t in progress if not t.startswith("searching… 0%"))
    bar.edit.setText("no such thing")
    qtbot.waitUntil(lambda: not bar.searching, timeout=60_000)
    assert bar.rows == [] and bar.count_label.text() == "no match"


def test_enter_before_the_search_ends_selects_the_match_when_found(qtbot: QtBot) -> None:
    from streamscope.ui.inspector.frames_find import FramesFindBar

    panel = FramesPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.begin_turn(T0, "openai")
    batches, _turn = stream("openai", [chat(f"w{i}") for i in range(300)], per_batch=50)
    for batch in batches:
        panel.model.append(batch)
    bar = FramesFindBar(panel)
    bar.open_bar()
    qtbot.keyClicks(bar.edit, '"w29')
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)  # before the debounce ends
    qtbot.waitUntil(lambda: panel.selected_row() is not None)
    assert panel.selected_row() == 29 and not panel.following
    qtbot.waitUntil(lambda: not bar.searching)
    assert bar.rows == [29, *range(290, 300)]
    assert bar.count_label.text() == "1 of 11"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert panel.selected_row() == 299 and bar.count_label.text() == "11 of 11"  # wraps
    # another turn in the panel: the open bar searches its frames
    panel.begin_turn(T0, "openai")
    for batch in stream("openai", [chat("w29 again")])[0]:
        panel.model.append(batch)
    qtbot.waitUntil(lambda: not bar.searching)
    assert bar.rows == [0] and bar.count_label.text() == "1 match"
