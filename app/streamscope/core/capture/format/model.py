"""A capture in memory: its request, response head, every network read with its time, and
how the stream ended (:class:`Capture`), the reads kept compactly (:class:`ReadLog`)."""

from __future__ import annotations

import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from streamscope import __version__
from streamscope.core.turn.outcome import EndKind
from streamscope.core.wire.dialects import Framing, get_dialect

FORMAT = "streamscope-capture"
FORMAT_VERSION = 1
CAPTURE_SUFFIX = ".sscap"


class CaptureError(ValueError):
    """The file is not a capture, or is a damaged or newer one."""


# -- the data --------------------------------------------------------------------------


class ReadLog:
    """Network reads ``(t, bytes)`` in compact form: one buffer, offsets and times."""

    __slots__ = ("_data", "_ends", "_times")

    def __init__(self, reads: Sequence[tuple[float, bytes]] = ()) -> None:
        self._data = bytearray()
        self._ends = array.array("q")
        self._times = array.array("d")
        for t, data in reads:
            self.append(t, data)

    def append(self, t: float, data: bytes) -> None:
        self._data += data
        self._ends.append(len(self._data))
        self._times.append(t)

    def __len__(self) -> int:
        return len(self._times)

    def __iter__(self) -> Iterator[tuple[float, bytes]]:
        start = 0
        view = memoryview(self._data)
        try:
            for end, t in zip(self._ends, self._times, strict=True):
                yield t, bytes(view[start:end])
                start = end
        finally:
            view.release()

    @property
    def size(self) -> int:
        """Total bytes."""
        return len(self._data)

    def body(self) -> bytes:
        """All reads joined: the response body as received."""
        return bytes(self._data)

    def buffer(self) -> bytearray:
        """All reads joined, without a copy (a view of a replay indexes it): read it, never
        modify it."""
        return self._data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReadLog):
            return NotImplemented
        return (self._data, self._ends, self._times) == (other._data, other._ends, other._times)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class CaptureRequest:
    """The request as sent, with secrets already redacted."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class CaptureResponse:
    """Status and headers; ``t`` when they arrived (seconds since the request)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    t: float = 0.0

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


@dataclass(frozen=True, slots=True)
class CaptureEnd:
    """How the stream ended (a :class:`StreamEnd` without the response fields, which the
    capture holds already) and the live turn's outcome and reason."""

    kind: EndKind
    elapsed: float | None = None
    detail: str = ""
    timeout: float | None = None
    body: bytes | None = None  # error body, when it was known
    outcome: str | None = None
    reason: str = ""
    faults: tuple[dict[str, Any], ...] = ()
    """The faults on cue served in this exchange (the tap's ``--fault``), as
    :meth:`~streamscope.core.faults.AppliedFault.describe` says them: what the client met
    was not what upstream sent. Written only when there are some."""


@dataclass(slots=True)
class Capture:
    """One turn on the wire. ``dialect`` is what the turn was run with (may be ``auto``)."""

    dialect: str
    request: CaptureRequest | None = None
    response: CaptureResponse | None = None
    reads: ReadLog = field(default_factory=ReadLog)
    end: CaptureEnd | None = None
    created: str = ""
    app_version: str = __version__

    @property
    def size(self) -> int:
        return self.reads.size

    def framing(self) -> Framing:
        """``"ndjson"`` or ``"sse"``: what the body is (for a file extension): NDJSON if the
        content type says so, else the dialect's framing (SSE for ``auto``)."""
        ctype = (self.response.header("content-type") if self.response else None) or ""
        if "ndjson" in ctype or "jsonl" in ctype:
            return "ndjson"
        try:
            return get_dialect(self.dialect).framing
        except KeyError:  # auto, or a dialect not registered here
            return "sse"

    @property
    def started(self) -> float | None:
        """When the exchange started (``created``) as a Unix time; ``None`` if unknown."""
        try:
            when = datetime.fromisoformat(self.created.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def now_iso() -> str:
    """Now, as a capture's ``created`` (UTC, to the millisecond: a HAR's ``startedDateTime``
    is written from it)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
