"""What the tap tells of each exchange: :class:`TapExchange` as it starts,
:class:`ExchangeResult` when it ends (``streamscope tap --json``'s line), and the
:class:`TapListener` told of both."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from streamscope.core.faults.reaction import ObservedExchange
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["ExchangeResult", "TapExchange", "TapListener", "exchange_line", "observed"]


@dataclass(frozen=True, slots=True)
class TapExchange:
    """One request through the tap, as it starts (``url``: upstream's, unredacted — the
    listener redacts before showing; ``path``: what the JSON line shows, redacted)."""

    id: int
    method: str
    path: str
    url: str
    headers: dict[str, str]
    body: bytes
    capture: Path | None
    started: float  # monotonic
    spec: RequestSpec = field(repr=False, default=RequestSpec("GET", "", {}))


@dataclass(frozen=True, slots=True)
class ExchangeResult:
    """A finished exchange: what ``streamscope tap --json`` prints (:meth:`to_json`)."""

    exchange: TapExchange
    status: int | None
    outcome: str
    reason: str
    dialect: str | None
    frames: int
    bytes: int
    ttft_ms: float | None
    duration_ms: float
    turn: Turn
    faults: tuple[dict[str, Any], ...] = ()
    """The faults on cue this exchange was served (``--fault``), applied or not."""

    def to_json(self) -> dict[str, Any]:
        """The JSON line (:func:`exchange_line`)."""
        ex = self.exchange
        return exchange_line(
            ex.id,
            ex.method,
            ex.path,
            self.status,
            self.outcome,
            self.reason,
            self.dialect,
            self.frames,
            self.bytes,
            self.ttft_ms,
            self.duration_ms,
            str(ex.capture) if ex.capture is not None else None,
            self.faults,
        )


def exchange_line(
    id: int,
    method: str,
    path: str,
    status: int | None,
    outcome: str,
    reason: str,
    dialect: str | None,
    frames: int,
    bytes: int,
    ttft_ms: float | None,
    duration_ms: float,
    capture: str | None,
    faults: tuple[dict[str, Any], ...],
) -> dict[str, Any]:
    """An exchange's JSON line, as ``tap --json`` prints it (``serve --json`` adds
    ``served``): ``{"id", "method", "path", "status", "outcome", "reason", "dialect",
    "frames", "bytes", "ttft_ms", "duration_ms", "capture", "faults"}`` (``faults``: what
    ``--fault`` did to the exchange, ``[]`` without)."""
    return {
        "id": id,
        "method": method,
        "path": path,
        "status": status,
        "outcome": outcome,
        "reason": reason,
        "dialect": dialect,
        "frames": frames,
        "bytes": bytes,
        "ttft_ms": ttft_ms,
        "duration_ms": duration_ms,
        "capture": capture,
        "faults": list(faults),
    }


class TapListener(Protocol):
    """Told of each exchange (on the tap's event loop thread: be quick)."""

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        """A request arrived; return an observer to watch it as a turn (or ``None``)."""
        ...

    def exchange_finished(self, result: ExchangeResult) -> None:
        """The exchange ended (any outcome); its capture may still be being written."""
        ...


def observed(result: ExchangeResult) -> ObservedExchange:
    """An ended exchange as the reactions to faults see it
    (:func:`~streamscope.core.faults.client_reactions`): the client hung up first when it was
    cancelled, else the tap (or upstream) ended it — neither when the tap stopped."""
    ex = result.exchange
    ended: float | None = ex.started + result.duration_ms / 1000
    by_client = result.outcome == "cancelled"
    if by_client and result.reason.startswith("the tap stopped"):
        ended = None
    return ObservedExchange(
        str(ex.id),
        ex.started,
        hashlib.sha256(ex.body).hexdigest(),
        result.faults,
        server_ended=None if by_client else ended,
        client_closed=ended if by_client else None,
    )
