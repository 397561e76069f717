"""A response as a server plays it: status, headers, timed writes and how it ends — what
``streamscope serve`` plays from a recording and what :func:`~streamscope.core.faults.apply`
transforms — and the record of each fault applied to it.

All times are seconds from the moment the request arrived (a capture's ``t``, × the replay
speed: scale the recorded timing *before* applying faults, so that a stall of 2 s is 2 s).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

from streamscope.core.faults.spec import Fault

__all__ = ["AppliedFault", "End", "Playback", "Write"]

End = Literal["close", "cut", "stall"]
"""How the response ends after its last write: ``close`` a clean end of the body (the
connection closed or the chunked body terminated), ``cut`` the connection dropped (a reset,
no terminating chunk), ``stall`` nothing more is written and the connection stays open until
the client gives up."""


class Write(NamedTuple):
    """One write to the socket: ``data`` at ``at`` seconds from the request."""

    at: float
    data: bytes


@dataclass(frozen=True, slots=True)
class AppliedFault:
    """What one fault scheduled for this request did: where it struck, or why it could not.

    ``frame`` is the 0-based frame number of the original body (the Frames tab's), ``byte``
    the offset in the original body, ``at`` seconds from the request when it took effect (the
    cut, the start of the silence, the error frame's write, the close instead of the terminal,
    the error response). ``detail`` holds the kind's own keys (``seconds``, ``status``,
    ``retry_after``, ``signal``, ``garble`` …).
    """

    fault: Fault
    applied: bool
    frame: int | None = None
    byte: int | None = None
    at: float | None = None
    why: str | None = None
    """Not applied: why (``"the body has 12 frames"``)."""
    detail: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> dict[str, Any]:
        """JSON-ready: ``{"fault", "kind", "when", "applied", "frame", "byte", "at", …}``
        (``"why"`` instead of the place when not applied)."""
        out: dict[str, Any] = {
            "fault": self.fault.label,
            "kind": self.fault.kind,
            "when": str(self.fault.cadence),
            "applied": self.applied,
        }
        if self.applied:
            out["frame"] = self.frame
            out["byte"] = self.byte
            out["at"] = round(self.at, 6) if self.at is not None else None
        else:
            out["why"] = self.why
        out.update(self.detail)
        return out


@dataclass(frozen=True, slots=True)
class Playback:
    """A response to play: see the module docstring."""

    status: int | None
    """``None``: no head is written at all (a recording with no response: the connection is
    dropped, or stalls, with nothing sent)."""
    headers: tuple[tuple[str, str], ...]
    writes: tuple[Write, ...]
    end: End = "close"
    headers_at: float = 0.0
    """When the status line and headers are sent."""
    end_at: float | None = None
    """When the end happens (``None``: right after the last write)."""
    faults: tuple[AppliedFault, ...] = ()
    """The faults scheduled for this request, in the spec's order (applied or not)."""
    dialect: str = "auto"
    """The recording's dialect (the faults that write a dialect's frames need it)."""

    @property
    def ends_at(self) -> float:
        """When the end happens: ``end_at``, else the last write's time (or the head's)."""
        if self.end_at is not None:
            return self.end_at
        return self.writes[-1].at if self.writes else self.headers_at

    @property
    def size(self) -> int:
        """Body bytes written, all writes together."""
        return sum(len(w.data) for w in self.writes)

    @property
    def body(self) -> bytes:
        """Every byte written, joined."""
        return b"".join(w.data for w in self.writes)

    def header(self, name: str) -> str | None:
        """The first header called ``name`` (any case), or ``None``."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)

    def scaled(self, factor: float) -> Playback:
        """This playback with every time multiplied by ``factor``."""
        return replace(
            self,
            writes=tuple(Write(w.at * factor, w.data) for w in self.writes),
            headers_at=self.headers_at * factor,
            end_at=None if self.end_at is None else self.end_at * factor,
        )

    def describe(self) -> list[dict[str, Any]]:
        """The faults of this response, JSON-ready (``[]``: none was scheduled): for the
        exchange's JSON line and its capture."""
        return [f.describe() for f in self.faults]
