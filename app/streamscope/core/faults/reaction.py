"""How the client reacted to the faults it was served — worked out from what the server saw,
nothing else (pure: no clock, no I/O).

The server records, per exchange, an :class:`ObservedExchange`: when the request arrived, a
hash of its body, the faults applied (:meth:`Playback.describe`), when the server ended its
response (its close or cut; ``None`` while it has not: a stall), and when the client closed its
side (``None``: still connected). All times are seconds on one clock (monotonic).

:func:`client_reactions` groups each faulted exchange with the attempts that followed it — later
requests with the same body hash, each arriving at most ``window`` seconds after the attempt
before it (an attempt that is itself faulted belongs to the first chain it joins; a request
that repeats the same body for another reason within the window counts as a retry too) — and
reports, per chain (JSON-ready)::

    {"exchange", "attempt_ids", "fault", "kinds", "fault_at",
     "closed_after",      # s from the fault to the client's close (< 0: it closed before)
     "still_open_after",  # s from the fault to `now`, when neither side has closed
     "read_to_end",       # the client stayed connected until the server ended the response
     "retries", "attempts", "intervals",   # attempts: s after the first arrival
     "retry_after",       # the first attempt's Retry-After (s), if it was sent one
     "retry_after_honoured",   # every retry waited at least the Retry-After it was given
     "finished_as_if_whole"}   # drop-terminal: read to the clean close and did not retry

``fault_at`` is the arrival plus the earliest ``at`` of the applied faults (the arrival for
``slow``, which has none). When the server ends first (a cut, a clean close, an error
response), the client's own close is usually not seen: pass ``client_closed=None`` (or the
server's end) and ``read_to_end`` says it stayed to the end; ``closed_after`` only tells of a
client that hung up while the server still had something to say, or during a stall.
``finished_as_if_whole`` is what the server can see: a client that raises after the end of the
body without retrying looks the same. ``null`` where a value does not apply. The summary counts
chains: ``faulted``, ``by_kind``, ``closed``, ``still_open``, ``read_to_end``, ``retried``,
``retries``, ``retry_after_honoured``/``_ignored``, ``finished_as_if_whole``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RETRY_WINDOW",
    "ObservedExchange",
    "client_reactions",
    "describe_reaction",
    "describe_summary",
]

RETRY_WINDOW = 60.0
"""Seconds between two attempts with the same body, at most, for the second to be a retry."""


@dataclass(frozen=True, slots=True)
class ObservedExchange:
    """One exchange as the server saw it (see the module docstring)."""

    id: str
    arrived: float
    body_hash: str
    faults: Sequence[Mapping[str, Any]] = ()
    server_ended: float | None = None
    client_closed: float | None = None

    @property
    def applied(self) -> list[Mapping[str, Any]]:
        return [f for f in self.faults if f.get("applied")]


def _r(value: float) -> float:
    return round(value, 6)


def client_reactions(
    observed: Sequence[ObservedExchange], *, now: float, window: float = RETRY_WINDOW
) -> dict[str, Any]:
    """``{"exchanges": [one report per faulted chain], "summary": {...}}``."""
    order = sorted(range(len(observed)), key=lambda i: observed[i].arrived)
    claimed: set[int] = set()
    reports: list[dict[str, Any]] = []
    for pos, i in enumerate(order):
        first = observed[i]
        if i in claimed or not first.applied:
            continue
        chain = [first]
        claimed.add(i)
        for j in order[pos + 1 :]:
            ex = observed[j]
            if ex.body_hash != first.body_hash:
                continue
            if ex.arrived - chain[-1].arrived > window:
                break
            chain.append(ex)
            claimed.add(j)
        reports.append(_report(chain, now))
    return {"exchanges": reports, "summary": _summary(reports)}


def _report(chain: list[ObservedExchange], now: float) -> dict[str, Any]:
    first = chain[0]
    applied = first.applied
    times = [f["at"] for f in applied if isinstance(f.get("at"), int | float)]
    fault_at = first.arrived + (min(times) if times else 0.0)
    closed, ended = first.client_closed, first.server_ended
    intervals = [_r(b.arrived - a.arrived) for a, b in itertools.pairwise(chain)]
    honoured: bool | None = None
    for attempt, nxt in itertools.pairwise(chain):
        after = _retry_after(attempt)
        if after is not None:
            ok = nxt.arrived - attempt.arrived >= after
            honoured = ok if honoured is None else honoured and ok
    read_to_end = ended is not None and (closed is None or closed >= ended)
    kinds = [str(f.get("kind")) for f in applied]
    return {
        "exchange": first.id,
        "attempt_ids": [ex.id for ex in chain],
        "fault": ",".join(str(f.get("fault")) for f in applied),
        "kinds": kinds,
        "fault_at": _r(fault_at),
        "closed_after": _r(closed - fault_at) if closed is not None else None,
        "still_open_after": _r(now - fault_at) if closed is None and ended is None else None,
        "read_to_end": read_to_end,
        "retries": len(chain) - 1,
        "attempts": [_r(ex.arrived - first.arrived) for ex in chain],
        "intervals": intervals,
        "retry_after": _retry_after(first),
        "retry_after_honoured": honoured,
        "finished_as_if_whole": (read_to_end and len(chain) == 1)
        if "drop-terminal" in kinds
        else None,
    }


def _retry_after(ex: ObservedExchange) -> float | None:
    for f in ex.applied:
        value = f.get("retry_after")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, int] = {}
    for r in reports:
        for kind in r["kinds"]:
            by_kind[kind] = by_kind.get(kind, 0) + 1
    return {
        "faulted": len(reports),
        "by_kind": by_kind,
        "closed": sum(r["closed_after"] is not None for r in reports),
        "still_open": sum(r["still_open_after"] is not None for r in reports),
        "read_to_end": sum(r["read_to_end"] for r in reports),
        "retried": sum(r["retries"] > 0 for r in reports),
        "retries": sum(r["retries"] for r in reports),
        "retry_after_honoured": sum(r["retry_after_honoured"] is True for r in reports),
        "retry_after_ignored": sum(r["retry_after_honoured"] is False for r in reports),
        "finished_as_if_whole": sum(r["finished_as_if_whole"] is True for r in reports),
    }


def _secs(value: float) -> str:
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def describe_reaction(report: Mapping[str, Any]) -> str:
    """One chain's report (:func:`client_reactions`) in a sentence, for people: the CLI's
    closing lines, the Tapped row's tooltip, the inspector's header.

    ``"http=429:retry-after=1 → read to the end and retried 2× after 1.0 s, 2.1 s
    (Retry-After 1 s honoured)"``, ``"stall@frame:3=30 → still reading after 12.0 s and did
    not retry"``, ``"cut@frame:5 → read to the end and did not retry"`` ("the end": the
    server's, a cut here), ``"drop-terminal → read to the end and did not retry: finished as
    if whole"``."""
    parts: list[str] = []
    closed, still = report.get("closed_after"), report.get("still_open_after")
    if still is not None:
        parts.append(f"still reading after {_secs(still)}")
    elif closed is not None:
        parts.append(
            f"closed {_secs(-closed)} before the fault struck"
            if closed < 0
            else f"closed its side {_secs(closed)} after the fault"
        )
    elif report.get("read_to_end") and "http" not in report.get("kinds", ()):
        parts.append("read to the end")
    retries = int(report.get("retries") or 0)
    if retries:
        gaps = ", ".join(_secs(i) for i in report.get("intervals") or ())
        parts.append(f"retried {retries}× after {gaps}")
    else:
        parts.append("did not retry")
    text = " and ".join(parts)
    after, honoured = report.get("retry_after"), report.get("retry_after_honoured")
    if after is not None and honoured is not None:
        text += f" (Retry-After {after:g} s {'honoured' if honoured else 'not honoured'})"
    if report.get("finished_as_if_whole"):
        text += ": finished as if whole"
    return f"{report.get('fault')} → {text}"


def describe_summary(summary: Mapping[str, Any]) -> str:
    """The summary (:func:`client_reactions`) in a line: ``"3 faulted exchanges (cut 1,
    http 2): 1 retried (4 retries), 1 still reading, …"``."""
    n = int(summary.get("faulted") or 0)
    if not n:
        return "no faulted exchange"
    kinds = ", ".join(f"{k} {v}" for k, v in sorted((summary.get("by_kind") or {}).items()))
    bits = [f"{summary.get('retried', 0)} retried ({summary.get('retries', 0)} retries)"]
    for key, words in (
        ("still_open", "still reading"),
        ("closed", "closed early"),
        ("read_to_end", "read to the end"),
        ("retry_after_honoured", "honoured Retry-After"),
        ("retry_after_ignored", "ignored Retry-After"),
        ("finished_as_if_whole", "finished as if whole"),
    ):
        if summary.get(key):
            bits.append(f"{summary[key]} {words}")
    return f"{n} faulted exchange{'s' if n != 1 else ''} ({kinds}): " + ", ".join(bits)
