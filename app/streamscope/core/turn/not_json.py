"""Payloads that are not JSON at all, without parsing (and failing on) each one.

Every dialect's frames are JSON, so a payload whose first character cannot start JSON is
malformed whatever follows. :class:`NotJSON` gives such a frame the event its parser would, at
the cost of a dict lookup: the first payload with a given first character goes to the parser;
when the parser calls it invalid JSON, later ones get the same reason without being parsed.
(Raising, formatting and recording the JSON error per frame was 75 % of a replay of 64 MB of
``data: x`` frames.) Each is still a :class:`~streamscope.core.wire.events.MalformedFrame` of
its own frame, so the Frames tab marks it; the same data reuses the same (frozen) event.
"""

from __future__ import annotations

from typing import Final

from streamscope.core.wire.dialects.base import StreamParser, excerpt
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["JSON_START", "NotJSON"]

JSON_START: Final = frozenset(' \t\r\n{["-0123456789tfn')
"""The characters JSON text can start with (whitespace included): a payload that starts with
another one (or is empty) goes to :meth:`NotJSON.events` instead of the parser."""

MEMO: Final = 64
"""First characters remembered at most."""


class NotJSON:
    """One stream's memory of the payloads that cannot start JSON; see the module docstring."""

    __slots__ = ("_data", "_last", "_reasons")

    def __init__(self) -> None:
        self._reasons: dict[str, str] = {}  # the parser's reason, by first character
        self._last = MalformedFrame("", "")  # the last event given
        self._data: str | None = None  # ... and the data it was given for

    def events(self, parser: StreamParser, ev: SSEEvent) -> list[StreamEvent]:
        """The events of ``ev``, whose data's first character cannot start JSON."""
        data = ev.data
        reason = self._reasons.get(data[:1])
        if reason is None:
            events = parser.parse(ev)
            if (
                len(events) == 1
                and type(first := events[0]) is MalformedFrame
                and first.reason.startswith("invalid JSON")
                and first.excerpt == excerpt(data)
                and len(self._reasons) < MEMO
            ):
                self._reasons[data[:1]] = first.reason
                self._last = first
                self._data = data
            return events
        if data != self._data or reason is not self._last.reason:
            self._last = MalformedFrame(reason, excerpt(data))
            self._data = data
        return [self._last]
