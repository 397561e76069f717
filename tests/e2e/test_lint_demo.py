"""Every demo scenario, recorded through the real server on 127.0.0.1 as the app records a
turn (a capture), gets the verdict the table promises: the clean ones no error, each fault
its rule."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from streamscope.core.capture.format import Capture
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.verdict import Verdict
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.dialects import dialects_for, expected_outcome
from streamscope.demo.scenarios import SCENARIOS
from streamscope.demo.server import DemoServer
from streamscope.lint import lint_capture

CASES = [
    (name, dialect)
    for name, scenario in SCENARIOS.items()
    for dialect in sorted(dialects_for(scenario))
]

# The error rules each fault scenario must produce (exactly); any scenario not here: none.
FAULTS: dict[str, set[str]] = {
    "demo-cut": {"sse.truncated-frame", "stream.terminal-missing"},
    "demo-no-done": {"stream.terminal-missing"},
    "demo-stall": {"stream.terminal-missing"},
    "demo-midstream-error": {"stream.server-error"},
    "demo-error-401": {"transport.http-status"},
    "demo-error-429": {"transport.http-status"},
    "demo-error-500": {"transport.http-status"},
    "demo-html-502": {"transport.http-status"},
    "demo-long-line": {"sse.line-too-long", "stream.terminal-missing"},
    "demo-bad-utf8": {"sse.invalid-utf8"},
    "demo-bad-json": {"stream.malformed-frame"},
}
EXCEPTIONS: dict[tuple[str, str], set[str]] = {
    ("demo-cut", "ollama"): {"ollama.one-object-per-line", "stream.terminal-missing"},
    ("demo-no-done", "gemini"): set(),  # Gemini has no sentinel after finishReason
    ("demo-bad-json", "ollama"): {"ollama.one-object-per-line"},
    # keep-alive comments and "data:x" in a Gemini stream: google-genai parses every line
    # that is not "data: ..." as JSON and fails (UnknownApiResponseError)
    ("demo-slow", "gemini"): {"gemini.data-lines-only"},
    ("demo-keepalive", "gemini"): {"gemini.data-lines-only"},
    ("demo-nospace", "gemini"): {"gemini.data-lines-only"},
}
# Warnings/notes a scenario may add (by design of the scenario), beyond none.
ALLOWED: dict[str, set[str]] = {
    "demo-nospace": {"sse.no-space-after-colon"},
}


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(host="127.0.0.1", port=0, speed=1000) as server:
        yield server


def record(demo: DemoServer, model: str, dialect: str) -> Capture:
    conv = Conversation(messages=[Message("user", "Hello there")], max_tokens=None)
    if model == "demo-firehose":
        conv = Conversation(messages=[Message("user", "Hello there")], max_tokens=2000)
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key="sk-demo"
    )
    recorder = CaptureRecorder(dialect)

    async def main() -> None:
        client = StreamClient()
        try:
            await client.run_turn(
                spec,
                dialect=dialect,
                timeouts=StreamTimeouts(first_byte=10, idle=1.0),
                observer=recorder,
            )
        finally:
            await client.aclose()

    asyncio.run(main())
    return recorder.done.result(timeout=10)


def _errors(verdict: Verdict) -> set[str]:
    return {f.rule for f in verdict.findings if f.severity == "error"}


@pytest.mark.parametrize(("model", "dialect"), CASES, ids=[f"{m}-{d}" for m, d in CASES])
def test_every_demo_scenario_gets_its_verdict(demo: DemoServer, model: str, dialect: str) -> None:
    verdict = lint_capture(record(demo, model, dialect))
    want = EXCEPTIONS.get((model, dialect), FAULTS.get(model, set()))
    assert _errors(verdict) == want, verdict.findings
    if not want:
        others = {f.rule for f in verdict.findings} - ALLOWED.get(model, set())
        assert others == set(), verdict.findings
        assert verdict.summary["error"] == 0
    assert verdict.outcome == expected_outcome(SCENARIOS[model], dialect)
