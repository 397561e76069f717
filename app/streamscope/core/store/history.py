"""A conversation as the chat window holds it: messages, answers and their alternatives.

``ChatHistory`` is pure state: the window appends the user's message when it is sent, the
assistant's Turn when it ends (whatever the outcome: a partial answer stays in the chat and,
when it has text, in the context sent next), tool results when the user answers tool calls.
Regenerating keeps the earlier answer as an alternative; :meth:`ChatHistory.choose` switches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Conversation, Message, ToolCall, ToolDefinition

__all__ = ["ChatHistory", "ToolResult", "assistant_message"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The user's answer to one tool call."""

    tool_call_id: str | None
    name: str
    text: str


def assistant_message(turn: Turn) -> Message | None:
    """The assistant message a turn contributes to the context (``None`` if nothing usable
    arrived, e.g. an HTTP error)."""
    calls = [
        ToolCall(id=c.id, name=c.name or "", arguments=c.arguments)
        for c in turn.tool_calls
        if c.name
    ]
    if not turn.text and not calls:
        return None
    if turn.outcome is Outcome.ERROR and not turn.text:
        return None
    return Message("assistant", turn.text, tool_calls=tuple(calls))


@dataclass(slots=True)
class _Step:
    """One assistant step and its alternatives (index ``chosen`` is in the context)."""

    answers: list[Turn] = field(default_factory=list)
    chosen: int = 0


class ChatHistory:
    """Messages in order. Each user message is followed by assistant steps (and tool
    results); only the last step can be regenerated."""

    def __init__(self) -> None:
        self._items: list[Message | _Step] = []
        self._regenerating = False

    # -- building -----------------------------------------------------------------------

    def add_user(self, text: str) -> None:
        self._items.append(Message("user", text))

    def add_answer(self, turn: Turn) -> None:
        """Record a finished turn. After :meth:`regenerate` it becomes an alternative."""
        last = self._items[-1] if self._items else None
        if isinstance(last, _Step) and self._regenerating:
            last.answers.append(turn)
            last.chosen = len(last.answers) - 1
        else:
            self._items.append(_Step([turn], 0))
        self._regenerating = False

    def add_tool_results(self, results: Sequence[ToolResult]) -> None:
        for r in results:
            self._items.append(Message("tool", r.text, tool_call_id=r.tool_call_id, name=r.name))

    def regenerate(self) -> str:
        """Prepare to answer the last user message again; returns that message's text.

        The current last answer stays as an alternative. Raises ``ValueError`` when there
        is nothing to regenerate."""
        if not self._items or not isinstance(self._items[-1], _Step):
            raise ValueError("no answer to regenerate")
        prompt = self.last_user_text()
        if prompt is None:
            raise ValueError("no user message to answer")
        self._regenerating = True
        return prompt

    def cancel_regenerate(self) -> None:
        self._regenerating = False

    def edit_last_user(self) -> str:
        """Remove the last user message and everything after it; returns its text so the
        composer can offer it for editing."""
        for i in range(len(self._items) - 1, -1, -1):
            item = self._items[i]
            if isinstance(item, Message) and item.role == "user":
                del self._items[i:]
                self._regenerating = False
                return item.text
        raise ValueError("no user message to edit")

    def choose(self, index: int) -> Turn:
        """Make alternative ``index`` of the last answer the one in the context."""
        step = self.last_step()
        if step is None or not 0 <= index < len(step.answers):
            raise IndexError(index)
        step.chosen = index
        return step.answers[index]

    # -- reading ------------------------------------------------------------------------

    def last_step(self) -> _Step | None:
        for item in reversed(self._items):
            if isinstance(item, _Step):
                return item
            if isinstance(item, Message) and item.role == "user":
                return None
        return None

    def alternatives(self) -> tuple[int, int]:
        """``(chosen, count)`` for the last answer (``(0, 0)`` when there is none)."""
        last = self._items[-1] if self._items else None
        if not isinstance(last, _Step):
            return (0, 0)
        return (last.chosen, len(last.answers))

    def last_user_text(self) -> str | None:
        for item in reversed(self._items):
            if isinstance(item, Message) and item.role == "user":
                return item.text
        return None

    def entries(self) -> list[tuple[str, object]]:
        """What the chat view shows, in order: ``("user", text)``, ``("tool", Message)`` and
        ``("answers", (turns, chosen))``."""
        out: list[tuple[str, object]] = []
        for item in self._items:
            if isinstance(item, _Step):
                out.append(("answers", (list(item.answers), item.chosen)))
            elif item.role == "user":
                out.append(("user", item.text))
            else:
                out.append((item.role, item))
        return out

    def messages(self) -> list[Message]:
        out: list[Message] = []
        for item in self._items:
            if isinstance(item, Message):
                out.append(item)
                continue
            if self._regenerating and item is self._items[-1]:
                continue  # the answer being replaced is not context for its replacement
            msg = assistant_message(item.answers[item.chosen])
            if msg is not None:
                out.append(msg)
        return out

    def conversation(
        self,
        *,
        system: str | None = None,
        tools: Sequence[ToolDefinition] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, object] | None = None,
        include_usage: bool = True,
    ) -> Conversation:
        """The provider-neutral request input for the next turn."""
        return Conversation(
            messages=tuple(self.messages()),
            system=system or None,
            tools=tuple(tools),
            temperature=temperature,
            max_tokens=max_tokens,
            extra_body=dict(extra_body or {}),
            include_usage=include_usage,
        )

    def __len__(self) -> int:
        return len(self._items)
