"""How tall a message's card will be, before it is built: from the shape of its text.

The chat view places every row of a conversation but builds cards only near the viewport;
the others take an estimated height, so the scroll bar spans the whole conversation and
moves little when a card is built and measured. :func:`text_shape` reads a text once (pure
Python: it runs where the conversation is loaded, off the UI thread) into a few counts that
do not depend on the width — prose and its paragraphs, code lines, table rows, headings —
and :meth:`Metrics.height` turns a shape into pixels for a width in O(1).

The coefficients were fitted (least squares) against the rendered answers of the big
profile's long conversation at 460 and 760 px: 90 % of the estimates are within 4 % of the
measured height, and their sum within 0.2 % (tests/support/big_profile.py's text: prose
in several scripts, lists, headings, code blocks and tables).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Metrics", "TextShape", "text_shape"]

_WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef\U0001f000-\U0001ffff]"
)
"""Characters about twice as wide as a Latin letter (CJK, Hangul, full-width forms, emoji)."""

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^#{1,6}\s")
_ITEM = re.compile(r"^\s*(?:[-+*]|\d{1,9}[.)])\s")
_MARKS = frozenset("`~|#-+*0123456789")
"""How a fence, a table row, a heading or a list item starts (after its indentation)."""


@dataclass(frozen=True, slots=True)
class TextShape:
    """What decides a text's height, whatever the width: ``units`` of prose (a Latin
    letter is one, a wide character two) in ``paragraphs`` (each wraps on its own), list
    ``items`` and ``headings`` among them, ``code_lines`` in ``code_blocks`` (never
    wrapped), ``table_rows`` in ``tables``."""

    units: int = 0
    paragraphs: int = 0
    items: int = 0
    headings: int = 0
    code_lines: int = 0
    code_blocks: int = 0
    table_rows: int = 0
    tables: int = 0


def text_shape(text: str, *, markdown: bool = True) -> TextShape:
    """Read ``text`` (Markdown, or plain text when not ``markdown``) into a shape."""
    if not text:
        return TextShape()
    if not markdown:
        lines = text.split("\n")
        units = len(text) - len(lines) + 1 + len(_WIDE.findall(text))
        return TextShape(units=units, paragraphs=len(lines))
    units = paragraphs = items = headings = 0
    code_lines = code_blocks = table_rows = tables = 0
    fence = ""
    in_paragraph = in_table = False
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # (what follows the last line end)
    for line in lines:
        if fence:
            if line.strip().startswith(fence):
                fence = ""
            else:
                code_lines += 1
            continue
        stripped = line.strip()
        if not stripped:
            in_paragraph = in_table = False
            continue
        head = stripped[0]
        if head in _MARKS:  # (most lines are prose: the patterns only for the others)
            match = _FENCE.match(line)
            if match:
                fence = match.group(1)[:3]
                code_blocks += 1
                in_paragraph = in_table = False
                continue
            if head == "|":
                if not in_table:
                    tables += 1
                    in_table = True
                if not set(stripped) <= set("|-: "):  # (the separator row is not shown)
                    table_rows += 1
                continue
        size = len(stripped) if stripped.isascii() else len(stripped) + len(_WIDE.findall(stripped))
        if head == "#" and _HEADING.match(stripped):
            headings += 1
            in_paragraph = False
        elif head in _MARKS and _ITEM.match(line):
            items += 1
            paragraphs += 1
            in_paragraph = True
        elif not in_paragraph:
            paragraphs += 1
            in_paragraph = True
        units += size
    return TextShape(
        units, paragraphs, items, headings, code_lines, code_blocks, table_rows, tables
    )


@dataclass(frozen=True, slots=True)
class Metrics:
    """The sizes an estimate needs: the text's line height and mean width of a Latin
    letter, the code's line height, and the width text wraps at (all in pixels)."""

    line: float
    char: float
    code_line: float
    width: float

    def prose_lines(self, shape: TextShape) -> float:
        """About how many lines the prose wraps to."""
        per_line = max(self.width / max(self.char, 1.0), 8.0)
        return shape.units / per_line + 0.5 * shape.paragraphs

    def height(self, shape: TextShape, *, markdown: bool = True) -> float:
        """The text's estimated height (its pane's, without the card around it)."""
        if not markdown:
            return self.line * max(self.prose_lines(shape), 1.0) + 6
        line = self.line
        return (
            0.954 * line * self.prose_lines(shape)
            + 0.773 * line * (shape.paragraphs - shape.items)
            + 0.54 * line * shape.items
            + 1.648 * line * shape.headings
            + 0.947 * self.code_line * shape.code_lines
            + 3.811 * line * shape.code_blocks
            + (line + 8) * shape.table_rows
            + 0.5 * shape.tables
            + 6
        )
