"""Ollama: the ``ollama`` dialect's lint rules and the checks that apply them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "OllamaChecks"]


class OllamaChecks:
    """NDJSON lines: done_reason on the last one, one model."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self._model: Any = None

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = loads(ev.data)
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


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return OllamaChecks(emit)


RULES: tuple[Rule, ...] = (
    Rule(
        "ollama.done-reason",
        "warning",
        "the done:true line has no done_reason",
        "Clients cannot tell stop from length without it (older Ollama versions omit it: upgrade).",
    ),
    Rule(
        "ollama.consistent-model",
        "warning",
        "model changes between lines",
        "All lines of one answer name the same model; a change usually means interleaved answers.",
    ),
    Rule(
        "ollama.one-object-per-line",
        "error",
        "a line is not exactly one JSON object",
        "NDJSON is one object per line, each ending in a newline: two objects on one line or "
        "an object across lines break every line-based reader.",
    ),
)

LINT = DialectLint("ollama", "Ollama", RULES, _checks)
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
