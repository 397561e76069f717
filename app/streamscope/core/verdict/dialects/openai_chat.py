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


def _filter_chunk(obj: dict[str, Any], choices: Any) -> bool:
    """Whether a chunk is one of Azure OpenAI's content-filter annotations: the prompt's
    (``prompt_filter_results``, choices empty) or an asynchronous filter's verdict on what came
    (choices with ``content_filter_results``/``content_filter_offsets`` and no delta). Azure
    documents them with empty ``id``/``object``/``model`` and ``created`` 0."""
    if "prompt_filter_results" in obj:
        return True
    if not isinstance(choices, list) or not choices:
        return False
    first = choices[0]
    if type(first) is not dict or "delta" in first:  # (the usual chunk)
        return False
    return all(
        type(c) is dict
        and "delta" not in c
        and ("content_filter_results" in c or "content_filter_offsets" in c)
        for c in choices
    )


class OpenAIChecks:
    """Chat completions chunks."""

    def __init__(self, emit: Emit, request: dict[str, Any] | None) -> None:
        self.emit = emit
        opts = (request or {}).get("stream_options")
        self.include_usage: bool | None = (
            None if request is None else bool(isinstance(opts, dict) and opts.get("include_usage"))
        )
        # vLLM's stream_options.continuous_usage_stats asks for usage on every chunk
        self._usage_everywhere = isinstance(opts, dict) and bool(opts.get("continuous_usage_stats"))
        n = (request or {}).get("n")
        self.n_choices: int | None = None  # choices asked for (None: request unknown)
        if request is not None:
            self.n_choices = n if type(n) is int and n > 0 else 1
        self._choices: set[int] = set()  # choice indexes seen so far
        self._ncalls: dict[int, int] = {}  # tool calls begun per choice (indexed ones)
        self._called: set[int] = set()  # choices that made a tool call
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
        emit = self.emit
        if len(data) < 16 and data[:6] != "[DONE]" and data.strip() == "[DONE]":
            emit("openai.done-exact", n, f"data {data!r}")
        if skip(events):
            return
        obj = loads(data)
        if type(obj) is not dict or "error" in obj:
            return
        choices = obj.get("choices")
        if _filter_chunk(obj, choices):
            self._choice_indexes(n, choices if isinstance(choices, list) else [])
            return
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
        if not isinstance(choices, list):
            return
        usage = obj.get("usage")
        if usage is not None:
            if not choices:
                if self.include_usage is False:
                    emit("openai.usage-chunk", n, "stream_options.include_usage was not set")
                elif not self._finish:
                    emit("openai.usage-chunk", n, "before the finish_reason chunk")
            elif not self._usage_everywhere:
                emit("openai.usage-with-choices", n, f"{len(choices)} choice(s)")
        for choice in choices:
            if type(choice) is not dict:
                continue
            index = choice.get("index")
            if type(index) is not int:
                emit("openai.choice-index", n, f"index: {index!r}")
                index = 0
            elif index not in self._choices:
                self._choice_indexes(n, [choice])
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
                    if reason == "tool_calls" and index not in self._called:
                        emit("openai.tool-calls-finish", n, f"choice {index}")

    def _choice_indexes(self, n: int, choices: list[Any]) -> None:
        """A choice index first seen: one the request asked for, and none skipped."""
        seen = self._choices
        for choice in choices:
            index = choice.get("index") if type(choice) is dict else None
            if type(index) is not int or index in seen:
                continue
            asked = self.n_choices
            rule = "openai.choice-index-range"
            if index < 0 or (asked is not None and index >= asked):
                want = f"{asked} choice" + ("s" if asked != 1 else "")
                self.emit(rule, n, f"index {index}, the request asked {want}")
            elif index > len(seen):
                self.emit(rule, n, f"index {index}, before index {len(seen)}")
            seen.add(index)

    def _tool_calls(self, n: int, choice: int, calls: list[Any]) -> None:
        for call in calls:
            if type(call) is not dict:
                continue
            self._called.add(choice)
            index = call.get("index")
            if type(index) is not int:
                self.emit("openai.tool-call-index", n, f"index: {index!r}")
                continue
            key = (choice, index)
            fn = call.get("function")
            name = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(fn, dict):
                self.emit("openai.tool-call-function", n, f"tool call {index}")
            if key in self._calls:
                if call.get("id") or name:
                    self.emit("openai.tool-call-id-once", n, f"tool call {index}")
            else:
                self._calls.add(key)
                begun = self._ncalls.get(choice, 0)
                if index > begun or index < 0:
                    self.emit(
                        "openai.tool-call-index-gap", n, f"index {index} after {begun} call(s)"
                    )
                self._ncalls[choice] = begun + 1

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
        "All chunks of one completion share id, model and created. A change mid-stream means "
        "two completions were interleaved or a proxy rewrote chunks. (Azure's content-filter "
        "chunks, with empty ids, are documented and not counted.)",
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
        "openai.choice-index-range",
        "error",
        "a choice index the request did not ask for (n), or one that skips a number",
        "With n absent or 1 every chunk's choice is index 0, and choices begin 0, 1, 2... "
        "Clients assemble choices by index: a stray index makes a second message (or merges "
        "text into the first), and the openai SDK's accumulator fails on a skipped one.",
    ),
    Rule(
        "openai.tool-call-index",
        "error",
        "a tool-call fragment has no integer index",
        "Fragments of parallel tool calls are joined by index; without it arguments of "
        "different calls get concatenated. Send index on every fragment.",
    ),
    Rule(
        "openai.tool-call-index-gap",
        "error",
        "a tool call's index skips a number (0, then 2)",
        "Parallel tool calls are numbered 0, 1, 2... in the order they begin; the openai SDK's "
        "stream accumulator raises IndexError on a gap. A proxy dropping or renumbering calls.",
    ),
    Rule(
        "openai.tool-call-function",
        "error",
        "a tool-call fragment has no function object",
        "Every fragment carries 'function' (with arguments, '' if none yet); the openai SDK's "
        "stream helper asserts it and fails. Servers splitting id/type and function into "
        "separate fragments do this.",
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
        "openai.tool-calls-finish",
        "error",
        "finish_reason is tool_calls but the choice made no tool call",
        "Agent loops take tool_calls as 'run the calls' and find none (message.tool_calls is "
        "None). A server mapping every finish to tool_calls, or tool-call chunks lost on the "
        "way.",
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
    Rule(
        "openai.usage-with-choices",
        "info",
        "a chunk carries usage while its choices are not empty",
        "OpenAI sends usage on its own chunk with empty choices (stream_options."
        "include_usage), other chunks have usage null; many gateways put it on the last "
        "chunk with a choice instead. Clients reading it only from the choice-less chunk miss "
        "it, clients adding up every chunk's usage count it twice.",
    ),
    Rule(
        "openai.done-exact",
        "error",
        "the [DONE] line's data is not exactly [DONE]",
        "'data:  [DONE]' (two spaces) leaves ' [DONE]' in the data: the openai SDK does not "
        "see the end and fails parsing it as JSON. Write exactly 'data: [DONE]'.",
    ),
    Rule(
        "openai.event-without-data",
        "error",
        "a block with an event:, id: or retry: line but no data",
        "The openai SDK dispatches it anyway and parses its empty data as JSON: the stream "
        "fails there (JSONDecodeError). Send keep-alives as comments (': ping'), and every "
        "event with its data.",
    ),
)

LINT = DialectLint(
    "openai", "OpenAI chat completions", RULES, _checks, no_data="openai.event-without-data"
)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
