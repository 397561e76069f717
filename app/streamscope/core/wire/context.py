"""How much of a conversation a request sends: the context policy and the cut it makes.

A request is built from the whole stored conversation. An endpoint may limit what is sent with
a :class:`ContextPolicy`: the whole conversation (the default), the last N *exchanges*, or a
size budget. An exchange is a user message and everything that answers it — assistant turns,
tool calls and their results, the answers after them — up to the next user message. A cut
falls only between exchanges, so what is sent always opens with a user message: never with
an ``assistant`` message (Anthropic and Gemini refuse it) nor with a tool result whose call
was cut off (every OpenAI-compatible server refuses that). The last exchange — the one being
answered — is always sent, even when it alone exceeds the budget (:attr:`ContextCut.over_budget`
says so).

:func:`apply_policy` returns the messages to send and a :class:`ContextCut` that says, in the
words the composer and the Request tab show, what was left out: ``sending 201 of 727 messages
— policy: last 100 exchanges``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from streamscope.core.wire.conversation import Message
from streamscope.core.wire.sizes import format_bytes

__all__ = [
    "POLICY_KINDS",
    "ContextCut",
    "ContextPolicy",
    "PolicyKind",
    "apply_policy",
    "body_messages",
    "exchange_starts",
    "message_size",
]

PolicyKind = Literal["all", "exchanges", "budget"]
POLICY_KINDS: tuple[PolicyKind, ...] = ("all", "exchanges", "budget")


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    """What a request sends of the conversation: ``all`` of it; the last ``limit``
    ``exchanges``; or whole exchanges from the end while their size stays within a
    ``budget`` of ``limit`` bytes (UTF-8 of the messages' text, tool-call names and arguments).
    """

    kind: PolicyKind = "all"
    limit: int = 0

    def __post_init__(self) -> None:
        if self.kind not in POLICY_KINDS:
            raise ValueError(f"unknown context policy {self.kind!r}")
        if self.kind != "all" and self.limit < 1:
            raise ValueError(f"the {self.kind!r} policy needs a limit of at least 1")

    def words(self) -> str:
        """``whole conversation``, ``last 100 exchanges``, ``at most 200.0 KB``."""
        if self.kind == "exchanges":
            return f"last {self.limit} exchange{'s' if self.limit != 1 else ''}"
        if self.kind == "budget":
            return f"at most {format_bytes(self.limit)}"
        return "whole conversation"


@dataclass(frozen=True, slots=True)
class ContextCut:
    """What :func:`apply_policy` kept: ``sent`` of ``total`` messages (``sent_bytes`` of
    ``total_bytes``), under ``policy``; ``over_budget`` when the last exchange alone exceeds
    a budget (it is sent whole all the same)."""

    sent: int
    total: int
    sent_bytes: int
    total_bytes: int
    policy: ContextPolicy = ContextPolicy()
    over_budget: bool = False

    @property
    def cut(self) -> bool:
        """Whether messages were left out."""
        return self.sent < self.total

    def words(self) -> str:
        """``sending 727 messages · 1.4 MB`` or ``sending 201 of 727 messages · 402.3 KB —
        policy: last 100 exchanges`` (and ``; the last exchange alone is 1.2 MB``)."""
        return f"sending {self.summary()}"

    def summary(self) -> str:
        """:meth:`words` without the verb: ``201 of 727 messages · 402.3 KB — policy: …``."""
        noun = "message" if self.total == 1 else "messages"
        count = f"{self.sent} of {self.total} {noun}" if self.cut else f"{self.total} {noun}"
        text = f"{count} · {format_bytes(self.sent_bytes)}"
        if self.policy.kind != "all":
            text += f" — policy: {self.policy.words()}"
        if self.over_budget:
            text += f"; the last exchange alone is {format_bytes(self.sent_bytes)}"
        return text


def message_size(message: Message) -> int:
    """A message's size as the budget counts it: the UTF-8 bytes of its text and of its tool
    calls' names and arguments."""
    size = len(message.text.encode())
    for call in message.tool_calls:
        size += len(call.name.encode()) + len(call.arguments.encode())
    return size


def exchange_starts(messages: Sequence[Message]) -> list[int]:
    """Where each exchange begins: the index of every user message (and 0, when the
    conversation does not open with one)."""
    starts = [i for i, m in enumerate(messages) if m.role == "user"]
    if messages and (not starts or starts[0] != 0):
        starts.insert(0, 0)
    return starts


def body_messages(body: Mapping[str, Any]) -> int | None:
    """How many messages a request body carries, whatever built it (a raw request, one
    imported from curl, another app's through the tap): its ``messages`` (OpenAI chat,
    Anthropic, Ollama), ``contents`` (Gemini) or ``input`` (Responses) list; ``None`` when it
    has none of them."""
    for key in ("messages", "contents", "input"):
        items = body.get(key)
        if isinstance(items, list):
            return len(items)
        if key == "input" and isinstance(items, str):
            return 1
    return None


def apply_policy(
    messages: Sequence[Message], policy: ContextPolicy = ContextPolicy()
) -> tuple[list[Message], ContextCut]:
    """The messages ``policy`` sends of ``messages`` (a suffix of whole exchanges) and the
    cut it made; see the module docstring."""
    sizes = [message_size(m) for m in messages]
    total_bytes = sum(sizes)
    first = 0
    over = False
    starts = exchange_starts(messages)
    if policy.kind == "exchanges" and len(starts) > policy.limit:
        first = starts[-policy.limit]
    elif policy.kind == "budget" and total_bytes > policy.limit and starts:
        first = starts[-1]
        kept = sum(sizes[first:])
        over = kept > policy.limit
        for start in reversed(starts[:-1]):
            more = sum(sizes[start:first])
            if kept + more > policy.limit:
                break
            first, kept = start, kept + more
    sent = list(messages[first:])
    cut = ContextCut(
        sent=len(sent),
        total=len(messages),
        sent_bytes=sum(sizes[first:]),
        total_bytes=total_bytes,
        policy=policy,
        over_budget=over,
    )
    return sent, cut
