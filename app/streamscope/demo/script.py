"""A provider-neutral script of one answer: what to say, in which pieces, with which pauses.

`build_script(scenario, ask)` turns a table row and the request into timed `Step`s; each dialect
writer spells the same steps in its own wire format. Faults that change the *content* (a 2 MiB
delta, invalid UTF-8) are steps too; faults that change the *transport* are applied by the
playback loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from streamscope.demo.scenarios import (
    FIREHOSE_DEFAULT,
    BadUtf8,
    FinishKind,
    LongLine,
    Scenario,
)

# A placeholder character that writers emit as ordinary text; the playback loop replaces its
# UTF-8 encoding with invalid bytes on the wire (see `BAD_UTF8_WIRE`).
BAD_UTF8_MARK = "\ue000"
BAD_UTF8_MARK_BYTES = BAD_UTF8_MARK.encode()
BAD_UTF8_WIRE = b"\xff\xfe\xc3("  # an invalid start byte, another, a lead byte with no tail


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result the request ends with: the tool's name (when the request says it) and
    the result as text."""

    name: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Ask:
    """What the server needs from a request, whatever the dialect."""

    model: str
    stream: bool
    last_user: str
    max_tokens: int | None = None
    include_usage: bool = False
    tool_results: tuple[ToolResult, ...] = ()
    """The tool results that end the conversation (answering the last tool calls)."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    index: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolArgsDelta:
    index: int
    fragment: str


Step = TextDelta | ReasoningDelta | ToolCallStarted | ToolArgsDelta


@dataclass(frozen=True, slots=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # the JSON text, as fragments join to it


@dataclass(frozen=True, slots=True)
class Timed:
    delay: float  # seconds before this step, at speed 1
    step: Step


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int


# --- content ---------------------------------------------------------------------------------

MARKDOWN_BODY = """\
## What this demo shows

StreamScope reads the **raw stream** and shows every frame as it arrives:

- text deltas, tool-call fragments and reasoning, each in its own channel
- keep-alive comments, CRLF line ends and reads split inside characters
- the honest outcome: *completed*, *truncated* or *error*

| Dialect | Terminal signal |
|---|---|
| OpenAI chat | `data: [DONE]` |
| Anthropic | `message_stop` |
| Gemini | `finishReason`, then end of body |

```python
def greet(name: str) -> str:
    return f"Hello, {name}!"

print(greet("StreamScope"))
```

Multi-byte text survives every split: naïve café — 日本語 — 🚀
"""

SHORT_BODY = (
    "This is the built-in demo endpoint answering in small pieces. "
    "Multi-byte text streams too: naïve café — 日本語 — 🚀. Done."
)

REASONING = (
    "The user wants a short answer. I should greet them, restate what they wrote, "
    "and mention that this reasoning arrived in its own channel before the answer."
)

LENGTH_BODY = "This answer is about to run into the token limit, so it stops in the middle of a"

# The tool calls' arguments as JSON text. The fragments below split `\"` and `\u00fc` escapes,
# a surrogate-pair escape, and sit next to raw multi-byte characters.
WEATHER_ARGS = (
    '{"city": "Z\\u00fcrich", "country": "CH", "unit": "celsius", '
    '"note": "say \\"grüezi\\" \\ud83c\\udf26 — 日本"}'
)
TIME_ARGS = '{"timezone": "Europe/Zurich"}'
TOOL_CALLS = (
    ToolCall("call_demo_weather_0", "get_weather", WEATHER_ARGS),
    ToolCall("call_demo_time_1", "get_time", TIME_ARGS),
)

_WORDS = re.compile(r"\S+\s*|\s+")


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_answer(results: tuple[ToolResult, ...]) -> str:
    """The final text of ``demo-tools`` once the client sent the tools' results."""
    n = len(results)
    lines = [f"Thanks — {n} tool result{'s' if n != 1 else ''} arrived:\n\n"]
    for result in results:
        lines.append(f"- **{result.name or 'a tool'}**: {_excerpt(result.text) or '(empty)'}\n")
    lines.append("\nThat completes the round trip: tool calls, your results, this answer.")
    return "".join(lines)


def echo_line(last_user: str) -> str:
    text = " ".join(last_user.split())
    if len(text) > 60:
        text = text[:57] + "…"
    if not text:
        return "You sent no text, so here is the demo answer.\n\n"
    return f"You wrote: “{text}”\n\n"


def words(text: str) -> list[str]:
    """Small realistic deltas: a word with its trailing whitespace."""
    return _WORDS.findall(text)


def fragments(arguments: str) -> list[str]:
    """Split JSON text into 1-3 character pieces, with cuts inside escape sequences."""
    out: list[str] = []
    i = 0
    sizes = (2, 1, 3, 1, 2, 3)
    n = 0
    while i < len(arguments):
        size = sizes[n % len(sizes)]
        # Cut right after a backslash, or in the middle of a \uXXXX escape.
        backslash = arguments.find("\\", i, i + size)
        if backslash != -1:
            size = backslash - i + 1 if backslash > i else (3 if arguments[i + 1] == "u" else 1)
        out.append(arguments[i : i + size])
        i += size
        n += 1
    return out


def interleave(a: list[Timed], b: list[Timed]) -> list[Timed]:
    out: list[Timed] = []
    for i in range(max(len(a), len(b))):
        out.extend(a[i : i + 1])
        out.extend(b[i : i + 1])
    return out


def build_script(scenario: Scenario, ask: Ask, interleave_tools: bool = False) -> list[Timed]:
    """The timed steps of `scenario`'s answer to `ask` (a list: a firehose is ~100k steps).

    Parallel tool calls come one after the other, or with their argument fragments interleaved
    (`interleave_tools`, as OpenAI chat completions streams them)."""
    d = scenario.delay
    steps: list[Timed] = []
    echo = echo_line(ask.last_user)
    match scenario.content:
        case "markdown":
            steps = [Timed(d, TextDelta(w)) for w in words(echo + MARKDOWN_BODY)]
        case "short":
            steps = [Timed(d, TextDelta(w)) for w in words(echo + SHORT_BODY)]
        case "length":
            steps = [Timed(d, TextDelta(w)) for w in words(echo + LENGTH_BODY)]
        case "reasoning":
            steps = [Timed(d, ReasoningDelta(w)) for w in words(REASONING)]
            steps += [Timed(d, TextDelta(w)) for w in words(echo + SHORT_BODY)]
        case "firehose":
            n = ask.max_tokens if ask.max_tokens and ask.max_tokens > 0 else FIREHOSE_DEFAULT
            steps = [Timed(0.0, TextDelta(f"t{i % 10} ")) for i in range(n)]
        case "tools" if ask.tool_results:
            steps = [Timed(d, TextDelta(w)) for w in words(tool_answer(ask.tool_results))]
        case "tools":
            steps = [Timed(d, TextDelta(w)) for w in words(echo.strip() + " Checking…")]
            starts = [
                Timed(d, ToolCallStarted(i, c.call_id, c.name)) for i, c in enumerate(TOOL_CALLS)
            ]
            args = [
                [Timed(d, ToolArgsDelta(i, f)) for f in fragments(c.arguments)]
                for i, c in enumerate(TOOL_CALLS)
            ]
            if interleave_tools:
                steps += [*starts, *interleave(args[0], args[1])]
            else:
                steps += [starts[0], *args[0], starts[1], *args[1]]
    steps = _inject(scenario, steps, after=len(words(echo)))
    if scenario.first_delay and steps:
        steps[0] = Timed(scenario.first_delay, steps[0].step)
    return steps


def _inject(scenario: Scenario, steps: list[Timed], after: int) -> list[Timed]:
    """Content faults: one extra text delta, placed after the echo of the user's message."""
    fault = scenario.fault
    if isinstance(fault, LongLine):
        extra = TextDelta("[" + "x" * (fault.size - 2) + "]\n\n")
    elif isinstance(fault, BadUtf8):
        extra = TextDelta(f"(invalid bytes here: {BAD_UTF8_MARK})\n\n")
    else:
        return steps
    at = max(fault.after_deltas, after)
    return [*steps[:at], Timed(scenario.delay, extra), *steps[at:]]


def tool_calls_in(steps: list[Timed]) -> list[ToolCall]:
    names: dict[int, tuple[str, str]] = {}
    args: dict[int, list[str]] = {}
    for timed in steps:
        match timed.step:
            case ToolCallStarted(index, call_id, name):
                names[index] = (call_id, name)
                args[index] = []
            case ToolArgsDelta(index, fragment):
                args[index].append(fragment)
            case _:
                pass
    return [ToolCall(names[i][0], names[i][1], "".join(args[i])) for i in sorted(names)]


@dataclass(frozen=True, slots=True)
class Reply:
    """The whole answer at once (for non-streaming responses)."""

    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    finish: FinishKind
    usage: Usage


def finish_of(scenario: Scenario, ask: Ask) -> FinishKind:
    """How the answer to ``ask`` ends: ``demo-tools`` answers its tools' results with text."""
    if scenario.content == "tools" and ask.tool_results:
        return "stop"
    return scenario.finish


def usage_for(ask: Ask, output_tokens: int) -> Usage:
    return Usage(input_tokens=8 + len(ask.last_user) // 4, output_tokens=output_tokens)


def reply_of(scenario: Scenario, ask: Ask, steps: list[Timed]) -> Reply:
    text = "".join(t.step.text for t in steps if isinstance(t.step, TextDelta))
    reasoning = "".join(t.step.text for t in steps if isinstance(t.step, ReasoningDelta))
    return Reply(
        text=text,
        reasoning=reasoning,
        tool_calls=tool_calls_in(steps),
        finish=finish_of(scenario, ask),
        usage=usage_for(ask, len(steps)),
    )
