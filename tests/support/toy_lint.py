"""The lint rules of the toy sixth dialect (tests/ui/test_sixth_dialect.py): a module of its own,
named by the dialect's ``lint``, as a real dialect's would be."""

from __future__ import annotations

import json
from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import StreamEvent
from streamscope.core.wire.sse import SSEEvent

RULES = (
    Rule(
        "toy.say-text",
        "error",
        "a say frame has no text",
        "Every toy 'say' frame carries its words in 'text'; the toy client prints nothing else.",
    ),
    Rule(
        "toy.bye-once",
        "warning",
        "the stream said bye more than once",
        "A toy stream ends with one 'bye'; a second one is a writer that repeats itself.",
    ),
)


class ToyChecks:
    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.byes = 0

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        obj = json.loads(ev.data)
        if obj.get("toy") == "say" and not obj.get("text"):
            self.emit("toy.say-text", n, "")
        if obj.get("toy") == "bye":
            self.byes += 1
            if self.byes == 2:
                self.emit("toy.bye-once", n, "")

    def finish(self, turn: Turn) -> None:
        return


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return ToyChecks(emit)


LINT = DialectLint("toy", "Toy talk", RULES, _checks)
