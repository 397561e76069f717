"""Markdown: cutting a (growing) answer into blocks, and writing them into a document."""

from __future__ import annotations

import subprocess
import sys

import pytest
from PySide6.QtGui import QColor, QPalette, QTextCursor, QTextDocument, QTextTable
from PySide6.QtWidgets import QApplication

from streamscope.ui.chat.markdown import CodeBlock, MarkdownWriter, Prose, split_markdown

SAMPLE = """# Title

Intro paragraph
that continues.

1. first
2. second

   indented continuation

- bullet

```python
def f(x):
    return x  # done
```

| a | b |
|---|---|
| 1 | 2 |

~~~
tilde fence
~~~

Closing words.
"""


def test_fences_become_code_blocks_with_exact_code() -> None:
    segments, used = split_markdown(SAMPLE)
    assert used == len(SAMPLE)
    codes = [s for s in segments if isinstance(s, CodeBlock)]
    assert codes == [
        CodeBlock("def f(x):\n    return x  # done", "python"),
        CodeBlock("tilde fence", ""),
    ]
    prose = "".join(s.text for s in segments if isinstance(s, Prose))
    assert "# Title" in prose and "| 1 | 2 |" in prose and "Closing words." in prose


def test_unclosed_fence_is_code_at_the_end_but_not_while_growing() -> None:
    source = "Text\n\n```js\nlet a = 1;\n"
    assert split_markdown(source)[0] == [Prose("Text\n\n"), CodeBlock("let a = 1;", "js")]
    segments, used = split_markdown(source, final=False)
    assert segments == [Prose("Text\n\n")]
    assert source[used:].startswith("```js")


def test_indented_fence_in_a_list_is_dedented_and_crlf_normalised() -> None:
    source = "1. step\n\n   ```sh\r\n   ls -l\r\n     cd x\r\n   ```\r\n2. next\n"
    segments, _ = split_markdown(source)
    assert CodeBlock("ls -l\n  cd x", "sh") in segments


def test_a_growing_answer_yields_only_complete_blocks() -> None:
    source = "Para one\nstill one\n\nPara two"
    segments, used = split_markdown(source, final=False)
    assert segments == [Prose("Para one\nstill one\n\n")]
    assert source[used:] == "Para two"
    # a list item or an indented line after a blank line may belong to the block above
    for follow in ("- item\n", "  more\n", "2. item\n"):
        segments, used = split_markdown("1. item\n\n" + follow + "x", final=False)
        assert (segments, used) == ([], 0), follow


@pytest.mark.parametrize("step", [1, 3, 17, 64])
def test_rendering_in_pieces_equals_rendering_at_once(qapp: QApplication, step: int) -> None:
    whole = QTextDocument()
    MarkdownWriter(QPalette()).write_all(QTextCursor(whole), SAMPLE)

    pieces = QTextDocument()
    writer = MarkdownWriter(QPalette())
    cursor = QTextCursor(pieces)
    done = 0
    for end in range(step, len(SAMPLE) + step, step):
        segments, used = split_markdown(SAMPLE[done:end], final=end >= len(SAMPLE))
        done += used
        for segment in segments:
            for _ in writer.write(cursor, segment):
                pass
    assert done == len(SAMPLE)
    assert pieces.toPlainText() == whole.toPlainText()
    assert writer.codes == ["def f(x):\n    return x  # done", "tilde fence"]


def test_long_prose_is_cut_and_lists_keep_their_numbers(qapp: QApplication) -> None:
    source = "".join(f"{i}. item {i}\n\n" for i in range(1, 400))
    segments, _ = split_markdown(source, max_chars=500)
    assert len(segments) > 5
    assert "".join(s.text for s in segments if isinstance(s, Prose)) == source
    doc = QTextDocument()
    writer = MarkdownWriter(QPalette())
    cursor = QTextCursor(doc)
    for segment in segments:
        for _ in writer.write(cursor, segment):
            pass
    labels = []
    block = doc.begin()
    while block.isValid():
        if block.textList() is not None:
            labels.append(block.textList().itemText(block))
        block = block.next()
    assert labels == [f"{i}." for i in range(1, 400)]


def _doc(markdown: str) -> tuple[QTextDocument, MarkdownWriter]:
    doc = QTextDocument()
    writer = MarkdownWriter(QPalette())
    writer.write_all(QTextCursor(doc), markdown)
    return doc, writer


def test_writer_renders_headings_lists_tables_and_highlighted_code(qapp: QApplication) -> None:
    doc, writer = _doc(SAMPLE)
    text = doc.toPlainText()
    assert "Title" in text and "# Title" not in text
    assert "def f(x):" in text and "```" not in text
    levels: list[int] = []
    listed = 0
    block = doc.begin()
    while block.isValid():
        levels.append(block.blockFormat().headingLevel())
        listed += block.textList() is not None
        block = block.next()
    assert 1 in levels
    assert listed >= 3
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 1 and tables[0].rows() == 2 and tables[0].columns() == 2
    # code characters carry more than one colour (keyword, name, comment ...)
    start = text.index("def f(x):")
    colours: set[str] = set()
    cursor = QTextCursor(doc)
    for pos in range(start + 1, start + len("def f(x):\n    return x  # done")):
        cursor.setPosition(pos)
        colours.add(cursor.charFormat().foreground().color().name())
    assert len(colours) >= 3, colours
    assert writer.codes[0] == "def f(x):\n    return x  # done"


def test_unknown_language_and_raw_html_stay_text(qapp: QApplication) -> None:
    doc, writer = _doc("<b>not bold</b> <img src='x.png'>\n\n```nosuchlang\na < b\n```\n")
    text = doc.toPlainText()
    assert "<b>not bold</b>" in text
    assert "a < b" in text
    assert writer.codes == ["a < b"]


def test_code_colours_follow_a_dark_palette(qapp: QApplication) -> None:
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    doc = QTextDocument()
    MarkdownWriter(dark).write_all(QTextCursor(doc), "```\nplain\n```\n")
    cursor = QTextCursor(doc)
    cursor.setPosition(doc.toPlainText().index("plain") + 1)
    assert cursor.charFormat().foreground().color().lightness() > 128


def test_pygments_is_loaded_on_first_use_not_at_import() -> None:
    code = "import sys\nimport streamscope.ui.chat.chat_view\nprint('pygments' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_huge_code_block_is_written_in_steps_with_its_exact_text(qapp: QApplication) -> None:
    code = "\n".join(f"line {i} " + "x" * 60 for i in range(8000))  # ~550 KB
    doc = QTextDocument()
    writer = MarkdownWriter(QPalette())
    steps = sum(1 for _ in writer.write(QTextCursor(doc), CodeBlock(code, "")))
    assert steps > 20
    assert writer.codes == [code]
    assert doc.toPlainText().endswith(code + "\n")  # the block after the code frame
