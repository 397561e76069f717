"""Per-endpoint network options, light enough to import before any network code."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StreamTimeouts", "TLSOptions"]


@dataclass(frozen=True, slots=True)
class StreamTimeouts:
    """Per-endpoint limits, in seconds. Reasoning models think for minutes behind
    keep-alives, so the first-byte and idle defaults are generous."""

    connect: float = 10.0
    first_byte: float = 300.0
    idle: float = 300.0


@dataclass(frozen=True, slots=True)
class TLSOptions:
    """``verify=False`` turns verification off (the UI marks it visibly);
    ``ca_bundle`` adds a CA file for self-signed local servers."""

    verify: bool = True
    ca_bundle: str | None = None
