"""Faults on cue: a recorded response served the way a failing provider would serve it.

Qt-free and pure (no sockets, no clocks): ``streamscope serve`` and the tap parse a spec once,
then transform each response before writing it, and record what was done.

- :mod:`.spec` — the grammar (``cut@frame:3/every=2,slow=40``) and :func:`parse_fault_spec`,
  which validates everything before anything starts (:class:`FaultSpecError` names the bad
  part; the CLI exits 2 with it).
- :mod:`.playback` — :class:`Playback` (status, headers, timed :class:`Write` s, how it ends)
  and :class:`AppliedFault` (what a fault did, JSON-ready through ``describe()``).
- :mod:`.apply` — :func:`apply`: a playback with the faults for request *n* applied.
- :mod:`.frames` and :mod:`.shapes` — the body's frames as the Frames tab numbers them (core's
  decoders), the terminal frame (core's dialect parsers), each dialect's error frame and error
  body.
- :mod:`.live` and :mod:`.live_frames` — :class:`~.live.LiveFaults`: the same faults on a live
  stream, read by read (the tap), frames numbered as in the recording.
- :mod:`.observing` — :class:`~.observing.Observations`: what a server saw of each exchange,
  as it happens, for the reactions.
- :mod:`.reaction` — :func:`client_reactions`: what the client did after each fault (closed,
  kept reading, retried and how soon, honoured ``Retry-After``), from what the server saw.

Usage::

    spec = parse_fault_spec("http=429:retry-after=1/next,cut@frame:3/every=2")
    faulted = apply(spec, playback, "openai", request_number=1)
    faulted.writes, faulted.end        # what to write, when, and how to end
    faulted.describe()                 # into the exchange's JSON line and its capture

Imports only :mod:`streamscope.core.wire` (frames, dialects); the tap and ``serve`` import this.
"""

from streamscope.core.faults.apply import apply
from streamscope.core.faults.frames import BodyFrames, body_frames
from streamscope.core.faults.playback import AppliedFault, End, Playback, Write
from streamscope.core.faults.reaction import (
    RETRY_WINDOW,
    ObservedExchange,
    client_reactions,
    describe_reaction,
    describe_summary,
)
from streamscope.core.faults.spec import (
    Cadence,
    Fault,
    FaultKind,
    FaultSpec,
    FaultSpecError,
    parse_fault_spec,
)

__all__ = [
    "RETRY_WINDOW",
    "AppliedFault",
    "BodyFrames",
    "Cadence",
    "End",
    "Fault",
    "FaultKind",
    "FaultSpec",
    "FaultSpecError",
    "ObservedExchange",
    "Playback",
    "Write",
    "apply",
    "body_frames",
    "client_reactions",
    "describe_reaction",
    "describe_summary",
    "parse_fault_spec",
]
