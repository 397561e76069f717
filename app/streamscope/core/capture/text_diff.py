"""The text diff of two answers, word by word, with its work bounded.

    diff = text_diff(a, b)
    diff.ops     # WordOp stretches: joining every op's ``a`` gives ``a`` back (``b`` likewise)
    diff.unit    # "word"; "line" or "text" when the texts were too long to compare by words

A token is a word with the whitespace after it (text that starts with whitespace has that as
a token of its own), so a 10,000-word answer is 10,000 tokens; a changed stretch then gives
back the whole words it shares at its ends ("fox" → "fox jumps" is "fox" kept, " jumps"
added, though the tokens "fox" and "fox " differ). The common start and end are
set aside first (two runs of one prompt often share most of their text); difflib compares
what is left with ``autojunk`` on, so the commonest tokens ("the ") do not anchor matches.
Past :data:`WORDS_AT_ONCE` tokens a side, lines are compared first and then the words inside
each changed stretch of lines (30x faster on a 10,000-word answer, the same ops); a stretch
of more than :data:`MAX_TOKENS` words stays whole (the diff is coarsened to lines), and with
more lines than that the middle is one changed stretch. ``unit`` says how coarse it got, so
a view can tell the reader.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["MAX_TOKENS", "WORDS_AT_ONCE", "TextDiff", "Unit", "WordOp", "text_diff", "word_diff"]

MAX_TOKENS = 20_000
"""Most tokens (words, else lines) per side that are compared one by one."""
WORDS_AT_ONCE = 2_000
"""Up to this many words a side are compared at once; longer texts go lines first."""

Unit = Literal["word", "line", "text"]

_WORDS = re.compile(r"\s+|\S+\s*")
_LINES = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True, slots=True)
class WordOp:
    """One stretch of the word diff: ``equal``, ``delete`` (only in A), ``insert`` (only in
    B) or ``replace``; ``a``/``b`` are the text of that stretch on each side."""

    tag: Literal["equal", "delete", "insert", "replace"]
    a: str
    b: str


@dataclass(frozen=True, slots=True)
class TextDiff:
    """A diff and the unit it compared by (see the module docstring)."""

    ops: tuple[WordOp, ...]
    unit: Unit = "word"

    @property
    def coarsened(self) -> bool:
        """Whether the texts were compared by something coarser than words."""
        return self.unit != "word"

    @property
    def how(self) -> str:
        """``word by word``, ``line by line`` or ``as a whole``, for people."""
        return {"word": "word by word", "line": "line by line", "text": "as a whole"}[self.unit]


def text_diff(a: str, b: str, *, max_tokens: int | None = None) -> TextDiff:
    """``a`` against ``b``, word by word when at most ``max_tokens`` (default
    :data:`MAX_TOKENS`) differ per side."""
    max_tokens = MAX_TOKENS if max_tokens is None else max_tokens
    ta, tb = _WORDS.findall(a), _WORDS.findall(b)
    head, tail = _common_ends(ta, tb)
    ma, mb = ta[head : len(ta) - tail], tb[head : len(tb) - tail]
    unit: Unit = "word"
    if max(len(ma), len(mb)) <= min(max_tokens, WORDS_AT_ONCE):
        middle = _diff(ma, mb)
    else:
        middle, unit = _by_lines("".join(ma), "".join(mb), max_tokens)
    start, end = "".join(ta[:head]), "".join(ta[len(ta) - tail :])
    ops = [WordOp("equal", start, start), *middle, WordOp("equal", end, end)]
    return TextDiff(tuple(_joined(ops)), unit)


def word_diff(a: str, b: str) -> list[WordOp]:
    """The ops of :func:`text_diff` (kept for callers that need no more)."""
    return list(text_diff(a, b).ops)


def _common_ends(ta: Sequence[str], tb: Sequence[str]) -> tuple[int, int]:
    """How many tokens the two lists share at the start, and then at the end."""
    n = min(len(ta), len(tb))
    head = 0
    while head < n and ta[head] == tb[head]:
        head += 1
    tail = 0
    while tail < n - head and ta[-1 - tail] == tb[-1 - tail]:
        tail += 1
    return head, tail


def _by_lines(a: str, b: str, max_tokens: int) -> tuple[list[WordOp], Unit]:
    """Lines first, then words inside each changed stretch of at most ``max_tokens``."""
    la, lb = _LINES.findall(a), _LINES.findall(b)
    if max(len(la), len(lb)) > max_tokens:
        return _split_ends(WordOp("replace", a, b)), "text"
    ops: list[WordOp] = []
    unit: Unit = "word"
    for op in _diff(la, lb):
        wa, wb = _WORDS.findall(op.a), _WORDS.findall(op.b)
        if op.tag == "equal" or max(len(wa), len(wb)) > max_tokens:
            unit = unit if op.tag == "equal" else "line"
            ops.append(op)
        else:
            ops += _diff(wa, wb)
    return ops, unit


def _diff(ta: list[str], tb: list[str]) -> list[WordOp]:
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=True)
    return [
        op
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        for op in _split_ends(WordOp(tag, "".join(ta[i1:i2]), "".join(tb[j1:j2])))
    ]


def _joined(ops: list[WordOp]) -> list[WordOp]:
    """``ops`` without empty ones, neighbouring equal stretches joined."""
    out: list[WordOp] = []
    for op in ops:
        if not (op.a or op.b):
            continue
        if op.tag == "equal" and out and out[-1].tag == "equal":
            joined = out.pop().a + op.a
            op = WordOp("equal", joined, joined)
        out.append(op)
    return out


def _split_ends(op: WordOp) -> list[WordOp]:
    """A replacement with the whole words its two sides start and end with kept as equal."""
    if op.tag != "replace":
        return [op]
    a, b = op.a, op.b
    head = _shared_words(a, b)
    tail = _shared_words(a[head:][::-1], b[head:][::-1])
    core_a, core_b = a[head : len(a) - tail], b[head : len(b) - tail]
    tag: Literal["replace", "delete", "insert"] = (
        "replace" if core_a and core_b else "delete" if core_a else "insert"
    )
    start, end = a[:head], a[len(a) - tail :]
    return [WordOp("equal", start, start), WordOp(tag, core_a, core_b), WordOp("equal", end, end)]


def _shared_words(a: str, b: str) -> int:
    """How long a start ``a`` and ``b`` share, cut back to where a word ends on both sides."""
    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    while k and not _between_words(a, b, k):
        k -= 1
    return k


def _between_words(a: str, b: str, k: int) -> bool:
    """Whether cutting both texts ``k`` characters in splits no word (their first ``k`` are
    the same): after whitespace, or where the next character of each is whitespace or none."""
    if a[k - 1].isspace():
        return True
    return (k == len(a) or a[k].isspace()) and (k == len(b) or b[k].isspace())
