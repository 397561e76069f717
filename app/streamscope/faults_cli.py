"""``--fault SPEC`` for ``streamscope serve`` and ``streamscope tap``: the option's type and
help, and the reactions printed when the command stops (one JSON line with ``--json``, else a
line per faulted exchange and a summary)."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["FAULT_HELP", "fault_spec", "reaction_lines"]

FAULT_HELP = (
    "faults on cue, comma-separated, each on every request (/always, the default), the first "
    "(/next) or every k-th (/every=K): cut@frame:N, cut@byte:N, stall@frame:N=S, "
    "drop-terminal, error@frame:N, garble@frame:N[=json|utf8], http=CODE[:retry-after=R], "
    "slow=MS, split-reads, merge-reads, delay-headers=S (frames numbered from 0 as the Frames "
    "tab numbers them)"
)


def fault_spec(text: str) -> object:
    """argparse's type for ``--fault``: the parsed spec, or a usage error naming the bad part
    (exit 2)."""
    from streamscope.core.faults import FaultSpecError, parse_fault_spec

    try:
        return parse_fault_spec(text)
    except FaultSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def reaction_lines(reactions: dict[str, Any], *, as_json: bool) -> list[str]:
    """How the clients reacted: ``{"reactions": …}`` as one JSON line, or a line per faulted
    exchange (``#3 cut@frame:5 → read to the end and did not retry``) and the summary."""
    from streamscope.core.faults import describe_reaction, describe_summary

    if as_json:
        return [json.dumps({"reactions": reactions}, ensure_ascii=False)]
    return [
        *(f"#{r['exchange']} {describe_reaction(r)}" for r in reactions["exchanges"]),
        f"reactions: {describe_summary(reactions['summary'])}",
    ]
