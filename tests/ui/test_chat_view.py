"""The chat view: streaming appends, final Markdown, footers, tool calls, autoscroll."""

from __future__ import annotations

import gc
import math
import re
import time
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QElapsedTimer, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QGuiApplication, QTextCursor, QTextTable, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from streamscope.core.turn.model import Timings, ToolCallState, Turn, TurnDelta
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.chat.chat_view import AssistantCard, ChatView
from streamscope.ui.chat.text_pane import TextPane

MARKDOWN = """## Weather

Here is the forecast — naïve café — 日本語 — 🚀:

- **Zürich**: rain
- Geneva: sun

| City | Temp |
|------|-----:|
| Zürich | 14 |

```python
def fetch(city: str) -> dict:
    return {"city": city}  # cached
```
"""


@pytest.fixture
def view(qtbot: QtBot) -> Iterator[ChatView]:
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(700, 500)
    chat.show()
    qtbot.waitExposed(chat)
    yield chat


def finished(text: str, outcome: Outcome = Outcome.COMPLETED, **kw: object) -> Turn:
    fields: dict[str, object] = {
        "text": text,
        "outcome": outcome,
        "finish_reason": "stop",
        "output_tokens": 412,
        "timings": Timings(request_sent=0.0, first_token=0.21, last_token=7.31),
        "reason": "[DONE] received",
    }
    fields.update(kw)
    return Turn(**fields)  # type: ignore[arg-type]


def finish_and_wait(qtbot: QtBot, card: AssistantCard, turn: Turn) -> None:
    card.finish(turn)
    qtbot.waitUntil(lambda: not card.is_rendering(), timeout=20_000)


def show_and_wait(qtbot: QtBot, card: AssistantCard, turn: Turn) -> None:
    """A whole turn at once, as a saved answer is shown."""
    card.show_turn(turn)
    qtbot.waitUntil(lambda: not card.is_rendering(), timeout=20_000)


def rendered_text(card: AssistantCard) -> str:
    return card.rendered_pane().document().toPlainText()


def test_many_small_deltas_give_the_exact_text(view: ChatView) -> None:
    card = view.begin_assistant_message()
    pieces = [f"tok{i} " if i % 37 else "line\n" for i in range(1000)]
    for piece in pieces:
        card.append_text(piece)
    assert card.text() == "".join(pieces)


@pytest.mark.parametrize("newlines", [True, False], ids=["lines", "one-endless-line"])
def test_append_cost_does_not_grow_with_the_message(view: ChatView, newlines: bool) -> None:
    card = view.begin_assistant_message()
    delta = ("x" * 49 + ("\n" if newlines else " ")) * 2  # 100 chars
    timings = []
    for _ in range(2000):  # 200 KB
        t0 = time.perf_counter()
        card.append_text(delta)
        timings.append(time.perf_counter() - t0)
    first, last = sum(timings[:100]), sum(timings[-100:])
    assert last < 10 * first + 0.02, (first, last)
    assert len(card.text()) == 200_000


def test_finish_renders_markdown_with_a_table_and_highlighted_code(
    view: ChatView, qtbot: QtBot
) -> None:
    card = view.begin_assistant_message()
    for i in range(0, len(MARKDOWN), 5):
        card.append_text(MARKDOWN[i : i + 5])
    finish_and_wait(qtbot, card, finished(MARKDOWN))
    doc = card.rendered_pane().document()
    text = doc.toPlainText()
    assert "## " not in text and "```" not in text
    assert "naïve café — 日本語 — 🚀" in text
    assert any(isinstance(f, QTextTable) for f in doc.rootFrame().childFrames())
    headings, items = set(), 0
    block = doc.begin()
    while block.isValid():
        headings.add(block.blockFormat().headingLevel())
        items += block.textList() is not None
        block = block.next()
    assert 2 in headings and items == 2
    start = text.index("def fetch")
    cursor = QTextCursor(doc)
    colours = set()
    for pos in range(start + 1, start + 60):
        cursor.setPosition(pos)
        colours.add(cursor.charFormat().foreground().color().name())
    assert len(colours) >= 3
    assert card.text() == MARKDOWN


def test_copy_link_copies_the_exact_code(view: ChatView, qtbot: QtBot) -> None:
    card = view.begin_assistant_message()
    show_and_wait(qtbot, card, finished(MARKDOWN))
    pane = card.rendered_pane()
    view.scroll_to_bottom()
    qtbot.wait(50)
    position = pane.document().toPlainText().index("Copy")
    cursor = QTextCursor(pane.document())
    cursor.setPosition(position + 2)
    assert cursor.charFormat().anchorHref() == "copy:0"
    QGuiApplication.clipboard().clear()
    point = pane.cursorRect(cursor).center()
    QTest.mouseClick(pane.viewport(), Qt.MouseButton.LeftButton, pos=point)
    expected = 'def fetch(city: str) -> dict:\n    return {"city": city}  # cached'
    qtbot.waitUntil(lambda: QGuiApplication.clipboard().text() == expected, timeout=2000)


def test_reasoning_is_collapsed_and_labelled_with_its_channel(view: ChatView) -> None:
    card = view.begin_assistant_message()
    card.append_reasoning("Let me think", "reasoning_content")
    card.append_reasoning(" about it.", "reasoning_content")
    card.append_text("Answer")
    assert card.reasoning_toggle.isVisible()
    assert "reasoning (reasoning_content)" in card.reasoning_toggle.text()
    assert card.reasoning_toggle.text().startswith("▸")
    assert not card.reasoning_expanded() and not card.reasoning_pane.isVisible()
    card.reasoning_toggle.click()
    assert card.reasoning_pane.isVisible()
    assert card.reasoning_toggle.text().startswith("▾")
    assert card.reasoning_pane.toPlainText() == "Let me think about it."


def test_tool_calls_are_pretty_and_live_and_results_can_be_sent(
    view: ChatView, qtbot: QtBot
) -> None:
    card = view.begin_assistant_message()
    partial = ToolCallState(0, "call_1", "get_weather", '{"city": "Zü', ((0.1, '{"city": "Zü'),))
    card.set_tool_calls([partial])
    box = card.tool_call_boxes()[0]
    assert box.arguments.toPlainText() == '{"city": "Zü'  # raw while it does not parse
    assert "get_weather" in box.title.text()
    done = ToolCallState(0, "call_1", "get_weather", '{"city": "Zürich", "days": [1, 2]}', (), True)
    other = ToolCallState(1, "call_2", "get_time", "{not json", (), True)
    card.set_tool_calls([done, other])
    assert box.arguments.toPlainText() == (
        '{\n  "city": "Zürich",\n  "days": [\n    1,\n    2\n  ]\n}'
    )
    second = card.tool_call_boxes()[1]
    assert second.arguments.toPlainText() == "{not json"
    assert "not valid JSON" in second.title.text()
    assert not card.send_button.isEnabled()

    finish_and_wait(qtbot, card, finished("", tool_calls=(done, other), finish_reason="tool_calls"))
    assert card.send_button.isEnabled()
    box.result.setPlainText('{"temp": 14}')
    second.result.setPlainText("12:00")
    each: list[tuple[str, str]] = []
    card.toolResultSubmitted.connect(lambda i, t: each.append((i, t)))
    with qtbot.waitSignal(card.resultsSubmitted) as blocker:
        QTest.mouseClick(card.send_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [
        [("call_1", "get_weather", '{"temp": 14}'), ("call_2", "get_time", "12:00")]
    ]
    assert each == [("call_1", '{"temp": 14}'), ("call_2", "12:00")]
    assert not card.send_button.isEnabled()


@pytest.mark.parametrize(
    ("outcome", "word"),
    [
        (Outcome.COMPLETED, "completed"),
        (Outcome.TRUNCATED, "truncated"),
        (Outcome.CANCELLED, "cancelled"),
        (Outcome.ERROR, "error"),
    ],
)
def test_footer_names_the_outcome(
    view: ChatView, qtbot: QtBot, outcome: Outcome, word: str
) -> None:
    card = view.begin_assistant_message()
    card.append_text("Partial answ")
    finish_and_wait(qtbot, card, finished("Partial answ", outcome, reason="the reason"))
    footer = card.footer.text()
    for part in (word, "stop", "412 tokens", "TTFT 0.21 s", "58 tok/s"):
        assert part in footer, part
    assert "Partial answ" in rendered_text(card)
    if outcome is Outcome.COMPLETED:
        assert not card.partial_label.isVisible()
    else:
        assert card.partial_label.isVisible()
        assert "partial answer" in card.partial_label.text()
        assert "the reason" in card.partial_label.text()


def test_an_error_without_text_says_so(view: ChatView, qtbot: QtBot) -> None:
    card = view.begin_assistant_message()
    turn = Turn(outcome=Outcome.ERROR, reason="429 rate_limit_exceeded · retry after 20 s")
    finish_and_wait(qtbot, card, turn)
    assert "no answer" in card.partial_label.text()
    assert "retry after 20 s" in card.partial_label.text()
    assert "error" in card.footer.text()


def test_finish_shows_the_outcome_and_never_replaces_what_the_deltas_brought(
    view: ChatView, qtbot: QtBot
) -> None:
    """The card renders the reducer's deltas only: the finished Turn brings the outcome, not
    a second copy of the text that could disagree with what was shown live."""
    card = view.begin_assistant_message()
    card.take(TurnDelta(text="# Live\n\nas it came"))
    finish_and_wait(qtbot, card, finished("# Other\n\ntext"))
    assert card.text() == "# Live\n\nas it came"
    assert rendered_text(card) == "Live\nas it came"
    assert "completed" in card.footer.text()


def test_finished_blocks_render_while_the_answer_streams(view: ChatView, qtbot: QtBot) -> None:
    card = view.begin_assistant_message()
    card.append_text("# Heading\n\nFirst paragraph.\n\nSecond, still stream")
    qtbot.waitUntil(lambda: "First paragraph." in rendered_text(card), timeout=3000)
    assert "Heading" in rendered_text(card) and "#" not in rendered_text(card)
    assert "Second" not in rendered_text(card)
    card.append_text("ing.")
    finish_and_wait(qtbot, card, finished(card.text()))
    assert rendered_text(card) == "Heading\nFirst paragraph.\nSecond, still streaming."


def test_autoscroll_follows_only_at_the_bottom(view: ChatView, qtbot: QtBot) -> None:
    view.add_user_message("hello")
    card = view.begin_assistant_message()
    for i in range(60):
        card.append_text(f"line {i}\n")
    qtbot.waitUntil(lambda: view.scroll_bar_value() > 0)
    qtbot.waitUntil(view.is_at_bottom)

    view.scroll_to(0)
    for i in range(60):
        card.append_text(f"more {i}\n")
    qtbot.wait(100)
    assert view.scroll_bar_value() == 0
    assert not view.is_at_bottom()

    view.scroll_to_bottom()
    for i in range(60):
        card.append_text(f"again {i}\n")
    qtbot.wait(100)
    assert view.is_at_bottom()


def test_user_message_and_notice_and_clear(view: ChatView) -> None:
    notice = "**Welcome.** Pick a *scenario*."
    view.add_notice(notice)
    user = view.add_user_message("What's the weather in Zürich? 日本語 🚀")
    assert user.text() == "What's the weather in Zürich? 日本語 🚀"
    assert user.pane.toPlainText() == user.text()
    cards = view.cards()
    assert len(cards) == 2
    assert "Welcome. Pick a scenario." in cards[0].pane.toPlainText()  # type: ignore[attr-defined]
    view.clear()
    assert view.cards() == []


def _long_markdown() -> str:
    parts: list[str] = []
    size = i = 0
    while size < 500_000:
        part = (
            f"## Section marker{i:05d}\n\nSome *text* with `code` and a [link](https://x.org/{i}).\n"
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.\n\n"
            f"- item a{i}\n- item b{i}\n\n| k | v |\n|---|---|\n| {i} | x |\n\n"
        )
        if i % 25 == 0:
            part += f"```python\ndef f{i}(x):\n    return x * {i}\n```\n\n"
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


def test_long_answer_renders_in_short_slices_and_completely(view: ChatView, qtbot: QtBot) -> None:
    source = _long_markdown()
    markers = set(re.findall(r"marker\d{5}", source))
    card = view.begin_assistant_message()
    for i in range(0, len(source), 4096):
        card.append_text(source[i : i + 4096])

    qtbot.wait(100)  # let the streamed text lay out, as it would between deltas
    # What the rest of the test run left alive is not the card's: a full collection of it
    # (a whole suite's heap) once took 1.1 s inside a slice. Only the card's garbage counts.
    gc.collect()
    gc.freeze()
    # the event loop keeps turning while the answer renders
    clock = QElapsedTimer()
    gaps: list[int] = []
    ticker = QTimer()
    ticker.setInterval(5)
    ticker.timeout.connect(lambda: gaps.append(clock.restart()))
    clock.start()
    ticker.start()
    try:
        finish_and_wait(qtbot, card, finished(source))
    finally:
        gc.unfreeze()
    ticker.stop()

    # several slices (what catches an all-at-once rendering), each short — the bound is
    # generous: on a busy 2-core machine one step of a slice was measured at 300 ms
    assert card.render_slices > 3, card.render_slices
    assert card.last_render_max_slice_ms < 1000, card.last_render_max_slice_ms
    text = rendered_text(card)
    assert set(re.findall(r"marker\d{5}", text)) == markers
    assert "return x * 25" in text
    assert card.text() == source
    assert len(gaps) > 10
    assert max(gaps) < 1000, max(gaps)
    print(f"max slice {card.last_render_max_slice_ms:.0f} ms, max loop gap {max(gaps)} ms")


def test_copy_links_of_a_long_answer_copy_their_own_block(view: ChatView, qtbot: QtBot) -> None:
    card = view.begin_assistant_message()
    show_and_wait(qtbot, card, finished(_long_markdown()))
    pane = card.rendered_pane()
    assert pane.codes[1] == "def f25(x):\n    return x * 25"
    pane.anchorClicked.emit(QUrl("copy:1"))
    assert QGuiApplication.clipboard().text() == "def f25(x):\n    return x * 25"


def test_panes_leave_the_wheel_to_the_chat(view: ChatView) -> None:
    # Qt propagates an ignored (real, spontaneous) wheel event to the chat's scroll area.
    card = view.begin_assistant_message()
    card.append_text("text")
    for pane in card.findChildren(TextPane):
        event = QWheelEvent(
            QPointF(5, 5),
            QPointF(5, 5),
            QPoint(0, 0),
            QPoint(0, 120),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        event.accept()
        QApplication.sendEvent(pane.viewport(), event)
        assert not event.isAccepted()


def test_the_streamed_text_stays_in_view_until_the_final_rendering_is_ready(
    view: ChatView, qtbot: QtBot
) -> None:
    """A huge answer's final rendering takes many ticks: meanwhile the card shows the streamed
    text as it was (painted at the clock's pace: every WORK_PAINT_MS, not every tick — that
    cost the firehose 1.6x); the rendering replaces it in one step."""
    source = _long_markdown()
    card = view.begin_assistant_message()
    card.append_text(source)
    qtbot.waitUntil(lambda: card._tail.isVisible() and card._shown > 0)
    qtbot.wait(20)  # (the chat's scroll bar appears: the tail is laid out again, narrower)
    tail_height = card._tail.height()
    assert tail_height > 1000 and card.rendered_pane().document().isEmpty()
    seen: list[tuple[bool, int, int]] = []

    def look() -> None:
        if card.is_rendering():
            pane = card.rendered_pane()
            seen.append((card._tail.isVisible(), card._tail.height(), pane.height()))
            view.scroll_to(view.scroll_bar_value() + 7)  # the user scrolls meanwhile

    ticker = QTimer()
    ticker.setInterval(1)
    ticker.timeout.connect(look)
    ticker.start()
    finish_and_wait(qtbot, card, finished(source))
    ticker.stop()
    assert len(seen) > 5  # (many ticks: a slice at a time)
    assert set(seen) == {(True, tail_height, 0)}, seen
    pane = card.rendered_pane()
    assert not card._tail.isVisible() and not pane.held
    assert pane.isVisible() and pane.height() == math.ceil(pane.document().size().height())
    assert rendered_text(card).count("marker") == source.count("marker")


@pytest.mark.parametrize("ending", ["```python\nprint(1)\n```\n", "```\nplain\n```"])
def test_no_blank_line_between_a_closing_code_block_and_the_footer(
    view: ChatView, qtbot: QtBot, ending: str
) -> None:
    card = view.begin_assistant_message()
    show_and_wait(qtbot, card, finished("Some code:\n\n" + ending))
    qtbot.wait(20)  # (the card's layout follows the pane's new height)
    pane = card.rendered_pane()
    document = pane.document()
    layout = document.documentLayout()
    last = layout.blockBoundingRect(document.lastBlock())
    code_end = layout.blockBoundingRect(document.lastBlock().previous()).bottom()
    assert document.lastBlock().text() == "" and last.height() <= 2  # (a line: 14+ px)
    assert pane.height() - code_end < pane.fontMetrics().lineSpacing()  # the block's padding
    gap = card.footer.geometry().top() - pane.geometry().bottom()
    assert gap <= card.body.spacing() + 1
