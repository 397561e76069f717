"""Conversations as the app sees them, and the converters to and from database rows.

The domain objects (:class:`ConversationSummary`, :class:`StoredConversation`,
:class:`StoredMessage`, :class:`StoredTurn`) never carry SQL; the ``*_from_row`` and
``*_to_json`` functions are the only place where a row's column order or a JSON column's
shape is known. :func:`turn_from_stored` and :func:`to_chat_history` rebuild the window's
:class:`~streamscope.core.turn.model.Turn` and
:class:`~streamscope.core.store.history.ChatHistory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from streamscope.core.store.history import ChatHistory, Node
from streamscope.core.turn.model import Timings, ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Message, ToolCall, ToolDefinition

__all__ = [
    "ConversationSummary",
    "StoredConversation",
    "StoredMessage",
    "StoredTurn",
    "active_path",
    "calls_from_json",
    "calls_to_json",
    "dumps_json",
    "message_from_row",
    "summary_from_row",
    "timings_from_json",
    "timings_to_dict",
    "to_chat_history",
    "tools_from_json",
    "tools_to_json",
    "turn_from_row",
    "turn_from_stored",
]


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A row of the conversation list. Times are Unix seconds."""

    id: int
    title: str
    endpoint_name: str | None
    model: str | None
    created: float
    updated: float


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """What is kept of an assistant turn besides its text. ``status`` is ``streaming``
    until :meth:`Store.finish_assistant_message`; ``alt_group`` is shared by regenerated
    alternatives of one answer (the first one's message id), ``chosen`` marks the one in
    the context. ``timings`` are the live monotonic times (differences are meaningful).
    ``model``: the model the request asked for (``None`` for answers saved before it was
    kept). ``verdict``: its short verdict line (``""``: checked, nothing to say; ``None``:
    never checked) as made by the rules named ``verdict_rules`` (see :meth:`kept_verdict`)."""

    message_id: int
    status: str
    outcome: Outcome | None
    reason: str
    finish_reason: str | None
    usage: dict[str, Any] | None
    input_tokens: int | None
    output_tokens: int | None
    timings: Timings | None
    warnings: tuple[str, ...]
    capture_id: str | None
    alt_group: int
    chosen: bool
    http_status: int | None = None
    terminal_signal: str | None = None
    bytes_received: int = 0
    events: int = 0
    malformed_frames: int = 0
    model: str | None = None
    verdict: str | None = None
    verdict_rules: str | None = None

    def kept_verdict(self, rules: str) -> str | None:
        """The verdict line kept with the turn if the rules named ``rules`` (the current
        :func:`~streamscope.core.verdict.catalog.rules_digest`) made it; ``None`` when it
        needs checking again: never checked, or by other rules."""
        if self.verdict is None or self.verdict_rules != rules:
            return None
        return self.verdict


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message; assistant messages carry their :class:`StoredTurn`. ``parent_id``: the
    message it follows (``None``: it opens the conversation); messages sharing a parent are
    alternatives of one step, and ``chosen`` marks the one shown."""

    id: int
    conversation_id: int
    seq: int
    role: str
    text: str
    reasoning: str
    reasoning_channel: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    name: str | None
    created: float
    turn: StoredTurn | None = None
    parent_id: int | None = None
    chosen: bool = True


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """A conversation with its most recent messages (``has_more``: older ones exist; page
    them with :meth:`Store.load_messages`)."""

    summary: ConversationSummary
    tools: tuple[ToolDefinition, ...]
    messages: list[StoredMessage] = field(default_factory=list)
    has_more: bool = False

    @property
    def id(self) -> int:
        return self.summary.id

    @property
    def title(self) -> str:
        return self.summary.title


# -- converters ----------------------------------------------------------------------------


def dumps_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def summary_from_row(row: Sequence[Any]) -> ConversationSummary:
    return ConversationSummary(row[0], row[1], row[2], row[3], row[4], row[5])


def tools_to_json(tools: Sequence[ToolDefinition]) -> str:
    return dumps_json(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    )


def tools_from_json(text: str) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(t["name"], t.get("description", ""), t.get("parameters") or {})
        for t in orjson.loads(text)
    )


def calls_to_json(calls: Sequence[ToolCall | ToolCallState]) -> str:
    return dumps_json([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls])


def calls_from_json(text: str) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(c.get("id"), c.get("name") or "", c.get("arguments") or "")
        for c in orjson.loads(text)
    )


_TIMING_FIELDS = ("request_sent", "headers", "first_byte", "first_token", "last_token", "end")


def timings_to_dict(t: Timings) -> dict[str, float | None]:
    return {name: getattr(t, name) for name in _TIMING_FIELDS}


def timings_from_json(text: str | None) -> Timings | None:
    if text is None:
        return None
    data = orjson.loads(text)
    return Timings(**{name: data.get(name) for name in _TIMING_FIELDS})


def turn_from_row(row: Sequence[Any]) -> StoredTurn | None:
    if row[0] is None:
        return None
    return StoredTurn(
        message_id=row[0],
        status=row[1],
        outcome=Outcome(row[2]) if row[2] else None,
        reason=row[3],
        finish_reason=row[4],
        usage=orjson.loads(row[5]) if row[5] else None,
        input_tokens=row[6],
        output_tokens=row[7],
        timings=timings_from_json(row[8]),
        warnings=tuple(orjson.loads(row[9])),
        capture_id=row[10],
        alt_group=row[11] if row[11] is not None else row[0],
        chosen=bool(row[12]),
        http_status=row[13],
        terminal_signal=row[14],
        bytes_received=row[15],
        events=row[16],
        malformed_frames=row[17],
        model=row[18],
        verdict=row[19],
        verdict_rules=row[20],
    )


def message_from_row(row: Sequence[Any]) -> StoredMessage:
    return StoredMessage(
        id=row[0],
        conversation_id=row[1],
        seq=row[2],
        role=row[3],
        text=row[4],
        reasoning=row[5],
        reasoning_channel=row[6],
        tool_calls=calls_from_json(row[7]),
        tool_call_id=row[8],
        name=row[9],
        created=row[10],
        parent_id=row[11],
        chosen=bool(row[12]),
        turn=turn_from_row(row[13:]),
    )


def turn_from_stored(message: StoredMessage) -> Turn:
    """The :class:`Turn` an assistant message stands for (tool-call fragments and frames
    are not stored: they live in the capture). Its ``model`` is the one the request asked
    for (what the answer's card is labelled with)."""
    st = message.turn
    calls = tuple(
        ToolCallState(i, c.id, c.name or None, c.arguments, (), done=True)
        for i, c in enumerate(message.tool_calls)
    )
    if st is None:
        return Turn(text=message.text, reasoning=message.reasoning, tool_calls=calls)
    return Turn(
        text=message.text,
        reasoning=message.reasoning,
        reasoning_channel=message.reasoning_channel,
        tool_calls=calls,
        finish_reason=st.finish_reason,
        usage=st.usage,
        input_tokens=st.input_tokens,
        output_tokens=st.output_tokens,
        timings=st.timings or Timings(),
        warnings=st.warnings,
        malformed_frames=st.malformed_frames,
        events=st.events,
        bytes_received=st.bytes_received,
        terminal_signal=st.terminal_signal,
        outcome=st.outcome,
        reason=st.reason,
        status=st.http_status,
        model=st.model,
    )


def to_chat_history(messages: Sequence[StoredMessage]) -> ChatHistory:
    """Rebuild the window's :class:`ChatHistory`: the tree of every message given, with
    the alternatives they chose. A message whose parent is not among them (older messages
    not loaded) follows the root, and the root keeps that parent's id as its key."""
    history = ChatHistory()
    nodes: dict[int, Node] = {}
    chosen: dict[int, int] = {}  # id(parent node) -> index of its last chosen child
    for msg in sorted(messages, key=lambda m: m.seq):
        parent = nodes.get(msg.parent_id) if msg.parent_id is not None else None
        if parent is None:
            parent = history.root
            if msg.parent_id is not None:
                history.root.key = msg.parent_id
        item: Message | Turn
        if msg.role == "assistant":
            item = turn_from_stored(msg)
        elif msg.role == "tool":
            item = Message("tool", msg.text, tool_call_id=msg.tool_call_id, name=msg.name)
        else:
            item = Message("user", msg.text)
        node = parent.add(Node(item, key=msg.id))
        if msg.chosen:
            chosen[id(parent)] = len(parent.children) - 1
        nodes[msg.id] = node
    for parent in [history.root, *nodes.values()]:
        if parent.children:
            parent.chosen = chosen.get(id(parent), len(parent.children) - 1)
    return history


def active_path(messages: Sequence[StoredMessage]) -> list[StoredMessage]:
    """The shown path through ``messages``: from the first message, each step's chosen
    alternative (the last chosen one; the last one when none is)."""
    by_parent: dict[int | None, list[StoredMessage]] = {}
    ids = {m.id for m in messages}
    for msg in sorted(messages, key=lambda m: m.seq):
        parent = msg.parent_id if msg.parent_id in ids else None
        by_parent.setdefault(parent, []).append(msg)
    path: list[StoredMessage] = []
    children = by_parent.get(None, [])
    while children:
        chosen = [m for m in children if m.chosen]
        step = chosen[-1] if chosen else children[-1]
        path.append(step)
        children = by_parent.get(step.id, [])
    return path
