"""One request's bench figures, computed from its capture.

:func:`measure` replays the capture through the same pipeline a live turn runs through
(:func:`~streamscope.core.capture.replay.replay_capture`: the dialect's framing and parser,
the reducer and its outcome rules), keeps each frame with the time of the read that
completed it, and reads the figures off those frames — so a value recomputed from the
capture is the value that was plotted, and each one names the frame that defined it (the
Frames tab's 0-based number) for the window to open. Definitions: :mod:`.definitions`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Literal

import orjson

from streamscope.core.bench.percentiles import percentile_or_none
from streamscope.core.bench.tokenizer import TokenCounter
from streamscope.core.capture.format import Capture
from streamscope.core.capture.replay import replay_capture
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.pipeline import ParsedFrame, PipelineUpdate
from streamscope.core.wire.events import (
    ReasoningDelta,
    StreamEvent,
    Terminal,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
    Usage,
)

__all__ = [
    "BenchOutcome",
    "FrameLog",
    "RequestMetrics",
    "TokenSource",
    "measure",
    "measure_async",
    "metrics_of",
]

BenchOutcome = Literal[
    "completed",
    "length",
    "truncated",
    "timeout",
    "cancelled",
    "http_error",
    "stream_error",
    "error",
]
"""How a bench request ended (see :data:`~.definitions.OUTCOME`)."""

TokenSource = Literal["usage", "chunks", "tokenizer"]
"""Where a request's output token count came from (:data:`~.definitions.OUTPUT_TOKENS`)."""

_TIMEOUTS = frozenset({"idle_timeout", "first_byte_timeout"})
_EXTRA_OUTPUT_KEYS = ("thoughtsTokenCount",)
"""Usage keys counted on top of a Usage event's ``output_tokens``: Gemini counts thinking
tokens apart from ``candidatesTokenCount``."""


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    """One request's figures. Times are seconds since the request was sent (``None``: the
    moment never came); ``*_frame`` is the Frames tab's number of the frame that defined
    the value. ``sent_at`` / ``scheduled_at`` (the runner's clock), ``worker``, ``warmup``
    and ``capture`` (id or path) are the run's context, passed through :func:`measure`."""

    dialect: str
    outcome: BenchOutcome
    status: int | None
    reason: str
    finish_reason: str | None
    ttfb: float | None
    ttft: float | None
    ttft_frame: int | None
    ttfo: float | None
    ttfo_frame: int | None
    output_tokens: int
    token_source: TokenSource | None
    first_frame_tokens: int
    token_frames: int
    itl: float | None
    gaps: tuple[float, ...]
    gap_p99: float | None
    max_gap: float | None
    max_gap_frame: int | None
    e2e_terminal: float | None
    terminal_frame: int | None
    e2e_last_token: float | None
    last_token_frame: int | None
    duration: float
    vllm_ttft: float | None
    vllm_itl_gaps: tuple[float, ...]
    genai_perf_ttft: float | None
    llmperf_itl: float | None
    sent_at: float = 0.0
    scheduled_at: float | None = None
    worker: int | None = None
    warmup: bool = False
    capture: str = ""
    frames: int = 0
    """The frames the request's stream carried, numbered as the Frames tab numbers them
    (events and comments; an HTTP error's body is one frame)."""

    @property
    def outcome_key(self) -> str:
        """The outcome as counted: ``http_429``, ``http_503`` for HTTP errors (each status
        apart), else the outcome."""
        if self.outcome == "http_error" and self.status is not None:
            return f"http_{self.status}"
        return self.outcome

    @property
    def ended_at(self) -> float:
        """When the request ended, on the runner's clock."""
        return self.sent_at + self.duration

    @property
    def dispatch_lag(self) -> float | None:
        """Send time minus scheduled time, ``None`` without a schedule (see
        :data:`~.definitions.DISPATCH_LAG`)."""
        return None if self.scheduled_at is None else self.sent_at - self.scheduled_at

    @property
    def ttft_from_schedule(self) -> float | None:
        """TTFT counted from the scheduled time: TTFT + dispatch lag (``None`` without
        either; see :data:`~.definitions.TTFT_FROM_SCHEDULE`)."""
        lag = self.dispatch_lag
        return None if self.ttft is None or lag is None else self.ttft + lag


# -- measuring ------------------------------------------------------------------------------


class FrameLog(TurnObserver):
    """Keeps every frame the pipeline reports, with the time of the read that completed it
    (the frames' index is the Frames tab's numbering): the observer to replay a capture
    with, then hand :attr:`frames` to :func:`metrics_of`. The pipeline must keep its
    frames (``replay_capture(..., keep_frames=True)``, the default)."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, ParsedFrame]] = []

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.frames.extend((t, parsed) for parsed in update.frames)


async def measure_async(
    capture: Capture,
    *,
    dialect: str | None = None,
    sent_at: float = 0.0,
    scheduled_at: float | None = None,
    worker: int | None = None,
    warmup: bool = False,
    capture_ref: str = "",
    tokenizer: TokenCounter | None = None,
) -> RequestMetrics:
    """:func:`measure` on a running event loop (the replay yields to it now and then)."""
    tap = FrameLog()
    turn = await replay_capture(capture, observer=tap, dialect=dialect)
    return metrics_of(
        capture,
        turn,
        tap.frames,
        sent_at=sent_at,
        scheduled_at=scheduled_at,
        worker=worker,
        warmup=warmup,
        capture_ref=capture_ref,
        tokenizer=tokenizer,
    )


def measure(
    capture: Capture,
    *,
    dialect: str | None = None,
    sent_at: float = 0.0,
    scheduled_at: float | None = None,
    worker: int | None = None,
    warmup: bool = False,
    capture_ref: str = "",
    tokenizer: TokenCounter | None = None,
) -> RequestMetrics:
    """The figures of the request ``capture`` recorded (``dialect`` overrides the
    capture's, as replay does; ``tokenizer`` counts the output tokens, as the run did with
    it). Runs the replay on a private event loop: call it where no loop is running in this
    thread (a script, a worker thread or process); on a loop, await :func:`measure_async`."""
    return asyncio.run(
        measure_async(
            capture,
            dialect=dialect,
            sent_at=sent_at,
            scheduled_at=scheduled_at,
            worker=worker,
            warmup=warmup,
            capture_ref=capture_ref,
            tokenizer=tokenizer,
        )
    )


# -- reading the frames ---------------------------------------------------------------------


def _is_token(ev: StreamEvent) -> bool:
    match ev:
        case TextDelta(text) | ReasoningDelta(text, _):
            return bool(text)
        case ToolCallStarted(_, _, name):
            return bool(name)
        case ToolCallDelta(_, _, name, arguments):
            return bool(name) or bool(arguments)
    return False


def _is_output(ev: StreamEvent) -> bool:
    return not isinstance(ev, ReasoningDelta) and _is_token(ev)


def _generated(events: list[StreamEvent]) -> list[str]:
    """The generated text a frame's events carry, by piece (what :func:`_is_token` sees)."""
    pieces: list[str] = []
    for ev in events:
        match ev:
            case TextDelta(text) | ReasoningDelta(text, _):
                pieces.append(text)
            case ToolCallStarted(_, _, name):
                pieces.append(name or "")
            case ToolCallDelta(_, _, name, arguments):
                pieces += [name or "", arguments or ""]
    return [p for p in pieces if p]


def _counted(turn: Turn, tokenizer: TokenCounter) -> int:
    """N by the user's tokenizer: the reasoning, the answer, and each tool call's name and
    arguments, each counted whole (never frame by frame: tokens merge across frames)."""
    pieces = [turn.reasoning, turn.text]
    for call in turn.tool_calls:
        pieces += [call.name or "", call.arguments]
    return sum(tokenizer(piece) for piece in pieces if piece)


def _usage_tokens(ev: Usage) -> int | None:
    """The output tokens a usage event counts (``None``: it counts none)."""
    extra = [v for k in _EXTRA_OUTPUT_KEYS if type(v := ev.raw.get(k)) is int]
    if ev.output_tokens is None and not extra:
        return None
    return (ev.output_tokens or 0) + sum(extra)


def _choices(data: str) -> bool | None:
    """Whether an OpenAI chat data event has a non-empty ``choices`` (``None``: ``[DONE]``
    or no JSON object, which vLLM's client does not stamp)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    choices = obj.get("choices")
    return isinstance(choices, list) and bool(choices)


@dataclass(slots=True)
class _Scan:
    """What one pass over the frames found."""

    token: list[tuple[int, float]] = field(default_factory=list)  # (frame, t)
    output: tuple[int, float] | None = None
    content: float | None = None
    last_content: float | None = None
    first_tokens: int | None = None  # usage carried by the first token frame
    usage: tuple[int, int] | None = None  # (frame, tokens) of the last Usage with a count
    terminal_frame: int | None = None
    vllm_first: float | None = None
    vllm_gaps: list[float] = field(default_factory=list)


def _scan(frames: list[tuple[float, ParsedFrame]], openai: bool) -> _Scan:
    scan = _Scan()
    last_data: float | None = None  # vLLM: the previous data event's time
    for index, (t, (frame, events)) in enumerate(frames):
        token = output = content = False
        frame_usage: int | None = None
        for ev in events:
            if _is_token(ev):
                token = True
                output = output or _is_output(ev)
                content = content or (type(ev) is TextDelta and bool(ev.text))
            elif isinstance(ev, Usage):
                n = _usage_tokens(ev)
                if n is not None:
                    frame_usage = n
            elif type(ev) is Terminal and scan.terminal_frame is None:
                scan.terminal_frame = index
        if token:
            if not scan.token:
                scan.first_tokens = frame_usage
            scan.token.append((index, t))
        if output and scan.output is None:
            scan.output = (index, t)
        if content:
            if scan.content is None:
                scan.content = t
            scan.last_content = t
        if frame_usage is not None:
            scan.usage = (index, frame_usage)
        if openai and frame.event is not None:
            has_choices = _choices(frame.event.data)
            if has_choices:
                if scan.vllm_first is None:
                    scan.vllm_first = t
                elif last_data is not None:
                    scan.vllm_gaps.append(t - last_data)
            if has_choices is not None:
                last_data = t
    return scan


def _outcome(capture: Capture, turn: Turn) -> tuple[BenchOutcome, int | None]:
    kind = capture.end.kind if capture.end is not None else "broken"
    status = capture.response.status if capture.response is not None else None
    match turn.outcome:
        case Outcome.COMPLETED:
            return ("length" if turn.stopped_at_limit else "completed"), status
        case Outcome.CANCELLED:
            return "cancelled", status
        case Outcome.TRUNCATED:
            return ("timeout" if kind in _TIMEOUTS else "truncated"), status
    if kind == "http_error" and status is not None and status >= 400:
        return "http_error", status
    if turn.server_error is not None:
        return "stream_error", status
    return "error", status


def metrics_of(
    capture: Capture,
    turn: Turn,
    frames: list[tuple[float, ParsedFrame]],
    *,
    sent_at: float = 0.0,
    scheduled_at: float | None = None,
    worker: int | None = None,
    warmup: bool = False,
    capture_ref: str = "",
    tokenizer: TokenCounter | None = None,
) -> RequestMetrics:
    """The figures from a replayed capture: its finished ``turn`` and its ``frames`` (each
    with the time of the read that completed it, in the Frames tab's order). With a
    ``tokenizer``, N and k are its counts of the generated text (see
    :data:`~.definitions.OUTPUT_TOKENS`)."""
    dialect = turn.dialect or capture.dialect
    scan = _scan(frames, openai=dialect == "openai")
    outcome, status = _outcome(capture, turn)
    token = scan.token
    # N: the user's tokenizer; else the final usage (at or after the last token frame);
    # else one token per frame.
    n_frames = len(token)
    source: TokenSource | None
    k = scan.first_tokens if scan.first_tokens is not None else 1
    if tokenizer is not None and token:
        n, source = _counted(turn, tokenizer), "tokenizer"
        k = max(1, sum(tokenizer(piece) for piece in _generated(frames[token[0][0]][1].events)))
    elif scan.usage is not None and (not token or scan.usage[0] >= token[-1][0]):
        n, source = scan.usage[1], "usage"
    else:
        n, source = n_frames, ("chunks" if n_frames else None)
    itl: float | None = None
    if n_frames >= 2 and n - k > 0:
        itl = (token[-1][1] - token[0][1]) / (n - k)
    gaps = tuple(b[1] - a[1] for a, b in pairwise(token))
    max_gap = max(gaps) if gaps else None
    max_gap_frame = token[gaps.index(max_gap) + 1][0] if max_gap is not None else None
    duration = turn.timings.end if turn.timings.end is not None else 0.0
    return RequestMetrics(
        dialect=dialect,
        outcome=outcome,
        status=status,
        reason=turn.reason,
        finish_reason=turn.finish_reason,
        ttfb=capture.response.t if capture.response is not None else None,
        ttft=token[0][1] if token else None,
        ttft_frame=token[0][0] if token else None,
        ttfo=scan.output[1] if scan.output else None,
        ttfo_frame=scan.output[0] if scan.output else None,
        output_tokens=n,
        token_source=source,
        first_frame_tokens=k if token else 0,
        token_frames=n_frames,
        itl=itl,
        gaps=gaps,
        gap_p99=percentile_or_none(sorted(gaps), 99.0),
        max_gap=max_gap,
        max_gap_frame=max_gap_frame,
        e2e_terminal=turn.timings.terminal,
        terminal_frame=scan.terminal_frame,
        e2e_last_token=token[-1][1] if token else None,
        last_token_frame=token[-1][0] if token else None,
        duration=duration,
        vllm_ttft=scan.vllm_first,
        vllm_itl_gaps=tuple(scan.vllm_gaps),
        genai_perf_ttft=scan.content,
        llmperf_itl=(scan.last_content / n if scan.last_content is not None and n else None),
        sent_at=sent_at,
        scheduled_at=scheduled_at,
        worker=worker,
        warmup=warmup,
        capture=capture_ref,
        frames=len(frames),
    )
