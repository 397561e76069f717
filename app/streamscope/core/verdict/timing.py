"""Timing diagnosis from the reads' times: where a stream got stuck, and by whom.

Fed one read at a time (its time, and what the pipeline made of it); :meth:`Timing.diagnose`
looks at the whole stream once it has ended. Memory is a few numbers per read.
"""

from __future__ import annotations

from array import array

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import Emit

__all__ = ["BUFFER_WAIT_S", "SLOW_S", "STALL_S", "Timing"]

STALL_S = 10.0
"""A silence this long in the middle of an answer is a stall."""
BUFFER_WAIT_S = 1.0
"""The wait before a burst that makes it "buffered" (or "fake streaming")."""
BURST_GAP_S = 0.05
"""Reads closer than this belong to one burst (one network read, give or take a kernel)."""
BURST_SPAN_S = 0.5
SLOW_S = 5.0
"""Time to first byte, or from first byte to first token, worth a note."""
KEEPALIVE_GAP_S = 30.0
"""A silence this long while the server sends keep-alives: too sparse for idle proxies."""
MOST = 0.8


class Timing:
    """See the module docstring. ``start``: when the request went out.

    Reads are kept as bursts (reads less than :data:`BURST_GAP_S` apart): per burst its first
    and last read's time, the number of its first frame and how many frames with an event it
    completed. Every diagnosis here is about the gaps between bursts and what a burst held,
    and a replay or a fast stream is a handful of bursts whatever its length."""

    def __init__(self, start: float = 0.0) -> None:
        self.start = start
        self.starts = array("d")
        self.ends = array("d")
        self.first_frames = array("q")  # the number of the first frame each burst completed
        self.event_frames = array("q")  # frames with an event each burst completed
        self.keepalives = 0
        self.event_total = 0
        self.text_total = 0
        self.top: list[tuple[int, int, float]] = []  # (chars, frame, t): the two biggest

    def read(self, t: float, first_frame: int, event_frames: int) -> None:
        self.event_total += event_frames
        ends = self.ends
        if ends and t - ends[-1] < BURST_GAP_S:
            ends[-1] = t
            self.event_frames[-1] += event_frames
            return
        self.starts.append(t)
        ends.append(t)
        self.first_frames.append(first_frame)
        self.event_frames.append(event_frames)

    def smallest_top(self) -> int:
        """A frame with more characters than this is one of the two biggest so far."""
        return self.top[-1][0] if len(self.top) == 2 else 0

    def text_frame(self, n: int, chars: int, t: float) -> None:
        """Frame ``n`` (at ``t``) brought ``chars`` characters: is it one of the two biggest?
        (The caller adds ``chars`` to :attr:`text_total`.)"""
        top = self.top
        if len(top) < 2 or chars > top[-1][0]:
            top.append((chars, n, t))
            top.sort(key=lambda x: -x[0])
            del top[2:]

    def diagnose(self, turn: Turn, end_t: float, emit: Emit) -> None:
        if not self.starts:
            return
        headers = turn.timings.headers if turn.timings.headers is not None else self.start
        buffered = self._buffered(headers, emit)
        if not buffered:
            self._fake(headers, emit)
        self._stalls(turn, end_t, emit)
        timings = turn.timings
        first_byte, first_token = timings.first_byte, timings.first_token
        if first_byte is not None and first_byte - self.start >= SLOW_S:
            emit("timing.slow-first-byte", None, f"{first_byte - self.start:.1f} s")
        if (
            first_byte is not None
            and first_token is not None
            and first_token - first_byte >= SLOW_S
            and not buffered
        ):
            emit(
                "timing.slow-first-token",
                None,
                f"first byte {first_byte - self.start:.1f} s, "
                f"first token {first_token - self.start:.1f} s",
            )
        if self.keepalives:
            until = first_token if first_token is not None else end_t
            gap, at = self._longest_gap(headers, until)
            if gap >= KEEPALIVE_GAP_S:
                emit("sse.keepalive-cadence", at, f"{gap:.0f} s without a byte")

    def _buffered(self, headers: float, emit: Emit) -> bool:
        total = self.event_total
        if total < 8:
            return False
        starts, ends, counts = self.starts, self.ends, self.event_frames
        for i, frames in enumerate(counts):
            wait = starts[i] - (ends[i - 1] if i else headers)
            if (
                frames >= MOST * total
                and wait >= BUFFER_WAIT_S
                and ends[i] - starts[i] <= BURST_SPAN_S
            ):
                emit(
                    "timing.buffered",
                    self.first_frames[i],
                    f"{wait:.1f} s of silence, then {frames} of {total} frames at once",
                )
                return True
        return False

    def _fake(self, headers: float, emit: Emit) -> None:
        total = self.text_total
        if total < 200 or not self.top:
            return
        big = sum(c for c, _, _ in self.top)
        first_t = min(t for _, _, t in self.top)
        if big >= MOST * total and first_t - headers >= BUFFER_WAIT_S:
            _chars, frame, _ = self.top[0]
            emit(
                "timing.fake-streaming",
                frame,
                f"{big} of {total} characters in {len(self.top)} frame(s) "
                f"after {first_t - headers:.1f} s",
            )

    def _stalls(self, turn: Turn, end_t: float, emit: Emit) -> None:
        first_token = turn.timings.first_token
        terminal = turn.timings.terminal
        if first_token is None:
            return
        starts, ends = self.starts, self.ends
        for i in range(1, len(starts)):
            before = ends[i - 1]
            if before < first_token or (terminal is not None and before >= terminal):
                continue
            gap = starts[i] - before
            if gap >= STALL_S:
                emit("timing.stall", self.first_frames[i], f"{gap:.1f} s without a byte")
        if terminal is None and end_t - ends[-1] >= STALL_S and ends[-1] >= first_token:
            emit("timing.stall", None, f"{end_t - ends[-1]:.1f} s of silence, then the end")

    def _longest_gap(self, headers: float, until: float) -> tuple[float, int | None]:
        best, at, prev = 0.0, None, headers
        for i, t in enumerate(self.starts):
            if t > until:
                break
            if t - prev > best:
                best, at = t - prev, self.first_frames[i]
            prev = self.ends[i]
        return best, at
