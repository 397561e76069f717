"""Per-endpoint network options, light enough to import before any network code."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LINE_CAP", "StreamTimeouts", "TLSOptions"]


DEFAULT_LINE_CAP = 1 << 20
"""The longest line (SSE or NDJSON) a stream may send, by default: 1 MiB."""


@dataclass(frozen=True, slots=True)
class StreamTimeouts:
    """Per-endpoint limits: timeouts in seconds (reasoning models think for minutes behind
    keep-alives, so the first-byte and idle defaults are generous) and the line cap in
    bytes (a longer line ends the turn as a protocol error rather than filling memory)."""

    connect: float = 10.0
    first_byte: float = 300.0
    idle: float = 300.0
    max_line_bytes: int = DEFAULT_LINE_CAP


@dataclass(frozen=True, slots=True)
class TLSOptions:
    """``verify=False`` turns verification off (the UI marks it visibly);
    ``ca_bundle`` adds a CA file for self-signed local servers."""

    verify: bool = True
    ca_bundle: str | None = None
