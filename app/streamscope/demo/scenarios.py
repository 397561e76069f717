"""The scenario table: every behaviour of the demo endpoint, as data.

The model name of a request picks a `Scenario`. A scenario says what the answer contains
(`content`), how it is paced (`delay`, `first_delay`, `keepalive`), how the frames are spelled
(`line_ending`, `space_after_colon`, `split_writes`) and which single `Fault` is injected. The
dialect writers (`streamscope.demo.wire`) and the one streaming loop (`streamscope.demo.playback`)
read these fields; nothing else in the server branches on a scenario's name.

`expected_outcome` (and, per dialect, `streamscope.demo.dialects.expected_outcome()` and
`expected_finish_reason()`) state what a correct client must conclude, so end-to-end tests (ours
and the app's) can be written as a loop over this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Content = Literal["markdown", "short", "tools", "reasoning", "firehose", "length"]
FinishKind = Literal["stop", "length", "tool_calls"]
Outcome = Literal["completed", "truncated", "error"]
ErrorKind = Literal["auth", "rate_limit", "server", "overloaded"]

FIREHOSE_DEFAULT = 100_000
STALL_SECONDS = 600.0


# --- faults: at most one per scenario -------------------------------------------------------


@dataclass(frozen=True)
class CutMidFrame:
    """After `after_deltas` content frames, send half of the next frame and drop the socket."""

    after_deltas: int = 5


@dataclass(frozen=True)
class DropTerminal:
    """Send everything up to the finish reason, then end the body without the terminal signal."""


@dataclass(frozen=True)
class Stall:
    """After `after_deltas` content frames, send nothing (connection open) until the client
    leaves, the server stops, or `seconds` pass (not scaled by speed)."""

    after_deltas: int = 3
    seconds: float = STALL_SECONDS


@dataclass(frozen=True)
class MidstreamError:
    """After `after_deltas` content frames, the dialect's in-stream error event; body ends."""

    after_deltas: int = 5
    kind: ErrorKind = "overloaded"
    message: str = "The demo server is overloaded (a deliberate mid-stream error)."


@dataclass(frozen=True)
class HttpError:
    """An HTTP error status with the dialect's JSON error body, before any stream."""

    status: int
    kind: ErrorKind
    message: str
    retry_after: int | None = None


@dataclass(frozen=True)
class HtmlError:
    """An HTML error page, as a misconfigured reverse proxy sends."""

    status: int = 502


@dataclass(frozen=True)
class LongLine:
    """After `after_deltas` content frames, one text delta of `size` bytes (a single line)."""

    after_deltas: int = 2
    size: int = 2 * 1024 * 1024


@dataclass(frozen=True)
class BadUtf8:
    """After `after_deltas` content frames, one text frame carrying invalid UTF-8 bytes."""

    after_deltas: int = 3


@dataclass(frozen=True)
class BadJson:
    """After `after_deltas` content frames, one frame whose data is not JSON; then the rest."""

    after_deltas: int = 3


Fault = (
    CutMidFrame
    | DropTerminal
    | Stall
    | MidstreamError
    | HttpError
    | HtmlError
    | LongLine
    | BadUtf8
    | BadJson
)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    sse_only: bool = False
    """Spells Server-Sent Events itself (line endings, comments): not for NDJSON dialects."""
    content: Content = "short"
    delay: float = 0.03
    """Seconds between content deltas at speed 1."""
    first_delay: float = 0.0
    """Seconds before the first content delta (after the stream's opening frames)."""
    keepalive: float | None = None
    """Send a keep-alive (SSE comment; Anthropic `ping`) whenever a wait exceeds this."""
    line_ending: str = "\n"
    space_after_colon: bool = True
    split_writes: bool = False
    """Split network writes inside multi-byte characters and between CR and LF."""
    fault: Fault | None = None
    expected_outcome: Outcome = "completed"

    @property
    def finish(self) -> FinishKind:
        if self.content == "tools":
            return "tool_calls"
        if self.content == "length":
            return "length"
        return "stop"


_TABLE: tuple[Scenario, ...] = (
    Scenario(
        "demo",
        "A Markdown answer: heading, list, table, Python code, multi-byte text.",
        content="markdown",
    ),
    Scenario(
        "demo-tools",
        "Two parallel tool calls (get_weather, get_time) with tiny argument fragments;"
        " sent their results, it answers with a short final text.",
        content="tools",
        delay=0.02,
    ),
    Scenario(
        "demo-reasoning",
        "Reasoning first (reasoning_content / thinking / thought / summary), then the answer.",
        content="reasoning",
    ),
    Scenario(
        "demo-slow",
        "A delta every 0.5 s with keep-alive comments in between.",
        delay=0.5,
        keepalive=0.2,
    ),
    Scenario(
        "demo-firehose",
        "N short deltas with no delay (N = max tokens, default 100000): the load test.",
        content="firehose",
        delay=0.0,
    ),
    Scenario(
        "demo-length",
        "Stops at the token limit with the dialect's length finish reason.",
        content="length",
    ),
    Scenario(
        "demo-keepalive",
        "15 s of keep-alive comments only, then the answer.",
        sse_only=True,
        first_delay=15.0,
        keepalive=1.0,
    ),
    Scenario(
        "demo-crlf",
        "Event-stream lines end with CRLF.",
        sse_only=True,
        line_ending="\r\n",
    ),
    Scenario(
        "demo-nospace",
        "`data:` lines without the space after the colon.",
        sse_only=True,
        space_after_colon=False,
    ),
    Scenario(
        "demo-split-utf8",
        "Network writes split inside multi-byte characters and inside CRLF.",
        content="markdown",
        delay=0.002,
        line_ending="\r\n",
        split_writes=True,
    ),
    Scenario(
        "demo-cut",
        "The connection is dropped in the middle of a frame.",
        fault=CutMidFrame(),
        expected_outcome="truncated",
    ),
    Scenario(
        "demo-no-done",
        "The finish reason arrives, then the body ends before the terminal signal.",
        fault=DropTerminal(),
        expected_outcome="truncated",
    ),
    Scenario(
        "demo-stall",
        "Some text, then silence with the connection open (until you leave, or 10 min).",
        fault=Stall(),
        expected_outcome="truncated",
    ),
    Scenario(
        "demo-midstream-error",
        "Some text, then the dialect's in-stream error event.",
        fault=MidstreamError(),
        expected_outcome="error",
    ),
    Scenario(
        "demo-error-401",
        "HTTP 401 with the dialect's JSON error body.",
        fault=HttpError(401, "auth", "Invalid API key (the demo-error-401 scenario)."),
        expected_outcome="error",
    ),
    Scenario(
        "demo-error-429",
        "HTTP 429 with Retry-After: 20 and the dialect's JSON error body.",
        fault=HttpError(
            429, "rate_limit", "Rate limit reached (the demo-error-429 scenario).", retry_after=20
        ),
        expected_outcome="error",
    ),
    Scenario(
        "demo-error-500",
        "HTTP 500 with the dialect's JSON error body.",
        fault=HttpError(500, "server", "The server had an error (the demo-error-500 scenario)."),
        expected_outcome="error",
    ),
    Scenario(
        "demo-html-502",
        "An HTML 502 page, as a misconfigured proxy sends.",
        fault=HtmlError(),
        expected_outcome="error",
    ),
    Scenario(
        "demo-long-line",
        "A single 2 MiB data line (beyond a 1 MiB line cap).",
        fault=LongLine(),
        expected_outcome="error",
    ),
    Scenario(
        "demo-bad-utf8",
        "One frame carries invalid UTF-8 bytes; the rest is a normal answer.",
        fault=BadUtf8(),
    ),
    Scenario(
        "demo-bad-json",
        "One frame whose data is not JSON, then the rest of a normal answer.",
        fault=BadJson(),
    ),
)

SCENARIOS: Mapping[str, Scenario] = {s.name: s for s in _TABLE}
