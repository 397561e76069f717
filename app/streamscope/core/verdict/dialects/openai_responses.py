"""OpenAI Responses: the ``responses`` dialect's lint rules and the checks that apply them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

import zlib
from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads, tool_json
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "ResponsesChecks"]

_CONTENT_KINDS = ("response.output_text.", "response.refusal.", "response.content_part.")

_DONE_FIELD = {
    "response.output_text": "text",
    "response.refusal": "refusal",
    "response.function_call_arguments": "arguments",
    "response.reasoning_text": "text",
    "response.reasoning_summary_text": "text",
    "response.custom_tool_call_input": "input",
    "response.mcp_call_arguments": "arguments",
}
"""The streamed values: each family's ``.delta`` events join to its ``.done`` event's field."""
_DELTAS = {f"{family}.delta": family for family in _DONE_FIELD}
_DONES = {f"{family}.done": (family, field) for family, field in _DONE_FIELD.items()}


_LIFECYCLE = frozenset(
    (
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.failed",
        "response.incomplete",
    )
)
_CALL_TYPES = ("function_call", "custom_tool_call", "shell_call", "shell_call_output")


def _identity(item: Any) -> tuple[Any, Any, Any]:
    """An output item's identity as the openai SDK compares it: type, id (not for calls,
    which are known by call_id) and call_id."""
    if not isinstance(item, dict):
        return (None, None, None)
    kind = item.get("type")
    return (kind, None if kind in _CALL_TYPES else item.get("id"), item.get("call_id"))


def _part_key(family: str, obj: dict[str, Any]) -> tuple[str, Any, Any]:
    """Which streamed value an event is about: its family, output index and part."""
    out = obj.get("output_index")
    part = obj.get("content_index")
    if part is None:
        part = obj.get("summary_index")
    return (family, out if type(out) is int else None, part if type(part) is int else None)


class ResponsesChecks:
    """Responses API events: sequence numbers, output/content indexes, items done."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._seq: int | None = None
        self._first = True
        self._items: dict[int, list[Any]] = {}  # output_index -> [done, parts]
        # the streamed values: (family, output_index, part) -> [crc32, chars, deltas, done]
        # (a checksum, not the text: the linter keeps no copy of the answer)
        self._values: dict[tuple[str, Any, Any], list[Any]] = {}
        self._response_id: Any = None
        self._misrouted = False  # an event named an item or part never added
        self._last: tuple[str, Any, Any, list[Any]] | None = None  # the last delta's value
        self._added: dict[Any, tuple[tuple[Any, Any, Any], Any]] = {}  # identity, id

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = loads(ev.data)
        if type(obj) is not dict:
            return
        emit = self.emit
        kind = obj.get("type")
        if ev.event != "message" and ev.event != kind:
            emit("responses.event-name", n, f"event: {ev.event}, type: {kind}")
        if isinstance(kind, str):
            self._streamed(n, kind, obj)
            if kind in _LIFECYCLE:
                self._lifecycle(n, kind, obj)
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
                    if done is False:
                        emit("responses.item-not-done", n, f"output_index {index}")
            return
        items = self._items
        if kind == "response.output_item.added" or kind == "response.output_item.done":
            self._item_identity(n, kind, out, obj.get("item"))
        if kind == "response.output_item.added":
            if type(out) is not int or out != len(items) or out in items:
                emit("responses.output-index", n, f"output_index {out!r}, expected {len(items)}")
            items[out if type(out) is int else len(items)] = [False, 0]  # [done at, parts]
            return
        item = items.get(out) if type(out) is int else None
        if item is None:
            self._misrouted = True
            emit("responses.output-index", n, f"{kind}: output_index {out!r} was not added")
            return
        if kind == "response.output_item.done":
            item[0] = n  # (the frame it was done at)
            return
        part = obj.get("content_index")
        if kind == "response.content_part.added":
            if part != item[1]:
                emit("responses.output-index", n, f"content_index {part!r}, expected {item[1]}")
            item[1] += 1
        elif kind.startswith(_CONTENT_KINDS) and (type(part) is not int or part >= item[1]):
            emit("responses.output-index", n, f"{kind}: content_index {part!r} was not added")

    def _lifecycle(self, n: int, kind: str, obj: dict[str, Any]) -> None:
        """Every lifecycle event names the same response (the SDK raises otherwise)."""
        response = obj.get("response")
        rid = response.get("id") if isinstance(response, dict) else None
        if self._response_id is None:
            self._response_id = rid
        elif rid != self._response_id:
            self.emit("responses.response-id", n, f"{kind}: {self._response_id!r} -> {rid!r}")

    def _item_identity(self, n: int, kind: str, out: Any, item: Any) -> None:
        """The item an output_item.done closes is the one added at its output_index."""
        if not isinstance(item, dict):
            return
        key = out if type(out) is int else None
        if kind == "response.output_item.added":
            self._added[key] = (_identity(item), item.get("id"))
            return
        added = self._added.get(key)
        if added is None:
            return
        identity, item_id = added
        compatible = item_id == item.get("id") or (
            item_id is None and identity[0] in ("function_call", "custom_tool_call")
        )
        if identity != _identity(item) or not compatible:
            was, now = (identity[0], item_id), (item.get("type"), item.get("id"))
            self.emit("responses.item-identity", n, f"output_index {out}: added {was}, done {now}")

    def _value(self, key: tuple[str, Any, Any]) -> list[Any]:
        """A streamed value's [crc32, chars, deltas, done at frame]."""
        value = self._values.get(key)
        if value is None:
            value = self._values[key] = [0, 0, 0, None]
        return value

    def _streamed(self, n: int, kind: str, obj: dict[str, Any]) -> None:
        """Deltas and their ``.done``: no delta after it, the done value the joined deltas."""
        family = _DELTAS.get(kind)
        if family is not None:
            delta = obj.get("delta")
            out = obj.get("output_index")
            item = self._items.get(out) if type(out) is int else None
            if item is None or type(delta) is not str:
                return  # (an output_index not added: responses.output-index says so)
            part = obj.get("content_index")
            last = self._last
            if (
                last is not None
                and part is not None
                and last[2] == part
                and last[1] == out
                and last[0] == kind
            ):
                value = last[3]  # (the usual case: the same text part's next delta)
            else:
                value = self._value(_part_key(family, obj))
                self._last = (kind, out, part, value)
            if value[3] is not None:
                self.emit("responses.delta-after-done", n, f"{kind}, done at frame {value[3]}")
            elif item[0] is not False:
                self.emit("responses.delta-after-done", n, f"{kind}, item done at frame {item[0]}")
            value[0] = zlib.crc32(delta.encode(), value[0])
            value[1] += len(delta)
            value[2] += 1
            return
        done = _DONES.get(kind)
        if done is None:
            return
        family, field = done
        value = self._value(_part_key(family, obj))
        value[3] = n
        full = obj.get(field)
        if not value[2] or not isinstance(full, str) or self._misrouted:
            return  # (no deltas: nothing to compare; misrouted ones: output-index)
        if len(full) != value[1] or zlib.crc32(full.encode()) != value[0]:
            what = f"{kind}.{field}: {len(full)} chars, the {value[2]} deltas join to"
            same = " the same number but other" if len(full) == value[1] else f" {value[1]}"
            self.emit("responses.done-mismatch", n, f"{what}{same} chars")

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
        "responses.response-id",
        "error",
        "the lifecycle events name different responses (response.id changes)",
        "response.created, in_progress and completed carry the same response; the openai "
        "SDK's stream raises 'Lifecycle response identity changed'. Two streams were joined "
        "or a gateway rewrote the id on some events only.",
    ),
    Rule(
        "responses.item-identity",
        "error",
        "an output_item.done closes another item than the one added at its output_index",
        "The type, id and call_id of response.output_item.done are the added item's; the "
        "openai SDK's stream raises 'Completed output item identity changed'.",
    ),
    Rule(
        "responses.delta-after-done",
        "error",
        "a delta arrived after its part's or item's .done event",
        "A .done event closes its text, arguments or item: clients finalise it there "
        "(the SDK's done events carry the full value) and what comes after is lost or "
        "appended to a finished value. Events were reordered on the way.",
    ),
    Rule(
        "responses.done-mismatch",
        "error",
        "a .done event's full value differs from its joined deltas",
        "function_call_arguments.done (output_text.done...) repeats the whole value: clients "
        "that stream the deltas and clients that take the done value see two different "
        "answers. Deltas were lost, doubled or rewritten on the way.",
    ),
    Rule(
        "responses.event-name",
        "warning",
        "the SSE event name does not match the data's type",
        "The openai SDK reads the data's type, other clients dispatch on the event name; "
        "when they disagree, two clients see two different streams.",
    ),
    Rule(
        "responses.item-not-done",
        "warning",
        "an output item was added but never done before the response ended",
        "Every response.output_item.added has its response.output_item.done before "
        "response.completed.",
    ),
    Rule(
        "responses.event-without-data",
        "error",
        "a block with an event:, id: or retry: line but no data",
        "The openai SDK dispatches it anyway and parses its empty data as JSON: the stream "
        "fails there (JSONDecodeError). Send keep-alives as comments (': ping'), and every "
        "event with its data.",
    ),
)

LINT = DialectLint(
    "responses",
    "OpenAI Responses",
    RULES,
    _checks,
    done_sentinel=True,
    no_data="responses.event-without-data",
)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
