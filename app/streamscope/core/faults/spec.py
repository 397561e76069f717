"""Fault specs: the text a user gives ``--fault`` (and the Tap dialog's Faults section), parsed
and validated whole before anything starts.

Grammar (no spaces inside a fault; spaces around the commas are allowed)::

    spec     = fault *( "," fault )
    fault    = kind [ "/" cadence ]
    cadence  = "always" | "next" | "every=" K
    kind     = "cut@frame:" N            drop the connection inside frame N (after half its bytes)
             | "cut@byte:" N             drop the connection after N bytes of the body
             | "stall@frame:" N "=" S    S seconds of silence before frame N, then the rest
             | "drop-terminal"           no [DONE] / message_stop / …, then a clean close
             | "error@frame:" N          frame N is the dialect's in-stream error, then close
             | "garble@frame:" N [ "=" ( "json" | "utf8" ) ]
                                         frame N with broken JSON (the default) or invalid UTF-8
             | "http=" CODE [ ":retry-after=" R ]
                                         an HTTP error (400-599) with the dialect's error body
             | "slow=" MS                MS more milliseconds before every frame
             | "split-reads"             every byte written on its own
             | "merge-reads"             everything held, then written at once at the end
             | "delay-headers=" S        the status line and headers S seconds later

N, K, CODE, R and MS are decimal integers (N >= 0; K, MS >= 1; R >= 0, whole seconds as
``Retry-After`` takes them); S is a decimal number of seconds (``2``, ``0.5``), > 0, at most a
day. Frames are numbered from 0 as the Frames tab numbers them (every block of the body, a
comment or a run of blank lines included: see :mod:`streamscope.core.faults.frames`).

Cadence, counted over the requests the server receives (1 is the first): ``always`` (the
default) on every request, ``next`` on the first one only, ``every=K`` on requests K, 2K, 3K …

A spec may hold several faults, each on its own cadence (``slow=40,cut@frame:5/every=2``).
Refused, as incoherent: the same kind twice (``cut@frame`` and ``cut@byte`` are one kind), more
than one of ``cut``, ``error``, ``drop-terminal`` (each ends the stream), and ``split-reads``
with ``merge-reads``. ``http=`` replaces the whole response: on a request it applies to, the
body faults are reported as not applied.

:class:`FaultSpecError` names the offending part of the text and what was expected there; the
CLI prints it and exits 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "ENDING_KINDS",
    "Cadence",
    "Fault",
    "FaultKind",
    "FaultSpec",
    "FaultSpecError",
    "parse_fault_spec",
]

FaultKind = Literal[
    "cut",
    "stall",
    "drop-terminal",
    "error",
    "garble",
    "http",
    "slow",
    "split-reads",
    "merge-reads",
    "delay-headers",
]
ENDING_KINDS: Final = frozenset({"cut", "error", "drop-terminal"})
"""Faults that end the stream early: a spec holds one of them at most."""

MAX_SPEC_CHARS: Final = 4096
MAX_SECONDS: Final = 86_400.0
MAX_INT: Final = 10**12

_INT: Final = re.compile(r"[0-9]{1,13}")
_SECONDS: Final = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
_KINDS_HELP: Final = (
    "one of cut@frame:N, cut@byte:N, stall@frame:N=S, drop-terminal, error@frame:N, "
    "garble@frame:N[=json|utf8], http=CODE[:retry-after=R], slow=MS, split-reads, "
    "merge-reads, delay-headers=S"
)


_BARE: Final[dict[str, FaultKind]] = {
    "drop-terminal": "drop-terminal",
    "split-reads": "split-reads",
    "merge-reads": "merge-reads",
}


class FaultSpecError(ValueError):
    """A fault spec that cannot be used: ``token`` is the offending part of the text,
    ``expected`` what should have been there, ``spec`` the whole text."""

    def __init__(self, token: str, expected: str, spec: str) -> None:
        self.token = token
        self.expected = expected
        self.spec = spec
        super().__init__(f"bad fault spec {spec!r}: at {token!r}, expected {expected}")


@dataclass(frozen=True, slots=True)
class Cadence:
    """Which requests a fault applies to (``request_number`` counts from 1)."""

    when: Literal["always", "next", "every"] = "always"
    k: int = 1
    """For ``every``: applies to requests k, 2k, 3k …"""

    def applies(self, request_number: int) -> bool:
        if self.when == "next":
            return request_number == 1
        if self.when == "every":
            return request_number % self.k == 0
        return True

    def __str__(self) -> str:
        return f"every={self.k}" if self.when == "every" else self.when


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault of a spec; only the fields its kind uses are set."""

    kind: FaultKind
    cadence: Cadence = Cadence()
    frame: int | None = None
    """cut@frame, stall, error, garble: the 0-based frame number."""
    byte: int | None = None
    """cut@byte: how many bytes of the body are written before the cut."""
    seconds: float | None = None
    """stall, delay-headers."""
    ms: int | None = None
    """slow."""
    status: int | None = None
    """http."""
    retry_after: int | None = None
    """http: the ``Retry-After`` header's value in seconds, when given."""
    garble: Literal["json", "utf8"] | None = None
    """garble: broken JSON or invalid UTF-8."""

    @property
    def label(self) -> str:
        """The fault as written, without its cadence (canonical: ``stall@frame:3=2``)."""
        match self.kind:
            case "cut" if self.byte is not None:
                return f"cut@byte:{self.byte}"
            case "cut" | "error":
                return f"{self.kind}@frame:{self.frame}"
            case "stall":
                return f"stall@frame:{self.frame}={_num(self.seconds)}"
            case "garble":
                return f"garble@frame:{self.frame}={self.garble}"
            case "http":
                after = f":retry-after={self.retry_after}" if self.retry_after is not None else ""
                return f"http={self.status}{after}"
            case "slow":
                return f"slow={self.ms}"
            case "delay-headers":
                return f"delay-headers={_num(self.seconds)}"
        return self.kind

    def __str__(self) -> str:
        when = self.cadence.when
        return self.label if when == "always" else f"{self.label}/{self.cadence}"


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """A validated spec: its faults in the order given."""

    faults: tuple[Fault, ...]

    def for_request(self, request_number: int) -> tuple[Fault, ...]:
        """The faults whose cadence takes request ``request_number`` (from 1)."""
        if request_number < 1:
            raise ValueError("request_number counts from 1")
        return tuple(f for f in self.faults if f.cadence.applies(request_number))

    def __str__(self) -> str:
        return ",".join(str(f) for f in self.faults)


def _num(value: float | None) -> str:
    assert value is not None
    return str(int(value)) if value == int(value) else repr(value)


def parse_fault_spec(text: str) -> FaultSpec:
    """Parse and validate ``text`` (see the module docstring); :class:`FaultSpecError`
    names the first bad part."""
    if len(text) > MAX_SPEC_CHARS:
        raise FaultSpecError(text[:40] + "…", f"at most {MAX_SPEC_CHARS} characters", text[:80])
    if not text.strip():
        raise FaultSpecError(text, _KINDS_HELP, text)
    faults: list[Fault] = []
    for part in text.split(","):
        fault = _parse_fault(part.strip(), text)
        _check_coherent(fault, faults, part.strip(), text)
        faults.append(fault)
    return FaultSpec(tuple(faults))


def _check_coherent(fault: Fault, before: list[Fault], part: str, text: str) -> None:
    for other in before:
        if other.kind == fault.kind:
            raise FaultSpecError(part, f"one {fault.kind} fault per spec ({other} is there)", text)
        if fault.kind in ENDING_KINDS and other.kind in ENDING_KINDS:
            raise FaultSpecError(
                part, f"one of cut, error, drop-terminal per spec ({other} is there)", text
            )
        if {fault.kind, other.kind} == {"split-reads", "merge-reads"}:
            raise FaultSpecError(part, "split-reads or merge-reads, not both", text)


def _parse_fault(part: str, text: str) -> Fault:
    if not part:
        raise FaultSpecError(part, "a fault between the commas (" + _KINDS_HELP + ")", text)
    body, slash, when = part.partition("/")
    cadence = _parse_cadence(when, text) if slash else Cadence()
    kind, at, rest = body.partition("@")
    if at:
        return _parse_at(kind, rest, cadence, text)
    name, eq, value = body.partition("=")
    match name:
        case "drop-terminal" | "split-reads" | "merge-reads" if not eq:
            return Fault(_BARE[name], cadence)
        case "http" if eq:
            return _parse_http(value, cadence, text)
        case "slow" if eq:
            ms = _int(value, text, "slow=MS: a whole number of milliseconds >= 1", low=1)
            return Fault("slow", cadence, ms=ms)
        case "delay-headers" if eq:
            return Fault("delay-headers", cadence, seconds=_seconds(value, text))
        case "drop-terminal" | "split-reads" | "merge-reads":
            raise FaultSpecError(body, f"{name} takes no value", text)
        case "http" | "slow" | "delay-headers":
            raise FaultSpecError(body, f"{name}=… with a value", text)
    raise FaultSpecError(body, _KINDS_HELP, text)


def _parse_at(kind: str, where: str, cadence: Cadence, text: str) -> Fault:
    if kind not in ("cut", "stall", "error", "garble"):
        raise FaultSpecError(kind + "@", "cut@, stall@, error@ or garble@", text)
    place, eq, value = where.partition("=")
    unit, colon, number = place.partition(":")
    units = "frame:N or byte:N" if kind == "cut" else "frame:N"
    if not colon or unit not in ("frame", "byte") or (unit == "byte" and kind != "cut"):
        raise FaultSpecError(place, f"{units} after {kind}@", text)
    n = _int(number, text, f"{unit}:N with N a whole number >= 0", low=0)
    if kind == "cut":
        if eq:
            raise FaultSpecError(where, f"cut@{unit}:N with no value", text)
        return Fault("cut", cadence, frame=n) if unit == "frame" else Fault("cut", cadence, byte=n)
    if kind == "stall":
        if not eq:
            raise FaultSpecError(where, "stall@frame:N=S (S: seconds of silence)", text)
        return Fault("stall", cadence, frame=n, seconds=_seconds(value, text))
    if kind == "error":
        if eq:
            raise FaultSpecError(where, "error@frame:N with no value", text)
        return Fault("error", cadence, frame=n)
    if eq and value not in ("json", "utf8"):
        raise FaultSpecError(value, "json or utf8 after garble@frame:N=", text)
    how: Literal["json", "utf8"] = "utf8" if value == "utf8" else "json"
    return Fault("garble", cadence, frame=n, garble=how)


def _parse_http(value: str, cadence: Cadence, text: str) -> Fault:
    code, colon, option = value.partition(":")
    status = _int(code, text, "http=CODE with CODE from 400 to 599", low=400, high=599)
    retry_after = None
    if colon:
        name, eq, seconds = option.partition("=")
        if name != "retry-after" or not eq:
            raise FaultSpecError(option, "retry-after=R after http=CODE:", text)
        retry_after = _int(seconds, text, "retry-after=R in whole seconds >= 0", low=0)
    return Fault("http", cadence, status=status, retry_after=retry_after)


def _parse_cadence(when: str, text: str) -> Cadence:
    if when == "always":
        return Cadence("always")
    if when == "next":
        return Cadence("next")
    if "/" in when:
        raise FaultSpecError(when, "always, next or every=K after / (one cadence)", text)
    name, eq, k = when.partition("=")
    if name == "every" and eq:
        return Cadence("every", _int(k, text, "every=K with K a whole number >= 1", low=1))
    raise FaultSpecError(when, "always, next or every=K after /", text)


def _int(value: str, text: str, expected: str, *, low: int, high: int = MAX_INT) -> int:
    if not _INT.fullmatch(value) or not low <= int(value) <= high:
        raise FaultSpecError(value, expected, text)
    return int(value)


def _seconds(value: str, text: str) -> float:
    if not _SECONDS.fullmatch(value) or not 0 < float(value) <= MAX_SECONDS:
        raise FaultSpecError(value, "seconds: a number > 0 and at most 86400 (2, 0.5)", text)
    return float(value)
