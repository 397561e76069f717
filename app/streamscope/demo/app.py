"""The Starlette application: a route per dialect the demo serves (`streamscope.demo.dialects`),
request checks, HTTP-level faults.

Everything a scenario does is decided by its row in `SCENARIOS`; the handlers here only read a
request into an `Ask`, pick the dialect writer and hand over to `playback.play`.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
import time
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from streamscope.demo.ask import BadRequestError
from streamscope.demo.bench import (
    BENCH_MODEL,
    BenchParamError,
    RequestCounter,
    is_bench_model,
    parse_params,
    plan,
)
from streamscope.demo.bench_playback import ARRIVED_HEADER, play_bench
from streamscope.demo.dialects import DemoDialect, demo_dialect, demo_dialects, serves
from streamscope.demo.playback import DeliberateCutError, Playback, play
from streamscope.demo.scenarios import (
    SCENARIOS,
    HtmlError,
    HttpError,
    MidstreamError,
    Scenario,
)
from streamscope.demo.script import (
    BAD_UTF8_MARK_BYTES,
    BAD_UTF8_WIRE,
    Ask,
    build_script,
    reply_of,
    usage_for,
)
from streamscope.demo.wire.base import Framing

HTML_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)

_ARRIVED = "streamscope.demo.arrived"
_STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _error(dialect: DemoDialect, status: int, kind: str, message: str, **headers: str) -> Response:
    body = dialect.writer.error_body(status, kind, message)
    return JSONResponse(body, status_code=status, headers=headers or None)


def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


class DemoEndpoint:
    """Request handling, parameterised by pacing speed and the server's stop signal."""

    def __init__(
        self, speed: float, stopping: threading.Event, *, stamp_at_write: bool = False
    ) -> None:
        self.speed = speed
        self.stopping = stopping
        self.stamp_at_write = stamp_at_write
        self.bench_count = RequestCounter()

    async def answer(self, request: Request, dialect: DemoDialect) -> Response:
        arrived = request.scope.get(_ARRIVED, time.monotonic())  # (demo-bench's schedule)
        try:
            model, stream = dialect.from_path(request.path_params)
        except LookupError as exc:
            return _error(dialect, 404, "not_found", str(exc.args[0]))
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError as exc:
            return _error(
                dialect, 400, "invalid_request", f"The request body is not valid JSON: {exc}"
            )
        if not isinstance(body, dict):
            return _error(
                dialect, 400, "invalid_request", "The request body must be a JSON object."
            )
        try:
            ask = dialect.ask(body, model, stream)
        except BadRequestError as exc:
            return _error(dialect, 400, "invalid_request", str(exc))
        problem = dialect.history(body) if dialect.history is not None else None
        if problem is not None:  # (as the real provider would refuse it)
            return _error(dialect, 400, "invalid_request", problem)
        if is_bench_model(ask.model):
            return self._bench(dialect, ask, body, arrived)
        scenario = SCENARIOS.get(ask.model)
        if scenario is None:
            names = ", ".join(SCENARIOS)
            message = f"The model `{ask.model}` does not exist. Demo models: {names}."
            return _error(dialect, 404, "not_found", message)
        if not serves(scenario, dialect.name):
            message = (
                f"The demo scenario `{scenario.name}` does not apply to the {dialect.name} dialect."
            )
            return _error(dialect, 404, "not_found", message)
        return self._respond(scenario, dialect, ask.stream, ask)

    def _respond(
        self, scenario: Scenario, dialect: DemoDialect, stream: bool, ask: Ask
    ) -> Response:
        fault = scenario.fault
        if isinstance(fault, HttpError):
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after else {}
            return _error(dialect, fault.status, fault.kind, fault.message, **headers)
        if isinstance(fault, HtmlError):
            return HTMLResponse(HTML_502, status_code=fault.status)
        writer_class = dialect.writer
        writer = writer_class(ask, Framing(scenario.line_ending, scenario.space_after_colon))
        steps = build_script(scenario, ask, writer_class.interleaves_tool_calls)
        if stream:
            playback = Playback(scenario, ask, steps, writer, self.speed, self.stopping)
            return StreamingResponse(
                play(playback), media_type=writer.media_type, headers=_STREAM_HEADERS
            )
        # Non-streaming answers honour the HTTP-level faults only (a mid-stream error becomes
        # a 500 with the dialect's error body); the content is the whole answer at once.
        if isinstance(fault, MidstreamError):
            return _error(dialect, 500, fault.kind, fault.message)
        data = orjson.dumps(writer.body(reply_of(scenario, ask, steps)))
        data = data.replace(BAD_UTF8_MARK_BYTES, BAD_UTF8_WIRE)
        return Response(data, media_type="application/json")

    def _bench(
        self, dialect: DemoDialect, ask: Ask, body: dict[str, Any], arrived: float
    ) -> Response:
        """A ``demo-bench`` answer (:mod:`streamscope.demo.bench`)."""
        try:
            params = parse_params(ask.model, body)
        except BenchParamError as exc:
            return _error(dialect, 400, "invalid_request", str(exc))
        if not ask.stream:
            return _error(dialect, 400, "invalid_request", "demo-bench answers streams only.")
        key = ask.model + repr(body.get("demo_bench"))
        n = params.req if params.req is not None else self.bench_count.next(key)
        the_plan = plan(params, n, ask.max_tokens)
        headers = {ARRIVED_HEADER: f"{arrived:.6f}"}
        if the_plan.outcome == "e429":
            message = "Rate limit reached (demo-bench's outcome mix)."
            return _error(dialect, 429, "rate_limit", message, **headers, **{"Retry-After": "1"})
        if the_plan.outcome == "e500":
            message = "The server had an error (demo-bench's outcome mix)."
            return _error(dialect, 500, "server", message, **headers)
        writer = dialect.writer(ask, Framing())
        usage = usage_for(ask, the_plan.tokens)
        stream = play_bench(
            the_plan,
            writer,
            arrived,
            usage,
            self.stopping,
            sse=dialect.sse,
            stamp_at_write=self.stamp_at_write,
        )
        return StreamingResponse(
            stream, media_type=writer.media_type, headers={**_STREAM_HEADERS, **headers}
        )

    # --- routes ---

    async def models(self, request: Request) -> Response:
        entries = [_model_entry(s) for s in SCENARIOS.values()]
        entries.append({**entries[0], "id": BENCH_MODEL, "description": _BENCH_DESCRIPTION})
        entries[-1]["dialects"] = [d.name for d in demo_dialects()]
        return _json({"object": "list", "data": entries})

    async def model(self, request: Request) -> Response:
        scenario = SCENARIOS.get(request.path_params["model"])
        if scenario is None:
            return _error(demo_dialect("openai"), 404, "not_found", "The model does not exist.")
        return _json(_model_entry(scenario))

    async def ollama_tags(self, request: Request) -> Response:
        models = [
            {
                "name": s.name,
                "model": s.name,
                "modified_at": "2026-01-01T00:00:00Z",
                "size": 0,
                "digest": "",
                "details": {"format": "demo", "family": "streamscope", "parameter_size": "0B"},
                "description": s.description,
            }
            for s in SCENARIOS.values()
            if serves(s, "ollama")
        ]
        return _json({"models": models})

    async def root(self, request: Request) -> Response:
        return PlainTextResponse("StreamScope demo endpoint is running")


_BENCH_DESCRIPTION = (
    "Timing and outcome set per request, e.g. demo-bench?ttft=200&itl=20&tokens=64 "
    "(see streamscope.demo.bench)."
)


def _model_entry(scenario: Scenario) -> dict[str, Any]:
    return {
        "id": scenario.name,
        "object": "model",
        "created": 0,
        "owned_by": "streamscope-demo",
        "description": scenario.description,
        "dialects": [d.name for d in demo_dialects() if serves(scenario, d.name)],
    }


# --- deliberate connection drops -------------------------------------------------------------

_deliberate_cut: contextvars.ContextVar[bool] = contextvars.ContextVar("demo_cut", default=False)
_INCOMPLETE = "ASGI callable returned without completing response."


class _QuietDeliberateCuts(logging.Filter):
    """Drop uvicorn's complaint about an incomplete response when we cut it on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_deliberate_cut.get() and record.getMessage() == _INCOMPLETE)


_FILTER = _QuietDeliberateCuts()


def install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def _is_cut(exc: BaseException) -> bool:
    if isinstance(exc, DeliberateCutError):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_cut(e) for e in exc.exceptions)
    return False


class DemoApp:
    """The ASGI app: Starlette routes, plus the one place that turns `DeliberateCutError` into
    a dropped connection (returning with the response unfinished makes uvicorn close the
    socket without the terminating chunk). ``stamp_at_write``: the server writes through
    :class:`~streamscope.demo.stamping.StampingH11Protocol`, which stamps ``demo-bench``'s
    frames (leave it ``False`` under any other server)."""

    def __init__(
        self, speed: float, stopping: threading.Event, *, stamp_at_write: bool = False
    ) -> None:
        endpoint = DemoEndpoint(speed, stopping, stamp_at_write=stamp_at_write)
        self.starlette = Starlette(
            routes=[
                Route("/", endpoint.root, methods=["GET"]),
                Route("/v1/models", endpoint.models, methods=["GET"]),
                Route("/v1/models/{model}", endpoint.model, methods=["GET"]),
                Route("/api/tags", endpoint.ollama_tags, methods=["GET"]),
                *(
                    Route(d.route, functools.partial(endpoint.answer, dialect=d), methods=["POST"])
                    for d in demo_dialects()
                ),
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[_ARRIVED] = time.monotonic()  # (a request's arrival, before any routing)
        try:
            await self.starlette(scope, receive, send)
        except BaseException as exc:
            if not _is_cut(exc):
                raise
            _deliberate_cut.set(True)
