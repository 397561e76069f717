"""OpenAI chat completions: the ``openai`` dialect's lint rules and the checks applying them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads, skip, tool_json
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.dialects.openai_chat import _CONTENT
from streamscope.core.wire.events import StreamEvent, TextDelta
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "OpenAIChecks"]


class OpenAIChecks:
    """Chat completions chunks."""

    def __init__(self, emit: Emit, request: dict[str, Any] | None) -> None:
        self.emit = emit
        opts = (request or {}).get("stream_options")
        self.include_usage: bool | None = (
            None if request is None else bool(isinstance(opts, dict) and opts.get("include_usage"))
        )
        self._ids: tuple[Any, Any, Any] | None = None
        self._object_bad = False
        self._seen: set[int] = set()
        self._finish: dict[int, int] = {}
        self._calls: set[tuple[int, int]] = set()
        self._prefix: str | None = None  # what comes before "choices" in checked chunks

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        data = ev.data
        k = data.find(_CONTENT)
        if (
            k > 0
            and len(events) == 1
            and type(events[0]) is TextDelta
            and data[:k] == self._prefix
            and '"role"' not in data
        ):
            # Only text came of it (no finish, tool call, usage or second choice: those are
            # events), in choice 0, with the id/model/created already checked: nothing to see.
            return
        if skip(events):
            return
        obj = loads(data)
        if type(obj) is not dict or "error" in obj:
            return
        emit = self.emit
        if not self._object_bad and obj.get("object") != "chat.completion.chunk":
            self._object_bad = True
            emit("openai.object", n, f"object: {obj.get('object')!r}")
        ids = (obj.get("id"), obj.get("model"), obj.get("created"))
        if self._ids is None:
            self._ids = ids
        if ids == self._ids:
            if k > 0 and not self._object_bad and 0 in self._seen:
                self._prefix = data[:k]
        else:
            changed = [
                f"{k} {a!r} -> {b!r}"
                for k, a, b in zip(("id", "model", "created"), self._ids, ids, strict=True)
                if a != b
            ]
            emit("openai.consistent-ids", n, "; ".join(changed))
            self._ids = ids
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return
        if not choices and obj.get("usage") is not None:
            if self.include_usage is False:
                emit("openai.usage-chunk", n, "stream_options.include_usage was not set")
            elif not self._finish:
                emit("openai.usage-chunk", n, "before the finish_reason chunk")
        for choice in choices:
            if type(choice) is not dict:
                continue
            index = choice.get("index")
            if type(index) is not int:
                emit("openai.choice-index", n, f"index: {index!r}")
                index = 0
            delta = choice.get("delta")
            if type(delta) is dict:
                if "role" in delta and index in self._seen:
                    emit("openai.role-first", n, f"choice {index}")
                calls = delta.get("tool_calls")
                if isinstance(calls, list):
                    self._tool_calls(n, index, calls)
            self._seen.add(index)
            reason = choice.get("finish_reason")
            if reason is not None:
                if index in self._finish:
                    first = self._finish[index]
                    emit("openai.finish-reason-once", n, f"{reason!r}, already at frame {first}")
                else:
                    self._finish[index] = n

    def _tool_calls(self, n: int, choice: int, calls: list[Any]) -> None:
        for call in calls:
            if type(call) is not dict:
                continue
            index = call.get("index")
            if type(index) is not int:
                self.emit("openai.tool-call-index", n, f"index: {index!r}")
                continue
            key = (choice, index)
            fn = call.get("function")
            name = fn.get("name") if isinstance(fn, dict) else None
            if key in self._calls:
                if call.get("id") or name:
                    self.emit("openai.tool-call-id-once", n, f"tool call {index}")
            else:
                self._calls.add(key)

    def finish(self, turn: Turn) -> None:
        if turn.terminal_signal is not None and not self._finish and turn.server_error is None:
            self.emit("openai.finish-reason-missing", None, "")
        tool_json(turn, "openai.tool-call-json", self.emit)


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return OpenAIChecks(emit, request)


RULES: tuple[Rule, ...] = (
    Rule(
        "openai.object",
        "warning",
        "a chunk's object is not chat.completion.chunk",
        "Strict SDKs validate it. Servers imitating OpenAI often send chat.completion or "
        "nothing; send 'object': 'chat.completion.chunk'.",
    ),
    Rule(
        "openai.consistent-ids",
        "warning",
        "id, model or created changes between chunks",
        "All chunks of one completion share id, model and created. A change means two "
        "completions were interleaved (a load balancer mixing streams) or a buggy proxy.",
    ),
    Rule(
        "openai.role-first",
        "warning",
        "delta.role appears after a choice's first chunk",
        "The role belongs in the first delta only; repeating it makes some clients start a "
        "new message.",
    ),
    Rule(
        "openai.choice-index",
        "error",
        "a choice has no integer index",
        "Clients assemble choices by index; without it deltas of n>1 completions mix up.",
    ),
    Rule(
        "openai.tool-call-index",
        "error",
        "a tool-call fragment has no integer index",
        "Fragments of parallel tool calls are joined by index; without it arguments of "
        "different calls get concatenated. Send index on every fragment.",
    ),
    Rule(
        "openai.tool-call-id-once",
        "warning",
        "a tool call's id or name is repeated on a later fragment",
        "id and function.name belong on the first fragment only; clients that concatenate "
        "fields get 'get_weatherget_weather'.",
    ),
    Rule(
        "openai.tool-call-json",
        "error",
        "a tool call's arguments do not concatenate to valid JSON",
        "Fragments were lost, reordered or doubled (a proxy rewriting chunks), or the model "
        "was cut off by max_tokens mid-call.",
    ),
    Rule(
        "openai.finish-reason-once",
        "error",
        "finish_reason is set more than once for a choice",
        "Exactly one chunk per choice carries a finish_reason. A second one makes clients "
        "finish twice (or drop what came between).",
    ),
    Rule(
        "openai.finish-reason-missing",
        "warning",
        "the stream ended without a finish_reason",
        "Clients cannot tell a complete answer from a truncated one. Send finish_reason on "
        "the last content chunk.",
    ),
    Rule(
        "openai.usage-chunk",
        "warning",
        "a usage chunk (empty choices) that was not asked for, or before the finish",
        "The usage-only chunk comes after the finish_reason chunk and only with "
        "stream_options.include_usage; clients that index choices[0] crash on it otherwise.",
    ),
)

LINT = DialectLint("openai", "OpenAI chat completions", RULES, _checks)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
