"""A pasted command line split into words, the way the shell it was written for splits it.

    commands = split_command(text)    # [Command(words=["curl", "https://…", "-H", …])]

**POSIX shells** (bash, zsh: Chrome's "Copy as cURL (bash)", Firefox's "Copy as cURL
(POSIX)", Safari's "Copy as cURL"): blanks and newlines separate words; ``'…'`` keeps
everything; ``"…"`` lets a backslash escape ``$ ` " \\`` and a newline; ``$'…'`` (ANSI-C)
decodes ``\\n \\t \\r \\' \\\\ \\e \\xHH \\uHHHH \\UHHHHHHHH \\NNN \\cX`` …; outside quotes a
backslash escapes the next character and backslash-newline joins lines; ``#`` starts a
comment; ``|`` starts the next command of a pipeline, and ``<<'END'`` gives a command the
here-document that follows the line as its standard input. Nothing is expanded:
``$API_KEY`` stays as written. Browsers escape by UTF-16 code unit and any code point under
256 as ``\\xHH``, so escapes that make no UTF-8 are read as those code points (``Z\\xfcrich``
is "Zürich") and surrogate pairs join (``\\ud83d\\ude80`` is one emoji).

**cmd.exe** (Chrome's "Copy as cURL (cmd)", Firefox's "Copy as cURL (Windows)"), chosen when
a line ends in ``^`` or the text has ``^"``: a caret takes the next character literally (a
caret at a line end joins lines; caret, newline, newline is a newline inside a word), then
the words are split as the Microsoft C runtime splits a command line (``"`` quotes, ``""``
inside quotes is a quote, blanks separate) with the browsers' backslashes: Chrome doubles
every backslash (``\\\\`` is one), Firefox's ``curl.exe`` form does not; ``\\"`` is a quote in
both. The carets are read as the browsers meant them, whatever cmd.exe's quote state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Command", "ShellSplitError", "ansi_c", "split_command"]

_CMD_STYLE = re.compile(r'\^\r?\n|\^"')
_POSIX_CONTINUATION = re.compile(r"\\\r?\n")
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_NUMERIC = re.compile(r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})")
_HEREDOC = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()]+))")


class ShellSplitError(ValueError):
    """The text cannot be split (an unterminated quote or here-document)."""


@dataclass(slots=True)
class Command:
    """One command of a pipeline: its words, and the here-document it reads, if any."""

    words: list[str] = field(default_factory=list)
    stdin: str | None = None


def split_command(text: str) -> list[Command]:
    """The commands of ``text`` (a pipeline), split as cmd.exe or a POSIX shell would."""
    if _CMD_STYLE.search(text) and not _POSIX_CONTINUATION.search(text):
        words = _msvcrt_words(_uncaret(text), doubled=not _starts_with_curl_exe(text))
        return [Command(words)]
    return _PosixSplitter(text).commands()


# -- cmd.exe ------------------------------------------------------------------------------


def _starts_with_curl_exe(text: str) -> bool:
    return text.lstrip().lower().startswith("curl.exe")


def _uncaret(text: str) -> str:
    """What cmd.exe hands the program: each caret takes the next character literally; a
    caret before a line break joins the lines and takes the next line's first character
    (another line break, in the browsers' ``^`` + two newlines) literally. Other line breaks
    end the command; they are read as blanks."""
    text = text.replace("\r\n", "\n")
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "^" and i + 1 < n:
            i += 2 if text[i + 1] == "\n" else 1  # the escaped character is text[i]
            if i < n:
                out.append(text[i])
            i += 1
        else:
            out.append(" " if c == "\n" else c)
            i += 1
    return "".join(out)


def _msvcrt_words(line: str, *, doubled: bool) -> list[str]:
    """Split as the Microsoft C runtime does (see the module docstring for backslashes)."""
    words: list[str] = []
    word: list[str] = []
    quoted = started = False
    i, n = 0, len(line)
    while i < n:
        c, nxt = line[i], line[i + 1 : i + 2]
        if c == "\\" and (nxt == '"' or (doubled and nxt == "\\")):
            word.append(nxt)
            i += 2
            continue
        if c == '"':
            if quoted and nxt == '"':  # "" inside quotes: a quote
                word.append('"')
                i += 2
                continue
            quoted, started = not quoted, True
        elif c in " \t" and not quoted:
            if word or started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(c)
        i += 1
    if quoted:
        raise ShellSplitError('a "…" quote is not closed')
    if word or started:
        words.append("".join(word))
    return words


# -- POSIX shells -------------------------------------------------------------------------


def ansi_c(body: str) -> str:
    """The text of a ``$'…'`` word whose inside is ``body`` (see the module docstring)."""
    pieces: list[str | bytes] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 == n:
            pieces.append(c)
            i += 1
            continue
        esc = body[i + 1]
        if esc in _SIMPLE_ESCAPES:
            pieces.append(_SIMPLE_ESCAPES[esc])
            i += 2
        elif esc == "c" and i + 2 < n:  # \cX: control-X
            pieces.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        elif m := _NUMERIC.match(body, i + 1):
            x, u, big_u, octal = m.groups()
            if x or octal:
                pieces.append(bytes([int(x, 16) if x else int(octal, 8) & 0xFF]))
            else:
                pieces.append(chr(min(int(u or big_u, 16), 0x10FFFF)))
            i = m.end()
        else:
            pieces.append(c + esc)
            i += 2
    return _join_pieces(pieces)


def _join_pieces(pieces: list[str | bytes]) -> str:
    """Characters and escaped bytes as one string: a run of bytes is UTF-8 when it decodes,
    else code points (Latin-1); UTF-16 surrogate pairs become one character."""
    out: list[str] = []
    run = bytearray()
    for piece in [*pieces, ""]:
        if isinstance(piece, bytes):
            run += piece
            continue
        if run:
            try:
                out.append(run.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(run.decode("latin-1"))
            run.clear()
        out.append(piece)
    text = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


class _PosixSplitter:
    """One pass over the text; see the module docstring. ``commands()`` runs it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.pipeline: list[Command] = [Command()]
        self.word: list[str] = []
        self.started = False  # a word has begun (an empty '' is a word)
        self.heredocs: list[tuple[Command, str, bool]] = []  # waiting for the line's end

    def commands(self) -> list[Command]:
        text, n = self.text, len(self.text)
        while self.i < n:
            c = text[self.i]
            if c == "\\":
                self._backslash()
            elif c == "'":
                self._single()
            elif c == '"':
                self._double()
            elif c == "$" and text[self.i + 1 : self.i + 2] == "'":
                self.i += 1
                self._ansi_c()
            elif c == "$" and text[self.i + 1 : self.i + 2] == '"':  # $"…": locale, as "…"
                self.i += 1
            elif c == "<" and (m := _HEREDOC.match(text, self.i)) and not self.word:
                self._end_word()
                delimiter = next(g for g in m.groups()[1:] if g is not None)
                self.heredocs.append((self.pipeline[-1], delimiter, m.group(1) == "-"))
                self.i = m.end()
            elif c == "#" and not self.word and not self.started:
                self._skip_comment()
            elif c in " \t\r\n|":
                self._end_word()
                if c == "|":
                    self.pipeline.append(Command())
                self.i += 1
                if c == "\n":
                    self._read_heredocs()
            else:
                self.word.append(c)
                self.i += 1
        self._end_word()
        if self.heredocs:
            raise ShellSplitError(f"the here-document ending with {self.heredocs[0][1]} is empty")
        return [cmd for cmd in self.pipeline if cmd.words]

    def _end_word(self) -> None:
        if self.word or self.started:
            self.pipeline[-1].words.append("".join(self.word))
        self.word, self.started = [], False

    def _backslash(self) -> None:
        nxt = self.text[self.i + 1 : self.i + 2]
        if nxt == "\n":
            self.i += 2
        elif self.text.startswith("\r\n", self.i + 1):
            self.i += 3
        else:
            self.word.append(nxt)
            self.i += 2

    def _closing(self, quote: str, start: int) -> int:
        end = self.text.find(quote, start)
        if end < 0:
            raise ShellSplitError(f"a {quote}…{quote} quote is not closed")
        return end

    def _single(self) -> None:
        end = self._closing("'", self.i + 1)
        self.word.append(self.text[self.i + 1 : end])
        self.started = True
        self.i = end + 1

    def _ansi_c(self) -> None:
        j = self.i + 1
        while j < len(self.text) and self.text[j] != "'":
            j += 2 if self.text[j] == "\\" else 1
        if j >= len(self.text):
            raise ShellSplitError("a $'…' quote is not closed")
        self.word.append(ansi_c(self.text[self.i + 1 : j]))
        self.started = True
        self.i = j + 1

    def _double(self) -> None:
        text, j = self.text, self.i + 1
        while j < len(text) and text[j] != '"':
            if text[j] == "\\" and text[j + 1 : j + 2] in ("$", "`", '"', "\\", "\n"):
                if text[j + 1] != "\n":  # backslash-newline joins the lines
                    self.word.append(text[j + 1])
                j += 2
            else:
                self.word.append(text[j])
                j += 1
        if j >= len(text):
            raise ShellSplitError('a "…" quote is not closed')
        self.started = True
        self.i = j + 1

    def _skip_comment(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end

    def _read_heredocs(self) -> None:
        """Each here-document the line announced: the lines up to its delimiter's line."""
        for command, delimiter, strip_tabs in self.heredocs:
            lines: list[str] = []
            while True:
                if self.i >= len(self.text):
                    raise ShellSplitError(f"the here-document has no closing {delimiter} line")
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i : end]
                self.i = end + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line.rstrip("\r") == delimiter:
                    break
                lines.append(line + "\n")
            command.stdin = "".join(lines)
        self.heredocs.clear()
