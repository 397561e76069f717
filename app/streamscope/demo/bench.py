"""The ``demo-bench`` model: an answer whose timing and outcome the request sets, for load tests.

Parameters go in the model name or in the request body (the body wins where both say one)::

    demo-bench?ttft=200&itl=20&tokens=64          the model name, URL-query style
    demo-bench;ttft=200;itl=20;tokens=64           the same (for Gemini, whose model is in the
                                                   URL path, where ``?`` cannot go)
    {"model": "demo-bench", "demo_bench": {"ttft": 200, "itl": 20}, ...}   the request body

=============  =======  ==================================================================
name           default  meaning
=============  =======  ==================================================================
``ttft``       200      ms from the request's arrival to the first token's frame
``itl``        20       ms between tokens
``tokens``     64       output tokens (the request's max tokens, when smaller, stops it
                        there with the dialect's length finish reason)
``tpc``        1        tokens per chunk (frame); a chunk goes when its first token is due
``reasoning``  0        how many of the tokens are reasoning (sent first, in the dialect's
                        reasoning channel)
``jitter``     0        ms: each chunk is late by a seeded uniform draw in [0, jitter]
``stall``      0        ms of silence before token ``stall_at`` (default: half-way) ...
``stall_at``            ... in a seeded fraction ``stall_p`` of the requests (default 1)
``cut``        0        fraction of requests whose connection drops mid-frame (truncated)
``e429``       0        fraction answered HTTP 429 (``Retry-After: 1``)
``e500``       0        fraction answered HTTP 500
``err``        0        fraction ending in the dialect's in-stream error event
``seed``       0        seeds every draw
``req``                 the draw's request number (default: the server's count of requests
                        for this model string, from 0)
=============  =======  ==================================================================

Every draw of request *n* comes from ``random.Random(f"demo-bench:{seed}:{n}")``, so the
outcome of each request number is fixed by the seed, and *N* requests (numbered 0..N-1 by
arrival, whatever their order) give the same outcome counts in every run.

Times are on the server's schedule, not relative sleeps: token *k* is due at
``arrival + ttft + k * itl`` (plus its jitter and any stall before it); see
:mod:`streamscope.demo.bench_playback` for how the frames are stamped. ``demo-bench`` does
not scale with the server's ``--speed``: its times are what the request says.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal
from urllib.parse import parse_qsl

BENCH_MODEL = "demo-bench"
BODY_KEY = "demo_bench"

BenchOutcome = Literal["completed", "cut", "e429", "e500", "err"]

_WORDS = (
    "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do",
    "eiusmod", "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua",
)  # fmt: skip


class BenchParamError(ValueError):
    """A ``demo-bench`` parameter that is unknown or out of range (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class BenchParams:
    """What a ``demo-bench`` request asked for (see the module docstring)."""

    ttft: float = 200.0
    itl: float = 20.0
    tokens: int = 64
    tpc: int = 1
    reasoning: int = 0
    jitter: float = 0.0
    stall: float = 0.0
    stall_at: int | None = None
    stall_p: float = 1.0
    cut: float = 0.0
    e429: float = 0.0
    e500: float = 0.0
    err: float = 0.0
    seed: int = 0
    req: int | None = None

    def __post_init__(self) -> None:
        for name in ("ttft", "itl", "jitter", "stall"):
            if getattr(self, name) < 0:
                raise BenchParamError(f"demo-bench: {name} must be >= 0")
        if self.tokens < 1 or self.tpc < 1:
            raise BenchParamError("demo-bench: tokens and tpc must be >= 1")
        if not 0 <= self.reasoning <= self.tokens:
            raise BenchParamError("demo-bench: reasoning must be between 0 and tokens")
        shares = (self.cut, self.e429, self.e500, self.err, self.stall_p)
        if any(not 0 <= p <= 1 for p in shares) or sum(shares[:4]) > 1:
            raise BenchParamError("demo-bench: fractions must be in [0, 1] and sum to <= 1")


_TYPES = {
    f.name: (int if f.name in ("tokens", "tpc", "reasoning", "stall_at", "seed", "req") else float)
    for f in fields(BenchParams)
}


def is_bench_model(model: str) -> bool:
    """Whether ``model`` names ``demo-bench`` (with or without parameters)."""
    return model == BENCH_MODEL or model[len(BENCH_MODEL) : len(BENCH_MODEL) + 1] in ("?", ";")


def _convert(name: str, value: Any) -> int | float:
    kind = _TYPES.get(name)
    if kind is None:
        known = ", ".join(_TYPES)
        raise BenchParamError(f"demo-bench: unknown parameter {name!r} (known: {known})")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise BenchParamError(f"demo-bench: {name} must be a number")
    try:
        number = float(value)
    except ValueError:
        raise BenchParamError(f"demo-bench: {name} must be a number, not {value!r}") from None
    if kind is int:
        if number != int(number):
            raise BenchParamError(f"demo-bench: {name} must be a whole number")
        return int(number)
    return number


def parse_params(model: str, body: Mapping[str, Any] | None = None) -> BenchParams:
    """The parameters of a ``demo-bench`` request: the model name's, then the body's
    ``demo_bench`` object over them. :class:`BenchParamError` names what is wrong."""
    values: dict[str, int | float] = {}
    query = model[len(BENCH_MODEL) + 1 :]
    for name, value in parse_qsl(query.replace(";", "&"), keep_blank_values=True):
        values[name] = _convert(name, value)
    extra = body.get(BODY_KEY) if body is not None else None
    if extra is not None:
        if not isinstance(extra, dict):
            raise BenchParamError(f"demo-bench: {BODY_KEY!r} must be an object")
        for name, value in extra.items():
            values[name] = _convert(name, value)
    return BenchParams(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One frame's worth of tokens: when it is due (ms after arrival), its reasoning and
    content text."""

    due_ms: float
    reasoning: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class BenchPlan:
    """What the server does for one request: its outcome, the chunks, and for ``cut`` and
    ``err`` the chunk before which the stream breaks."""

    outcome: BenchOutcome
    chunks: tuple[Chunk, ...]
    tokens: int
    length_stop: bool
    break_at: int | None = None


def draw_outcome(params: BenchParams, rng: random.Random) -> BenchOutcome:
    u = rng.random()
    for outcome, share in (
        ("cut", params.cut),
        ("e429", params.e429),
        ("e500", params.e500),
        ("err", params.err),
    ):
        if u < share:
            return outcome  # type: ignore[return-value]
        u -= share
    return "completed"


def token_text(k: int) -> str:
    """Token ``k``'s text: a word with its leading space."""
    return " " + _WORDS[k % len(_WORDS)]


def plan(params: BenchParams, n: int, max_tokens: int | None = None) -> BenchPlan:
    """Request number ``n``'s plan (every draw from its own seeded generator)."""
    rng = random.Random(f"demo-bench:{params.seed}:{n}")
    outcome = draw_outcome(params, rng)
    stalls = params.stall > 0 and rng.random() < params.stall_p
    total = params.tokens
    length_stop = max_tokens is not None and 0 < max_tokens < total
    if length_stop:
        total = max_tokens  # type: ignore[assignment]
    stall_at = params.stall_at if params.stall_at is not None else total // 2
    chunks: list[Chunk] = []
    for first in range(0, total, params.tpc):
        count = min(params.tpc, total - first)
        due = params.ttft + first * params.itl
        if stalls and first + count > stall_at:
            due += params.stall
        if params.jitter:
            due += rng.uniform(0, params.jitter)
        if chunks:
            due = max(due, chunks[-1].due_ms)  # (jitter never reorders the chunks)
        ks = range(first, first + count)
        reasoning = "".join(token_text(k) for k in ks if k < params.reasoning)
        text = "".join(token_text(k) for k in ks if k >= params.reasoning)
        chunks.append(Chunk(due, reasoning, text, count))
    break_at = None
    if outcome in ("cut", "err"):
        break_at = rng.randrange(1, len(chunks)) if len(chunks) > 1 else 0
    return BenchPlan(outcome, tuple(chunks), total, length_stop, break_at)


class RequestCounter:
    """Numbers the requests of each model string from 0, in arrival order (thread-safe: the
    server's thread and a test's may share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def next(self, key: str) -> int:
        with self._lock:
            n = self._counts.get(key, 0)
            self._counts[key] = n + 1
            return n
