"""A window that falls behind the stream says so, and never calls it a silence (issue 23).

The real window, the real stream worker process, and a loopback server of our own: it sends
a steady stream (a frame a millisecond) for a few seconds, then stalls with the connection
open. A slow view (it sleeps in every batch it gets, and batches are small) makes the display
fall seconds behind: while frames keep arriving the status bar must never say "no data" and
must say "showing N s behind the stream"; once the server really stalls, "no data for N s"
appears — counted from the last read, while the display is still catching up.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.turn.liveness import LAG_SHOWN
from streamscope.ui.base import pacing
from streamscope.ui.shell.main_window import MainWindow
from support.chat import answer_cards
from support.rawhttp import RawServer, chunk, head

STREAM_S = 4.0
"""The server sends for this long, then stalls."""
SLOW_VIEW_S = 0.2
"""The slow view's cost per batch."""


def frame(i: int) -> bytes:
    obj = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": f"{i} "}}],
    }
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    stalled = threading.Event()

    async def handler(req: bytes, w: asyncio.StreamWriter) -> None:
        w.write(head())
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < STREAM_S:
            w.write(chunk(b"".join(frame(i + k) for k in range(20))))
            i += 20
            await w.drain()
            await asyncio.sleep(0.02)  # (~1,000 frames a second)
        stalled.set()
        await asyncio.sleep(60)  # the connection stays open: a real stall

    srv.handler = handler
    srv.stalled = stalled  # type: ignore[attr-defined]
    yield srv
    srv.close()


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop, server: RawServer) -> Iterator[MainWindow]:
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    endpoint = replace(
        new_endpoint("custom", name="Steady"), base_url=f"{server.url}/v1", model="m"
    )
    win.endpoint_bar.set_endpoints(win.endpoints.with_endpoint(endpoint).select(endpoint.id))
    yield win
    aloop.run_until_complete(win.shutdown())


def seconds(text: str, pattern: str) -> int | None:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else None


def test_a_display_behind_the_stream_says_so_and_a_real_stall_is_still_no_data(
    window: MainWindow,
    server: RawServer,
    aloop: qasync.QEventLoop,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pacing, "MAX_BATCH_FRAMES", 40)  # (small batches: a backlog builds)
    runner = window.controller.runner
    assert runner.worker is not None  # (the real stream worker process reads the stream)
    runner.turnProgressed.connect(lambda _batch: time.sleep(SLOW_VIEW_S))  # the slow view
    window.composer.editor.setPlainText("go")
    window.composer._on_submit()
    status = window.status
    while_sending: list[str] = []
    after_stall: list[tuple[float, str]] = []
    card_lines: list[str] = []

    async def watch() -> None:
        started = time.monotonic()
        stalled_at: float | None = None
        while time.monotonic() - started < 20:
            await asyncio.sleep(0.02)
            text = status.text()
            if stalled_at is None and server.stalled.is_set():  # type: ignore[attr-defined]
                stalled_at = time.monotonic()
            if stalled_at is None:
                while_sending.append(text)
            else:
                after_stall.append((time.monotonic() - stalled_at, text))
                if seconds(text, r"no data for (\d+) s") == 3:
                    break
            card = answer_cards(window.controller)[-1]
            if card.silence_label.text():
                card_lines.append(card.silence_label.text())

    aloop.run_until_complete(watch())
    assert window.controller.busy
    window.composer.stop_button.click()
    aloop.run_until_complete(runner.wait())
    streaming = [t for t in while_sending if t.startswith("Streaming · ")]
    assert len(streaming) > 10, while_sending[:5]
    # reads kept arriving: never "no data", even with the display seconds behind …
    assert not [t for t in while_sending if "no data" in t or "keep-alives" in t]
    # … which the status bar says instead
    behind = [seconds(t, r"showing (\d+) s behind the stream") for t in while_sending]
    lags = [n for n in behind if n is not None]
    assert lags and max(lags) >= 2, while_sending[-5:]
    assert min(lags) >= int(LAG_SHOWN)
    # deltas/s is the stream's pace (~1,000 a second), not the display's
    rates = [seconds(t, r"(\d+) deltas/s") for t in streaming if "behind" in t]
    assert rates and min(r for r in rates if r is not None) >= 500, rates
    assert any("behind the stream" in line for line in card_lines)  # the card says it too
    # the stream stalls for real: "no data for N s" counts from the last read, within the
    # silence floor (2 s, the deltas coming a millisecond apart), the display still behind
    silent = [(at, t) for at, t in after_stall if "no data for" in t]
    assert silent, after_stall[-3:]
    first_at, first_text = silent[0]
    assert 1.5 <= first_at <= 4.0, (first_at, first_text)
    assert seconds(first_text, r"no data for (\d+) s") in (2, 3)
    assert "behind the stream" in first_text, first_text
    assert [n for n in (seconds(t, r"no data for (\d+) s") for _a, t in silent)][-1] == 3


def test_a_lag_alone_is_said_in_amber_words_without_a_silence_or_its_bar(qtbot: QtBot) -> None:
    from streamscope.core.turn.liveness import Liveness, Quiet, Silence
    from streamscope.ui.chat.status_panel import StatusPanel
    from streamscope.ui.inspector.silence_bar import SilenceBar

    lagging = Liveness(now=10.0, elapsed=10.0, rate=900.0, threshold=2.0, silence=None, behind=3.4)
    bar = SilenceBar()
    qtbot.addWidget(bar)
    bar.show_liveness(lagging)
    assert not bar.isHidden()
    assert bar.accessibleName() == "showing 3 s behind the stream"
    assert bar.fraction() == 0.0
    assert not bar.grab().isNull()  # (painted: the words, no bar)
    status = StatusPanel()
    qtbot.addWidget(status)
    status.show_started("Steady")
    status.show_liveness(lagging)
    assert status.text() == "Sending to Steady… · 10.0 s · showing 3 s behind the stream"
    assert status.glyph.property("streamscopeTextColour") == ""  # (the stream is fine)
    # a true silence as well: both said, the glyph amber
    silent = replace(lagging, silence=Silence(Quiet.NO_DATA, 5.0, 5.0), timeout="idle",
                     timeout_in=295.0)  # fmt: skip
    status.show_liveness(silent)
    assert status.text().endswith(
        "10.0 s · no data for 5 s · idle timeout in 4 min 55 s · showing 3 s behind the stream"
    )
    assert status.glyph.property("streamscopeTextColour") == "silence"
    bar.show_liveness(silent)
    assert bar.fraction() > 0.0
    # caught up and moving: nothing said, the bar hidden
    bar.show_liveness(replace(lagging, behind=None))
    assert bar.isHidden() and bar.accessibleName() == ""
