"""The Inspector's Tool calls, Timeline and Request tabs, and the whole panel's API."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import orjson
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.model import parse_arguments as parse_state
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.ui.chat.turn_start import TurnStart
from streamscope.ui.inspector import InspectorPanel
from streamscope.ui.inspector.timeline_panel import GapSeries
from support.batches import pipeline_batches

T0 = 20.0
FIXTURES = Path(__file__).parents[1] / "core" / "fixtures"
SECRET = "sk-SECRET123"


stream = partial(pipeline_batches, t0=T0, lead=0.2, tail=0.005)


def blocks(name: str) -> list[bytes]:
    """A fixture cut into one read per SSE block."""
    data = (FIXTURES / name).read_bytes()
    return [part + b"\n\n" for part in data.split(b"\n\n") if part]


def start(dialect: str = "openai") -> TurnStart:
    spec = RequestSpec(
        "POST",
        f"https://generativelanguage.example/v1beta/models/m:streamGenerateContent?alt=sse&key={SECRET}",
        {
            "Authorization": f"Bearer {SECRET}",
            "x-api-key": SECRET,
            "x-goog-api-key": SECRET,
            "Content-Type": "application/json",
        },
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "weather?"}]},
    )
    return TurnStart(spec, orjson.dumps(spec.json), dialect, T0)


def item(tree: QTreeWidget, row: int) -> QTreeWidgetItem:
    found = tree.topLevelItem(row)
    assert found is not None
    return found


def texts(widget: QWidget) -> list[str]:
    """Every text a widget tree shows (labels, editors, trees, tab titles, tooltips)."""
    out: list[str] = []
    for child in [widget, *widget.findChildren(QWidget)]:
        out.append(child.toolTip())
        if isinstance(child, QLabel):
            out.append(child.text())
        elif isinstance(child, QPlainTextEdit):
            out.append(child.toPlainText())
        elif isinstance(child, QLineEdit):
            out.append(child.text())
        elif isinstance(child, QTabWidget):
            out.extend(child.tabText(i) for i in range(child.count()))
        elif isinstance(child, QTreeWidget):
            for i in range(child.topLevelItemCount()):
                row = item(child, i)
                out.extend(row.text(c) for c in range(child.columnCount()))
    return out


def test_tabs_and_api(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    titles = [inspector.tabText(i) for i in range(inspector.count())]
    assert titles == ["Frames", "Tool calls", "Timeline", "Request", "Verdict"]
    assert inspector.frames_model is inspector.frames_panel.model
    batches, turn = stream("openai", blocks("openai/plain_text.sse"))
    inspector.begin_turn(start())
    inspector.set_response(200, [("Content-Type", "text/event-stream")])
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    assert inspector.frames_model.rowCount() == len(blocks("openai/plain_text.sse"))
    with qtbot.waitSignal(inspector.frameSelected) as blocker:
        inspector.frames_panel.select_row(1)
    assert blocker.args == [1]
    inspector.begin_turn(start())  # a new turn clears everything
    assert inspector.frames_model.rowCount() == 0
    assert inspector.frames_panel.detail.text_view.toPlainText() == ""


# -- tool calls ----------------------------------------------------------------------------


def test_the_tool_calls_header_is_one_line_elided_with_a_tooltip(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    panel = inspector.toolcalls_panel
    inspector.setCurrentWidget(panel)
    inspector.resize(360, 600)
    inspector.show()
    batches, turn = stream("openai", blocks("openai/parallel_tools.sse"))
    inspector.begin_turn(start())
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    header = panel.header
    whole = header.text()
    assert whole.startswith("<b>[0] get_weather</b> · id call_A1 · ")
    assert whole.endswith(" · <b>parses: yes (final)</b>")
    assert header.elided() and header.shown_text().endswith("…")
    assert header.toolTip().startswith("[0] get_weather · id call_A1 · ")
    assert header.toolTip().endswith(" · parses: yes (final)")
    assert header.height() <= header.fontMetrics().height() + 6  # one line: no wrap
    tree_top = panel.tree.geometry().top()
    inspector.resize(1400, 600)  # the whole header fits: shown as it is, bold and all
    qtbot.waitUntil(lambda: not header.elided())
    assert header.shown_text() == whole and header.toolTip() == ""
    assert panel.tree.geometry().top() == tree_top  # the layout did not move


def test_tool_calls_show_fragments_and_parse_state_then_final_json(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    panel = inspector.toolcalls_panel
    batches, turn = stream("openai", blocks("openai/parallel_tools.sse"))
    inspector.begin_turn(start())
    for batch in batches[:6]:
        inspector.add_progress(batch)

    tree = panel.tree
    assert tree.topLevelItemCount() == 2
    first = item(tree, 0)
    assert [first.text(c) for c in range(3)] == ["0", "call_A1", "get_weather"]
    assert first.text(5) == "no"
    assert "parses: no" in panel.header.text()
    fragments = panel.fragments_view.toPlainText().splitlines()
    assert len(fragments) == int(first.text(3)) == 2
    assert fragments[0].strip().startswith("240.0 ms") or " ms  +" in fragments[0]
    assert fragments[0].endswith('+"{\\"ci"')
    args = panel.arguments_view.toPlainText()
    assert args.startswith("Does not parse as JSON yet.")
    assert "Partial object (jiter)" in args and '"city": "Z"' in args

    for batch in batches[6:]:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    assert first is item(tree, 0)  # the same row, updated: never rebuilt from the Turn
    assert first.text(5) == item(tree, 1).text(5) == "yes"
    assert "parses: yes (final)" in panel.header.text()
    pretty = panel.arguments_view.toPlainText()
    assert pretty.startswith("Final JSON:\n{\n  ")
    assert '"city": "Zürich"' in pretty and '"unit": "\\"C\\""' in pretty
    assert len(panel.fragments_view.toPlainText().splitlines()) == 9
    tree.setCurrentItem(item(tree, 1))
    assert '"tz": "Europe/Zurich\\n"' in panel.arguments_view.toPlainText()
    assert panel.warnings.isHidden()


def test_tool_call_quirk_warnings_are_shown(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    batches, turn = stream("openai", blocks("openai/invalid_arguments.sse"))
    inspector.begin_turn(start())
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    panel = inspector.toolcalls_panel
    assert turn.warnings
    assert not panel.warnings.isHidden()
    assert turn.warnings[0] in panel.warnings.text()
    assert item(panel.tree, 0).text(5) == "no"
    assert "Invalid JSON." in panel.arguments_view.toPlainText()


def test_index_reused_for_another_id_is_a_new_call(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    batches, turn = stream("openai", blocks("openai/index_reused.sse"))
    inspector.begin_turn(start())
    for batch in batches:
        inspector.add_progress(batch)
    assert inspector.toolcalls_panel.call_count() == 2
    inspector.finish_turn(turn)
    assert inspector.toolcalls_panel.call_count() == len(turn.tool_calls) == 2


def test_parse_state_partial() -> None:
    assert parse_state('{"a": [1, 2], "b": "x') == (False, {"a": [1, 2], "b": "x"})
    assert parse_state('{"a": 1}') == (True, {"a": 1})
    assert parse_state("") == (False, None)
    assert parse_state("}{") == (False, None)


# -- timeline ------------------------------------------------------------------------------


def test_timeline_milestones_ttft_and_rate(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    timeline = inspector.timeline_panel
    reads = blocks("openai/reasoning_content.sse")
    batches, turn = stream("openai", reads, dt=0.01)
    inspector.begin_turn(start())
    inspector.set_response(200, [("content-type", "text/event-stream")])
    for batch in batches[:3]:
        inspector.add_progress(batch)
    m = timeline.milestones
    assert m.request_sent == T0
    assert m.first_byte == batches[0].reads[0][1]
    assert m.first_reasoning is not None and m.first_token is None
    for batch in batches[3:]:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    assert m.first_token is not None and m.first_reasoning < m.first_token
    assert m.last_token is not None and m.last_token >= m.first_token
    assert m.terminal is not None and m.end == turn.timings.end
    ttft = timeline.ttft()
    # TTFT counts the first reasoning token, as the core (and the status bar) does.
    assert ttft == turn.timings.ttft
    assert ttft is not None and abs(ttft - (m.first_reasoning - T0)) < 1e-9
    summary = timeline.summary.text()
    assert f"{ttft * 1000:.0f} ms" in summary
    assert "tok/s" in summary or "deltas/s" in summary
    assert len(timeline.series.gaps) == inspector.frames_model.rowCount()
    names = [name for name, t in m.items() if t is not None]
    assert names[0] == "request_sent" and "first_reasoning" in names and names[-1] == "end"
    timeline.resize(500, 400)
    assert not timeline.grab().isNull()


def test_timeline_of_a_turn_without_a_stream_says_so_instead_of_a_chart(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    inspector.show()
    timeline = inspector.timeline_panel
    http_429 = Turn(
        timings=Timings(request_sent=T0, headers=T0 + 0.012, end=T0 + 0.015),
        outcome=Outcome.ERROR,
        reason="HTTP 429: rate limited",
        status=429,
        bytes_received=80,
    )
    refused = Turn(
        timings=Timings(request_sent=T0, end=T0 + 0.003),
        outcome=Outcome.ERROR,
        reason="Connection refused by 127.0.0.1:9 — is the server running?",
    )
    replayed_body = Turn(outcome=Outcome.COMPLETED, events=3, bytes_received=90, text="hi")
    inspector.begin_turn(start())
    inspector.finish_turn(http_429)
    assert timeline.summary.text() == "<b>No stream</b>: HTTP 429 after 12 ms"
    assert timeline.waterfall.isHidden() and timeline.chart.isHidden()
    timeline.finish(refused)
    assert timeline.summary.text() == (
        "<b>No stream</b> after 3 ms: Connection refused by 127.0.0.1:9 — is the server running?"
    )
    timeline.finish(replayed_body)  # (a body replayed without its head is a stream)
    assert "No stream" not in timeline.summary.text()
    assert not timeline.waterfall.isHidden() and not timeline.chart.isHidden()
    timeline.finish(refused)
    inspector.begin_turn(start())  # the next turn has its charts back
    assert not timeline.waterfall.isHidden() and not timeline.chart.isHidden()


def test_gap_series_downsamples_by_max() -> None:
    series = GapSeries()
    series.clear(0.0)
    times = [i * 0.001 for i in range(1, 10_001)]
    times[5000] += 0.5  # one stall
    series.extend(times)
    assert len(series.gaps) == 10_000
    buckets = series.buckets(100)
    assert len(buckets) == 100
    assert max(buckets) > 0.49  # the stall survives downsampling
    assert series.buckets(20_000) == list(series.gaps)
    assert abs(series.mean() - sum(series.gaps) / len(series.gaps)) < 1e-6


def test_gap_series_uses_block_maxima_for_long_series() -> None:
    series = GapSeries()
    series.clear(0.0)
    for start in range(0, 200_000, 777):  # batches that cut blocks anywhere
        series.extend(i * 0.001 for i in range(start + 1, min(start + 778, 200_001)))
    assert len(series.gaps) == 200_000
    assert len(series.blocks) == -(-200_000 // GapSeries.BLOCK)
    assert list(series.blocks[:3]) == [max(series.gaps[i * 64 : i * 64 + 64]) for i in range(3)]
    series.extend([200.0 + 3.0])  # a 3 s stall at the very end
    buckets = series.buckets(300)
    assert len(buckets) == 300 and buckets[-1] > 2.9 and max(buckets[:-1]) < 0.01


# -- request -------------------------------------------------------------------------------


def test_request_tab_shows_the_request_and_never_a_secret(qtbot: QtBot) -> None:
    inspector = InspectorPanel()
    qtbot.addWidget(inspector)
    batches, turn = stream("openai", blocks("openai/plain_text.sse"))
    inspector.begin_turn(start())
    inspector.set_response(
        200,
        [("content-type", "text/event-stream"), ("set-cookie", f"session={SECRET}"),
         ("x-request-id", "req_1")],
    )  # fmt: skip
    for batch in batches:
        inspector.add_progress(batch)
    inspector.finish_turn(turn)
    request, response, body_hex, sent = inspector.request_panel.texts()
    assert body_hex == ""  # a stream: no body of its own
    assert sent == f"Sent 1 message · body {len(start().body)} B"  # (not built here: counted)
    assert request.startswith("POST https://generativelanguage.example/v1beta/models/")
    assert "alt=sse" in request and "key=***" in request
    assert "Authorization: Bearer ***" in request and "x-api-key: ***" in request
    assert '\n{\n  "model": "m",\n  "stream": true,' in request
    assert response.startswith("HTTP 200\n") and "x-request-id: req_1" in response
    for index in range(inspector.count()):
        inspector.setCurrentIndex(index)
        shown = texts(inspector)
        assert shown and not [text for text in shown if SECRET in text]
