"""What a server (``serve``, the tap) saw of each exchange — when it arrived, its body's hash,
the faults it was served, when the server ended it or the client hung up — kept as it happens
(:class:`Observations`, thread-safe) for :func:`~streamscope.core.faults.client_reactions`."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Literal

from streamscope.core.faults.reaction import ObservedExchange, client_reactions

__all__ = ["Ending", "Observations"]

Ending = Literal["close", "cut", "client_closed", "stopped"]
"""How an exchange ended: the body ended, the server dropped the connection (a cut), the
client hung up first, or the server stopped."""


class Observations:
    """Every exchange of one server as it saw them; written on the serving loop, read from
    any thread (a lock)."""

    def __init__(self) -> None:
        self._observed: dict[int, _Observed] = {}
        self._lock = threading.Lock()

    def start(self, xid: int, arrived: float, body: bytes, faults: list[dict[str, Any]]) -> None:
        """Note a request as it is answered (for the reactions)."""
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            self._observed[xid] = _Observed(str(xid), arrived, digest, faults)

    def faulted(self, xid: int, faults: list[dict[str, Any]]) -> None:
        """Note the faults of an exchange known only as it ends (the tap's)."""
        with self._lock:
            seen = self._observed.get(xid)
            if seen is not None:
                seen.faults = faults

    def end(self, xid: int, ending: Ending, at: float) -> None:
        """Note how an exchange ended: the server's end (a close or a cut) or the client's."""
        with self._lock:
            seen = self._observed.get(xid)
            if seen is None:
                return
            if ending in ("close", "cut"):
                seen.server_ended = at
            elif ending == "client_closed":
                seen.client_closed = at
            else:
                seen.stopped = True

    def answering(self) -> int:
        """How many exchanges are still being answered (neither side has ended them)."""
        with self._lock:
            return sum(
                o.server_ended is None and o.client_closed is None and not o.stopped
                for o in self._observed.values()
            )

    def reactions(self, now: float | None = None) -> dict[str, Any]:
        """How the clients reacted to the faults served so far
        (:func:`~streamscope.core.faults.client_reactions`), ``now`` on the loop's clock
        (``time.monotonic()``; default: now)."""
        with self._lock:
            observed = [
                ObservedExchange(
                    o.id, o.arrived, o.body_hash, o.faults, o.server_ended, o.client_closed
                )
                for o in self._observed.values()
            ]
        return client_reactions(observed, now=time.monotonic() if now is None else now)


class _Observed:
    """One exchange as the server saw it (mutable while it runs)."""

    __slots__ = (
        "arrived",
        "body_hash",
        "client_closed",
        "faults",
        "id",
        "server_ended",
        "stopped",
    )

    def __init__(self, id: str, arrived: float, body_hash: str, faults: list[dict[str, Any]]):
        self.id = id
        self.arrived = arrived
        self.body_hash = body_hash
        self.faults = faults
        self.server_ended: float | None = None
        self.client_closed: float | None = None
        self.stopped = False
