"""The tap: a recording reverse proxy in front of an LLM endpoint (an ASGI app for uvicorn).

Every request under the listen address goes to the same path under the upstream (see
:func:`upstream_url`); the answer comes back exactly as upstream sent it — status, headers
(minus hop-by-hop ones), the body's bytes unchanged and each upstream read forwarded at once.
Faults stay faults: a body cut short reaches the client cut short (the connection is dropped
without the end of the body), a stall stays a stall, an error status with its headers.

Meanwhile each exchange is read as a turn (the same :class:`StreamPipeline` as chat turns, on
the decoded bytes when upstream compressed them) and recorded as a ``.sscap`` capture through
:class:`CaptureRecorder`, which writes as reads arrive and scrubs with the request's
:class:`~streamscope.core.redact.Scrubber`: keys in the request's headers or query go upstream
untouched and never reach a file. A listener (the CLI, the window) is told of each exchange as
it starts (it may watch it with a :class:`TurnObserver`) and when it ends
(:class:`ExchangeResult`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx
from httpx._decoders import SUPPORTED_DECODERS, ContentDecoder

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.net.client import MAX_ERROR_BODY, http_client
from streamscope.core.net.env_proxy import NetworkSettingError
from streamscope.core.net.options import TLSOptions
from streamscope.core.redact import Scrubber, redact_url
from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.observer import MultiObserver, TurnObserver
from streamscope.core.turn.outcome import EndKind, Outcome, StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import MarkedFrame
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import DialectWarning

__all__ = [
    "HOP_BY_HOP",
    "ExchangeResult",
    "TapApp",
    "TapExchange",
    "TapListener",
    "install_log_filter",
    "upstream_url",
]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that belong to one connection, never forwarded (nor those a ``Connection``
header names)."""

_REQUEST_DROPPED = HOP_BY_HOP | {"host", "content-length"}  # httpx sets both for upstream
_CLIENT_DEFAULTS = ("accept", "accept-encoding", "user-agent")
"""Headers httpx would add on its own: removed unless the client sent them (a client that
did not ask for gzip must not get it)."""


def upstream_url(upstream: str, path: str, query: str = "") -> str:
    """Where a request for ``path`` goes: the tap's root stands for ``upstream``
    (``/v1/chat/completions`` -> ``URL/v1/chat/completions``). When ``upstream`` has a path
    (``https://openrouter.ai/api/v1``) and the request's path already starts with it (the
    client's base URL mirrors upstream's: ``http://127.0.0.1:8700/api/v1``), it is not
    added twice; otherwise it is put in front (base URL ``http://127.0.0.1:8700``)."""
    parts = urlsplit(upstream)
    prefix = parts.path.rstrip("/")
    if prefix and not (path == prefix or path.startswith(prefix + "/")):
        path = prefix + path
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


@dataclass(frozen=True, slots=True)
class TapExchange:
    """One request through the tap, as it starts (``url``: upstream's, unredacted — the
    listener redacts before showing; ``path``: what the JSON line shows, redacted)."""

    id: int
    method: str
    path: str
    url: str
    headers: dict[str, str]
    body: bytes
    capture: Path | None
    started: float  # monotonic
    spec: RequestSpec = field(repr=False, default=RequestSpec("GET", "", {}))


@dataclass(frozen=True, slots=True)
class ExchangeResult:
    """A finished exchange: what ``streamscope tap --json`` prints (:meth:`to_json`)."""

    exchange: TapExchange
    status: int | None
    outcome: str
    reason: str
    dialect: str | None
    frames: int
    bytes: int
    ttft_ms: float | None
    duration_ms: float
    turn: Turn

    def to_json(self) -> dict[str, Any]:
        ex = self.exchange
        return {
            "id": ex.id,
            "method": ex.method,
            "path": ex.path,
            "status": self.status,
            "outcome": self.outcome,
            "reason": self.reason,
            "dialect": self.dialect,
            "frames": self.frames,
            "bytes": self.bytes,
            "ttft_ms": self.ttft_ms,
            "duration_ms": self.duration_ms,
            "capture": str(ex.capture) if ex.capture is not None else None,
        }


class TapListener(Protocol):
    """Told of each exchange (on the tap's event loop thread: be quick)."""

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        """A request arrived; return an observer to watch it as a turn (or ``None``)."""
        ...

    def exchange_finished(self, result: ExchangeResult) -> None:
        """The exchange ended (any outcome); its capture may still be being written."""
        ...


# -- quiet deliberate cuts --------------------------------------------------------------------

_cut = contextvars.ContextVar("tap_cut", default=False)
_INCOMPLETE = "ASGI callable returned without completing response."


class _QuietCuts(logging.Filter):
    """uvicorn complains when a response is left unfinished: for the tap that is the point
    (upstream cut the body, so the client's connection is dropped)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_cut.get() and record.getMessage() == _INCOMPLETE)


_FILTER = _QuietCuts()


def install_log_filter() -> None:
    logger = logging.getLogger("uvicorn.error")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


# -- the app ----------------------------------------------------------------------------------

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class _Cut(Exception):
    """Upstream's body broke: drop the client's connection without ending the body."""


class TapApp:
    """The ASGI app (see the module docstring). ``captures``: where exchanges are recorded
    (``None``: not recorded — for tests of pass-through alone)."""

    def __init__(
        self,
        upstream: str,
        *,
        dialect: str = "auto",
        tls: TLSOptions = TLSOptions(),
        captures: CaptureStore | None = None,
        listener: TapListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the upstream must be an http(s) URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.dialect = dialect
        self.tls = tls
        self.captures = captures
        self.listener = listener
        self._clock = clock
        self._ids = itertools.count(1)
        self._http: httpx.AsyncClient | None = None
        self.stopping = False  # set when the server begins to stop
        self._open: set[asyncio.Future[None]] = set()

    async def aclose(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # (lifespan is off; websockets are not proxied)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        forward = asyncio.ensure_future(self._exchange(scope, bytes(body), send))
        gone = asyncio.ensure_future(_disconnected(receive))
        self._open.add(forward)
        try:
            await asyncio.wait({forward, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # uvicorn gave up waiting for the response: end it as below
        finally:
            self._open.discard(forward)
            if not forward.done():  # the client hung up (or the server is stopping)
                forward.cancel()
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError, _Cut):
                await forward
        if forward.cancelled() or isinstance(forward.exception(), _Cut):
            _cut.set(True)  # return with the response unfinished: uvicorn drops the socket

    def stop_exchanges(self) -> None:
        """The server is stopping: end every open exchange now (recorded as cancelled; the
        clients see their connections dropped) rather than wait for endless streams."""
        self.stopping = True
        for task in list(self._open):
            task.cancel()

    # -- one exchange ---------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = http_client(self.tls)
        return self._http

    async def _exchange(self, scope: Scope, body: bytes, send: Send) -> None:
        clock = self._clock
        t0 = clock()
        method: str = scope["method"]
        path: str = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        path = path.partition("?")[0]
        query = scope.get("query_string", b"").decode("latin-1")
        url = upstream_url(self.upstream, path, query)
        raw_headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        headers = _forwarded_request_headers(raw_headers)
        joined: dict[str, str] = {}
        for name, value in headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        spec = RequestSpec(method, url, joined)
        capture_path: Path | None = None
        capture_id: str | None = None
        if self.captures is not None:
            capture_id = self.captures.begin()
            capture_path = self.captures.path(capture_id)
        shown_path = redact_url(path + (f"?{query}" if query else ""))
        exchange = TapExchange(
            next(self._ids), method, shown_path, url, joined, body, capture_path, t0, spec
        )
        run = _Run(self, exchange, t0)
        if self.captures is not None and capture_id is not None:
            run.capture_id = capture_id
            password = self.tls.proxy.password  # (an upstream proxy's, masked too)
            run.recorder = CaptureRecorder(
                self.dialect,
                path=capture_path,
                keep_reads=False,
                secrets=(password,) if password else (),
            )
        watcher = self.listener.exchange_started(exchange) if self.listener else None
        run.observer = MultiObserver(*(o for o in (run.recorder, watcher) if o is not None))
        run.observer.request_started(spec, body, t0)
        await run.forward(headers, send)


def _complete(store: CaptureStore, capture_id: str) -> None:
    with contextlib.suppress(OSError):
        store.complete(capture_id)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _forwarded_request_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    pairs = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw]
    named = {
        token.strip().lower()
        for name, value in pairs
        if name == "connection"
        for token in value.split(",")
    }
    return [(k, v) for k, v in pairs if k not in _REQUEST_DROPPED and k not in named]


def _forwarded_response_headers(response: httpx.Response) -> list[tuple[bytes, bytes]]:
    raw = response.headers.raw
    named = {
        token.strip().lower().encode()
        for name, value in raw
        if name.lower() == b"connection"
        for token in value.decode("latin-1").split(",")
    }
    return [
        (k.lower(), v)
        for k, v in raw
        if k.lower().decode("latin-1") not in HOP_BY_HOP and k.lower() not in named
    ]


class _Run:
    """One exchange while it runs: forwards, feeds the pipeline, tells the observers."""

    def __init__(self, app: TapApp, exchange: TapExchange, t0: float) -> None:
        self.app = app
        self.exchange = exchange
        self.t0 = t0
        self.recorder: CaptureRecorder | None = None
        self.capture_id: str | None = None
        self.observer: TurnObserver = TurnObserver()
        self.pipeline: StreamPipeline | None = None
        self.status: int | None = None
        self.headers_at: float | None = None
        self.wire_bytes = 0
        self.frames = 0
        self.decoder: ContentDecoder | None = None
        self.error_body = bytearray()
        self.ended = False
        self._head: tuple[int, list[tuple[str, str]], float] | None = None

    async def forward(self, headers: list[tuple[str, str]], send: Send) -> None:
        app, clock = self.app, self.app._clock
        ex = self.exchange
        sent_names = {k for k, _v in headers}
        try:
            client = app._client()
            request = client.build_request(ex.spec.method, ex.url, headers=headers, content=ex.body)
            for name in _CLIENT_DEFAULTS:
                if name not in sent_names and name in request.headers:
                    del request.headers[name]
            response = await client.send(request, stream=True)
        except asyncio.CancelledError:
            self._finish(StreamEnd("cancelled", elapsed=clock() - self.t0))
            raise
        except (httpx.HTTPError, NetworkSettingError) as exc:
            detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
            await _bad_gateway(send, f"streamscope tap: upstream unreachable: {detail}\n")
            self.status = 502
            self._finish(StreamEnd("connect_error", detail=detail))
            return
        try:
            await self._relay(response, send)
        finally:
            await response.aclose()

    async def _relay(self, response: httpx.Response, send: Send) -> None:
        clock = self.app._clock
        self.status = status = response.status_code
        self.headers_at = clock()
        # The observers hear of the head once the first read is on its way to the client:
        # their first call starts the capture's writer, which must not delay that read.
        self._head = (status, list(response.headers.multi_items()), self.headers_at)
        content_type = response.headers.get("content-type")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            decoder_type = SUPPORTED_DECODERS.get(encoding)
            self.decoder = decoder_type() if decoder_type is not None else None
        base = StreamEnd(
            "eof", status=status, headers=dict(response.headers), content_type=content_type
        )
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": _forwarded_response_headers(response),
            }
        )
        chunks = response.aiter_raw()
        streaming: bool | None = False if status >= 400 else None
        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                t = clock()
                self._tell_head()
                self.wire_bytes += len(chunk)
                data = self._decode(chunk)
                if streaming is None:
                    streaming, warning = classify_content_type(content_type, data)
                    if streaming:
                        self._pipeline(content_type, warning, encoding)
                self._take(data, t, streaming)
            tail = self._decode(b"", final=True)
            if tail:
                self._take(tail, clock(), bool(streaming))
        except asyncio.CancelledError:
            self._finish(_with(base, "cancelled", clock() - self.t0), streaming)
            raise
        except httpx.HTTPError as exc:
            detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
            self._finish(_with(base, "broken", clock() - self.t0, detail), streaming)
            raise _Cut(detail) from None
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        if status >= 400:
            end = replace(_with(base, "http_error", clock() - self.t0), body=bytes(self.error_body))
        else:
            end = _with(base, "eof", clock() - self.t0)
        self._finish(end, streaming)

    def _tell_head(self) -> None:
        head, self._head = self._head, None
        if head is not None:
            self.observer.response_started(*head)

    def _decode(self, chunk: bytes, *, final: bool = False) -> bytes:
        if self.decoder is None:
            return chunk
        try:
            return self.decoder.flush() if final else self.decoder.decode(chunk)
        except httpx.DecodingError:
            self.decoder = None  # shown raw from here on (the client got the bytes anyway)
            return b"" if final else chunk

    def _pipeline(self, content_type: str | None, warning: str | None, encoding: str) -> None:
        clock = self.app._clock
        pipe = self.pipeline = StreamPipeline(
            self.app.dialect,
            keep_frames=True,
            content_type=content_type,
            request_sent=self.t0,
            headers=self.headers_at,
        )
        if warning:
            pipe.assembler.apply(DialectWarning(warning), clock())
        if encoding not in ("", "identity"):
            decoded = "frames show the decompressed bytes" if self.decoder else "not decoded"
            pipe.assembler.apply(
                DialectWarning(
                    f"upstream compressed the body (Content-Encoding: {encoding}); it was "
                    f"passed to the client untouched; {decoded}"
                ),
                clock(),
            )

    def _take(self, data: bytes, t: float, streaming: bool | None) -> None:
        if self.status is not None and self.status >= 400:
            room = MAX_ERROR_BODY - len(self.error_body)
            if room > 0:
                self.error_body += data[:room]
            return
        self.observer.read(data, t)
        if streaming and self.pipeline is not None:
            update = self.pipeline.feed(data, t)
            self.frames += len(update.frames)
            self.observer.progressed(update, t)

    def _finish(self, end: StreamEnd, streaming: bool | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        self._tell_head()
        clock = self.app._clock
        now = clock()
        if end.elapsed is None:
            end = replace(end, elapsed=now - self.t0)
        obs = self.observer
        pipe = self.pipeline
        if end.kind == "cancelled" and pipe is not None and pipe.assembler.terminal_signal:
            end = replace(end, kind="eof")  # SDKs hang up once the terminal signal is in
        if pipe is None and (streaming is None or not streaming) and end.kind in ("eof",):
            turn = self._plain_turn(end, now)
        else:
            if pipe is None:
                pipe = self.pipeline = StreamPipeline(
                    self.app.dialect,
                    keep_frames=True,
                    content_type=end.content_type,
                    request_sent=self.t0,
                    headers=self.headers_at,
                )
            tail = pipe.end_input(end, now)
            # (an error's body is a row of the Frames tab, but no frame of a stream: a
            # non-streaming exchange counts 0 frames, as its JSON line promises)
            self.frames += sum(
                1
                for f in tail.frames
                if not (isinstance(f.frame, MarkedFrame) and f.frame.role == "body")
            )
            if tail.frames or tail.events:
                obs.progressed(tail, now)
            turn = pipe.close(end, now)
            if end.kind == "cancelled":  # not "by you": the client, or the tap stopping
                who = "the tap stopped" if self.app.stopping else "the client closed the connection"
                turn = replace(turn, reason=f"{who} after {end.elapsed or 0.0:.1f} s")
            if turn.status is None and self.status is not None:
                turn = replace(turn, status=self.status)
        obs.ended(end)
        obs.finished(turn)
        self._deliver(self._result(turn, now))

    def _deliver(self, result: ExchangeResult) -> None:
        """Once the capture is written (its end line too): index it, tell the listener —
        on the event loop's thread, so a listener is called from one thread only."""
        app, recorder, capture_id = self.app, self.recorder, self.capture_id

        def deliver() -> None:
            if app.captures is not None and capture_id is not None:
                _complete(app.captures, capture_id)
            if app.listener is not None:
                app.listener.exchange_finished(result)

        if recorder is None:
            deliver()
            return
        loop = asyncio.get_running_loop()

        def written(_done: object) -> None:
            try:
                loop.call_soon_threadsafe(deliver)
            except RuntimeError:  # the loop has closed (the tap stopped): deliver here
                deliver()

        recorder.done.add_done_callback(written)

    def _plain_turn(self, end: StreamEnd, now: float) -> Turn:
        """A non-streaming answer (``/v1/models``, a JSON completion): its outcome by status."""
        ctype = end.content_type or "no content type"
        return Turn(
            outcome=Outcome.COMPLETED,
            reason=f"HTTP {self.status}, not a stream ({ctype}, {self.wire_bytes} bytes)",
            status=self.status,
            bytes_received=self.wire_bytes,
            timings=Timings(request_sent=self.t0, headers=self.headers_at, end=now),
        )

    def _result(self, turn: Turn, now: float) -> ExchangeResult:
        scrub = self.recorder.scrubber if self.recorder is not None else _scrubber(self.exchange)
        ttft = turn.timings.ttft
        return ExchangeResult(
            exchange=self.exchange,
            status=self.status,
            outcome=turn.outcome.value if turn.outcome is not None else "error",
            reason=scrub.text(turn.reason),
            dialect=turn.dialect if self.pipeline is not None else None,
            frames=self.frames,
            bytes=self.wire_bytes,
            ttft_ms=round(ttft * 1000, 1) if ttft is not None else None,
            duration_ms=round((now - self.t0) * 1000, 1),
            turn=turn,
        )


def _scrubber(exchange: TapExchange) -> Scrubber:
    return Scrubber.for_request(exchange.headers, exchange.url)


def _with(base: StreamEnd, kind: EndKind, elapsed: float, detail: str = "") -> StreamEnd:
    return replace(base, kind=kind, elapsed=elapsed, detail=detail)


async def _bad_gateway(send: Send, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 502,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})
