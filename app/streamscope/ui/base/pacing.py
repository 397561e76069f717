"""Every constant that decides when the window paints, in one place.

How they interact. A live turn is parsed in the stream worker, which sends a batch every
few milliseconds (``core/net/worker.py``: transport batching stays there). In the window,
the :class:`~streamscope.ui.chat.turn_runner.TurnRunner` seals what arrives into batches of at
most :data:`MAX_BATCH_FRAMES` frames. Nothing else has a timer: the one
:class:`~streamscope.ui.base.paint_clock.PaintClock` ticks, and each tick

1. hands sealed batches to the views (``take``: cheap — append to a log, a buffer) for at
   most :data:`FLUSH_BUDGET_MS`, at most once every :data:`FLUSH_INTERVAL_MS` while a stream
   flows (the interval stretches to twice the time a slow delivery took, up to
   :data:`MAX_INTERVAL_MS`, so a flood cannot starve the loop; a backlog of sealed batches
   is delivered on the next loop turn, and beyond :data:`MAX_BACKLOG` the runner delivers
   one itself, which slows the producer down);
2. then gives the views that asked for a slot (``layout(deadline)``) the rest of
   :data:`TICK_BUDGET_MS`, earliest due first. Each view paces itself by the time it asks
   for: the Frames table shows new rows at most every :data:`TABLE_PAINT_MS`; the live
   answer appends streamed text at most every :data:`LIVE_APPEND_MS` (at most
   :data:`LIVE_APPEND_CHARS` at a time) and renders finished Markdown blocks every
   :data:`LIVE_RENDER_MS`, using at most :data:`LIVE_RENDER_SHARE` of the time since the
   answer started (a flood is shown as plain text at once and formatted at the end); the
   final rendering and the Frames filter work in slices until the deadline, tick after tick.

While a live turn streams, the clock also shows its liveness every :data:`LIVE_CLOCK_MS`
(elapsed time, deltas per second, a silence: data or not, the turn's clock moves).

While a view's layout work runs tick after tick, the clock lets it repaint at most every
:data:`WORK_PAINT_MS` (a repaint of a growing answer costs as much as a slice of work). At the
end of a turn the runner delivers everything pending at once, before ``turnFinished``.
"""

from __future__ import annotations

FLUSH_INTERVAL_MS = 16
"""Batches reach the views at most this often while a stream flows (~60 a second)."""

MAX_INTERVAL_MS = 250
"""The longest a slow delivery can stretch that interval to."""

FLUSH_BUDGET_MS = 8.0
"""With a backlog of sealed batches, one tick delivers more of them while it has spent less
than this (so a backlog drains with few paints, in bounded steps)."""

MAX_BATCH_FRAMES = 4096
"""The runner seals a batch once it holds this many frames (at a read boundary): the work a
delivery causes in the views is bounded however fast the stream is."""

MAX_BACKLOG = 8
"""At most this many sealed batches wait for the clock; beyond, the runner delivers one
itself (the views fall behind: an instant replay, a very fast link)."""

TICK_BUDGET_MS = 3.0
"""Layout work (rendering, filtering, showing rows) done in one tick before the loop gets
to paint and handle input."""

WORK_PAINT_MS = 50
"""While layout work runs tick after tick, a view repaints at most this often."""

TABLE_PAINT_MS = 100
"""The Frames table shows new rows at once, then at most this often while frames pour in."""

LIVE_APPEND_MS = 100
"""Streamed text is shown at once, then at most this often (coalesced in between): each
append re-lays out the answer's tail and resizes the card."""

LIVE_APPEND_CHARS = 16_384
"""At most this much streamed text is appended at a time (~5 ms of layout)."""

LIVE_RENDER_MS = 300
"""How often the finished Markdown blocks of a streaming answer are rendered."""

LIVE_RENDER_SHARE = 0.1
"""While an answer streams, rendering Markdown takes at most this share of the time since
it started (paused beyond it)."""

LIVE_CLOCK_MS = 100
"""A streaming turn's elapsed time, rate and silence are shown this often (the status bar
counts tenths of a second)."""

FILTER_DEBOUNCE_MS = 150
"""Typing in the Frames filter applies it this long after the last key."""

FIND_DEBOUNCE_MS = 200
"""Find in frames searches this long after the last key (then a slice per tick)."""
