"""Through the real window against the demo endpoint (issue 15): an error body is shown under
Response and is a frame row Find sees; no response says so; the line cap is a setting and an
over-long line leaves its first KB; a card lists its warnings and a malformed frame's links to
the frame; a long reason is elided only in the window."""

from __future__ import annotations

import asyncio
import html
import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import Endpoint, new_endpoint
from streamscope.core.net.secrets import SecretStore
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.progress import FLAG_BODY, FLAG_DETACHED, FLAG_OVERSIZED, FrameKind
from streamscope.ui.chat.warnings_box import WarningsBox
from streamscope.ui.endpoint.settings_dialog import EndpointDialog
from streamscope.ui.inspector.inspector import TAB_FRAMES, TAB_REQUEST
from streamscope.ui.shell.main_window import MainWindow
from support.memory_keyring import MemoryKeyring, installed
from support.rawhttp import RawServer, chunk, head

BODY_429 = (
    b'{"error":{"message":"Rate limit reached (the demo-error-429 scenario).","type":"requests",'
    b'"param":null,"code":"rate_limit_exceeded"}}'
)
SHOWN_429 = """\
Error fields
  type         requests
  code         rate_limit_exceeded
  param        null
  message      Rate limit reached (the demo-error-429 scenario).
  Retry-After  20 s

Body · JSON (application/json) · 133 B
{
  "error": {
    "message": "Rate limit reached (the demo-error-429 scenario).",
    "type": "requests",
    "param": null,
    "code": "rate_limit_exceeded"
  }
}"""
SHOWN_502 = """\
Error fields
  title  502 Bad Gateway

Body · HTML (text/html; charset=utf-8) · 150 B
<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
"""


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str = "Hi") -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()

    async def wait() -> Turn:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def use_endpoint(window: MainWindow, endpoint: Endpoint) -> None:
    window.endpoint_bar.set_endpoints(window.endpoints.with_endpoint(endpoint).select(endpoint.id))


def below_headers(text: str) -> str:
    """The Response text under the status line and headers."""
    return text.split("\n\n", 1)[1]


def test_a_429_body_is_shown_under_response_and_is_a_frame_find_sees(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo-error-429")
    assert turn.outcome is Outcome.ERROR
    inspector = window.inspector
    panel = inspector.request_panel
    response = panel.response_view.toPlainText()
    assert response.startswith("HTTP 429\n") and "\nretry-after: 20\n" in response
    assert below_headers(response) == SHOWN_429
    assert panel.response_tabs.isTabEnabled(1)
    assert panel.body_hex.toPlainText().splitlines()[0] == (
        '00000000  7b 22 65 72 72 6f 72 22  3a 7b 22 6d 65 73 73 61  |{"error":{"messa|'
    )
    # the same bytes are the turn's one frame row
    model = inspector.frames_model
    log = model.log
    assert model.rowCount() == 1 and model.frame_bytes(0) == BODY_429
    assert (log.kinds[0], log.flags[0]) == (FrameKind.ERROR, FLAG_BODY | FLAG_DETACHED)
    assert model.event_and_summary(0) == (
        "body",
        "rate_limit_exceeded: Rate limit reached (the demo-error-429 scenario).",
    )
    assert inspector.frames_panel.count_label.text() == "1 frame · 133 B"
    assert window.status.text() == (
        "Error · 429 rate_limit_exceeded · Rate limit reached (the demo-error-429 scenario)."
        " · retry after 20 s · 1 frame"
    )
    # Find (Stream → Find in frames) finds a word of the body
    bar = window.power_tools.find_in_frames()
    bar.set_query("scenario", "any")
    assert bar.rows == [0] and bar.find_next() == 0
    assert inspector.frames_panel.selected_row() == 0
    assert (
        "Frame #0 · 133 bytes · not in the read buffer"
        in inspector.frames_panel.detail.header.text()
    )
    assert "the response body: it was no stream" in inspector.frames_panel.detail.header.text()
    # exported as a row with its role
    records = [r.to_json(i) for i, r in enumerate(window.power_tools.frame_records())]
    assert records == [
        {"i": 0, "t": round(log.time(0), 6), "event": None, "data": BODY_429.decode(),
         "role": "body"}
    ]  # fmt: skip


def test_an_html_502_is_shown_as_text(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    send(window, aloop, "demo-html-502")
    response = window.inspector.request_panel.response_view.toPlainText()
    assert response.startswith("HTTP 502\n")
    assert below_headers(response) == SHOWN_502
    assert window.inspector.frames_model.event_and_summary(0) == (
        "body",
        "HTML page: 502 Bad Gateway",
    )
    # a stream after it has no body: the Response half is back to headers only
    send(window, aloop, "demo")
    panel = window.inspector.request_panel
    assert "Body ·" not in panel.response_view.toPlainText()
    assert panel.body_hex.toPlainText() == "" and not panel.response_tabs.isTabEnabled(1)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_says_no_response_in_test_connection_words(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    port = _closed_port()
    endpoint = replace(new_endpoint("custom", name="Nothing there"),
                       base_url=f"http://127.0.0.1:{port}/v1", model="m")  # fmt: skip
    use_endpoint(window, endpoint)
    turn = send(window, aloop, "m")
    sentence = f"Connection refused by 127.0.0.1:{port} — is the server running?"
    assert (turn.outcome, turn.reason) == (Outcome.ERROR, sentence)
    panel = window.inspector.request_panel
    assert panel.response_view.toPlainText() == f"No response\n{sentence}"
    assert window.status.text() == f"Error · {sentence}"
    card = window.controller.answer_card(-1)
    assert card.partial_label.text().endswith(f"no answer</span> — {sentence}")
    assert window.inspector.frames_model.rowCount() == 0


def test_a_long_reason_is_whole_in_the_turn_and_elided_in_the_window(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    message = "You exceeded your current quota, please check your plan and billing details. " * 12
    body = json.dumps({"error": {"message": message, "code": "insufficient_quota"}}).encode()

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head("429 Too Many Requests", "application/json") + chunk(body) + b"0\r\n\r\n")

    server = RawServer()
    server.handler = handler
    try:
        use_endpoint(window, replace(new_endpoint("custom", name="Quota"),
                                     base_url=f"{server.url}/v1", model="m"))  # fmt: skip
        turn = send(window, aloop, "m")
    finally:
        server.close()
    reason = f"429 insufficient_quota · {message.strip()}"
    assert turn.reason == reason  # whole (it used to be cut at 160 characters)
    label = window.status.label
    assert window.status.text() == f"Error · {reason} · 1 frame"
    assert label.shown_text().endswith("…") and len(label.shown_text()) < 400
    assert label.toolTip().startswith(f"Error · {reason}")
    assert window.minimumSizeHint().width() < 1200  # the reason does not widen the window
    card = window.controller.answer_card(-1)
    assert card.partial_label.toolTip() == reason
    assert f"{reason[:299]}…" in card.partial_label.text()


def test_the_line_cap_is_a_setting_and_an_oversized_line_shows_its_first_kb(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo-long-line")
    assert turn.reason.endswith("line longer than 1048576 bytes")
    model = window.inspector.frames_model
    log = model.log
    last = model.rowCount() - 1
    offset = log.stream_offset(last)
    assert offset is not None
    assert (log.kinds[last], log.flags[last]) == (FrameKind.ERROR, FLAG_OVERSIZED)
    assert model.frame_bytes(last) == bytes(log.stream[offset : offset + 4096])
    assert model.frame_bytes(last).startswith(b"data: {") and len(model.frame_bytes(last)) == 4096
    assert model.event_and_summary(last)[0] == "oversized"
    window.inspector.frames_panel.select_row(last)
    header = window.inspector.frames_panel.detail.header.text()
    assert f"Frame #{last} · 4,096 bytes · stream offset {offset:,}" in header
    assert "a line over the line cap: only these first bytes were kept" in header
    # raised to 4 MiB in the endpoint's settings, the same scenario completes
    demo = window.current_endpoint()
    use_endpoint(window, replace(demo, max_line_bytes=4 << 20))
    turn = send(window, aloop, "demo-long-line")
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert max(len(model.frame_bytes(r)) for r in range(model.rowCount())) > 2 << 20


def test_the_line_cap_round_trips_through_the_network_tab(qtbot: QtBot, tmp_path: Path) -> None:
    with installed(MemoryKeyring()):
        endpoint = replace(new_endpoint("custom", name="Big lines"), base_url="http://h/v1",
                           max_line_bytes=3 << 20)  # fmt: skip
        dialog = EndpointDialog(endpoint, secrets=SecretStore())
        qtbot.addWidget(dialog)
        spin = dialog.network_tab.line_cap_spin
        assert (spin.value(), spin.suffix()) == (3072, " KiB")
        assert dialog.endpoint().max_line_bytes == 3 << 20
        spin.setValue(8192)
        edited = dialog.endpoint()
        assert edited.max_line_bytes == 8 << 20
        store = EndpointStore(tmp_path / "endpoints.json")
        store.save(EndpointSettings.default().with_endpoint(edited))
        loaded = {e.id: e for e in store.load().endpoints}[edited.id]
        assert loaded.max_line_bytes == 8 << 20
        again = EndpointDialog(loaded, secrets=SecretStore())
        qtbot.addWidget(again)
        assert again.network_tab.line_cap_spin.value() == 8192
        # a cap of no whole KiB (set in the file) survives the dialog unchanged
        odd = EndpointDialog(replace(loaded, max_line_bytes=5000), secrets=SecretStore())
        qtbot.addWidget(odd)
        assert odd.endpoint().max_line_bytes == 5000


def test_card_warnings_expand_and_a_malformed_frame_link_selects_it(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    turn = send(window, aloop, "demo-bad-json")
    assert turn.outcome is Outcome.COMPLETED and turn.malformed_frames == 1
    card = window.controller.answer_card(-1)
    box = card.warnings_box
    assert not box.isHidden() and box.toggle.text() == "▸ show the warning"
    assert box.list.isHidden()
    box.toggle.click()
    assert not box.list.isHidden() and box.toggle.text() == "▾ hide the warning"
    (warning,) = turn.warnings
    assert warning.startswith("malformed frame: ") and html.escape(warning) in box.list.text()
    # which frame is it? the one whose data is not JSON (found here from the bytes alone)
    model = window.inspector.frames_model
    bad = [
        r
        for r in range(model.rowCount())
        if model.frame_bytes(r).startswith(b"data: {") and not _parses(model.frame_bytes(r))
    ]
    assert len(bad) == 1 and bad[0] > 0
    window.inspector.setCurrentIndex(TAB_REQUEST)
    href = box.list.text().split("href='", 1)[1].split("'", 1)[0]
    box.list.linkActivated.emit(href)
    assert window.inspector.currentIndex() == TAB_FRAMES
    assert window.inspector.frames_panel.selected_row() == bad[0]
    # a card whose turn is not in the inspector: its turn is loaded, then the frame selected
    send(window, aloop, "demo")
    assert window.inspector.frames_panel.selected_row() != bad[0]
    box.list.linkActivated.emit(href)

    async def selected() -> None:  # (the turn's capture is replayed in a task first)
        while window.inspector.frames_panel.selected_row() != bad[0]:
            await asyncio.sleep(0.05)

    aloop.run_until_complete(asyncio.wait_for(selected(), 30))
    assert window.inspector.currentIndex() == TAB_FRAMES


def _parses(frame: bytes) -> bool:
    try:
        json.loads(frame.removeprefix(b"data: "))
    except ValueError:
        return False
    return True


def test_the_warnings_box_lists_each_warning_once_and_links_only_malformed_ones(
    qtbot: QtBot,
) -> None:
    box = WarningsBox()
    qtbot.addWidget(box)
    assert box.isHidden()
    box.add(["auto: could not tell the dialect; assuming openai"])
    box.add(["auto: could not tell the dialect; assuming openai", "malformed frame: a & b"])
    assert box.warnings == [
        "auto: could not tell the dialect; assuming openai",
        "malformed frame: a & b",
    ]
    assert box.toggle.text() == "▸ show 2 warnings"
    assert box.list.text() == (
        "⚠ auto: could not tell the dialect; assuming openai<br>"
        "⚠ <a href='malformed:a%20%26%20b'>malformed frame: a &amp; b</a>"
    )
    asked: list[str] = []
    box.frameRequested.connect(asked.append)
    box.list.linkActivated.emit("malformed:a%20%26%20b")
    assert asked == ["a & b"]
    box.set_warnings([])
    assert box.isHidden()
