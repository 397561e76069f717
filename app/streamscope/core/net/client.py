"""Run one streamed turn over httpx and hand every read, frame and event to an observer.

    client = StreamClient()
    turn = await client.run_turn(spec, dialect="openai", observer=obs)
    await client.aclose()

The client never raises for what the server did: an HTTP error, a body that is not an event
stream, a dead connection or a stall all end in a
:class:`~streamscope.core.turn.model.Turn` whose outcome says so. Cancelling the task
that awaits :meth:`StreamClient.run_turn` closes the connection at once; the cancelled Turn
(partial text kept) goes to ``observer.finished`` and the ``CancelledError`` propagates, as
asyncio expects.

Timeouts: ``connect`` (TCP/TLS), ``first_byte`` (request sent -> first body byte) and
``idle`` (no *semantic progress* -- new text, reasoning or argument bytes -- for that long;
keep-alive comments do not count). Retries are never automatic.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace

import httpx
import orjson

from streamscope.core.net.connect_errors import describe_connect_error
from streamscope.core.net.connection import (
    client_certificate_alert,
    connection_client,
    proxy_for,
)
from streamscope.core.net.env_proxy import NetworkSettingError
from streamscope.core.net.options import StreamTimeouts, TLSOptions
from streamscope.core.redact import scrub, secret_values
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import DialectWarning

__all__ = [
    "MAX_ERROR_BODY",
    "StreamClient",
    "StreamTimeouts",
    "TLSOptions",
    "TurnObserver",
    "classify_content_type",
    "http_client",
]

MAX_ERROR_BODY = 1 << 20
"""At most this much of an error body (or a body that is not a stream) is read."""

GRACE_AFTER_TERMINAL = 2.0
"""After the terminal signal, wait at most this long for the server to end the body."""


@dataclass(slots=True)
class _Run:
    """Mutable state of one turn while it runs (owned by ``run_turn``)."""

    dialect: str
    keep_frames: bool
    t0: float
    max_line_bytes: int = 1 << 20
    pipeline: StreamPipeline | None = None
    headers_at: float | None = None
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)

    def ensure_pipeline(self, content_type: str | None) -> StreamPipeline:
        if self.pipeline is None:
            self.pipeline = StreamPipeline(
                self.dialect,
                keep_frames=self.keep_frames,
                content_type=content_type,
                max_line_bytes=self.max_line_bytes,
                request_sent=self.t0,
                headers=self.headers_at,
            )
        return self.pipeline


class StreamClient:
    """One per app: owns the httpx clients (one per TLS configuration) and runs turns."""

    def __init__(
        self,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._transport = transport
        self._clock = clock
        self._clients: dict[TLSOptions, httpx.AsyncClient] = {}

    def _http(self, tls: TLSOptions) -> httpx.AsyncClient:
        client = self._clients.get(tls)
        if client is None:
            client = http_client(tls, transport=self._transport)
            self._clients[tls] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    async def run_turn(
        self,
        spec: RequestSpec,
        *,
        dialect: str = "openai",
        timeouts: StreamTimeouts = StreamTimeouts(),
        tls: TLSOptions = TLSOptions(),
        observer: TurnObserver | None = None,
        keep_frames: bool = True,
    ) -> Turn:
        """Send ``spec`` and stream the answer; see the module docstring."""
        obs = observer or TurnObserver()
        clock = self._clock
        run = _Run(dialect, keep_frames, clock(), timeouts.max_line_bytes)
        try:
            end = await self._exchange(spec, run, timeouts, tls, obs)
        except asyncio.CancelledError:
            self._finish(run, StreamEnd("cancelled", elapsed=clock() - run.t0), obs)
            raise
        return self._finish(run, end, obs)

    def _finish(self, run: _Run, end: StreamEnd, obs: TurnObserver) -> Turn:
        content_type = end.content_type
        pipeline = run.ensure_pipeline(content_type)
        now = self._clock()
        if end.elapsed is None:
            end = replace(end, elapsed=now - run.t0)
        tail = pipeline.end_input(end, now)
        if tail.frames or tail.events:  # an unterminated last frame, end-of-body events
            obs.progressed(tail, now)
        obs.ended(end)
        turn = pipeline.close(end, now)
        obs.finished(turn)
        return turn

    async def _exchange(
        self,
        spec: RequestSpec,
        run: _Run,
        timeouts: StreamTimeouts,
        tls: TLSOptions,
        obs: TurnObserver,
    ) -> StreamEnd:
        clock = self._clock
        body = orjson.dumps(spec.json)
        headers = {"accept-encoding": "identity", "content-type": "application/json"}
        headers.update(spec.headers)
        try:
            http = self._http(tls)
        except NetworkSettingError as exc:  # e.g. ALL_PROXY=socks4://…: nothing was sent
            run.t0 = clock()
            obs.request_started(spec, body, run.t0)
            return StreamEnd("connect_error", detail=f"could not connect: {exc}")
        request = http.build_request(
            spec.method,
            spec.url,
            headers=headers,
            content=body,
            timeout=httpx.Timeout(timeouts.connect, read=None, write=timeouts.connect),
        )
        run.t0 = clock()
        obs.request_started(spec, body, run.t0)
        try:
            async with asyncio.timeout(timeouts.first_byte):
                response = await http.send(request, stream=True)
        except TimeoutError:
            return StreamEnd("first_byte_timeout", timeout=timeouts.first_byte)
        except (httpx.HTTPError, ssl.SSLError) as exc:  # (a TLS alert can escape httpx)
            detail = describe_connect_error(
                exc,
                request.url,
                connect_timeout=timeouts.connect,
                proxy=proxy_for(http, request.url),
            )
            if isinstance(exc, httpx.ReadError | httpx.WriteError | httpx.RemoteProtocolError):
                probe = min(timeouts.connect, 3.0)
                alert = await client_certificate_alert(request.url, tls, probe)
                if alert is not None:
                    detail = describe_connect_error(ssl.SSLError(alert), request.url)
            return StreamEnd("connect_error", detail=detail)
        try:
            return await self._read(response, run, timeouts, obs)
        finally:
            await response.aclose()

    async def _read(
        self,
        response: httpx.Response,
        run: _Run,
        timeouts: StreamTimeouts,
        obs: TurnObserver,
    ) -> StreamEnd:
        clock = self._clock
        run.headers_at = clock()
        run.status = response.status_code
        run.response_headers = list(response.headers.multi_items())
        obs.response_started(response.status_code, run.response_headers, run.headers_at)
        content_type = response.headers.get("content-type")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        compressed = encoding not in ("", "identity")
        chunks = response.aiter_bytes() if compressed else response.aiter_raw()
        base = StreamEnd(
            "eof",
            status=response.status_code,
            headers=dict(response.headers),
            content_type=content_type,
        )

        secrets = secret_values(response.request.headers, str(response.request.url))
        if response.status_code >= 400:
            body = scrub(await _read_bounded(chunks, MAX_ERROR_BODY, timeouts.idle), secrets)
            run.ensure_pipeline(content_type)
            return replace(base, kind="http_error", body=body)

        deadline = run.t0 + timeouts.first_byte
        try:
            async with asyncio.timeout_at(_loop_deadline(deadline, clock)):
                head = await anext(chunks, b"")
        except TimeoutError:
            run.ensure_pipeline(content_type)
            return replace(base, kind="first_byte_timeout", timeout=timeouts.first_byte)
        except httpx.HTTPError as exc:
            run.ensure_pipeline(content_type)
            return replace(base, kind="broken", detail=_describe(exc))
        is_stream, guess_warning = classify_content_type(content_type, head)
        if not is_stream:
            rest = await _read_bounded(chunks, MAX_ERROR_BODY - len(head), timeouts.idle)
            run.ensure_pipeline(content_type)
            return replace(base, kind="not_a_stream", body=scrub(head + rest, secrets))

        pipeline = run.ensure_pipeline(content_type)
        if guess_warning:
            pipeline.assembler.apply(DialectWarning(guess_warning), clock())
        if compressed:
            pipeline.assembler.apply(
                DialectWarning(
                    f"server compressed the body (Content-Encoding: {encoding}) despite "
                    "Accept-Encoding: identity; frames show the decompressed bytes"
                ),
                clock(),
            )
        last_progress = clock()
        after_terminal = False
        data = head
        while True:
            if data:
                t = clock()
                obs.read(data, t)
                update = pipeline.feed(data, t)
                if update.progress:
                    last_progress = t
                obs.progressed(update, t)
                if update.protocol_error:
                    return replace(base, kind="protocol_error", detail=update.protocol_error)
                after_terminal = update.terminal or after_terminal
            if after_terminal:
                limit, kind = GRACE_AFTER_TERMINAL, "eof"
                deadline = clock() + limit
            else:
                limit, kind = timeouts.idle, "idle_timeout"
                deadline = last_progress + limit
            try:
                async with asyncio.timeout_at(_loop_deadline(deadline, clock)):
                    data = await anext(chunks)
            except StopAsyncIteration:
                return replace(base, kind="eof")
            except TimeoutError:
                if kind == "eof":  # the server said it was done; it just kept the socket
                    return replace(base, kind="eof")
                return replace(base, kind="idle_timeout", timeout=limit)
            except httpx.HTTPError as exc:
                return replace(base, kind="broken", detail=_describe(exc))


def http_client(
    tls: TLSOptions = TLSOptions(), *, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The HTTP client chat turns use (and the tap's upstream side): the endpoint's proxy
    and TLS options (:func:`~streamscope.core.net.connection.connection_client`), no
    redirects, no read timeout. :class:`NetworkSettingError` (or its ``ProxySettingError``)
    when a proxy setting or the client certificate cannot be used."""
    return connection_client(
        tls,
        transport=transport,
        follow_redirects=False,
        timeout=httpx.Timeout(10.0, read=None),
    )


def _loop_deadline(deadline: float, clock: Callable[[], float]) -> float:
    """Translate a deadline on ``clock`` into the running loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - clock())


async def _read_bounded(chunks: AsyncIterator[bytes], limit: int, idle: float) -> bytes:
    """Up to ``limit`` bytes of the rest of a body (an error page, a JSON error)."""
    parts: list[bytes] = []
    size = 0
    try:
        while size < limit:
            async with asyncio.timeout(idle):
                part = await anext(chunks)
            parts.append(part)
            size += len(part)
    except (StopAsyncIteration, TimeoutError, httpx.HTTPError):
        pass
    return b"".join(parts)[:limit]


def _describe(exc: BaseException) -> str:
    """A short description of a transport error for reasons and the inspector."""
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name
