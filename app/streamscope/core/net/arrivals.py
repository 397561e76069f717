"""What a live turn's reader has received, readable by the window at any moment — not queued
behind the batches, which wait in the socket and in the stream worker's buffer while the
window is slow.

A turn's *slot* holds what :class:`~streamscope.core.turn.liveness.Arrivals` says — the
first and the newest read, the newest data, keep-alive and progress (each a
``time.monotonic()``: one clock for every process of the machine), the bytes read, whether
the stream ended — and *marks*: the stream offset and time of the first read of every
:data:`MARK_STEP` seconds, the last :data:`MARKS` of them. From the marks and the bytes the
views have got, the window tells when the oldest byte it has not shown arrived (to within
:data:`MARK_STEP`; older than the oldest mark kept, it takes that mark's time: a lag at
least that long).

An :class:`ArrivalBoard` is a few slots in one buffer. The stream worker's board is shared
memory: an ``mmap`` of a memfd (an unlinked temporary file where there is none) made by the
window and handed to the child by descriptor, like its socket
(:meth:`ArrivalBoard.create` / :meth:`ArrivalBoard.attach`). The child's
:class:`ArrivalLog` (a turn observer) writes the turn's slot on every read; the window reads
it (:meth:`ArrivalBoard.arrivals`) when its live clock ticks. A turn read in the window's
process, and each tapped exchange, has a private board (:meth:`ArrivalBoard.private`) fed
the same way, so every mode gives one answer.

One writer per slot; readers never block it. The writer makes the slot's sequence number
odd before it writes and even after (a seqlock); a reader that sees it odd, or changed by
the time it has read, reads again.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING

from streamscope.core.turn.liveness import Arrivals
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.progress import FrameKind, frame_kind
from streamscope.core.wire.events import KeepAlive

if TYPE_CHECKING:
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import PipelineUpdate

__all__ = ["MARKS", "MARK_STEP", "SLOTS", "ArrivalBoard", "ArrivalLog", "ArrivalSource"]

ArrivalSource = Callable[[int], Arrivals | None]
"""What a turn's reader has received, given the bytes the views have got (``None``: not
known now)."""

SLOTS = 8
"""Turns a worker's board holds at once (turn ``n`` uses slot ``n % SLOTS``)."""

MARKS = 1024
"""Marks kept per turn: at :data:`MARK_STEP`, the last 51 s of a stream that never pauses."""

MARK_STEP = 0.05
"""A read is marked when it comes this long (seconds) after the previous mark."""

_SEQ = struct.Struct("=Q")
_HEAD = struct.Struct("=qdddddqqqq")  # turn, first, read, data, keep-alive, progress (NaN:
# no time yet), progress count, bytes, ended, marks made
_MARK = struct.Struct("=qd")  # stream offset of the read, its time
_HEAD_AT = _SEQ.size
_MARKS_AT = _HEAD_AT + _HEAD.size
SLOT_SIZE = _MARKS_AT + MARKS * _MARK.size
_TRIES = 64
_NONE = math.nan

Buffer = mmap.mmap | bytearray


class ArrivalLog(TurnObserver):
    """The reader's side of one turn's slot: a turn observer whose ``read``, ``progressed``
    and ``ended`` write what arrived (see the module docstring)."""

    def __init__(self, buffer: Buffer, at: int, turn: int) -> None:
        self._buffer = buffer
        self._at = at
        self._turn = turn
        seq = _SEQ.unpack_from(buffer, at)[0]
        self._seq = seq + (seq & 1)  # (even: a slot's readers never see it go back)
        self._first = self._read = self._data = self._keepalive = self._progress = _NONE
        self._count = 0
        self._bytes = 0
        self._ended = 0
        self._marks = 0
        self._marked = -math.inf  # the time of the last mark
        self._write()

    def _write(self, mark: tuple[int, float] | None = None) -> None:
        buffer, at = self._buffer, self._at
        _SEQ.pack_into(buffer, at, self._seq + 1)
        if mark is not None:
            _MARK.pack_into(buffer, at + _MARKS_AT + (self._marks % MARKS) * _MARK.size, *mark)
            self._marks += 1
        _HEAD.pack_into(
            buffer,
            at + _HEAD_AT,
            self._turn,
            self._first,
            self._read,
            self._data,
            self._keepalive,
            self._progress,
            self._count,
            self._bytes,
            self._ended,
            self._marks,
        )
        self._seq += 2
        _SEQ.pack_into(buffer, at, self._seq)

    def read(self, data: bytes, t: float) -> None:
        mark = None
        if t >= self._marked + MARK_STEP:
            mark = (self._bytes, t)
            self._marked = t
        if math.isnan(self._first):  # (the first read)
            self._first = t
        self._read = t
        self._bytes += len(data)
        self._write(mark)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        if update.progress:
            data, keepalive = True, False
            self._progress = t
            if update.assembler is not None:
                self._count = update.assembler.progress
        elif update.frames:
            kinds = {
                frame_kind(frame, events) == FrameKind.COMMENT for frame, events in update.frames
            }
            data, keepalive = False in kinds, True in kinds
        elif update.events:  # (frames not kept)
            kinds = {type(event) is KeepAlive for event in update.events}
            data, keepalive = False in kinds, True in kinds
        else:
            data, keepalive = True, False  # the bytes of a frame still arriving
        if data:
            self._data = t
        if keepalive:
            self._keepalive = t
        self._write()

    def ended(self, end: StreamEnd) -> None:
        self._ended = 1
        self._write()


class ArrivalBoard:
    """Slots for a few turns in one buffer (see the module docstring)."""

    def __init__(self, buffer: Buffer, slots: int = SLOTS, fd: int | None = None) -> None:
        if len(buffer) < slots * SLOT_SIZE:
            raise ValueError(f"a board of {slots} slots needs {slots * SLOT_SIZE} bytes")
        self.buffer = buffer
        self.slots = slots
        self.fd = fd
        """The shared memory's descriptor, to hand to the child (``None``: private, or
        handed over already)."""

    @classmethod
    def create(cls, slots: int = SLOTS) -> ArrivalBoard:
        """A board in shared memory, its :attr:`fd` to be handed to the child (POSIX)."""
        size = slots * SLOT_SIZE
        try:
            fd = os.memfd_create("streamscope-arrivals", os.MFD_CLOEXEC)
        except (AttributeError, OSError):  # (macOS; a sandbox: an unlinked temporary file)
            import tempfile

            with tempfile.TemporaryFile() as file:
                fd = os.dup(file.fileno())
        try:
            os.ftruncate(fd, size)
            buffer = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            raise
        return cls(buffer, slots, fd=fd)

    @classmethod
    def attach(cls, fd: int, slots: int = SLOTS) -> ArrivalBoard:
        """The child's view of a board whose descriptor it was handed (closed here)."""
        try:
            buffer = mmap.mmap(fd, slots * SLOT_SIZE)
        finally:
            os.close(fd)
        return cls(buffer, slots)

    @classmethod
    def private(cls) -> ArrivalBoard:
        """A board of one slot in this process's memory (a turn read here; a tapped
        exchange)."""
        return cls(bytearray(SLOT_SIZE), slots=1)

    def close_fd(self) -> None:
        """Close the descriptor once the child has it (the memory stays mapped)."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def log(self, turn: int) -> ArrivalLog:
        """The writer of turn ``turn``'s slot (it takes the slot over from an older turn)."""
        return ArrivalLog(self.buffer, self._slot(turn), turn)

    def source(self, turn: int) -> ArrivalSource:
        """:meth:`arrivals` of turn ``turn``."""
        return lambda shown: self.arrivals(turn, shown)

    def arrivals(self, turn: int, shown: int) -> Arrivals | None:
        """What turn ``turn``'s reader has received, the views having got ``shown`` bytes of
        the stream; ``None`` when the slot holds no such turn (not started yet, or taken over
        by a later one) or could not be read consistently now (its writer stalled mid-way)."""
        buffer, at = self.buffer, self._slot(turn)
        for _ in range(_TRIES):
            seq = _SEQ.unpack_from(buffer, at)[0]
            if seq & 1:
                continue
            head = _HEAD.unpack_from(buffer, at + _HEAD_AT)
            size, marks = head[7], head[9]
            ring = b""
            if size > shown and marks:
                ring = bytes(
                    buffer[at + _MARKS_AT : at + _MARKS_AT + min(marks, MARKS) * _MARK.size]
                )
            if _SEQ.unpack_from(buffer, at)[0] != seq:
                continue
            if head[0] != turn:
                return None
            first, read, data, keepalive, progress = (
                None if math.isnan(t) else t for t in head[1:6]
            )
            return Arrivals(
                first=first,
                read=read,
                data=data,
                keepalive=keepalive,
                progress=progress,
                count=head[6],
                bytes=size,
                ended=bool(head[8]),
                unshown_since=_arrival_of(shown, ring, marks) if size > shown else None,
            )
        return None

    def _slot(self, turn: int) -> int:
        return (turn % self.slots) * SLOT_SIZE


def _arrival_of(offset: int, ring: bytes, marks: int) -> float | None:
    """When the byte at ``offset`` arrived, from the ring of marks (``marks`` made so far):
    the time of the last mark at or before it (at most :data:`MARK_STEP` early), or the
    oldest mark kept's when the ring no longer reaches back to it."""
    if not ring:
        return None
    entries: list[tuple[int, float]] = list(_MARK.iter_unpack(ring))
    if marks > MARKS:  # (the ring has wrapped: the oldest entry is the next to be written)
        start = marks % MARKS
        entries = entries[start:] + entries[:start]
    offsets = [o for o, _t in entries]
    index = bisect_right(offsets, offset) - 1
    return entries[max(index, 0)][1]
