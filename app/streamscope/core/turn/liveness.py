"""Whether a streaming turn still moves: its live clock, the recent delta rate, a silence in
words ("no data for 12 s", "keep-alives only for 40 s"), with when the client will give up,
and whether the display keeps up ("showing 12 s behind the stream").

:class:`LivenessWatch` is fed the batches the views get (the reducer's
:class:`~streamscope.core.turn.model.TurnDelta` and the frames' times and kinds) and, when the
caller knows it, what the turn's reader has received by then (:class:`Arrivals`: the stream
worker's, which may be ahead of the batches when the window lags). It is asked
:meth:`~LivenessWatch.at` a time the caller passes: nothing here reads a clock, so a test
drives it with made-up times and the window with the paint clock's ``time.monotonic()``.

Silence is measured from what *arrived*, never from what the views have shown: a window that
falls behind a fast stream must not say "no data" while data keeps coming. Each time below is
the later of the batches' and the reader's. The rules, in the order they are applied at time
``now``:

- *ended*: once the reader has seen the stream end, nothing is silent (what is left is the
  display catching up).
- *quiet since*: the last time something other than a keep-alive arrived — a frame of any
  kind but a comment (``FrameKind.COMMENT``: SSE comments, Anthropic ``ping``), the bytes of a
  frame still arriving, or progress the reducer counted — or, before any, the request.
- *threshold*: :data:`SILENCE_FACTOR` times the median gap between the arrivals of progress
  (the last :data:`GAP_SAMPLES` of them; text, reasoning and argument fragments, as the
  reducer counts them), and at least :data:`SILENCE_FLOOR`; the floor alone until
  :data:`MIN_GAPS` gaps are known. A stream that drips a delta every 3 s is not "silent"
  after 2 s.
- once ``now - quiet since`` reaches the threshold, the turn is *silent*: "keep-alives only"
  when a keep-alive arrived after that moment, else "no data". Keep-alives count as bytes,
  never as progress.
- otherwise, when data keeps coming but no progress for the threshold (events that carry
  no text: a proxy's heartbeat chunks, a provider's "in progress" events), "no progress".
- the rate is the progress that arrived in the last :data:`RATE_WINDOW` seconds over that
  window (shorter at the start of the turn): it falls to 0 within the window once progress
  stops, and it is the stream's pace, not the display's.
- *timeout in*: when the client's timer fires, as ``core/net/client.py`` runs it — the
  first-byte timeout from the request until the first byte, then the idle timeout from the
  last progress (keep-alives do not reset it).
- *behind*: the age of the oldest data that has arrived but is not shown yet
  (:attr:`Arrivals.unshown_since`) — not the age of the newest data shown, which a slow drip
  makes seconds old while its latest delta arrived a moment ago. The display is said to lag
  from :data:`LAG_SHOWN` seconds, and until the lag is back under :data:`LAG_CLEARED`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from enum import Enum
from statistics import median
from typing import TYPE_CHECKING

from streamscope.core.turn.progress import FrameKind

if TYPE_CHECKING:
    from streamscope.core.turn.progress import Progress

__all__ = [
    "GAP_SAMPLES",
    "LAG_CLEARED",
    "LAG_SHOWN",
    "MIN_GAPS",
    "RATE_WINDOW",
    "SILENCE_FACTOR",
    "SILENCE_FLOOR",
    "Arrivals",
    "Liveness",
    "LivenessWatch",
    "Quiet",
    "Silence",
    "format_span",
]

SILENCE_FLOOR = 2.0
"""A pause shorter than this (seconds) is never called a silence."""

SILENCE_FACTOR = 4.0
"""A pause is a silence once it lasts this many times the stream's median gap."""

MIN_GAPS = 3
"""Gaps between progress arrivals needed before the median counts (the floor alone before)."""

GAP_SAMPLES = 256
"""The median is of the most recent gaps, this many: a stream that slows down is judged by
its recent pace."""

RATE_WINDOW = 2.0
"""Deltas per second are counted over this many recent seconds."""

LAG_SHOWN = 1.0
"""The display is said to be behind the stream once the oldest data not shown yet arrived
this many seconds ago: a second is where a reader notices, and well above what pacing alone
holds data back (a delivery every 16-250 ms)..."""

LAG_CLEARED = 0.5
"""... and no longer once that age is under this (a display hovering about a second behind
does not make the notice blink)."""

_COMMENT = bytes([FrameKind.COMMENT])


class Quiet(Enum):
    """What arrived during a silence."""

    NO_DATA = "no data"
    """Nothing at all."""
    KEEPALIVES = "keep-alives only"
    """Keep-alive comments (bytes, but no progress)."""
    NO_PROGRESS = "no progress"
    """Frames, but none with text, reasoning or arguments."""


def format_span(seconds: float, *, up: bool = False) -> str:
    """``12 s``, ``4 min 48 s``, ``1 h 2 min``: whole seconds, rounded down (``up``: up, for
    a countdown that must not say 0 before it is over)."""
    s = max(0, math.ceil(seconds - 1e-9) if up else math.floor(seconds + 1e-9))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        m, s = divmod(s, 60)
        return f"{m} min {s} s" if s else f"{m} min"
    h, rest = divmod(s, 3600)
    return f"{h} h {rest // 60} min"


@dataclass(frozen=True, slots=True)
class Silence:
    """A pause longer than the turn's threshold: what arrived in it, since when (the
    caller's clock) and for how long so far."""

    kind: Quiet
    since: float
    seconds: float

    def words(self) -> str:
        """``no data for 12 s``, ``keep-alives only for 40 s``, ``no progress for 5 s``."""
        return f"{self.kind.value} for {format_span(self.seconds)}"


@dataclass(frozen=True, slots=True)
class Arrivals:
    """What the turn's reader (the stream worker, or the client in the window's process) has
    received so far, on the reader's ``time.monotonic()`` — one clock for every process of
    the machine. ``None``: not yet."""

    first: float | None = None
    """The first read."""
    read: float | None = None
    """The newest read."""
    data: float | None = None
    """The newest arrival that was not a keep-alive (as in the module docstring)."""
    keepalive: float | None = None
    """The newest keep-alive."""
    progress: float | None = None
    """The newest read that brought progress."""
    count: int = 0
    """Progress events so far (the reducer's count)."""
    bytes: int = 0
    ended: bool = False
    """The reader has seen the end of the stream."""
    unshown_since: float | None = None
    """When the oldest byte the views have not been shown yet arrived (``None``: every byte
    read has been shown)."""


@dataclass(frozen=True, slots=True)
class Liveness:
    """A streaming turn at one moment (see the module docstring)."""

    now: float
    elapsed: float
    """Since the request was sent."""
    rate: float
    """Progress events (deltas) per second, over the last :data:`RATE_WINDOW` seconds."""
    threshold: float
    """How long a pause must last to be a silence, for this stream."""
    silence: Silence | None
    """The current silence, ``None`` while the stream moves."""
    timeout: str | None = None
    """Which timer of the client runs (``idle``, ``first-byte``; ``None``: not known)."""
    timeout_in: float | None = None
    """Seconds until it fires (``None``: not known)."""
    behind: float | None = None
    """How far the display is behind the stream, in seconds (``None``: it keeps up)."""

    def words(self) -> list[str]:
        """The silence and the timer, and the display's lag, in words (empty while the
        stream moves and the display keeps up): ``["no data for 12 s", "idle timeout in
        4 min 48 s"]``, ``["showing 12 s behind the stream"]``."""
        parts = []
        if self.silence is not None:
            parts.append(self.silence.words())
            if self.timeout is not None and self.timeout_in is not None:
                parts.append(f"{self.timeout} timeout in {format_span(self.timeout_in, up=True)}")
        if self.behind is not None:  # (at least "1 s": under it, only while catching up)
            parts.append(f"showing {format_span(max(self.behind, LAG_SHOWN))} behind the stream")
        return parts


class LivenessWatch:
    """One turn's liveness: :meth:`add` every batch the views get, tell it what the reader
    has received (:meth:`arrived`) when known, ask :meth:`at` any time, with times that do
    not go back (see the module docstring). ``first_byte_timeout`` / ``idle_timeout``: the
    client's (``None``: no countdown)."""

    def __init__(
        self,
        t0: float,
        *,
        first_byte_timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        self.t0 = t0
        self.first_byte_timeout = first_byte_timeout
        self.idle_timeout = idle_timeout
        self.first_byte: float | None = None
        self.last_progress: float | None = None
        self.last_data: float | None = None  # the last arrival that was not a keep-alive
        self.last_keepalive: float | None = None
        self.progress = 0
        self.gaps: deque[float] = deque(maxlen=GAP_SAMPLES)
        self._samples: deque[tuple[float, int]] = deque()  # (time, progress so far)
        self._counted = 0  # (progress so far, as far as known: the reader's or the batches')
        self._base: tuple[float, int] = (t0, 0)  # the latest sample dropped from the window
        self.shown_bytes = 0
        """The bytes of the stream the views have got (the batches' totals)."""
        self.arrivals = Arrivals()
        """What the reader had received when last told (:meth:`arrived`)."""
        self._lagging = False

    def arrived(self, arrivals: Arrivals | None) -> None:
        """What the reader has received by now (``None``: not known this time: the last
        known stays)."""
        if arrivals is not None:
            self.arrivals = arrivals
            if arrivals.progress is not None:
                self._sample(arrivals.progress, arrivals.count)

    def add(self, batch: Progress) -> None:
        """What a batch brought: keep-alives, other frames, bytes, the reducer's progress."""
        self.shown_bytes = max(self.shown_bytes, batch.total_bytes)
        rows = batch.rows
        times = rows.times
        last_row = -math.inf
        if times:
            kinds = rows.kinds.tobytes()
            data = len(kinds.rstrip(_COMMENT)) - 1  # the last row that is not a keep-alive
            if data >= 0:
                self._data_at(times[data])
            keepalive = kinds.rfind(_COMMENT)
            if keepalive >= 0 and (self.last_keepalive or -math.inf) < times[keepalive]:
                self.last_keepalive = times[keepalive]
            last_row = times[-1]
        if batch.reads and batch.reads[-1][1] > last_row:
            self._data_at(batch.reads[-1][1])  # the bytes of a frame still arriving
        delta = batch.delta
        if delta is None:
            return
        timings = delta.timings
        if timings.first_byte is not None and self.first_byte is None:
            self.first_byte = timings.first_byte
        t = timings.last_token
        if t is None or delta.progress <= self.progress:
            return
        if self.last_progress is not None and t > self.last_progress:
            self.gaps.append(t - self.last_progress)
        self.last_progress = t if self.last_progress is None else max(t, self.last_progress)
        self.progress = delta.progress
        self._data_at(t)
        self._sample(t, delta.progress)

    def _sample(self, t: float, count: int) -> None:
        """Progress had reached ``count`` at ``t`` (for the rate; a sample older than the
        reader's is no news)."""
        samples = self._samples
        if count <= self._counted or (samples and t < samples[-1][0]):
            return
        self._counted = count
        samples.append((t, count))
        while samples and samples[0][0] <= t - RATE_WINDOW:
            self._base = samples.popleft()

    def _data_at(self, t: float) -> None:
        if self.last_data is None or t > self.last_data:
            self.last_data = t

    def threshold(self) -> float:
        """How long a pause must last to be a silence (see the module docstring)."""
        if len(self.gaps) < MIN_GAPS:
            return SILENCE_FLOOR
        return max(SILENCE_FLOOR, SILENCE_FACTOR * median(self.gaps))

    def rate(self, now: float) -> float:
        """Progress events per second over the last :data:`RATE_WINDOW` seconds."""
        start = max(now - RATE_WINDOW, self.t0)
        if now <= start:
            return 0.0
        before = self._base[1]  # (dropped samples are all before the window)
        for t, count in self._samples:
            if t > start:
                break
            before = count
        return (self._counted - before) / (now - start)

    def at(self, now: float) -> Liveness:
        """The turn at ``now`` (the clock the batches' times are on)."""
        threshold = self.threshold()
        came = self.arrivals
        last_data = _later(self.last_data, came.data)
        last_progress = _later(self.last_progress, came.progress)
        first_byte = self.first_byte if self.first_byte is not None else came.first
        quiet_since = self.t0 if last_data is None else max(self.t0, last_data)
        keepalive = _later(self.last_keepalive, came.keepalive)
        silence: Silence | None = None
        timer: tuple[str | None, float | None] = (None, None)
        if not came.ended:  # (once it has, what is left is the display catching up)
            timer = self._timer(first_byte, last_data, last_progress)
            if now - quiet_since >= threshold:
                kind = Quiet.NO_DATA
                if keepalive is not None and keepalive > quiet_since:
                    kind = Quiet.KEEPALIVES
                silence = Silence(kind, quiet_since, now - quiet_since)
            else:
                since = last_progress if last_progress is not None else first_byte
                if since is not None and now - since >= threshold:
                    silence = Silence(Quiet.NO_PROGRESS, since, now - since)
        due = timer[1]
        return Liveness(
            now=now,
            elapsed=now - self.t0,
            rate=self.rate(now),
            threshold=threshold,
            silence=silence,
            timeout=timer[0],
            timeout_in=None if due is None else max(0.0, due - now),
            behind=self._behind(now),
        )

    def _behind(self, now: float) -> float | None:
        """The display's lag at ``now`` when it is said (see :data:`LAG_SHOWN`)."""
        since = self.arrivals.unshown_since
        lag = 0.0 if since is None else now - since
        self._lagging = lag >= (LAG_CLEARED if self._lagging else LAG_SHOWN)
        return lag if self._lagging else None

    def _timer(
        self, first_byte: float | None, last_data: float | None, last_progress: float | None
    ) -> tuple[str | None, float | None]:
        """The client's running timer and when it fires."""
        if first_byte is None and last_data is None:
            if self.first_byte_timeout is None:
                return None, None
            return "first-byte", self.t0 + self.first_byte_timeout
        if self.idle_timeout is None:
            return None, None
        start = last_progress if last_progress is not None else first_byte
        if start is None:
            start = last_data
        assert start is not None
        return "idle", start + self.idle_timeout


def _later(a: float | None, b: float | None) -> float | None:
    """The later of two times (either may be unknown)."""
    if a is None:
        return b
    return a if b is None or a >= b else b
