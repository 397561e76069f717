"""The per-frame checks: SSE framing (on a frame's exact bytes) and each dialect's rules (on
the decoded event the pipeline's decoder produced, and the events its dialect parser made).

A check reports through ``emit(rule_id, frame, detail)``; it never decodes bytes itself:
frames come from :class:`~streamscope.core.turn.pipeline.StreamPipeline`, events from the
dialect's parser, tool-call arguments from the reducer's :class:`~streamscope.core.turn.model.Turn`.
The JSON of an event's data is read again here (``orjson``) for the fields the events do not
carry (``object``, ``created``, indexes, ``sequence_number``...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import orjson

from streamscope.core.turn.model import Turn
from streamscope.core.wire.dialects.openai_chat import _CONTENT
from streamscope.core.wire.events import MalformedFrame, StreamEvent, Terminal, TextDelta
from streamscope.core.wire.sse import RawFrame, SSEEvent

__all__ = ["DIALECT_CHECKS", "DialectChecks", "Emit", "SSEFrameChecks", "tool_json"]

Emit = Callable[[str, int | None, str], None]

_BOM = b"\xef\xbb\xbf"
_KNOWN_FIELDS = frozenset((b"data", b"event", b"id", b"retry"))


def _loads(data: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _line_ending(raw: bytes) -> str | None:
    """``crlf``, ``lf``, ``cr``, ``mixed`` or ``None`` (no line end) for one frame's bytes."""
    cr = raw.count(b"\r")
    lf = raw.count(b"\n")
    if not cr:
        return "lf" if lf else None
    if not lf:
        return "cr"
    crlf = raw.count(b"\r\n")
    if crlf == cr == lf:
        return "crlf"
    return "mixed"


class SSEFrameChecks:
    """Framing rules over each SSE frame's bytes (once per stream for the style rules)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._ending: str | None = None
        self._mixed = False
        self._nospace = False
        self._extra = False
        self._unknown: set[bytes] = set()

    @property
    def plain_lf(self) -> bool:
        """Whether the frames so far end lines with LF (then a plain "data: <value>\n\n"
        frame has nothing to check: the caller skips :meth:`frame` for it)."""
        return self._ending == "lf"

    def frame(self, n: int, frame: RawFrame) -> None:
        raw = frame.raw
        if n == 0 and raw.startswith(_BOM):
            self.emit("sse.bom", 0, "")
            raw = raw[3:]
        if not self._mixed:
            ending = _line_ending(raw)
            if ending == "mixed" or (
                ending is not None and self._ending is not None and ending != self._ending
            ):
                self._mixed = True
                was = self._ending or ending
                self.emit("sse.mixed-line-endings", n, f"{was} before, {ending} here")
            elif ending is not None:
                self._ending = ending
        if frame.event is None and not frame.comments:
            return  # blank lines
        for line in raw.splitlines():
            if not line or line[0] == 58:  # blank, or ":" (a comment)
                continue
            name, colon, value = line.partition(b":")
            if name not in _KNOWN_FIELDS:
                if name not in self._unknown:
                    self._unknown.add(name)
                    shown = name.decode("utf-8", "replace")[:40]
                    self.emit("sse.unknown-field", n, repr(shown))
                continue
            if colon and value and value[:1] != b" " and not self._nospace:
                self._nospace = True
                self.emit("sse.no-space-after-colon", n, name.decode())
            elif value[:2] == b"  " and not self._extra:
                self._extra = True
                self.emit("sse.extra-space-after-colon", n, name.decode())
            if name == b"retry":
                value = value[1:] if value[:1] == b" " else value
                if not value.isdigit():
                    shown = value.decode("utf-8", "replace")[:40]
                    self.emit("sse.retry", n, f"retry: {shown!r}")


class DialectChecks(Protocol):
    """One stream's dialect rules (a fresh object per stream)."""

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None: ...

    def finish(self, turn: Turn) -> None: ...


def tool_json(turn: Turn, rule_id: str, emit: Emit) -> None:
    """``rule_id`` for every tool call whose arguments (as the reducer joined them) are not
    JSON, at the frame of its last fragment. Blank arguments are a call without any."""
    for call in turn.tool_calls:
        if call.arguments.strip() and not call.arguments_parse():
            last = call.fragments[-1].frame if call.fragments else -1
            name = call.name or "?"
            emit(rule_id, last if last >= 0 else None, f"{name}: {call.arguments[:60]!r}")


def _skip(events: list[StreamEvent]) -> bool:
    """Frames the dialect rules do not look at: malformed ones (a rule of their own) and the
    terminal ``[DONE]``."""
    return any(type(e) in (MalformedFrame, Terminal) for e in events)


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
        if _skip(events):
            return
        obj = _loads(data)
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
        obj = _loads(ev.data)
        if type(obj) is not dict:
            return
        kind = obj.get("type")
        emit = self.emit
        if ev.event != "message" and ev.event != kind:
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


class GeminiChecks:
    """generateContent chunks: finishReason once and last, consistent ids."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._ids: tuple[Any, Any] | None = None
        self._finished: dict[int, int] = {}

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = _loads(ev.data)
        if isinstance(obj, list) and len(obj) == 1:
            obj = obj[0]
        if type(obj) is not dict or "error" in obj:
            return
        ids = (obj.get("responseId"), obj.get("modelVersion"))
        if self._ids is None:
            self._ids = ids
        elif ids != self._ids and None not in ids:
            self.emit("gemini.consistent-ids", n, f"{self._ids} -> {ids}")
            self._ids = ids
        candidates = obj.get("candidates")
        if not isinstance(candidates, list):
            return
        for cand in candidates:
            if type(cand) is not dict:
                continue
            index = cand.get("index", 0)
            index = index if type(index) is int else 0
            content = cand.get("content")
            parts = content.get("parts") if isinstance(content, dict) else None
            reason = cand.get("finishReason")
            if index in self._finished:
                first = self._finished[index]
                if reason:
                    self.emit(
                        "gemini.finish-reason-once", n, f"{reason!r}, already at frame {first}"
                    )
                elif parts:
                    self.emit("gemini.finish-reason-last", n, f"finishReason at frame {first}")
            elif reason:
                self._finished[index] = n

    def finish(self, turn: Turn) -> None:
        return


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
        obj = _loads(ev.data)
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


class OllamaChecks:
    """NDJSON lines: done_reason on the last one, one model."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._model: Any = None

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = _loads(ev.data)
        if type(obj) is not dict or "error" in obj:
            return
        model = obj.get("model")
        if self._model is None:
            self._model = model
        elif model is not None and model != self._model:
            self.emit("ollama.consistent-model", n, f"{self._model!r} -> {model!r}")
            self._model = model
        if obj.get("done") is True and not obj.get("done_reason"):
            self.emit("ollama.done-reason", n, "")

    def finish(self, turn: Turn) -> None:
        return


def _openai(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return OpenAIChecks(emit, request)


DIALECT_CHECKS: dict[str, Callable[[Emit, dict[str, Any] | None], DialectChecks]] = {
    "openai": _openai,
    "anthropic": lambda emit, _request: AnthropicChecks(emit),
    "gemini": lambda emit, _request: GeminiChecks(emit),
    "responses": lambda emit, _request: ResponsesChecks(emit),
    "ollama": lambda emit, _request: OllamaChecks(emit),
}
"""The dialect rules by dialect name (a dialect without an entry gets the generic ones)."""
