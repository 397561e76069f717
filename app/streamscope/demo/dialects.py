"""The demo endpoint's dialects: its one list (one entry per dialect, in the order it lists
them). Each :class:`DemoDialect` says where the dialect is served (its base path and route), how
a request is read (its :data:`~streamscope.demo.ask.AskParser`), what history the provider
would refuse (:mod:`streamscope.demo.history`), how answers are written (its
:class:`~streamscope.demo.wire.base.Writer`, which spells the finish reasons) and what a client
must conclude when the terminal signal is dropped.

The demo is an independent oracle: nothing here comes from StreamScope's own dialects. A new
demo dialect is one :func:`register` call (:func:`registered` for a ``with`` block): the routes,
base URLs, scenario lists and expected results follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from streamscope.demo import history
from streamscope.demo.ask import (
    AskParser,
    ask_anthropic,
    ask_gemini,
    ask_ollama,
    ask_openai,
    ask_responses,
)
from streamscope.demo.scenarios import (
    CutMidFrame,
    DropTerminal,
    FinishKind,
    HtmlError,
    HttpError,
    LongLine,
    MidstreamError,
    Outcome,
    Scenario,
    Stall,
)
from streamscope.demo.wire.anthropic import AnthropicWriter
from streamscope.demo.wire.base import Writer
from streamscope.demo.wire.gemini import GeminiWriter
from streamscope.demo.wire.ollama import OllamaWriter
from streamscope.demo.wire.openai_chat import OpenAIChatWriter
from streamscope.demo.wire.responses import ResponsesWriter

__all__ = [
    "DemoDialect",
    "demo_dialect",
    "demo_dialects",
    "dialects_for",
    "expected_finish_reason",
    "expected_outcome",
    "finish_reason",
    "history_problem",
    "register",
    "registered",
    "serves",
]

PathParams = Mapping[str, str]
"""A route's path parameters (Gemini's model and method are in its path)."""


def _in_body(_params: PathParams) -> tuple[str | None, bool | None]:
    return None, None  # (model and stream are read from the body)


def _gemini_path(params: PathParams) -> tuple[str | None, bool | None]:
    model, _, method = params["target"].partition(":")
    if method not in ("streamGenerateContent", "generateContent"):
        raise LookupError(f"Unknown method `{method}`.")
    return model, method == "streamGenerateContent"


@dataclass(frozen=True)
class DemoDialect:
    """One dialect the demo serves (see the module docstring)."""

    name: str
    writer: type[Writer]
    ask: AskParser
    base_path: str
    """What a client's base URL adds to the server's root (``/v1``)."""
    route: str
    """The streaming request's route under the root (Starlette syntax)."""
    history: Callable[[history.JSON], str | None] | None = None
    """Why the provider would refuse a request's history (``None``: it refuses none)."""
    from_path: Callable[[PathParams], tuple[str | None, bool | None]] = _in_body
    """The model and whether to stream, when the route's path says them (else ``None``);
    ``LookupError`` (its message) for a path the dialect does not serve."""
    finish_before_terminal: bool = True
    """Whether the finish reason arrives in a frame before the terminal signal (a client
    that never gets the terminal signal still learns it)."""
    terminal_after_finish: bool = True
    """Whether a terminal signal follows the finish reason at all (Gemini: the end of the
    body is its only one)."""

    @property
    def sse(self) -> bool:
        """Whether it streams Server-Sent Events (else newline-delimited JSON)."""
        return self.writer.media_type == "text/event-stream"

    def finish_reason(self, kind: FinishKind) -> str:
        """How this wire spells ``kind`` (Responses: status or incomplete reason, what a
        client reports for it)."""
        return self.writer.finish_reasons[kind]


_REGISTRY: dict[str, DemoDialect] = {}


def register(dialect: DemoDialect) -> DemoDialect:
    """Serve ``dialect`` from demo servers made from now on; ``ValueError`` if the name is
    taken."""
    if dialect.name in _REGISTRY:
        raise ValueError(f"the demo already serves a dialect named {dialect.name!r}")
    _REGISTRY[dialect.name] = dialect
    return dialect


@contextmanager
def registered(dialect: DemoDialect) -> Iterator[DemoDialect]:
    """``dialect`` served for the duration of a ``with`` block (tests)."""
    register(dialect)
    try:
        yield dialect
    finally:
        _REGISTRY.pop(dialect.name, None)


def demo_dialects() -> tuple[DemoDialect, ...]:
    """Every dialect the demo serves, in order."""
    return tuple(_REGISTRY.values())


def demo_dialect(name: str) -> DemoDialect:
    """The dialect called ``name``; ``KeyError`` (naming those there are) if none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        names = ", ".join(_REGISTRY)
        raise KeyError(f"unknown dialect {name!r}; expected one of {names}") from None


def finish_reason(dialect: str, kind: FinishKind) -> str:
    """The finish reason as ``dialect`` spells it on the wire."""
    return demo_dialect(dialect).finish_reason(kind)


def history_problem(dialect: str, body: history.JSON) -> str | None:
    """Why the provider of ``dialect`` would refuse ``body``'s history with HTTP 400 (``None``:
    it would not)."""
    rule = demo_dialect(dialect).history
    return rule(body) if rule is not None else None


def serves(scenario: Scenario, dialect: str) -> bool:
    """Whether ``scenario`` applies to ``dialect`` (some spell SSE itself: not NDJSON)."""
    return demo_dialect(dialect).sse or not scenario.sse_only


def dialects_for(scenario: Scenario) -> tuple[str, ...]:
    """The names of the dialects ``scenario`` applies to, in order."""
    return tuple(d.name for d in demo_dialects() if serves(scenario, d.name))


def expected_outcome(scenario: Scenario, dialect: str) -> Outcome:
    """What a correct client concludes of ``scenario`` in ``dialect``: dropping the terminal
    signal truncates the stream, except where none follows the finish reason."""
    if isinstance(scenario.fault, DropTerminal) and not demo_dialect(dialect).terminal_after_finish:
        return "completed"
    return scenario.expected_outcome


def expected_finish_reason(scenario: Scenario, dialect: str) -> str | None:
    """The finish reason a correct client reports for ``scenario`` in ``dialect`` (``None``:
    none arrived). With :class:`~streamscope.demo.scenarios.DropTerminal`, only dialects whose
    finish reason precedes the terminal signal deliver it."""
    fault = scenario.fault
    if isinstance(fault, CutMidFrame | Stall | MidstreamError | HttpError | HtmlError | LongLine):
        return None
    entry = demo_dialect(dialect)
    if isinstance(fault, DropTerminal) and not entry.finish_before_terminal:
        return None
    return entry.finish_reason(scenario.finish)


for _entry in (
    DemoDialect(
        "openai", OpenAIChatWriter, ask_openai, "/v1", "/v1/chat/completions", history.openai
    ),
    DemoDialect(
        "responses",
        ResponsesWriter,
        ask_responses,
        "/v1",
        "/v1/responses",
        history.responses,
        finish_before_terminal=False,
    ),
    DemoDialect(
        "anthropic", AnthropicWriter, ask_anthropic, "/v1", "/v1/messages", history.anthropic
    ),
    DemoDialect(
        "gemini",
        GeminiWriter,
        ask_gemini,
        "/v1beta",
        "/v1beta/models/{target:path}",
        history.gemini,
        from_path=_gemini_path,
        terminal_after_finish=False,
    ),
    DemoDialect("ollama", OllamaWriter, ask_ollama, "", "/api/chat", finish_before_terminal=False),
):
    register(_entry)
