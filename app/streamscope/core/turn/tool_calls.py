"""Tool calls as they stream: where each fragment goes (the rules, in one place).

A fragment with an ``index`` belongs to the call with that index — unless it names another
id than the call has, which starts a new call (an index reused). A fragment without an index
goes to the call with its id, else (no id, no name) continues the last call, else starts a
new one placed by position. Every such guess is a turn warning. Calls keep their position in
the turn: the key every view keeps them by.
"""

from __future__ import annotations

from collections.abc import Callable

from streamscope.core.turn.model import Fragment, ToolCallState, parse_arguments

__all__ = ["ToolCalls"]


class _Call:
    __slots__ = ("arguments", "done", "fragments", "id", "index", "name", "parts", "position")

    def __init__(self, position: int, index: int, id: str | None, name: str | None) -> None:
        self.position = position
        self.index = index
        self.id = id
        self.name = name
        self.parts: list[str] = []
        self.fragments: list[Fragment] = []
        self.arguments: str | None = None  # from ToolCallDone when no fragments came
        self.done = False

    def text(self) -> str:
        if self.parts:
            if len(self.parts) > 1:
                self.parts[:] = ["".join(self.parts)]
            return self.parts[0]
        return self.arguments or ""

    def freeze(self) -> ToolCallState:
        text = self.text()
        parses, partial = parse_arguments(text)
        return ToolCallState(
            self.index,
            self.id,
            self.name,
            text,
            tuple(self.fragments),
            self.done,
            self.position,
            parses,
            partial,
        )


class ToolCalls:
    """A turn's tool calls; ``warn`` is told of every guess."""

    def __init__(self, warn: Callable[[str], None]) -> None:
        self._warn = warn
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._changed: set[int] = set()  # positions changed since take_changed()

    def started(self, index: int | None, id: str | None, name: str | None) -> None:
        """A call was announced."""
        self._call_for(index, id, name)

    def fragment(
        self, index: int | None, id: str | None, name: str | None, text: str, t: float, frame: int
    ) -> bool:
        """An arguments fragment arrived; whether it brought any text."""
        call = self._call_for(index, id, name)
        if not text:
            return False
        call.parts.append(text)
        call.fragments.append(Fragment(t, text, frame))
        return True

    def done(self, index: int | None, arguments: str | None) -> None:
        """The provider closed a call (``arguments``: its final text, if it sent one)."""
        call = self._by_index.get(index) if index is not None else None
        if call is None and index is None and self._calls:
            call = self._calls[-1]
        if call is None:
            call = self._call_for(index, None, None)
        call.done = True
        self._changed.add(call.position)
        if arguments is None:
            return
        if not call.parts:
            call.arguments = arguments
        elif call.text() != arguments:
            self._warn(
                f"tool call {call.index}: final arguments differ from the fragments;"
                " kept the fragments"
            )

    def finish(self) -> None:
        """The turn ended: every call is done; arguments that are not JSON are warned of."""
        for call in self._calls:
            if not call.done:
                call.done = True
                self._changed.add(call.position)
            if not parse_arguments(call.text())[0]:
                name = call.name or "?"
                self._warn(f"tool call {call.index} ({name}): arguments are not valid JSON")

    def take_changed(self) -> tuple[ToolCallState, ...]:
        """The calls changed since the last call, whole so far, by position."""
        changed = tuple(self._calls[p].freeze() for p in sorted(self._changed))
        self._changed.clear()
        return changed

    def freeze(self) -> tuple[ToolCallState, ...]:
        """Every call, whole so far."""
        return tuple(c.freeze() for c in self._calls)

    def _call_for(self, index: int | None, id: str | None, name: str | None) -> _Call:
        calls = self._calls
        if index is None:
            call = None
            if id is not None:
                call = next((c for c in calls if c.id == id), None)
            elif name is None and calls:
                call = calls[-1]
            if call is None:
                self._warn("tool call without index: placed by position")
                call = self._new(len(calls), id, name)
        else:
            call = self._by_index.get(index)
            if call is None:
                call = self._new(index, id, name)
            elif id is not None and call.id is not None and id != call.id:
                self._warn(
                    f"tool call index {index} reused for a different id ({call.id} -> {id}):"
                    " kept as separate calls"
                )
                call = self._new(index, id, name)
        if call.id is None and id is not None:
            call.id = id
        if call.name is None and name:
            call.name = name
        self._changed.add(call.position)
        return call

    def _new(self, index: int, id: str | None, name: str | None) -> _Call:
        call = _Call(len(self._calls), index, id, name)
        self._calls.append(call)
        self._by_index[index] = call
        return call
