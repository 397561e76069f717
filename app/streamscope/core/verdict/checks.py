"""The per-frame checks: SSE framing (on a frame's exact bytes) here, and what a dialect's
checks are (:class:`DialectChecks`, :class:`DialectLint`): each dialect's own live beside its
rules in :mod:`streamscope.core.verdict.dialects` (on the decoded event the pipeline's decoder
produced, and the events its dialect parser made).

A check reports through ``emit(rule_id, frame, detail)``; it never decodes bytes itself:
frames come from :class:`~streamscope.core.turn.pipeline.StreamPipeline`, events from the
dialect's parser, tool-call arguments from the reducer's :class:`~streamscope.core.turn.model.Turn`.
The JSON of an event's data is read again here (``orjson``) for the fields the events do not
carry (``object``, ``created``, indexes, ``sequence_number``...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent, Terminal
from streamscope.core.wire.sse import RawFrame, SSEEvent

__all__ = [
    "DialectChecks",
    "DialectLint",
    "Emit",
    "SSEFrameChecks",
    "loads",
    "skip",
    "tool_json",
]

Emit = Callable[[str, int | None, str], None]

_BOM = b"\xef\xbb\xbf"
_KNOWN_FIELDS = frozenset((b"data", b"event", b"id", b"retry"))


def loads(data: str) -> Any:
    """The JSON of an event's data, or ``None`` when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _line_ending(raw: bytes) -> str | None:
    """``crlf``, ``lf``, ``cr``, ``mixed`` or ``None`` (no line end) for one frame's bytes."""
    cr = raw.count(b"\r")
    lf = raw.count(b"\n")
    if not cr:
        return "lf" if lf else None
    if not lf:
        return "cr"
    crlf = raw.count(b"\r\n")
    if crlf == cr == lf:
        return "crlf"
    return "mixed"


class SSEFrameChecks:
    """Framing rules over each SSE frame's bytes (once per stream for the style rules).

    ``data_only``: the rule id to report a line other than ``data: <value>`` with (a comment,
    an ``event:``/``id:``/``retry:`` line, ``data:`` without its space), for a dialect whose
    SDK reads nothing else (``None``: every SSE line is fine). ``no_data``: the rule id to
    report a block with ``event:``, ``id:`` or ``retry:`` but no ``data:`` with, for a
    dialect whose SDK dispatches it anyway (with empty data)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.data_only: str | None = None
        self.no_data: str | None = None
        self._ending: str | None = None
        self._mixed = False
        self._nospace = False
        self._extra = False
        self._unknown: set[bytes] = set()

    @property
    def plain_lf(self) -> bool:
        """Whether the frames so far end lines with LF (then a plain "data: <value>\n\n"
        frame has nothing to check: the caller skips :meth:`frame` for it)."""
        return self._ending == "lf"

    def frame(self, n: int, frame: RawFrame) -> None:
        raw = frame.raw
        if n == 0 and raw.startswith(_BOM):
            self.emit("sse.bom", 0, "")
            raw = raw[3:]
        if not self._mixed:
            ending = _line_ending(raw)
            if ending == "mixed" or (
                ending is not None and self._ending is not None and ending != self._ending
            ):
                self._mixed = True
                was = self._ending or ending
                self.emit("sse.mixed-line-endings", n, f"{was} before, {ending} here")
            elif ending is not None:
                self._ending = ending
        if frame.event is None and not frame.comments and not raw.strip(b"\r\n"):
            return  # blank lines
        data_only = self.data_only
        dataless: bytes | None = None  # a field line of a block that dispatched nothing
        for line in raw.splitlines():
            if not line:
                continue
            if line[:3] == _BOM:
                shown = line[3:].partition(b":")[0].decode("utf-8", "replace")[:40]
                self.emit("sse.bom-inside", n, f"the {shown!r} line after U+FEFF")
                continue
            if data_only is not None and line[:6] != b"data: ":
                self.emit(data_only, n, _line_kind(line))
            if line[0] == 58:  # ":" (a comment)
                continue
            name, colon, value = line.partition(b":")
            if name not in _KNOWN_FIELDS:
                if name not in self._unknown:
                    self._unknown.add(name)
                    shown = name.decode("utf-8", "replace")[:40]
                    self.emit("sse.unknown-field", n, repr(shown))
                continue
            if dataless is None and frame.event is None and name != b"data":
                dataless = line
            if colon and value and value[:1] != b" " and not self._nospace:
                self._nospace = True
                self.emit("sse.no-space-after-colon", n, name.decode())
            elif value[:2] == b"  " and not self._extra:
                self._extra = True
                self.emit("sse.extra-space-after-colon", n, name.decode())
            if name == b"retry":
                value = value[1:] if value[:1] == b" " else value
                if not value.isdigit():
                    shown = value.decode("utf-8", "replace")[:40]
                    self.emit("sse.retry", n, f"retry: {shown!r}")
        if (
            dataless is not None
            and self.no_data is not None
            and frame.complete
            and getattr(frame, "role", None) != "oversized"  # (its data line broke the cap)
        ):
            self.emit(self.no_data, n, repr(dataless.decode("utf-8", "replace")[:40]))


def _line_kind(line: bytes) -> str:
    """What a line other than ``data: <value>`` is, in a few words (the same words for the
    same kind of line: one finding counts them)."""
    if line[:1] == b":":
        return "a comment (keep-alive)"
    name, colon, _ = line.partition(b":")
    if name == b"data":
        return "data: without the space after the colon"
    if colon and name in _KNOWN_FIELDS:
        return f"an {name.decode()}: line" if name == b"event" or name == b"id" else "a retry: line"
    return f"a line that is no field ({name.decode('utf-8', 'replace')[:20]!r})"


class DialectChecks(Protocol):
    """One stream's dialect rules (a fresh object per stream)."""

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None: ...

    def finish(self, turn: Turn) -> None: ...


def tool_json(turn: Turn, rule_id: str, emit: Emit) -> None:
    """``rule_id`` for every tool call whose arguments (as the reducer joined them) are not
    JSON, at the frame of its last fragment. Blank arguments are a call without any."""
    for call in turn.tool_calls:
        if call.arguments.strip() and not call.arguments_parse():
            last = call.fragments[-1].frame if call.fragments else -1
            name = call.name or "?"
            emit(rule_id, last if last >= 0 else None, f"{name}: {call.arguments[:60]!r}")


def skip(events: list[StreamEvent]) -> bool:
    """Frames the dialect rules do not look at: malformed ones (a rule of their own) and the
    terminal ``[DONE]``."""
    return any(type(e) in (MalformedFrame, Terminal) for e in events)


@dataclass(frozen=True, slots=True)
class DialectLint:
    """A dialect's lint rules: its ``family`` (the rules' id prefix), the ``title`` the rule
    table gives them, the ``rules`` in documented order, and ``checks(emit, request)`` making
    one stream's :class:`DialectChecks` (``request``: the request body, when known).

    ``done_sentinel``: a bare ``data: [DONE]`` after the dialect's terminal event is a
    harmless gateway habit (``stream.done-sentinel``, info), not data after the terminal
    (nor a malformed frame) — for a dialect whose SDK stops before it or skips it.
    ``data_only``: the rule id for an SSE line other than ``data: <value>``, when the
    dialect's SDK reads nothing else; ``no_data``: the rule id for a block with fields but
    no ``data:``, when the dialect's SDK dispatches it (:class:`SSEFrameChecks`)."""

    family: str
    title: str
    rules: tuple[Rule, ...]
    checks: Callable[[Emit, dict[str, Any] | None], DialectChecks]
    done_sentinel: bool = False
    data_only: str | None = None
    no_data: str | None = None
