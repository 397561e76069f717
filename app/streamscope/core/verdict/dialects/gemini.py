"""Gemini: the ``gemini`` dialect's lint rules and the checks that apply them, found
through the dialect's ``lint`` (its entry in the one registry,
:mod:`streamscope.core.wire.dialects`)."""

from __future__ import annotations

from typing import Any

from streamscope.core.turn.model import Turn
from streamscope.core.verdict.checks import DialectChecks, DialectLint, Emit, loads
from streamscope.core.verdict.rules import Rule
from streamscope.core.wire.events import MalformedFrame, StreamEvent
from streamscope.core.wire.sse import SSEEvent

__all__ = ["LINT", "RULES", "GeminiChecks"]


class GeminiChecks:
    """generateContent chunks: finishReason once and last, consistent ids."""

    def __init__(self, emit: Emit, request: dict[str, Any] | None = None) -> None:
        self.emit = emit
        self._ids: tuple[Any, Any] | None = None
        self._finished: dict[int, int] = {}
        self._indexes: set[int] = set()
        self.n_candidates: int | None = None  # candidates asked for (None: request unknown)
        if request is not None:
            config = request.get("generationConfig", request.get("generation_config"))
            count = None
            if isinstance(config, dict):
                count = config.get("candidateCount", config.get("candidate_count"))
            self.n_candidates = count if type(count) is int and count > 0 else 1

    def frame(self, n: int, ev: SSEEvent, events: list[StreamEvent]) -> None:
        if any(type(e) is MalformedFrame for e in events):
            return
        obj = loads(ev.data)
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
            if index not in self._indexes:
                self._candidate(n, index)
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

    def _candidate(self, n: int, index: int) -> None:
        """A candidate index first seen: one the request asked for, and none skipped."""
        asked = self.n_candidates
        if index < 0 or (asked is not None and index >= asked):
            want = f"{asked} candidate" + ("s" if asked != 1 else "")
            self.emit("gemini.candidate-index", n, f"index {index}, the request asked {want}")
        elif index > len(self._indexes):
            missing = len(self._indexes)
            self.emit("gemini.candidate-index", n, f"index {index}, before index {missing}")
        self._indexes.add(index)

    def finish(self, turn: Turn) -> None:
        return


def _checks(emit: Emit, request: dict[str, Any] | None) -> DialectChecks:
    return GeminiChecks(emit, request)


RULES: tuple[Rule, ...] = (
    Rule(
        "gemini.candidate-index",
        "error",
        "a candidate index the request did not ask for (candidateCount), or one that skips",
        "With one candidate (the default) every chunk's candidate is index 0. Clients that "
        "join candidates by index make a second answer, and response.text reads "
        "candidates[0], which is then not the answer's first candidate.",
    ),
    Rule(
        "gemini.data-lines-only",
        "error",
        "a line other than 'data: <json>' (a comment, event:, id:, retry:, or data: "
        "without its space)",
        "The google-genai SDK reads only lines starting with 'data: ' and parses any other "
        "non-blank line as JSON: it fails (UnknownApiResponseError) at this line. A proxy "
        "adding keep-alive comments or event names breaks every google-genai client.",
    ),
    Rule(
        "gemini.finish-reason-once",
        "error",
        "finishReason is set more than once for a candidate",
        "Only the last chunk of a candidate carries finishReason.",
    ),
    Rule(
        "gemini.finish-reason-last",
        "error",
        "a chunk with content came after the finishReason",
        "Clients stop at finishReason; what comes after is lost. A proxy merging two streams "
        "does this.",
    ),
    Rule(
        "gemini.consistent-ids",
        "warning",
        "responseId or modelVersion changes between chunks",
        "All chunks of one answer share them; a change usually means two answers were "
        "interleaved, or a gateway rewrote some chunks.",
    ),
)

LINT = DialectLint("gemini", "Gemini", RULES, _checks, data_only="gemini.data-lines-only")
"""What the verdict stage finds for this dialect (:func:`~.lint_of`)."""
