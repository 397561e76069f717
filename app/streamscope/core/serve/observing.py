"""What the server saw of each exchange — when it arrived, its body's hash, the faults it was
served, when the server ended it or the client hung up — for
:func:`~streamscope.core.faults.client_reactions` (:class:`Observations`), and
:func:`scaled` (a playback's times multiplied: faults are applied in real seconds)."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import replace
from typing import Any

from streamscope.core.faults import ObservedExchange, client_reactions
from streamscope.core.faults.playback import Playback, Write
from streamscope.core.serve.report import Ending

__all__ = ["Observations", "scaled"]


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


def scaled(playback: Playback, factor: float) -> Playback:
    """``playback`` with every time multiplied by ``factor``."""
    return replace(
        playback,
        writes=tuple(Write(w.at * factor, w.data) for w in playback.writes),
        headers_at=playback.headers_at * factor,
        end_at=None if playback.end_at is None else playback.end_at * factor,
    )
