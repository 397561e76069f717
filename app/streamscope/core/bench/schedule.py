"""Open-loop arrival schedules: every request's send time, computed before the run starts.

    offsets = arrival_offsets(rate=10, arrival="poisson", seed=1, count=100)
    # seconds after the run's start; request i is due at start + offsets[i]

The schedule is absolute: a request sent late does not move the ones after it, so a client
that falls behind shows it as dispatch lag (send - scheduled) rather than quietly sending
less (coordinated omission). Gaps between arrivals:

- ``constant``: exactly ``1 / rate``; request *i* at ``i / rate``.
- ``poisson``: exponential with mean ``1 / rate`` (a Poisson process).
- ``gamma``: gamma with shape ``burstiness`` and mean ``1 / rate``; shape 1 is Poisson,
  below 1 burstier (clusters and long pauses), above 1 more regular (vLLM's
  ``--burstiness`` means the same).

The first request is at 0. The same ``seed`` gives the same schedule on every machine
(``random.Random``: a fixed algorithm, no global state).
"""

from __future__ import annotations

import random
from typing import Literal

__all__ = ["ARRIVALS", "Arrival", "arrival_offsets"]

Arrival = Literal["poisson", "constant", "gamma"]
ARRIVALS: tuple[Arrival, ...] = ("poisson", "constant", "gamma")


def arrival_offsets(
    *,
    rate: float,
    arrival: Arrival = "poisson",
    burstiness: float = 1.0,
    seed: int = 0,
    count: int | None = None,
    duration: float | None = None,
) -> list[float]:
    """Send times (seconds after the start) of ``count`` requests, or of every request due
    before ``duration`` seconds (one of them must be given; with both, whichever ends
    first)."""
    if rate <= 0:
        raise ValueError(f"rate must be > 0, not {rate}")
    if burstiness <= 0:
        raise ValueError(f"burstiness must be > 0, not {burstiness}")
    if count is None and duration is None:
        raise ValueError("give a count or a duration")
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; expected one of {', '.join(ARRIVALS)}")
    rng = random.Random(seed)
    mean = 1.0 / rate
    offsets: list[float] = []
    t = 0.0
    i = 0
    while count is None or i < count:
        if arrival == "constant":
            t = i * mean  # (a product, not a sum: no rounding drift over a long run)
        elif i > 0:
            if arrival == "poisson":
                t += rng.expovariate(rate)
            else:
                t += rng.gammavariate(burstiness, mean / burstiness)
        if duration is not None and t >= duration:
            break
        offsets.append(t)
        i += 1
    return offsets
