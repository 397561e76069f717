"""Silence is visible: the real window on ``demo-stall`` and ``demo-keepalive``.

The status bar, the answer card and the Timeline say how long nothing (or only keep-alives)
arrived, counting up on the paint clock while no batch comes; deltas/s falls to 0.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Iterator

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core.turn.liveness import Quiet
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.shell.main_window import MainWindow


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    yield win
    aloop.run_until_complete(win.shutdown())


def submit(window: MainWindow, model: str) -> None:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText("Hi there")
    window.composer._on_submit()


def seconds_in(text: str, what: str) -> int | None:
    """N of "<what> for N s" in ``text``."""
    match = re.search(re.escape(what) + r" for (\d+) s\b", text)
    return int(match.group(1)) if match else None


def answered(window: MainWindow, aloop: qasync.QEventLoop) -> Turn:
    """Wait for the turn just submitted to end."""

    async def wait() -> Turn:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def stop(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    window.composer.stop_button.click()
    aloop.run_until_complete(window.controller.runner.wait())


def test_a_stall_counts_up_in_the_status_bar_the_card_and_the_timeline(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    timeline = window.inspector.timeline_panel
    window.inspector.setCurrentWidget(timeline)
    submit(window, "demo-stall")
    status = window.status
    seen: list[tuple[int | None, int | None, str, float | None, float | None]] = []
    started = time.monotonic()
    silent_at: list[float] = []
    streaming_at: list[float] = []
    bars: list[float] = []

    async def watch() -> None:
        while time.monotonic() - started < 15 and (not seen or seen[-1][0] != 4):
            await asyncio.sleep(0.05)
            card = window.controller.answer_card(-1)
            band = timeline.waterfall.silence_rect()
            bars.append(timeline.silence_bar.fraction())
            seen.append(
                (
                    seconds_in(status.text(), "no data"),
                    seconds_in(card.silence_label.text(), "no data"),
                    status.text(),
                    band.width() if band is not None else None,
                    timeline.chart.open_gap,
                )
            )
            if status.text().startswith("Streaming · ") and not streaming_at:
                streaming_at.append(time.monotonic())  # the first batch: the text, then none
            if seen[-1][0] is not None and not silent_at:
                silent_at.append(time.monotonic() - streaming_at[0])

    aloop.run_until_complete(watch())
    card = window.controller.answer_card(-1)
    assert window.controller.busy  # still streaming: the server keeps the socket open
    streamed = [text for *_, text, _b, _g in seen if text.startswith("Streaming · ")]
    assert streamed, seen[:3]
    # the text came, then silence: "no data for 2 s", 3 s, 4 s (the paint clock ticks)
    counts = [n for n, *_ in seen if n is not None]
    assert counts[0] == 2 and counts[-1] == 4, counts
    assert counts == sorted(counts)
    assert {n for n, *_ in seen if n is not None} == {2, 3, 4}
    assert 1.9 <= silent_at[0] < 3.0  # 2 s after the last text (the first batch brought it)
    # the card's line says the same, in step
    assert [c for _s, c, *_ in seen if c is not None][-1] == 4
    assert card.silence_label.isVisibleTo(card)
    assert card.silence_label.text().startswith("no data for 4 s · idle timeout in 4 min 5")
    # deltas/s fell to 0 and the elapsed clock moved on
    final = status.text()
    assert final.startswith("Streaming · ")
    assert " · 0 deltas/s · no data for 4 s · idle timeout in 4 min 5" in final
    elapsed = [float(re.search(r"Streaming · ([\d.]+) s", t).group(1)) for t in streamed]  # type: ignore[union-attr]
    assert elapsed == sorted(elapsed) and elapsed[-1] - elapsed[0] > 3.5
    assert len(set(elapsed)) > 15  # tenths of a second, while no byte arrives
    # the Timeline: the silence bar grows toward the idle timeout (log scale: 2 s of 300 s
    # fill ~19 %, 4 s ~28 %); the waterfall runs to now with an amber band from the last
    # frame; the open gap is the chart's last bar
    filled = [f for f in bars if f > 0]
    assert filled == sorted(filled) and len(set(filled)) > 10
    assert 0.18 <= filled[0] <= 0.25 and 0.27 <= filled[-1] <= 0.32
    live = timeline.silence_bar.live
    assert live is not None and live.silence is not None and live.timeout_in is not None
    seconds, left = live.silence.seconds, live.timeout_in
    # (the idle timer runs from the last delta; a float sum of two spans may pass 300 by ulps)
    assert 299.0 < seconds + left <= 300.0 + 1e-9
    assert timeline.silence_bar.fraction() == math.log1p(seconds) / math.log1p(seconds + left)
    assert timeline.silence_bar.isVisibleTo(timeline)
    widths = [w for *_, w, _g in seen if w is not None]
    assert len(widths) > 20 and widths == sorted(widths)
    gaps = [g for *_, g in seen if g is not None]
    assert gaps == sorted(gaps) and gaps[-1] >= 4.0
    assert timeline.waterfall.silence is not None
    assert timeline.waterfall.silence.kind is Quiet.NO_DATA
    assert timeline.silence_bar.accessibleName().startswith("no data for 4 s · idle timeout in")
    assert "no data" not in timeline.summary.text()  # (said once: on the silence bar)
    # Stop: the turn ends, the silence line goes, the status bar says so
    stop(window, aloop)
    assert window.controller.runner.last_turn is not None
    assert window.controller.runner.last_turn.outcome is Outcome.CANCELLED
    assert not card.silence_label.isVisibleTo(card)
    assert status.text().startswith("Cancelled by you after")
    assert timeline.waterfall.silence_rect() is None and timeline.chart.open_gap is None
    assert not timeline.silence_bar.isVisibleTo(timeline)
    ticks = window.controller.liveness.ticks
    aloop.run_until_complete(asyncio.sleep(0.3))
    assert window.controller.liveness.ticks == ticks  # the clock stopped with the turn


def test_keepalives_only_is_said_so(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    """``demo-keepalive`` at speed 3: 5 s of a keep-alive comment every 0.33 s."""
    window.demo.speed = 3.0
    submit(window, "demo-keepalive")
    seen: list[tuple[int | None, str]] = []

    async def watch() -> None:
        for _ in range(200):
            await asyncio.sleep(0.05)
            text = window.status.text()
            seen.append((seconds_in(text, "keep-alives only"), text))
            if seen[-1][0] == 4:
                return

    aloop.run_until_complete(watch())
    counts = [n for n, _t in seen if n is not None]
    assert counts and counts[0] == 2 and counts[-1] == 4, seen[-3:]
    assert counts == sorted(counts)
    text = seen[-1][1]
    assert "no data" not in text
    # the comments are bytes (they grow), never deltas
    assert " · 0 deltas/s · keep-alives only for 4 s · idle timeout in 4 min 5" in text
    sizes = [int(m.group(1)) for _n, t in seen if (m := re.search(r" · (\d+) B · ", t))]
    assert sizes[-1] > sizes[0]
    card = window.controller.answer_card(-1)
    assert card.silence_label.text().startswith("keep-alives only for 4 s")
    # then the answer flows: the silence is over
    turn = aloop.run_until_complete(window.controller.runner.wait())
    assert turn is not None and turn.outcome is Outcome.COMPLETED
    assert not card.silence_label.isVisibleTo(card)
    assert "keep-alives only" not in window.status.text()


def test_a_length_stop_is_amber_not_green(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    submit(window, "demo-length")
    turn = answered(window, aloop)
    assert turn.outcome is Outcome.COMPLETED
    assert turn.finish_reason == "length"
    status = window.status
    assert status.text().startswith("Completed · stopped at max tokens · length · ")
    assert status.glyph.text() == "⚠"
    assert "#9a4f00" in status.glyph.styleSheet()
    card = window.controller.answer_card(-1)
    assert card.footer.text().startswith(
        "<span style='color:#9a6700; font-weight:600'>⚠ stopped at max tokens</span>"
    )
    assert "⚠ stopped at max tokens" in card.status.text()
    assert card._accent is not None and card._accent.name() == "#9a6700"
    assert not card.partial_label.isVisibleTo(card)  # the answer is whole as sent
    # the inspector's header says what the card says, in the same amber (not a green ✓)
    header = window.inspector.header
    assert header.text().endswith(" · demo-length · ⚠ stopped at max tokens")
    assert header.badge.text() == "⚠ stopped at max tokens"
    assert "#7d4e00" in header.badge.styleSheet()
    # a normal stop stays green, without an accent
    submit(window, "demo")
    turn = answered(window, aloop)
    assert turn.finish_reason == "stop"
    assert status.glyph.text() == "✓" and "#116329" in status.glyph.styleSheet()
    assert status.text().startswith("Completed · stop · ")
    card = window.controller.answer_card(-1)
    assert "✓ completed" in card.footer.text() and card._accent is None
    assert header.text().endswith(" · demo · ✓ completed")
    assert "#116329" in header.badge.styleSheet()
