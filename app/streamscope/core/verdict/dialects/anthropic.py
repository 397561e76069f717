"""Anthropic messages: the ``anthropic`` dialect's lint rules and the checks that apply them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads, tool_json
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "AnthropicChecks"]

_DELTA_BLOCKS = {
    "text_delta": ("text",),
    "citations_delta": ("text",),
    "input_json_delta": ("tool_use", "server_tool_use", "mcp_tool_use"),
    "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",),
}


class AnthropicChecks:
    """Messages stream events: the order, block indexes and delta types."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._state = "start"  # start, message, delta, stopped
        self._next = 0
        self._open: tuple[int, str] | None = None

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = loads(ev.data)
        if type(obj) is not dict:
            return
        kind = obj.get("type")
        emit = self.emit
        if ev.event == "message":  # (no event: line; Anthropic has no "message" event)
            emit("anthropic.event-line-missing", n, "")
        elif ev.event != kind:
            emit("anthropic.event-name", n, f"event: {ev.event}, type: {kind}")
        if kind in ("ping", "error"):
            return
        order = "anthropic.event-order"
        state, open_block = self._state, self._open
        index = obj.get("index")
        if kind == "message_start":
            if state != "start":
                emit(order, n, "a second message_start")
            self._state = "message"
            return
        if state == "start":
            emit(order, n, f"{kind} before message_start")
            self._state = state = "message"
        if kind == "content_block_start":
            if state != "message" or open_block is not None:
                where = f"block {open_block[0]} is still open" if open_block else f"after {state}"
                emit(order, n, f"content_block_start while {where}")
            if index != self._next:
                emit("anthropic.block-index", n, f"index {index!r}, expected {self._next}")
            block = obj.get("content_block")
            btype = block.get("type") if isinstance(block, dict) else None
            i = index if type(index) is int else self._next
            self._open = (i, str(btype))
            self._next = i + 1
        elif kind == "content_block_delta":
            if open_block is None:
                emit(order, n, "content_block_delta outside a block")
                return
            if index != open_block[0]:
                emit("anthropic.block-index", n, f"index {index!r}, open block {open_block[0]}")
            delta = obj.get("delta")
            dtype = delta.get("type") if isinstance(delta, dict) else None
            allowed = _DELTA_BLOCKS.get(str(dtype))
            if allowed is not None and open_block[1] not in allowed:
                emit("anthropic.delta-type", n, f"{dtype} in a {open_block[1]} block")
        elif kind == "content_block_stop":
            if open_block is None:
                emit(order, n, "content_block_stop outside a block")
            elif index != open_block[0]:
                emit("anthropic.block-index", n, f"index {index!r}, open block {open_block[0]}")
            self._open = None
        elif kind == "message_delta":
            delta = obj.get("delta")
            if not isinstance(delta, dict) or delta.get("stop_reason") is None:
                emit("anthropic.stop-reason-missing", n, "")
            usage = obj.get("usage")
            if not isinstance(usage, dict) or type(usage.get("output_tokens")) is not int:
                emit("anthropic.delta-usage", n, f"usage: {usage!r}"[:80])
            if open_block is not None:
                emit(order, n, f"message_delta while block {open_block[0]} is open")
                self._open = None
            elif state != "message":
                emit(order, n, f"message_delta after {state}")
            self._state = "delta"
        elif kind == "message_stop":
            if state != "delta" or open_block is not None:
                emit(order, n, "message_stop before message_delta")
            self._state = "stopped"

    def finish(self, turn: Turn) -> None:
        tool_json(turn, "anthropic.input-json", self.emit)


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return AnthropicChecks(emit)


RULES: tuple[Rule, ...] = (
    Rule(
        "anthropic.event-order",
        "error",
        "events out of order (message_start, blocks, message_delta, message_stop)",
        "The SDKs are state machines over this order; a proxy reordering or dropping events "
        "breaks them. Check what sits between the client and the API.",
    ),
    Rule(
        "anthropic.block-index",
        "error",
        "a content block index is not the open block's (or not the next one)",
        "Blocks are numbered 0, 1, 2... and their deltas and stop name the open block. "
        "Events were lost or interleaved.",
    ),
    Rule(
        "anthropic.delta-type",
        "error",
        "a delta's type does not match its block's type",
        "text_delta goes in text blocks, input_json_delta in tool_use blocks, thinking and "
        "signature deltas in thinking blocks.",
    ),
    Rule(
        "anthropic.input-json",
        "error",
        "a tool_use block's input_json_delta pieces do not concatenate to valid JSON",
        "Pieces were lost or reordered, or max_tokens cut the call short.",
    ),
    Rule(
        "anthropic.stop-reason-missing",
        "error",
        "message_delta has no stop_reason (null)",
        "stop_reason is null only in message_start; the message_delta sets it. Without it "
        "the SDK's final message looks unfinished and clients cannot tell end_turn from "
        "max_tokens or tool_use (an agent loop skips the tool calls).",
    ),
    Rule(
        "anthropic.delta-usage",
        "error",
        "message_delta has no usage.output_tokens",
        "The Anthropic SDK's stream accumulator reads event.usage.output_tokens on every "
        "message_delta and fails without it. Servers imitating the API often leave usage out.",
    ),
    Rule(
        "anthropic.event-line-missing",
        "error",
        "an event has no 'event:' line",
        "The Anthropic SDKs dispatch on the SSE event name and skip events without one: "
        "this event never reaches the client. Send 'event: <type>' before each data line.",
    ),
    Rule(
        "anthropic.event-name",
        "warning",
        "the SSE event name does not match the data's type",
        "Clients dispatch on either; when they disagree, two clients see two different streams.",
    ),
)

LINT = DialectLint("anthropic", "Anthropic messages", RULES, _checks, done_sentinel=True)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
