"""A conversation as the chat window holds it: a tree of messages and the path it shows.

Every message follows a parent (the first ones follow the root) and may have siblings: the
*alternatives* of that step. Regenerating adds an answer beside the last one; editing the
last prompt and sending it adds a prompt beside it — the earlier prompt keeps its answers and
whatever followed them. Each step remembers which alternative is shown; the shown *path*
follows those choices from the first message to the last, and only the path is the context
sent next. Nothing is ever removed: :meth:`ChatHistory.choose_at` pages to any alternative.

``ChatHistory`` is pure state: the window appends the user's message when it is sent, the
assistant's Turn when it ends (whatever the outcome: a partial answer stays in the chat and,
when it has text, in the context sent next), tool results when the user answers tool calls.
Editing only marks the prompt being edited (:meth:`ChatHistory.begin_edit`): the next
:meth:`~ChatHistory.add_user` becomes its alternative, :meth:`~ChatHistory.cancel_edit`
forgets the mark. Each :class:`Node` can carry the ``key`` (row id) it is saved under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import (
    Conversation,
    Message,
    ToolCall,
    ToolDefinition,
    match_results,
)

__all__ = ["ChatHistory", "Node", "PathEntry", "ToolResult", "assistant_message"]


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


def unanswered_calls(turn: Turn, results: Sequence[Message]) -> int:
    """How many of ``turn``'s tool calls none of ``results`` answers (matched as
    :func:`~streamscope.core.wire.conversation.match_results` does)."""
    message = assistant_message(turn)
    if message is None:
        return 0
    return match_results(message.tool_calls, results).count(None)


class Node:
    """One message of the tree: the user's or a tool's :class:`Message`, or the assistant's
    :class:`Turn` (``None`` for the root). ``chosen``: which child the path goes on to;
    ``key``: the row the message is saved in (``None`` while unsaved, or in memory)."""

    __slots__ = ("children", "chosen", "item", "key", "parent")

    def __init__(
        self, item: Message | Turn | None, parent: Node | None = None, key: int | None = None
    ) -> None:
        self.item = item
        self.parent = parent
        self.children: list[Node] = []
        self.chosen = 0
        self.key = key

    @property
    def kind(self) -> Literal["root", "user", "tool", "answer"]:
        item = self.item
        if item is None:
            return "root"
        if isinstance(item, Turn):
            return "answer"
        return "tool" if item.role == "tool" else "user"

    def add(self, child: Node) -> Node:
        """Append ``child`` and make it the chosen one."""
        child.parent = self
        self.children.append(child)
        self.chosen = len(self.children) - 1
        return child

    def shown_child(self) -> Node | None:
        return self.children[self.chosen] if self.children else None

    def index(self) -> int:
        """Its place among its siblings."""
        return self.parent.children.index(self) if self.parent is not None else 0

    def siblings(self) -> list[Node]:
        """Its alternatives, itself included."""
        return self.parent.children if self.parent is not None else [self]

    def __repr__(self) -> str:
        return f"Node({self.kind}, key={self.key}, children={len(self.children)})"


@dataclass(frozen=True, slots=True)
class PathEntry:
    """One step of the shown path, as the chat view draws it.

    ``depth``: its place on the path (for :meth:`ChatHistory.choose_at`); ``chosen`` of
    ``count`` alternatives is shown. A ``user`` or ``tool`` step has its ``message``; an
    ``answers`` step every alternative's Turn, the results the shown answer's tool calls got
    on the path, how many calls none answered, and whether anything ``followed`` it (then
    those calls were skipped, else they wait for an answer)."""

    kind: Literal["user", "tool", "answers"]
    depth: int
    chosen: int = 0
    count: int = 1
    message: Message | None = None
    answers: tuple[Turn, ...] = ()
    keys: tuple[int | None, ...] = ()
    """The answers' keys (their saved message ids), in the order of ``answers``."""
    results: tuple[Message, ...] = ()
    unanswered: int = 0
    followed: bool = False

    @property
    def turn(self) -> Turn:
        """The shown answer (``answers`` steps)."""
        return self.answers[self.chosen]


class ChatHistory:
    """The conversation tree and its shown path; see the module docstring."""

    def __init__(self) -> None:
        self.root = Node(None)
        self._regenerating = False
        self._editing: Node | None = None

    # -- building -----------------------------------------------------------------------

    def add_user(self, text: str) -> Node:
        """The user sent ``text``: after the last message, or — while editing — beside the
        prompt being edited (its new alternative)."""
        parent = self._editing.parent if self._editing is not None else self.tip()
        assert parent is not None
        self._editing = None
        self._regenerating = False
        return parent.add(Node(Message("user", text)))

    def answer_parent(self) -> Node:
        """Where the next answer goes: after the last message, or after :meth:`regenerate`
        beside the last answer."""
        tip = self.tip()
        if self._regenerating and tip.kind == "answer" and tip.parent is not None:
            return tip.parent
        return tip

    def add_answer(self, turn: Turn) -> Node:
        """Record a finished turn. After :meth:`regenerate` it becomes an alternative."""
        parent = self.answer_parent()
        self._regenerating = False
        return parent.add(Node(turn))

    def add_tool_results(self, results: Sequence[ToolResult]) -> list[Node]:
        node = self.tip()
        added: list[Node] = []
        for r in results:
            node = node.add(Node(Message("tool", r.text, tool_call_id=r.tool_call_id, name=r.name)))
            added.append(node)
        return added

    def regenerate(self) -> str:
        """Prepare to answer the last user message again; returns that message's text.

        The current last answer stays as an alternative. Raises ``ValueError`` when there
        is nothing to regenerate."""
        if self.tip().kind != "answer":
            raise ValueError("no answer to regenerate")
        prompt = self.last_user_text()
        if prompt is None:
            raise ValueError("no user message to answer")
        self._regenerating = True
        self._editing = None
        return prompt

    def cancel_regenerate(self) -> None:
        self._regenerating = False

    def begin_edit(self) -> str:
        """Mark the last user message for editing; returns its text. Nothing changes until
        :meth:`add_user` (the edited text becomes its alternative) or :meth:`cancel_edit`.
        Raises ``ValueError`` when there is no user message."""
        node = self._last_user_node()
        if node is None:
            raise ValueError("no user message to edit")
        self._editing = node
        self._regenerating = False
        assert isinstance(node.item, Message)
        return node.item.text

    def cancel_edit(self) -> None:
        self._editing = None

    @property
    def regenerating(self) -> bool:
        """Whether the next answer replaces the last one (:meth:`regenerate`)."""
        return self._regenerating

    @property
    def editing(self) -> bool:
        """Whether the last user message is being edited (:meth:`begin_edit`)."""
        return self._editing is not None

    def choose(self, index: int) -> Turn:
        """Make alternative ``index`` of the last answer the one in the context."""
        tip = self.tip()
        if tip.kind != "answer" or tip.parent is None:
            raise IndexError(index)
        node = self.choose_at(len(self.path()) - 1, index)
        assert isinstance(node.item, Turn)
        return node.item

    def choose_at(self, depth: int, index: int) -> Node:
        """Show alternative ``index`` of the path's step ``depth`` (the path after it
        becomes that alternative's own); returns the node chosen. Ends an edit."""
        path = self.path()
        if not 0 <= depth < len(path):
            raise IndexError(depth)
        parent = path[depth].parent
        assert parent is not None
        if not 0 <= index < len(parent.children):
            raise IndexError(index)
        parent.chosen = index
        self._editing = None
        self._regenerating = False
        return parent.children[index]

    # -- reading ------------------------------------------------------------------------

    def path(self) -> list[Node]:
        """The shown messages, first to last."""
        out: list[Node] = []
        node = self.root.shown_child()
        while node is not None:
            out.append(node)
            node = node.shown_child()
        return out

    def tip(self) -> Node:
        """The last shown message (the root when there is none)."""
        node = self.root
        while node.children:
            node = node.children[node.chosen]
        return node

    def alternatives(self) -> tuple[int, int]:
        """``(chosen, count)`` for the last answer (``(0, 0)`` when the path does not end
        with one)."""
        tip = self.tip()
        if tip.kind != "answer" or tip.parent is None:
            return (0, 0)
        return (tip.parent.chosen, len(tip.parent.children))

    def last_user_text(self) -> str | None:
        node = self._last_user_node()
        return node.item.text if node is not None and isinstance(node.item, Message) else None

    def editing_depth(self) -> int | None:
        """The place on the path of the user message being edited."""
        if self._editing is None:
            return None
        path = self.path()
        return path.index(self._editing) if self._editing in path else None

    def unanswered(self) -> int:
        """How many tool calls of the last answer wait for a result."""
        tip = self.tip()
        return unanswered_calls(tip.item, ()) if isinstance(tip.item, Turn) else 0

    def path_entries(self) -> list[PathEntry]:
        """The shown path, step by step (see :class:`PathEntry`)."""
        path = self.path()
        out: list[PathEntry] = []
        for depth, node in enumerate(path):
            item = node.item
            siblings = node.siblings()
            chosen, count = node.index(), len(siblings)
            if isinstance(item, Turn):
                results: list[Message] = []
                for after in path[depth + 1 :]:
                    if after.kind != "tool" or not isinstance(after.item, Message):
                        break
                    results.append(after.item)
                turns = [s for s in siblings if isinstance(s.item, Turn)]
                answers = tuple(cast(Turn, s.item) for s in turns)
                out.append(
                    PathEntry(
                        "answers",
                        depth,
                        chosen,
                        count,
                        answers=answers,
                        keys=tuple(s.key for s in turns),
                        results=tuple(results),
                        unanswered=unanswered_calls(item, results),
                        followed=depth + 1 + len(results) < len(path),
                    )
                )
            elif isinstance(item, Message):
                kind: Literal["user", "tool"] = "tool" if item.role == "tool" else "user"
                out.append(PathEntry(kind, depth, chosen, count, message=item))
        return out

    def entries(self) -> list[tuple[str, object]]:
        """What the chat view shows, in order: ``("user", text)``, ``("tool", Message)`` and
        ``("answers", (turns, chosen))`` (:meth:`path_entries` says more)."""
        out: list[tuple[str, object]] = []
        for entry in self.path_entries():
            if entry.kind == "answers":
                out.append(("answers", (list(entry.answers), entry.chosen)))
            elif entry.kind == "user":
                assert entry.message is not None
                out.append(("user", entry.message.text))
            else:
                out.append(("tool", entry.message))
        return out

    def messages(self) -> list[Message]:
        """The context: the shown path (without the answer being regenerated)."""
        path = self.path()
        if self._regenerating and path and path[-1].kind == "answer":
            path = path[:-1]  # the answer being replaced is not context for its replacement
        out: list[Message] = []
        for node in path:
            item = node.item
            if isinstance(item, Turn):
                msg = assistant_message(item)
                if msg is not None:
                    out.append(msg)
            elif isinstance(item, Message):
                out.append(item)
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
        """The provider-neutral request input for the next turn (each dialect settles tool
        calls nobody answered: :func:`~streamscope.core.wire.conversation.settle_tool_calls`)."""
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
        """The number of messages on the shown path."""
        return len(self.path())

    def _last_user_node(self) -> Node | None:
        for node in reversed(self.path()):
            if node.kind == "user":
                return node
        return None
