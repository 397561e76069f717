"""What a rule is, and the rules of every stream whatever its dialect (transport, SSE framing,
the stream, timing), as data. Each dialect's own rules live beside it in
:mod:`streamscope.core.verdict.dialects`; :mod:`streamscope.core.verdict.catalog` puts them
all in one list, the one the engine, the CLI (``streamscope lint --rules``), SARIF and the
README's rule table are made from.

A :class:`Rule` is an id (``family.name``: ``openai.finish-reason-once``), a severity, a
one-line message (what is wrong) and a hint (what usually causes it and how to fix it).
A :class:`Finding` is a rule that fired: the 0-based frame number as the Frames tab
numbers frames (the first, when the same finding came on several frames: ``count`` says how
many times, ``frames`` lists them), or ``None`` for a finding about the whole stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from streamscope.core.turn.model import Turn
from streamscope.core.wire.sizes import plural

__all__ = [
    "COMMON",
    "COMMON_FAMILIES",
    "SEVERITIES",
    "Finding",
    "Rule",
    "Severity",
    "Verdict",
    "diagnosis",
]

Severity = Literal["error", "warning", "info"]

SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Rule:
    """One documented check (see the module docstring)."""

    id: str
    severity: Severity
    message: str
    hint: str

    @property
    def family(self) -> str:
        """``transport``, ``sse``, ``stream``, ``timing`` or a dialect's name."""
        return self.id.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule that fired: where (``frame``, ``None`` for the whole stream) and the message
    with this stream's particulars. The same rule with the same message on several frames is
    one finding: ``frame`` is the first of them, ``count`` how many times it fired and
    ``frames`` where (the first :data:`~streamscope.core.verdict.engine.MAX_FRAMES` of them;
    empty for a finding about the whole stream)."""

    rule: str
    severity: Severity
    frame: int | None
    message: str
    hint: str
    count: int = 1
    frames: tuple[int, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "frame": self.frame,
            "message": self.message,
            "hint": self.hint,
            "count": self.count,
            "frames": list(self.frames),
        }


COMMON: tuple[Rule, ...] = (
    # -- HTTP and transport -------------------------------------------------------------------
    Rule(
        "transport.http-status",
        "error",
        "the response status is an HTTP error",
        "The endpoint refused the request (key, quota, model name, body); the error body in "
        "the Frames tab says why.",
    ),
    Rule(
        "transport.content-type",
        "error",
        "Content-Type is not the dialect's stream type",
        "SSE dialects send text/event-stream and Ollama application/x-ndjson; anything else "
        "makes proxies buffer the body and SDKs refuse it. Fix the server's response header.",
    ),
    Rule(
        "transport.content-encoding",
        "warning",
        "the stream is compressed (Content-Encoding)",
        "gzip on a stream makes a proxy or the server hold bytes until a compression block "
        "fills, so tokens arrive in bursts. Disable compression for text/event-stream.",
    ),
    Rule(
        "transport.not-a-stream",
        "error",
        "the body is an HTML page or one JSON error document, not a stream",
        "A proxy, gateway or load balancer answered instead of the model server (502 page, "
        "login page), or the request did not ask for streaming.",
    ),
    # -- SSE framing --------------------------------------------------------------------------
    Rule(
        "sse.bom",
        "warning",
        "the stream starts with a UTF-8 byte order mark",
        "Browsers drop it, many SSE parsers do not and fail on the first field. Remove the BOM "
        "the server's writer adds.",
    ),
    Rule(
        "sse.bom-inside",
        "error",
        "a byte order mark inside the stream: its line is read as an unknown field and the "
        "event is lost",
        "U+FEFF before a field name makes it another field ('\\ufeffdata'), which every SSE "
        "parser ignores: the event's data never reaches the client. A writer that encodes "
        "each chunk with a BOM (utf-8-sig), or a proxy joining two bodies.",
    ),
    Rule(
        "sse.mixed-line-endings",
        "warning",
        "line endings change within the stream",
        "Legal SSE, but a sign of frames written by two different layers (a proxy injecting "
        "keep-alives); naive line splitters break on it. Use one line ending throughout.",
    ),
    Rule(
        "sse.no-space-after-colon",
        "info",
        "a field has no space after the colon (data:x)",
        "Legal SSE (the space is optional), but parsers that strip a fixed 6 characters lose "
        "the value's first byte. Write 'data: x'.",
    ),
    Rule(
        "sse.extra-space-after-colon",
        "warning",
        "a field has more than one space after the colon",
        "Only one space is removed: the rest becomes part of the value, which breaks "
        "comparisons such as '[DONE]'. Write exactly one space.",
    ),
    Rule(
        "sse.unknown-field",
        "warning",
        "a line names a field SSE does not know",
        "Only event, data, id and retry exist; other fields are ignored, so what the server "
        "meant to send there is lost. Move the value into data or a comment.",
    ),
    Rule(
        "sse.retry",
        "warning",
        "a retry field is not a whole number of milliseconds",
        "An invalid retry is ignored by clients. LLM streams are not resumable anyway: drop "
        "retry or send digits only.",
    ),
    Rule(
        "sse.invalid-utf8",
        "error",
        "a frame is not valid UTF-8",
        "Usually a writer that splits multi-byte characters and encodes the halves on their "
        "own, or a Latin-1 step in a proxy. Encode the whole frame as UTF-8 once.",
    ),
    Rule(
        "sse.truncated-frame",
        "error",
        "the body ended inside a frame (no blank line after it)",
        "The connection was cut mid-event: a timeout in a proxy or load balancer, or a server "
        "crash. The last frame is lost to every client.",
    ),
    Rule(
        "sse.line-too-long",
        "error",
        "a line is longer than the decoder's limit",
        "A single event carries megabytes (a whole document, an image as base64); clients "
        "with line limits fail here. Send it in smaller deltas.",
    ),
    Rule(
        "sse.keepalive-cadence",
        "warning",
        "keep-alives are too sparse to keep idle proxies from closing the connection",
        "Idle timeouts of 30-60 s are common (nginx, cloud load balancers). Send a comment "
        "every 15 s or less while the model thinks.",
    ),
    # -- The stream (any dialect) -------------------------------------------------------------
    Rule(
        "stream.terminal-missing",
        "error",
        "the body ended without the dialect's terminal signal",
        "The answer may be incomplete: the server or a proxy closed early (timeout, crash, "
        "max body size). Look at the last frames and the server's logs.",
    ),
    Rule(
        "stream.data-after-terminal",
        "error",
        "data arrived after the terminal signal",
        "Clients stop reading at the terminal signal and never see it. The server must send "
        "everything (usage, last deltas) before [DONE] / message_stop / done:true.",
    ),
    Rule(
        "stream.done-sentinel",
        "info",
        "a [DONE] sentinel the dialect does not define, after the terminal event",
        "Gateways (LiteLLM and others) append OpenAI's 'data: [DONE]' to every stream. The "
        "openai SDK stops at it and the Anthropic SDK skips it (no event name): nothing is "
        "lost. (google-genai parses it as JSON and fails: in a Gemini stream it is an error.)",
    ),
    Rule(
        "stream.malformed-frame",
        "error",
        "a frame's data is not what the dialect defines (not JSON, or the wrong shape)",
        "A proxy splitting or merging events, a debug print in the stream, or a server bug. "
        "The frame is skipped by clients.",
    ),
    Rule(
        "stream.server-error",
        "error",
        "the server sent an error in the stream",
        "The model server failed mid-answer (overloaded, internal error, content filter); the "
        "frame holds its message. Retry, or check the server's status.",
    ),
    Rule(
        "stream.dialect-mismatch",
        "warning",
        "the frames look like another dialect than the one chosen",
        "The endpoint speaks a different API than the settings say (an Anthropic URL under "
        "the OpenAI dialect, say). Pick the right dialect, or auto.",
    ),
    Rule(
        "stream.empty",
        "error",
        "the stream carried no events at all",
        "The server accepted the request and sent nothing useful: only blank lines or "
        "keep-alives, or an empty body.",
    ),
    # -- Timing diagnosis ---------------------------------------------------------------------
    Rule(
        "timing.buffered",
        "warning",
        "buffered by something in between: a long silence, then most frames in one read",
        "A proxy (nginx proxy_buffering, a CDN, a corporate gateway) or the server's own "
        "response buffering holds the stream. Disable buffering for streaming routes "
        "(X-Accel-Buffering: no, flush after each event).",
    ),
    Rule(
        "timing.fake-streaming",
        "warning",
        "fake streaming: most of the answer in one or two frames after a long wait",
        "The server generates the whole answer, then sends it as a stream of one chunk (a "
        "compatibility layer over a non-streaming backend). Nothing on the client fixes it.",
    ),
    Rule(
        "timing.stall",
        "warning",
        "the stream stalled: a long silence in the middle of the answer",
        "The model server paused (overload, tool execution, GC) or the network held the "
        "bytes. Long stalls trip idle timeouts in clients and proxies.",
    ),
    Rule(
        "timing.keepalives-only",
        "warning",
        "the stream sent only keep-alives",
        "The connection was alive but the model never answered: a queue that never drained or "
        "a backend that died behind a proxy that keeps pinging.",
    ),
    Rule(
        "timing.slow-first-byte",
        "info",
        "the first byte took long (time to first byte)",
        "Nothing arrived at all for a while: connection setup, a queue in front of the model, "
        "or a proxy that buffers. Compare with the time to first token.",
    ),
    Rule(
        "timing.slow-first-token",
        "info",
        "bytes arrived early but the first token much later (TTFT far above TTFB)",
        "The server answered at once and then the model took its time (prompt processing, "
        "queueing, hidden reasoning). The connection is fine.",
    ),
)
"""The rules of every stream, whatever its dialect (each dialect's own are in
:mod:`streamscope.core.verdict.dialects`)."""

COMMON_FAMILIES: dict[str, str] = {
    "transport": "HTTP and transport",
    "sse": "SSE framing",
    "stream": "The stream (any dialect)",
    "timing": "Timing diagnosis",
}
"""The common rules' families and their titles in the rule table, in order."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """A finished lint: the dialect used, the turn's outcome, findings in order."""

    dialect: str | None
    outcome: str | None
    findings: tuple[Finding, ...]
    turn: Turn

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for f in self.findings:
            counts[f.severity] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` object."""
        return {
            "dialect": self.dialect,
            "outcome": self.outcome,
            "findings": [f.to_json() for f in self.findings],
            "summary": self.summary,
        }


def diagnosis(findings: Sequence[Finding]) -> str:
    """A short line for the card and the status bar: "2 spec errors · buffered by a proxy"
    ("" when there is nothing to say)."""
    errors = sum(1 for f in findings if f.severity == "error")
    parts = [plural(errors, "spec error")] if errors else []
    ids = {f.rule for f in findings}
    for rule_id, words in (
        ("timing.buffered", "buffered by a proxy"),
        ("timing.fake-streaming", "fake streaming"),
        ("timing.stall", "stalled"),
        ("timing.keepalives-only", "keep-alives only"),
    ):
        if rule_id in ids:
            parts.append(words)
    if not parts:
        warnings = sum(1 for f in findings if f.severity == "warning")
        if warnings:
            parts.append(plural(warnings, "warning"))
    return " · ".join(parts)
