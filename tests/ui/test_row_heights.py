"""The chat column's arithmetic, without Qt widgets: row heights with prefix sums, and the
shape of a text an estimate is made from."""

from __future__ import annotations

import random

import pytest

from streamscope.ui.chat.row_estimate import Metrics, TextShape, text_shape
from streamscope.ui.chat.row_heights import RowHeights


@pytest.mark.parametrize("seed", range(20))
def test_offsets_and_the_row_at_a_height_match_a_plain_sum(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 60)
    heights = [rng.choice([0, rng.randint(1, 900)]) for _ in range(n)]
    rows = RowHeights(heights[: n // 2])
    for h in heights[n // 2 :]:
        rows.append(h)  # (growing past its capacity, too)
    for _ in range(30):
        if n:
            i = rng.randrange(n)
            new = rng.randint(0, 900)
            assert rows.set(i, new) == new - heights[i]
            heights[i] = new
    assert len(rows) == n and [rows[i] for i in range(n)] == heights
    assert [rows.offset(i) for i in range(n + 1)] == [sum(heights[:i]) for i in range(n + 1)]
    assert rows.total() == sum(heights)
    for y in range(-2, sum(heights) + 3, 7):
        i = rows.index_at(y)
        if n == 0:
            assert i == -1
        elif y < 0:
            assert i == 0
        elif y >= sum(heights):
            assert i == n - 1
        else:  # the row that covers y (a row of no height covers nothing)
            assert sum(heights[:i]) <= y < sum(heights[: i + 1])


def test_truncating_and_growing_again() -> None:
    rows = RowHeights([10, 20, 30, 40])
    rows.truncate(2)
    assert (len(rows), rows.total(), rows.index_at(25)) == (2, 30, 1)
    rows.append(5)
    assert [rows.offset(i) for i in range(4)] == [0, 10, 30, 35]
    rows.reset([1] * 1000)
    assert rows.total() == 1000 and rows.index_at(500) == 500


def test_the_shape_of_markdown() -> None:
    text = (
        "# Title\n\n"
        "A paragraph that\ncontinues on a second line.\n\n"
        "- one\n- two\n  1. nested\n\n"
        "```python\nprint(1)\n\nprint(2)\n```\n\n"
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "日本語 🚀\n"
        "~~~\nunclosed\n"
    )
    shape = text_shape(text)
    prose = len("# Title") + len("A paragraph that") + len("continues on a second line.")
    prose += len("- one") + len("- two") + len("1. nested") + len("日本語 🚀") + 4  # (wide: 2)
    assert shape == TextShape(
        units=prose,
        paragraphs=5,  # the paragraph, three items, the wide line
        items=3,
        headings=1,
        code_lines=4,  # three in the fence (a blank one too), one in the unclosed one
        code_blocks=2,
        table_rows=3,  # (the separator row is not shown)
        tables=1,
    )


def test_the_shape_of_plain_text() -> None:
    assert text_shape("one\ntwo 🚀", markdown=False) == TextShape(units=9, paragraphs=2)
    assert text_shape("") == TextShape() == text_shape("", markdown=False)


def test_an_estimate_grows_with_the_text_and_shrinks_with_the_width() -> None:
    narrow = Metrics(line=14, char=6, code_line=14, width=300)
    wide = Metrics(line=14, char=6, code_line=14, width=900)
    short, long = text_shape("word " * 50), text_shape("word " * 500)
    assert narrow.height(long) > narrow.height(short) > 14
    assert narrow.height(long) > 2.5 * wide.height(long)  # (prose wraps to the width)
    code = text_shape("```\n" + "x = 1\n" * 40 + "```")
    assert narrow.height(code) == pytest.approx(wide.height(code))  # (code does not wrap)
    assert narrow.height(code) > 40 * 14 * 0.9
