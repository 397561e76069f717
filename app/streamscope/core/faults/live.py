"""Faults applied to a live stream, read by read, as the tap forwards it (:class:`LiveFaults`).

:func:`~streamscope.core.faults.apply` transforms a whole recorded playback; the tap has no
whole body — each upstream read is forwarded as it arrives. :class:`LiveFaults` takes the same
faults (those of a :class:`~streamscope.core.faults.FaultSpec` that take this request) and
turns each read into steps for the forwarder: :class:`Send` these bytes, :class:`Wait` this
long, :class:`Stop` the response (a clean close or a cut; the rest of upstream's body is not
read). Frames are numbered as :func:`~streamscope.core.faults.body_frames` and the Frames tab
number them (core's decoders, fed read by read), so ``cut@frame:3`` strikes the same frame on
a live stream as on its recording.

What each fault does live (``t`` is seconds since the request arrived, given with each read):

- ``http=CODE[:retry-after=R]`` — :meth:`LiveFaults.replacement`: the forwarder answers with it
  and does not ask upstream at all (a provider's 429 means the request was not run).
- ``delay-headers=S`` — :meth:`LiveFaults.head_delay`: the head waits S seconds.
- ``stall@frame:N=S`` — a wait of S seconds before frame N's first byte; ``slow=MS`` — a wait of
  MS ms before every frame's first byte (each frame MS later than it would have been).
- ``cut@byte:N`` — the bytes before offset N, then a cut. ``cut@frame:N`` — frame N is held until
  it is whole (its length decides the middle), then half of it and a cut.
- ``error@frame:N`` — at frame N's first byte, the dialect's error frame instead, then a close.
- ``garble@frame:N`` — frame N held until whole, then sent edited in one write.
- ``drop-terminal`` — each frame is held until it is whole (to see whether it is the
  terminal); the terminal frame and all after it are not sent, the response closes cleanly
  (Gemini's terminal, the end of the body after a finish reason: the finish-reason frame).
- ``split-reads`` — every byte sent alone; ``merge-reads`` — everything held, sent at the end.

Holding a frame keeps its bytes back until it is whole: the read boundaries inside it are lost
on the way to the client (the capture, which records what the client was sent, shows them so).
A fault whose frame never came says why (``the stream ended at frame 7``). Pure: no clock, no
I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from streamscope.core.faults.live_frames import LiveFrames
from streamscope.core.faults.playback import AppliedFault
from streamscope.core.faults.shapes import (
    error_frame,
    garble_edit,
    http_error_body,
    status_message,
)
from streamscope.core.faults.spec import Fault
from streamscope.core.wire.dialects import (
    AUTO,
    detect_dialect,
    fallback_for_framing,
    get_dialect,
)
from streamscope.core.wire.events import FinishReason, Terminal

__all__ = ["LiveFaults", "Send", "Step", "Stop", "Wait"]

_DETECT_EVENTS = 8


@dataclass(frozen=True, slots=True)
class Send:
    """Write these bytes to the client."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Wait:
    """Write nothing for this many seconds."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Stop:
    """End the response now: ``close`` (a clean end of the body) or ``cut`` (the connection
    dropped); upstream's body is read no further."""

    how: Literal["close", "cut"]


Step = Send | Wait | Stop


class LiveFaults:
    """The faults of one exchange, applied to its live stream (see the module docstring).

    ``faults``: those that take this request (:meth:`FaultSpec.for_request`); ``dialect``: a
    registered name or ``auto``. Call :meth:`replacement` before asking upstream,
    :meth:`head_delay` when its head arrives, :meth:`start` with the response's content type,
    :meth:`feed` with each read, :meth:`finish` when upstream's body ends;
    :meth:`describe` says what each fault did."""

    def __init__(self, faults: tuple[Fault, ...], dialect: str = AUTO) -> None:
        self.faults = faults
        self.dialect = dialect
        self._by_kind = {f.kind: f for f in faults}
        self._done: dict[Fault, AppliedFault] = {}
        self._lf = LiveFrames(dialect)
        self._seen_frame = -1
        self._held: dict[int, bytearray] = {}
        self._merged = bytearray()
        self._stopped = False
        self._parser: Any = None
        self._parsed = 0  # frames given to the dialect's parser (drop-terminal)
        self._name: str | None = None

    # -- before the body ---------------------------------------------------------------------

    def replacement(
        self, dialect: str, t: float
    ) -> tuple[int, tuple[tuple[str, str], ...], bytes] | None:
        """``(status, headers, body)`` to answer with instead of asking upstream (an ``http=``
        fault), or ``None``. ``dialect``: the request's (from its path), for the error body."""
        fault = self._by_kind.get("http")
        if fault is None or fault.status is None:
            return None
        message = f"{status_message(fault.status)} (injected by StreamScope: {fault.label})"
        name = dialect if dialect != AUTO else "openai"
        body = http_error_body(name, fault.status, message)
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        if fault.retry_after is not None:
            headers.append(("retry-after", str(fault.retry_after)))
        detail = (("status", fault.status), ("retry_after", fault.retry_after))
        self._done[fault] = AppliedFault(fault, True, None, None, t, None, detail)
        for other in self.faults:
            if other is not fault:
                self._skip(other, f"the response was replaced by {fault.label}")
        self._stopped = True
        return fault.status, tuple(headers), body

    def head_delay(self, t: float) -> float:
        """Seconds the head must wait (``delay-headers``), 0 without."""
        fault = self._by_kind.get("delay-headers")
        if fault is None or fault.seconds is None or fault in self._done:
            return 0.0
        detail = (("seconds", fault.seconds),)
        self._done[fault] = AppliedFault(fault, True, None, None, t, None, detail)
        return fault.seconds

    def start(self, content_type: str | None) -> None:
        """The response's content type (frames are cut as the pipeline would cut them)."""
        self._lf.content_type = content_type

    # -- the body ----------------------------------------------------------------------------

    def feed(self, data: bytes, t: float) -> list[Step]:
        """What to do with one upstream read arriving ``t`` seconds after the request."""
        if self._stopped or not data:
            return []
        out: list[Step] = []
        for k, off, piece in self._lf.feed(data):
            self._piece(k, off, piece, t, out)
            if self._stopped:
                break
        return self._shaped(out)

    def finish(self, t: float) -> list[Step]:
        """Upstream's body has ended (cleanly or not): what is still held, then the record of
        the faults that never struck. The forwarder ends the response as upstream ended it,
        unless a :class:`Stop` is returned."""
        out: list[Step] = []
        if not self._stopped:
            self._lf.close()
            for k in sorted(self._held):
                held = bytes(self._held.pop(k))
                self._release(k, held, t, out, whole=k < len(self._lf.frames))
                if self._stopped:
                    break
        out = self._shaped(out)
        if not any(isinstance(step, Stop) for step in out):
            out += self.finish_merge()
        self._stopped = True
        for fault in self.faults:
            if fault not in self._done:
                self._skip(fault, self._why_not(fault))
        return out

    def refuse(self, fault: Fault, why: str) -> None:
        """Record ``fault`` as not applied, for ``why``, before anything is fed (it will not
        strike)."""
        self._skip(fault, why)
        self._by_kind.pop(fault.kind, None)

    def describe(self) -> list[dict[str, object]]:
        """Each fault of this exchange, JSON-ready, in the spec's order (applied or not)."""
        return [self._done[f].describe() for f in self.faults if f in self._done]

    # -- applying ----------------------------------------------------------------------------

    def _piece(self, k: int, off: int, data: bytes, t: float, out: list[Step]) -> None:
        if k > self._seen_frame:
            self._seen_frame = k
            self._frame_starts(k, t, out)
            if self._stopped:
                return
        cut = self._by_kind.get("cut")
        if cut is not None and cut.byte is not None and off <= cut.byte < off + len(data):
            out.append(Send(data[: cut.byte - off]))
            self._strike(cut, k, cut.byte, t)
            out.append(Stop("cut"))
            return
        if self._holds(k):
            self._held.setdefault(k, bytearray()).extend(data)
            if k < len(self._lf.frames) and off + len(data) == self._lf.frame_end(k):
                self._release(k, bytes(self._held.pop(k)), t, out, whole=True)
            return
        out.append(Send(data))

    def _frame_starts(self, k: int, t: float, out: list[Step]) -> None:
        stall = self._by_kind.get("stall")
        if (
            stall is not None
            and stall.frame is not None
            and stall.seconds is not None
            and k >= stall.frame
            and stall not in self._done
        ):
            out.append(Wait(stall.seconds))
            self._strike(stall, k, self._lf.frame_start(k), t, (("seconds", stall.seconds),))
        slow = self._by_kind.get("slow")
        if slow is not None and slow.ms is not None:
            out.append(Wait(slow.ms / 1000))
            if slow not in self._done:
                self._done[slow] = AppliedFault(
                    slow, True, None, None, None, None, (("ms", slow.ms),)
                )
        error = self._by_kind.get("error")
        if error is not None and error.frame is not None and k >= error.frame:
            message = f"injected by StreamScope: {error.label}"
            out.append(Send(error_frame(self._lf.body_frames(self._dialect_name()), k, message)))
            self._strike(error, k, self._lf.frame_start(k), t)
            out.append(Stop("close"))

    def _holds(self, k: int) -> bool:
        if "drop-terminal" in self._by_kind:
            return True
        return any(
            self._by_kind.get(kind) is not None and self._by_kind[kind].frame == k
            for kind in ("garble", "cut")
        )

    def _release(self, k: int, data: bytes, t: float, out: list[Step], *, whole: bool) -> None:
        """Frame ``k``'s held bytes (``whole``: the frame is complete)."""
        cut = self._by_kind.get("cut")
        if cut is not None and cut.frame == k:
            size = max(1, len(data) // 2) if whole else max(0, len(data) // 2)
            out.append(Send(data[:size]))
            self._strike(cut, k, self._lf.frame_start(k) + size, t)
            out.append(Stop("cut"))
            return
        garble = self._by_kind.get("garble")
        if garble is not None and garble.frame == k and garble.garble is not None:
            edit = garble_edit(data, self._lf.framing or "sse", garble.garble)
            if edit is None:
                self._skip(garble, f"frame {k} carries no data (a comment or blank lines)")
            else:
                a, b, new = edit
                data = data[:a] + new + data[b:]
                self._strike(
                    garble, k, self._lf.frame_start(k) + a, t, (("garble", garble.garble),)
                )
        if "drop-terminal" in self._by_kind and self._is_terminal(k, t):
            out.append(Stop("close"))
            return
        out.append(Send(data))

    def _is_terminal(self, k: int, t: float) -> bool:
        """Whether frame ``k`` carries the terminal signal (drop-terminal): a ``Terminal``, or
        for a dialect whose terminal is the end of the body after a finish reason (Gemini),
        the frame with the finish reason — as :func:`~streamscope.core.faults.body_frames`
        finds it."""
        fault = self._by_kind["drop-terminal"]
        if self._parser is None:
            name = self._dialect_name()
            if name is None:
                return False
            self._parser = get_dialect(name).new_parser()
        parser = self._parser
        while self._parsed <= k and self._parsed < len(self._lf.frames):
            event = self._lf.frames[self._parsed].event
            index = self._parsed
            self._parsed += 1
            if event is None:
                continue
            for item in parser.parse(event):
                if isinstance(item, Terminal):
                    self._strike(
                        fault, index, self._lf.frame_start(index), t, (("signal", item.signal),)
                    )
                    return True
                if isinstance(item, FinishReason):
                    ends = [e for e in parser.end_of_body() if isinstance(e, Terminal)]
                    if ends:
                        signal = (("signal", ends[0].signal),)
                        self._strike(fault, index, self._lf.frame_start(index), t, signal)
                        return True
        return False

    def _dialect_name(self) -> str | None:
        if self._name is not None:
            return self._name
        if self.dialect != AUTO:
            self._name = self.dialect
            return self._name
        events = [f.event for f in self._lf.frames if f.event is not None][:_DETECT_EVENTS]
        if not events:
            return None
        name = detect_dialect(self._lf.content_type, events)
        self._name = (
            name if name is not None else fallback_for_framing(self._lf.framing or "sse").name
        )
        return self._name

    def _shaped(self, out: list[Step]) -> list[Step]:
        if "merge-reads" in self._by_kind:
            kept: list[Step] = []
            for step in out:
                if isinstance(step, Send):
                    self._merged += step.data
                elif isinstance(step, Stop):
                    kept += self.finish_merge()
                    kept.append(step)
            return kept
        if "split-reads" in self._by_kind:
            fault = self._by_kind["split-reads"]
            split: list[Step] = []
            for step in out:
                if isinstance(step, Send):
                    split += [Send(step.data[i : i + 1]) for i in range(len(step.data))]
                    if fault not in self._done and step.data:
                        self._done[fault] = AppliedFault(fault, True, None, None, None, None, ())
                else:
                    split.append(step)
            return split
        return out

    def finish_merge(self) -> list[Step]:
        """merge-reads: what was held, now (before a stop)."""
        fault = self._by_kind.get("merge-reads")
        if fault is None or not self._merged:
            return []
        self._done[fault] = AppliedFault(fault, True, None, None, None, None, ())
        data, self._merged = bytes(self._merged), bytearray()
        return [Send(data)]

    # -- records -----------------------------------------------------------------------------

    def _strike(
        self,
        fault: Fault,
        frame: int,
        byte: int,
        t: float,
        detail: tuple[tuple[str, object], ...] = (),
    ) -> None:
        if fault not in self._done:
            self._done[fault] = AppliedFault(fault, True, frame, byte, t, None, detail)
        if fault.kind in ("cut", "error", "drop-terminal"):
            self._stopped = True

    def _skip(self, fault: Fault, why: str) -> None:
        if fault not in self._done:
            self._done[fault] = AppliedFault(fault, False, why=why)

    def _why_not(self, fault: Fault) -> str:
        frames = len(self._lf.frames)
        if fault.kind == "cut" and fault.byte is not None:
            return f"the body has {self._lf.fed} bytes"
        if fault.kind == "drop-terminal":
            return "the stream ended with no terminal signal"
        if fault.kind in ("split-reads", "merge-reads", "slow"):
            return "the body is empty"
        return f"the body has {frames} frames"
