"""Where a frame is in the file that was linted: what SARIF's ``region.startLine`` needs.

A finding names a frame by its number; a CI system shows a line of a file. How a frame maps
to a line depends on what the file is:

- **a raw response body**: the line holding the frame's first byte (its first line). Lines
  end at LF, CRLF or a lone CR, as SARIF counts them.
- **a ``.sscap`` capture** (JSON Lines, one network read per line): the line of the read that
  holds the frame's first byte (a frame split over reads points at the read it starts in).
- **a HAR file**: the line where the entry's object starts (its ``{``), with the column; a
  HAR written on one line has every entry on line 1, and only the column and the message
  ("entry 3, frame 12") tell them apart.
- **a repro bundle** (a zip): line 1; the message names the frame.

A finding about the whole stream (no frame) points at line 1 (a capture's header line: the
request and the response head), or at its HAR entry's line.

:class:`LocatingLinter` is the :class:`~streamscope.core.verdict.engine.Linter` that also
keeps each frame's offset in the body, so the lines can be found after the run; the functions
below do the counting on bytes (no file I/O).
"""

from __future__ import annotations

import array
import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Any

from streamscope.core.turn.pipeline import PipelineUpdate
from streamscope.core.verdict.engine import Linter

__all__ = [
    "LocatingLinter",
    "capture_read_lines",
    "frame_bytes",
    "har_entry_positions",
    "line_numbers",
]


class LocatingLinter(Linter):
    """A :class:`Linter` that also keeps ``offsets[n]``, frame ``n``'s first byte in the body
    (8 bytes a frame: used for ``--sarif`` only, not on the live path)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offsets = array.array("q")

    def _frames(self, update: PipelineUpdate, t: float) -> int:
        if update.frames:
            self.offsets.extend([p[0].offset for p in update.frames])  # (a list: faster)
        return super()._frames(update, t)


def _line_ends(data: bytes | bytearray, start: int, end: int) -> int:
    """How many line ends (LF, CRLF, lone CR) lie in ``data[start:end]``."""
    lf = data.count(b"\n", start, end)
    cr = data.count(b"\r", start, end)
    crlf = data.count(b"\r\n", start, end)
    return lf + cr - crlf


def line_numbers(data: bytes | bytearray, offsets: Iterable[int]) -> dict[int, int]:
    """The 1-based line of each byte offset in ``data`` (one pass, however many offsets);
    the LF of a CRLF is on the line the CRLF ends."""
    lines: dict[int, int] = {}
    ends, prev = 0, 0  # line ends in data[:prev]
    for offset in sorted(set(offsets)):
        at = min(max(offset, 0), len(data))
        ends += _line_ends(data, prev, at)
        if 0 < prev < len(data) and data[prev - 1 : prev + 1] == b"\r\n":
            ends -= 1  # (a CRLF cut at prev was counted as a CR and an LF)
        inside = 0 < at < len(data) and data[at - 1 : at + 1] == b"\r\n"
        lines[offset] = 1 + ends - (1 if inside else 0)
        prev = at
    return lines


def frame_bytes(body: bytes | bytearray, offsets: Sequence[int], n: int) -> bytes:
    """Frame ``n``'s bytes: from its offset to the next frame's (the end for the last)."""
    if not 0 <= n < len(offsets):
        return b""
    start = offsets[n]
    end = offsets[n + 1] if n + 1 < len(offsets) else len(body)
    return bytes(body[start : max(start, end)])


_READ_KEY = b'"b64"'


def capture_read_lines(data: bytes) -> list[int]:
    """The 1-based line of each read line of a ``.sscap`` file, in order (a read line is an
    object with a ``b64`` key; the header, the end line and blank lines are not)."""
    lines: list[int] = []
    lineno = 1
    start = data.find(b"\n") + 1 if b"\n" in data else len(data)  # (line 1: the header)
    size = len(data)
    while start < size:
        lineno += 1
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        if data.find(_READ_KEY, start, end) >= 0:
            lines.append(lineno)
        start = end + 1
    return lines


def read_index(read_ends: Sequence[int], offset: int) -> int:
    """The read (0-based) holding the body's byte ``offset``, given each read's end."""
    return min(bisect.bisect_right(read_ends, offset), max(len(read_ends) - 1, 0))


_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"'  # a string
    rb"|[{}\[\],:]|[-+.0-9eE]+|true|false|null"
)


def har_entry_positions(data: bytes) -> list[tuple[int, int]]:
    """``(line, column)`` (1-based; the column in code points) of each element of a HAR
    file's ``log.entries``, in order: where its value starts. ``[]`` if there is none."""
    starts: list[int] = []
    stack: list[bytes] = []  # open containers, b"{" or b"["
    keys: list[bytes | None] = []  # the key of each open container, as its parent names it
    key: bytes | None = None  # the last key read in the current object
    expect_value = False
    in_entries = False
    for m in _TOKEN.finditer(data):
        tok = m.group()
        if tok[:1] not in b"{}[],:":  # a string or a scalar
            if tok[:1] == b'"' and stack and stack[-1] == b"{" and not expect_value:
                key = tok[1:-1]
            elif in_entries and len(stack) == 3:
                starts.append(m.start())  # (an entry that is not an object)
            continue
        if tok == b":":
            expect_value = True
            continue
        if tok == b",":
            expect_value = False
            continue
        if tok in (b"{", b"["):
            if in_entries and len(stack) == 3:
                starts.append(m.start())
            keys.append(key if stack and stack[-1] == b"{" else None)
            stack.append(tok)
            key, expect_value = None, False
            in_entries = (
                len(stack) == 3 and tok == b"[" and keys[1] == b"log" and keys[2] == b"entries"
            )
            continue
        # } or ]
        if stack:
            stack.pop()
            keys.pop()
        if in_entries and len(stack) < 3:
            break
        in_entries = len(stack) == 3 and stack[-1] == b"[" and keys[1:3] == [b"log", b"entries"]
        key, expect_value = None, False
    lines = line_numbers(data, starts)
    positions = []
    at, column = 0, 1
    for offset in starts:  # (searching back no further than the last entry)
        start = max(data.rfind(b"\n", at, offset), data.rfind(b"\r", at, offset)) + 1
        if start:  # a new line: count from its start (else on from the last entry)
            at, column = start, 1
        column += len(data[at:offset].decode("utf-8", "replace"))
        at = offset
        positions.append((lines[offset], column))
    return positions
