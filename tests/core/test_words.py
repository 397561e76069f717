"""The same words everywhere: counts take their number ("1 malformed frame", never "1
malformed frames"), and a turn cut by the token limit is "stopped at max tokens" in the
one-line summary the CLI prints and the status bar shows, as on the card."""

from __future__ import annotations

from streamscope.core.turn.model import LIMIT_WORDS, ToolCallState, Turn, stopped_at_limit
from streamscope.core.turn.outcome import Outcome
from streamscope.core.verdict.engine import Verdict, diagnosis
from streamscope.core.verdict.report import to_text
from streamscope.core.verdict.rules import Finding, Severity
from streamscope.core.wire.sizes import plural


def test_plural_takes_the_number() -> None:
    assert plural(0, "frame") == "0 frames"
    assert plural(1, "frame") == "1 frame"
    assert plural(2, "malformed frame") == "2 malformed frames"
    assert plural(1, "match", "matches") == "1 match"
    assert plural(3, "match", "matches") == "3 matches"


def test_a_turns_figures_count_in_the_singular_and_plural() -> None:
    one = Turn(
        outcome=Outcome.COMPLETED,
        finish_reason="tool_calls",
        tool_calls=(ToolCallState(0, "c1", "f", "{}"),),
        malformed_frames=1,
    )
    assert one.summary() == "Completed · tool_calls · 1 tool call · 1 malformed frame"
    two = Turn(outcome=Outcome.COMPLETED, malformed_frames=2)
    assert two.summary() == "Completed · 2 malformed frames"


def test_a_length_stop_says_so_in_the_summary() -> None:
    assert LIMIT_WORDS == "stopped at max tokens"
    cut = Turn(outcome=Outcome.COMPLETED, finish_reason="length", output_tokens=21)
    assert cut.stopped_at_limit
    assert cut.summary() == "Completed · stopped at max tokens · length · 21 tokens"
    whole = Turn(outcome=Outcome.COMPLETED, finish_reason="stop", output_tokens=21)
    assert whole.summary() == "Completed · stop · 21 tokens"
    # a saved turn's outcome and finish reason say the same
    assert stopped_at_limit(Outcome.COMPLETED, "MAX_TOKENS")
    assert not stopped_at_limit(Outcome.TRUNCATED, "length")
    assert not stopped_at_limit(Outcome.COMPLETED, None)


def _finding(severity: Severity, frame: int | None = None) -> Finding:
    return Finding("stream.malformed-frame", severity, frame, "m", "h")


def test_the_lint_summary_and_diagnosis_count_in_the_singular() -> None:
    one_each = (_finding("error", 3), _finding("warning"), _finding("info"))
    text = to_text(Verdict("openai", "completed", one_each, Turn())).splitlines()
    assert text[-1] == "openai · completed · 1 error, 1 warning, 1 note"
    none = to_text(Verdict("openai", "completed", (), Turn())).splitlines()
    assert none[-1] == "openai · completed · 0 errors, 0 warnings, 0 notes"
    assert diagnosis([_finding("error")]) == "1 spec error"
    assert diagnosis([_finding("warning")]) == "1 warning"
    assert diagnosis([_finding("warning"), _finding("warning")]) == "2 warnings"
