"""Markdown for the chat: cut an answer into blocks, and write them into a QTextDocument.

:func:`split_markdown` is pure: it cuts Markdown source into :class:`Prose` runs (rendered by
Qt's own Markdown importer) and fenced :class:`CodeBlock` s (highlighted with Pygments), only
at places where cutting cannot change the result (a blank line followed by a new top-level
block, or a fence). Each piece is small, so a long answer renders piece by piece across
event-loop turns, and a growing answer can render its finished blocks while it streams.

:class:`MarkdownWriter` appends those pieces at a cursor. Code blocks get a "Copy" link
(``copy:N``) that the view resolves through :attr:`MarkdownWriter.codes`. Pygments is
imported on the first code block, not at import time (:mod:`streamscope.ui.base.code_highlight`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QFont,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFrameFormat,
    QTextTable,
)

from streamscope.ui.base.code_highlight import (
    CodeStyle,
    is_dark,
    lexer_for,
)
from streamscope.ui.chat.text_pane import PlainAppender

_FEATURE = QTextDocument.MarkdownFeature
MARKDOWN_FEATURES = QTextDocument.MarkdownFeature(
    _FEATURE.MarkdownDialectGitHub.value | _FEATURE.MarkdownNoHTML.value
)
"""GitHub dialect (tables, strikethrough, task lists, autolinks); raw HTML shows as text."""

MAX_PROSE_CHARS = 4_000
"""A prose run longer than this is cut at the best place available."""

TOKENS_PER_STEP = 1_500
"""A code block yields to the caller after this many tokens ..."""

CODE_PIECE = 8_192
"""... or after this many characters of one token."""

MAX_MARKDOWN_LINE = 20_000
"""A prose run with a line longer than this is shown as plain text (in pieces of
:data:`PLAIN_STEP` characters per step): nobody writes such a line to be read as Markdown,
and Qt would parse and lay it out in one blocking call."""

PLAIN_STEP = 8_192
"""(A quarter of a :data:`LINE_PIECE`: a step lays out at most two blocks, ~3 ms.)"""


@dataclass(frozen=True, slots=True)
class Prose:
    """Markdown without fenced code, ending at a block boundary."""

    text: str


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """The exact text inside a fence (without the fences) and the fence's language."""

    code: str
    language: str


Segment = Prose | CodeBlock

_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)")
_NOT_YET = frozenset(" \t\r-+*0123456789")
_LIST_ITEM = re.compile(r"^(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def split_markdown(
    source: str, *, final: bool = True, max_chars: int = MAX_PROSE_CHARS
) -> tuple[list[Segment], int]:
    """Cut ``source`` into segments; return them and how many characters they cover.

    With ``final=False`` the source is still growing: only complete blocks are returned
    (never a partial line, an open fence, or a paragraph that may continue), and the count
    says where the caller should resume. With ``final=True`` everything is returned (an
    unclosed fence becomes a code block).
    """
    segments: list[Segment] = []
    n = len(source)
    pos = prose_start = 0
    safe = soft = 0  # cut points: before a new top-level block / after any blank line
    prev_blank = True
    fence: tuple[int, str, str, int] | None = None  # indent, marker, language, code start

    def cut_prose(end: int) -> None:
        nonlocal prose_start
        text = source[prose_start:end]
        if text.strip():
            segments.append(Prose(text))
        prose_start = end

    while pos < n:
        nl = source.find("\n", pos)
        if nl < 0 and not final:
            # A partial line starts a new block if it cannot turn into a list item or
            # an indented continuation.
            head = source[pos]
            if fence is None and prev_blank and pos > prose_start and head not in _NOT_YET:
                safe = pos
            break
        end = n if nl < 0 else nl + 1
        line = source[pos:end].rstrip("\r\n")
        if fence is None:
            m = _FENCE_OPEN.match(line)
            if m and (m.group(2)[0] == "~" or "`" not in line[m.end(2) :]):
                cut_prose(pos)
                fence = (len(m.group(1).expandtabs(4)), m.group(2), m.group(3), end)
                safe = soft = pos
            else:
                blank = not line.strip()
                if not blank and prev_blank and pos > prose_start:
                    soft = pos
                    if line[0] not in " \t" and not _LIST_ITEM.match(line):
                        safe = pos
                if pos - prose_start > max_chars:
                    cut_prose(next(c for c in (safe, soft, pos) if c > prose_start))
                prev_blank = blank
        else:
            indent, marker, language, code_start = fence
            stripped = line.strip()
            if (
                stripped.startswith(marker)
                and stripped == stripped[0] * len(stripped)
                and len(line) - len(line.lstrip()) <= indent + 3
            ):
                segments.append(CodeBlock(_dedent(source[code_start:pos], indent), language))
                fence = None
                prose_start = safe = soft = end
                prev_blank = True
        pos = end

    if final:
        if fence is not None:
            indent, _marker, language, code_start = fence
            segments.append(CodeBlock(_dedent(source[code_start:], indent), language))
        else:
            cut_prose(n)
        return segments, n
    if fence is not None:
        return segments, prose_start
    if safe > prose_start:
        cut_prose(safe)
    return segments, prose_start


def _longest_line(text: str) -> int:
    return max(map(len, text.split("\n")))


def _dedent(code: str, indent: int) -> str:
    """The code inside a fence: the fence's indentation removed, no final newline."""
    code = code.replace("\r\n", "\n")
    if code.endswith("\n"):
        code = code[:-1]
    if indent:
        lines = code.split("\n")
        code = "\n".join(ln[min(indent, len(ln) - len(ln.lstrip(" "))) :] for ln in lines)
    return code


# -- writing into a document ------------------------------------------------------------


class MarkdownWriter:
    """Appends segments at a cursor; remembers each code block for its Copy link."""

    def __init__(self, palette: QPalette) -> None:
        self._dark = is_dark(palette)
        text = palette.color(QPalette.ColorRole.Text)
        text.setAlphaF(0.3)
        self._rule = text
        self._code_style: CodeStyle | None = None
        self.codes: list[str] = []

    @property
    def dark(self) -> bool:
        """Whether it writes in the dark theme's colours."""
        return self._dark

    def write(self, cursor: QTextCursor, segment: Segment) -> Iterator[None]:
        """Write ``segment`` at ``cursor`` (left after it); yields where it may pause."""
        if isinstance(segment, CodeBlock):
            yield from self._write_code(cursor, segment)
        elif len(segment.text) > MAX_MARKDOWN_LINE and _longest_line(segment.text) > (
            MAX_MARKDOWN_LINE
        ):
            yield from self._write_plain(cursor, segment.text)
        else:
            self._write_prose(cursor, segment.text)

    def write_all(self, cursor: QTextCursor, source: str) -> None:
        """Render a whole (short) Markdown text in one go."""
        for segment in split_markdown(source)[0]:
            for _ in self.write(cursor, segment):
                pass

    def _write_prose(self, cursor: QTextCursor, text: str) -> None:
        document = cursor.document()
        if document.isEmpty():
            document.setMarkdown(text, MARKDOWN_FEATURES)
            self._style_tables(document)
            cursor.movePosition(QTextCursor.MoveOperation.End)
            return
        scratch = QTextDocument()
        scratch.setUndoRedoEnabled(False)
        scratch.setMarkdown(text, MARKDOWN_FEATURES)
        self._style_tables(scratch)
        # An empty first block takes the merge into the cursor's block, so the first real
        # block keeps its own format (heading, list item ...).
        QTextCursor(scratch).insertBlock()
        cursor.insertFragment(QTextDocumentFragment(scratch))

    def _write_plain(self, cursor: QTextCursor, text: str) -> Iterator[None]:
        """A run with a line too long to be read as Markdown: plain text in bounded blocks,
        as it was shown while streaming (one ``setMarkdown`` of it would block the loop)."""
        if not cursor.document().isEmpty():
            cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
        appender = PlainAppender(cursor.document())
        for start in range(0, len(text), PLAIN_STEP):
            appender.append(text[start : start + PLAIN_STEP])
            yield
        cursor.movePosition(QTextCursor.MoveOperation.End)

    def _style_tables(self, document: QTextDocument) -> None:
        for frame in document.rootFrame().childFrames():
            if isinstance(frame, QTextTable):
                fmt = frame.format()
                fmt.setCellPadding(4)
                fmt.setCellSpacing(0)
                fmt.setBorderCollapse(True)
                fmt.setBorder(1)
                fmt.setBorderBrush(self._rule)
                fmt.setTopMargin(6)
                fmt.setBottomMargin(6)
                frame.setFormat(fmt)

    def _write_code(self, cursor: QTextCursor, block: CodeBlock) -> Iterator[None]:
        if self._code_style is None:
            self._code_style = CodeStyle(self._dark)  # imports Pygments: a step of its own
            yield
        style = self._code_style
        lexer = lexer_for(block.language)  # may import a lexer module: a step of its own
        yield
        number = len(self.codes)
        self.codes.append(block.code)

        frame = QTextFrameFormat()
        frame.setBackground(style.background)
        frame.setPadding(8)
        frame.setBorder(0)
        frame.setTopMargin(4)
        frame.setBottomMargin(0)
        cursor.insertFrame(frame)

        header = QTextBlockFormat()
        header.setAlignment(Qt.AlignmentFlag.AlignLeft)
        cursor.setBlockFormat(header)
        label = QTextCharFormat()
        label.setForeground(style.muted)
        label.setFontPointSize(max(QFont().pointSizeF() - 1, 6))
        cursor.insertText(f"{block.language or 'text'}   ", label)
        link = QTextCharFormat(label)
        link.setForeground(style.link)
        link.setAnchor(True)
        link.setAnchorHref(f"copy:{number}")
        link.setToolTip("Copy this code block")
        cursor.insertText("Copy", link)

        lines = QTextBlockFormat()
        lines.setNonBreakableLines(True)  # code is not wrapped: its pane scrolls sideways
        cursor.insertBlock(lines, style.base_format())
        if not block.code:
            cursor.movePosition(QTextCursor.MoveOperation.End)
            return
        remaining = len(block.code)
        # One edit block per step: the document is laid out once per step, not per token.
        cursor.beginEditBlock()
        try:
            for count, (ttype, value) in enumerate(lexer.get_tokens(block.code), start=1):
                if len(value) > remaining:
                    value = value[:remaining]
                if value:
                    fmt = style.format_for(ttype)
                    remaining -= len(value)
                    while len(value) > CODE_PIECE:  # one huge token (plain text lexer ...)
                        cursor.insertText(value[:CODE_PIECE], fmt)
                        value = value[CODE_PIECE:]
                        cursor.endEditBlock()
                        yield
                        cursor.beginEditBlock()
                    cursor.insertText(value, fmt)
                if remaining <= 0:
                    break
                if count % TOKENS_PER_STEP == 0:
                    cursor.endEditBlock()
                    yield
                    cursor.beginEditBlock()
        finally:
            cursor.endEditBlock()
        cursor.movePosition(QTextCursor.MoveOperation.End)


__all__ = [
    "MARKDOWN_FEATURES",
    "CodeBlock",
    "MarkdownWriter",
    "Prose",
    "Segment",
    "split_markdown",
]
