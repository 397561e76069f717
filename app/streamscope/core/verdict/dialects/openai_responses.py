"""OpenAI Responses: the ``responses`` dialect's lint rules and the checks that apply them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads, tool_json
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "ResponsesChecks"]

_CONTENT_KINDS = ("response.output_text.", "response.refusal.", "response.content_part.")


class ResponsesChecks:
    """Responses API events: sequence numbers, output/content indexes, items done."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._seq: int | None = None
        self._first = True
        self._items: dict[int, list[Any]] = {}  # output_index -> [done, parts]

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = loads(ev.data)
        if type(obj) is not dict:
            return
        emit = self.emit
        kind = obj.get("type")
        seq = obj.get("sequence_number")
        if type(seq) is int:
            if self._seq is not None and seq != self._seq + 1:
                emit("responses.sequence-number", n, f"{seq} after {self._seq}")
            self._seq = seq
        elif self._seq is not None and kind is not None:
            emit("responses.sequence-number", n, f"{kind} has none")
        if self._first:
            self._first = False
            if kind != "response.created" and kind != "error":
                emit("responses.created-first", n, f"{kind!r}")
        out = obj.get("output_index")
        if out is None or not isinstance(kind, str):
            if kind in ("response.completed", "response.incomplete"):
                for index, (done, _) in sorted(self._items.items()):
                    if not done:
                        emit("responses.item-not-done", n, f"output_index {index}")
            return
        items = self._items
        if kind == "response.output_item.added":
            if type(out) is not int or out != len(items) or out in items:
                emit("responses.output-index", n, f"output_index {out!r}, expected {len(items)}")
            items[out if type(out) is int else len(items)] = [False, 0]
            return
        item = items.get(out) if type(out) is int else None
        if item is None:
            emit("responses.output-index", n, f"{kind}: output_index {out!r} was not added")
            return
        if kind == "response.output_item.done":
            item[0] = True
            return
        part = obj.get("content_index")
        if kind == "response.content_part.added":
            if part != item[1]:
                emit("responses.output-index", n, f"content_index {part!r}, expected {item[1]}")
            item[1] += 1
        elif kind.startswith(_CONTENT_KINDS) and (type(part) is not int or part >= item[1]):
            emit("responses.output-index", n, f"{kind}: content_index {part!r} was not added")

    def finish(self, turn: Turn) -> None:
        tool_json(turn, "responses.function-call-json", self.emit)


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return ResponsesChecks(emit)


RULES: tuple[Rule, ...] = (
    Rule(
        "responses.sequence-number",
        "error",
        "sequence_number does not go up by one",
        "Every event's sequence_number is the previous one plus one: a gap means lost events, "
        "a repeat or a step back means reordering.",
    ),
    Rule(
        "responses.created-first",
        "error",
        "the first event is not response.created",
        "Clients take the response id and model from response.created; without it they "
        "have neither.",
    ),
    Rule(
        "responses.output-index",
        "error",
        "an output_index or content_index names no item or part that was added",
        "Items are announced by response.output_item.added and parts by "
        "response.content_part.added, in order, before their deltas.",
    ),
    Rule(
        "responses.function-call-json",
        "error",
        "a function call's arguments do not concatenate to valid JSON",
        "Argument deltas were lost or reordered, or the output limit cut the call short.",
    ),
    Rule(
        "responses.item-not-done",
        "warning",
        "an output item was added but never done before the response ended",
        "Every response.output_item.added has its response.output_item.done before "
        "response.completed.",
    ),
)

LINT = DialectLint("responses", "OpenAI Responses", RULES, _checks)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
