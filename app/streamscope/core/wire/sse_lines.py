"""The SSE decoder's first layer: lines and blocks cut from bytes.

Owns the byte rules of :mod:`streamscope.core.wire.sse`: line ends (a CR ending one chunk and an
LF starting the next are one line end), the one BOM at the very start, and the line cap (a line
over it sets ``too_long`` and drops what is held; the decoder raises).  Knows nothing of fields:
:class:`LineCutter` hands on complete lines, each ended by one LF; :class:`BlockCutter` complete
blocks, exact; both as bytes.

Runs of blank lines cost a few steps, not one a line.  A blank line after a blank line does
nothing (it dispatches nothing and resets what is already reset), so :class:`LineCutter` shortens
the runs it meets to one blank line (and the field interpreter those left inside its lines);
:class:`BlockCutter` cuts a run of stray blank lines (blank lines where a block starts) as one
block.  4 MB of LF or 20 MB of bare CR decode at least at the normal rate, into one frame, not
millions.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["DROPPED_KEPT", "BlockCutter", "LineCutter"]

DROPPED_KEPT = 4096
"""How much of a block with an over-long line is kept (for the inspector to show)."""

_BOM: Final = b"\xef\xbb\xbf"
# A blank line inside a buffer that holds CRs: a line end directly followed by another.  The
# atomic groups stop "\r\n" from being read as "\r" then "\n" (two line ends).
_BLANK_LINE: Final = re.compile(rb"(?>\r\n|\r|\n)(?>\r\n|\r|\n)")
_LINE_END: Final = re.compile(rb"\r\n|\r|\n")
# Line-end bytes from a position on: where a run of blank lines ends (the one C loop of re for a
# repeated character set, about 2 ns a byte; a search for the first other byte takes 3x that).
_EOL_RUN: Final = re.compile(rb"[\r\n]*")
# LineCutter: three or more line ends in a row (a line end, then two or more blank lines) do what
# two do, so a run of them becomes two.  Once CRLF is LF, every CR or LF is one line end.
_LF_RUN: Final = re.compile(rb"\n\n\n+")
_EOL_RUN_3: Final = re.compile(rb"[\r\n]{3,}")
# LineCutter: a chunk this long is searched for runs of blank lines before it is split (a shorter
# one after, only when it has many short lines): 20 MB of LF in one read would otherwise be split
# into 20 million lines first.
_BIG_CHUNK: Final = 1 << 16


class LineCutter:
    """Events mode: the complete lines of the stream.

    Holds the unfinished last line as bytes (so a character split across reads decodes whole),
    and whether the last chunk ended in CR (so that an LF starting the next chunk ends no second
    line).
    """

    __slots__ = ("_cr", "_first", "_max", "_pending", "_pending_len", "too_long")

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._pending: list[bytes] = []  # the unfinished line
        self._pending_len = 0
        self._cr = False  # the last chunk ended in CR, so skip one leading LF
        self._first = True  # the stream start (and its BOM) has not been handled yet
        self.too_long = False
        """A line passed the cap: what :meth:`cut` returned is all there will be."""

    def cut(self, chunk: bytes) -> bytes:
        """The lines ``chunk`` completes, as bytes (not decoded yet: see
        :meth:`~streamscope.core.wire.sse_fields.FieldInterpreter.events_of`), each ended by
        one LF (whatever its line end was); ``b""`` when it completes none.  At a line over the
        cap: the lines before it, and ``too_long`` set."""
        if self._cr:
            if not chunk:
                return b""
            self._cr = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        if b"\r" in chunk:
            # Line ends only matter as boundaries here, so normalise them to LF.
            self._cr = chunk[-1] == 13
            if b"\n" in chunk:  # (a search for CRLF in millions of CRs is slow: skipped)
                chunk = chunk.replace(b"\r\n", b"\n")
            if b"\r" in chunk:
                if b"\r\r\r" in chunk:
                    # Runs of bare CRs: shortened first, as replacing millions of CRs one by one
                    # costs more than all the rest.
                    chunk = _EOL_RUN_3.sub(b"\n\n", chunk)
                chunk = chunk.replace(b"\r", b"\n")
        if chunk[:3] == b"\n\n\n" or (len(chunk) > _BIG_CHUNK and b"\n\n\n" in chunk):
            # Runs of blank lines, met before the split (see _BIG_CHUNK; a chunk inside a run
            # starts with one).
            chunk = _LF_RUN.sub(b"\n\n", chunk)
        nl = chunk.rfind(b"\n")
        if nl < 0:
            if chunk:
                self._pending.append(chunk)
                self._pending_len += len(chunk)
                if self._pending_len > self._max or self._first:
                    self._hold()
            return b""
        if self._pending:
            head = self._pending_len
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            nl += head
            self._pending = []
            self._pending_len = 0
        if self._first:
            self._first = False
            if chunk[:3] == _BOM:
                chunk = chunk[3:]
                nl -= 3
        if len(chunk) > self._max:
            return self._cut_long(chunk, nl)
        rest = len(chunk) - nl - 1
        if rest:
            self._pending.append(chunk[nl + 1 :])
            self._pending_len = rest
            return chunk[: nl + 1]
        return chunk

    def close(self) -> None:
        """End of stream: the unfinished line is dropped."""
        self._pending = []

    def _hold(self) -> None:
        """An unfinished line with no line end yet: apply the cap, and settle the BOM as soon
        as the first bytes show whether the stream starts with one."""
        if self._pending_len > self._max:
            self._give_up()
        elif self._pending_len >= 3 or not _BOM.startswith(b"".join(self._pending)):
            joined = b"".join(self._pending)
            self._first = False
            if joined[:3] == _BOM:
                joined = joined[3:]
            self._pending = [joined] if joined else []
            self._pending_len = len(joined)

    def _cut_long(self, buf: bytes, nl: int) -> bytes:
        """Slow path for a buffer longer than the cap: stop at the first over-long line."""
        lines = buf[:nl].split(b"\n")
        tail = buf[nl + 1 :]
        good = next((lines[:i] for i, line in enumerate(lines) if len(line) > self._max), lines)
        if good is not lines or len(tail) > self._max:
            self._give_up()
        elif tail:
            self._pending = [tail]
            self._pending_len = len(tail)
        return b"\n".join(good) + b"\n" if good else b""

    def _give_up(self) -> None:
        self.too_long = True
        self._pending = []
        self._pending_len = 0


class BlockCutter:
    """Frames mode: the complete blocks of the stream (every line up to and including a blank
    line), exact bytes.  A run of stray blank lines (blank lines where a block starts: after a
    block, or at the stream start) is one block: all of its line ends, up to where the next
    non-blank line starts.

    Holds the unfinished block.  A block ending in a lone CR is held until the next byte (or
    :meth:`close`) shows whether an LF follows, so that the LF lands in the same block.  A run of
    blank lines is held until a byte other than CR or LF (or :meth:`close`) shows that it ended;
    while it is held, each chunk costs one scan of its own bytes (they are kept, not joined).
    """

    __slots__ = (
        "_first",
        "_line_len",
        "_max",
        "_pending",
        "_run",
        "bom",
        "dropped",
        "joined",
        "offset",
        "plain",
        "too_long",
    )

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._pending: list[bytes] = []  # the unfinished block
        self._line_len = 0  # length of the unfinished last line in _pending
        self._run = False  # _pending is a run of blank lines (after the BOM, if any)
        self._first = True  # the stream start (and its BOM) has not been handled yet
        self.offset = 0
        """Stream offset of the first byte not cut off yet."""
        self.bom = 0
        """BOM bytes (part of no line) leading the first block of the last cut: 3 or 0."""
        self.plain = False
        """The blocks of the last cut hold no CR and no BOM: each is LFs only (a run of blank
        lines) or ends with LF LF."""
        self.joined = False
        """The last cut (asked with ``joined``) returned its blocks as one piece."""
        self.too_long = False
        """A line passed the cap: what :meth:`cut` returned is all there will be."""
        self.dropped = b""
        """Once ``too_long``: the first :data:`DROPPED_KEPT` bytes of the block held up to
        the over-long line (it starts at ``offset``); the rest is not kept."""

    def cut(self, chunk: bytes, final: bool = False, joined: bool = False) -> list[bytes]:
        """The blocks ``chunk`` completes; ``final`` (the end of the stream) also releases a
        block held for its lone CR, or a run of blank lines.  At a line over the cap: the blocks
        before it, and ``too_long`` set.  ``joined``: where the blocks are plain with no run of
        blank lines (every LF LF ends a block), they may come as one piece, ``joined`` set."""
        self.joined = False
        if self._run:
            return self._cut_run(chunk, final)
        buf = chunk
        pending = self._pending
        if pending:
            last = pending[-1][-1]
            if (
                chunk
                and self._line_len + len(chunk) <= self._max
                and (not self._first or len(pending[0]) > 3)  # past a possible BOM
                and (last != 13 or (chunk[0] != 13 and _ends_a_line(pending)))
                and not (last == 10 and chunk[0] in b"\r\n")
                and b"\n\n" not in chunk
                and b"\r\r" not in chunk
                and b"\n\r" not in chunk
            ):
                # Shortcut: no blank line can end in this chunk and no line can pass the cap, so
                # keep the chunk without joining and rescanning what is held.  This keeps a long
                # block arriving in small reads linear (a 0.9 MB block in 1 KiB reads: 0.015 s
                # instead of 0.5 s), also when the reads end in the CR of its lines (a 0.8 MB
                # block of CR lines in 1 KiB reads: 9 s before); bench_sse.py's short blocks
                # never take it.
                pending.append(chunk)
                end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
                self._line_len = self._line_len + len(chunk) if end < 0 else len(chunk) - end - 1
                return []
            pending.append(chunk)
            buf = b"".join(pending)
        if not buf:
            return []
        n = len(buf)
        # A trailing CR may be the first half of a CRLF: wait for the next byte.
        limit = n - 1 if not final and buf[-1] == 13 else n
        too_long = _first_long_line(buf, self._max) if n > self._max else None
        if too_long is not None:
            limit = min(limit, too_long)
        blocks: list[bytes] = []
        self.bom = 0
        self.plain = not self._first and b"\r" not in buf
        if self.plain and joined and limit == n and buf[0] != 10 and b"\n\n\n" not in buf:
            pos = buf.rfind(b"\n\n") + 2  # (1: none; then nothing was cut)
            if pos > 1:
                blocks.append(buf if pos == n else buf[:pos])
                self.joined = True
            else:
                pos = 0
        elif self.plain:
            pos = _cut_lf_blocks(buf, limit, final, blocks)
        else:
            pos = self._cut_blocks(buf, limit, final, blocks)
        rest = buf[pos:] if pos else buf
        self.offset += pos
        self._pending = [rest] if rest else []
        self._line_len = len(rest) - 1 - max(rest.rfind(b"\n"), rest.rfind(b"\r"))
        if too_long is not None or self._line_len > self._max:
            self.too_long = True
            self.dropped = rest[:DROPPED_KEPT]
            self._pending = []
        elif rest:
            # What is held starts a block: when that is a blank line, it is a run going on.
            first = rest[0]
            if self._first and rest[:3] == _BOM:
                first = rest[3] if len(rest) > 3 else 0
            self._run = first == 10 or first == 13
        return blocks

    def close(self) -> tuple[list[bytes], bytes]:
        """End of stream: the held blocks, and the unterminated tail."""
        blocks = self.cut(b"", final=True)
        tail = b"".join(self._pending)
        self._pending = []
        return blocks, tail

    def _cut_run(self, chunk: bytes, final: bool) -> list[bytes]:
        """:meth:`cut` while a run of blank lines is held: it goes on through the line ends
        that start ``chunk``; where something else starts (or at ``final``) it is one block,
        and the rest of ``chunk`` is cut as usual."""
        rest = chunk.lstrip(b"\r\n")  # (b"" when the run goes on through the whole chunk)
        pending = self._pending
        if not rest and not final:
            if chunk:
                pending.append(chunk)
            return []
        ends = len(chunk) - len(rest)
        if ends:
            pending.append(chunk[:ends] if rest else chunk)
        block = pending[0] if len(pending) == 1 else b"".join(pending)
        self._pending = []
        self._line_len = 0
        self._run = False
        bom = 3 if self._first and block[:3] == _BOM else 0
        self._first = False
        self.offset += len(block)
        more = self.cut(rest, final) if rest else []
        self.plain = (not more or self.plain) and not bom and b"\r" not in block
        self.bom = bom
        return [block, *more]

    def _cut_blocks(self, buf: bytes, limit: int, final: bool, blocks: list[bytes]) -> int:
        """Cut the complete blocks of ``buf[:limit]`` into ``blocks``, whatever the line ends
        and at the stream start; return where the rest starts."""
        has_cr = b"\r" in buf
        pos = 0
        while pos < limit:
            scan = pos
            if self._first:
                if buf[:3] == _BOM:
                    scan = 3
                elif not final and limit < 3 and _BOM.startswith(buf[:limit]):
                    break
                if scan >= limit:
                    break
            c = buf[scan]
            if c == 10 or c == 13:  # stray blank lines: the run of them is one block
                end = _eol_run_end(buf, scan)
                if end == len(buf) and not final:
                    break  # (held: the run may go on)
            elif has_cr:
                m = _BLANK_LINE.search(buf, scan, limit)
                if m is None:
                    break
                end = m.end()
            else:
                j = buf.find(b"\n\n", scan, limit)
                if j < 0:
                    break
                end = j + 2
            blocks.append(buf[pos:end])
            if self._first:
                self._first = False
                self.bom = scan
            pos = end
        return pos


def _cut_lf_blocks(buf: bytes, limit: int, final: bool, blocks: list[bytes]) -> int:
    """:meth:`BlockCutter._cut_blocks` for a buffer without CR, past the stream start.

    Fast path: a one-line block (the common case) costs one memchr for its LF, where the
    general loop searches for LF LF and checks for the stream start.  Buys about 1.2x on
    ``feed_frames`` in bench_sse.py.
    """
    if limit == len(buf) and buf[0] != 10 and b"\n\n\n" not in buf:
        # Fastest path: no blank-line run anywhere, so every LF LF ends a block (and no
        # block is empty): one split, then the line ends put back (a copy, as a slice is).
        # Buys about 2x on the cut alone (bench_lint's frames).
        parts = buf.split(b"\n\n")
        rest = parts.pop()
        blocks += [part + b"\n\n" for part in parts]
        return len(buf) - len(rest)
    find = buf.find
    append = blocks.append
    pos = 0
    while pos < limit:
        if buf[pos] == 10:  # stray blank lines: the run of them is one block
            end = _eol_run_end(buf, pos)
            if end == len(buf) and not final:
                break  # (held: the run may go on)
        else:
            k = find(10, pos, limit)  # (an int needle: a plain memchr)
            if k < 0 or k + 1 >= limit:
                break
            if buf[k + 1] == 10:  # one line
                end = k + 2
            else:
                j = find(b"\n\n", k + 1, limit)
                if j < 0:
                    break
                end = j + 2
        append(buf[pos:end])
        pos = end
    return pos


def _ends_a_line(pending: list[bytes]) -> bool:
    """The CR that ends ``pending`` ends a line that is not blank (so, whether an LF follows
    or not, it ends no block)."""
    last = pending[-1]
    before = last[-2] if len(last) > 1 else pending[-2][-1] if len(pending) > 1 else 10
    return before != 10 and before != 13


def _eol_run_end(buf: bytes, pos: int) -> int:
    """Where the CR and LF bytes from ``pos`` on end: a run of blank lines, when ``pos`` starts
    a block."""
    m = _EOL_RUN.match(buf, pos)
    return m.end() if m else pos


def _first_long_line(buf: bytes, cap: int) -> int | None:
    """Start offset of the first line of ``buf`` longer than ``cap`` bytes, if any.

    Any ``cap + 1`` bytes in a row hold one offset that is a multiple of ``cap + 1``, so only
    the lines around those offsets need measuring: a few steps a buffer (searches bounded by the
    cap), not a list of all its lines (20 MB of line ends made 20 million).
    """
    step = cap + 1
    n = len(buf)
    find = buf.find
    rfind = buf.rfind
    for probe in range(0, n, step):
        if buf[probe] in b"\r\n":
            continue
        low = max(0, probe - cap)
        start = max(rfind(b"\n", low, probe), rfind(b"\r", low, probe)) + 1
        if not start and low:
            start = max(rfind(b"\n", 0, low), rfind(b"\r", 0, low)) + 1  # a long line
        stop = start + step
        if stop <= n and find(b"\n", start, stop) < 0 and find(b"\r", start, stop) < 0:
            return start
    return None
