"""The tap's forwarding half: an ASGI app for uvicorn that passes every exchange through.

Every request under the listen address goes to the same path under the upstream (see
:func:`upstream_url`); the answer comes back exactly as upstream sent it — status, headers
(minus hop-by-hop ones), the body's bytes unchanged and each upstream read forwarded at once.
Faults stay faults: a body cut short reaches the client cut short (the connection is dropped
without the end of the body), a stall stays a stall, an error status with its headers.

:class:`Forwarder` reads nothing as a turn: it tells what passed through, as it passes, to an
``emit`` callable, in order — ``("start", id, method, path, query, headers, body, t,
body_cut)``, ``("head", id, status, headers, t)``, ``("read", id, bytes, t)`` (one per
upstream read) and ``("end", id, kind, detail, t, stopping)`` (times from
``time.monotonic()``, which is one clock for every process of the machine). The recording
half (:class:`~streamscope.core.tap.proxy.TapRecorder`) turns those into captures and turns.
``body`` is the request body up to :data:`~streamscope.core.tap.bodies.RECORDED_BODY_LIMIT`
bytes (``body_cut``: it was longer; the upstream gets all of it, streamed as it arrives).
How the bodies pass (the client's writes joined when it falls behind, never the reads the
recording hears of) is :mod:`~streamscope.core.tap.bodies`'s.

Reading a stream as a turn costs several microseconds of Python per frame — far more than
forwarding it — so ``streamscope tap`` and the window run the forwarder in a child process
of its own (:mod:`~streamscope.core.tap.forward_child`, ``streamscope --tap-forwarder``), and
a client's stream is never slowed by its recording. The child sends the messages as
length-prefixed pickles over a socket pair (both ends are this program); what the parent has
not taken yet waits in the child's memory, up to :data:`BACKLOG_LIMIT` bytes — beyond that
the forwarding waits for the recording (memory stays bounded for endless floods).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import uvicorn

from streamscope.core.faults import FaultSpec
from streamscope.core.net.connect_errors import describe_connect_error
from streamscope.core.net.connection import connection_client, proxy_for
from streamscope.core.net.env_proxy import NetworkSettingError
from streamscope.core.net.options import TLSOptions
from streamscope.core.tap.bodies import (
    CLIENT_WRITE_AHEAD,
    ClientWriter,
    RequestBody,
    read_request,
)
from streamscope.core.tap.faulting import FaultCut, faults_for, relay_faulted, replace_response
from streamscope.core.tap.upstream_body import UPSTREAM_ERRORS, raw_body

__all__ = [
    "BACKLOG_LIMIT",
    "FORWARDER_FLAG",
    "HOP_BY_HOP",
    "Emit",
    "Forwarder",
    "check_upstream",
    "install_log_filter",
    "make_uvicorn",
    "upstream_url",
]

FORWARDER_FLAG = "--tap-forwarder"
"""``streamscope --tap-forwarder CONTROL_FD LISTEN_FD`` runs the child (not a user command)."""

BACKLOG_LIMIT = 64 * 1024 * 1024
"""Bytes of messages the forwarding child holds for a recording that has fallen behind
(a firehose faster than ~6 MB/s): below it the client's stream never waits for the
recording; above it, it does."""

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

UPSTREAM_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=100)
"""The upstream connections: as many at once as the clients open (the tap never refuses
what the upstream would take — 120 long streams are 120 connections), up to 100 of them
kept alive for reuse once idle."""

Emit = Callable[[tuple[Any, ...]], None]


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


def check_upstream(upstream: str) -> None:
    """Raise ``ValueError`` unless ``upstream`` is an http(s) URL."""
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the upstream must be an http(s) URL, not {upstream!r}")


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


class Forwarder:
    """The ASGI app (see the module docstring). ``backlog``: how many bytes of messages wait
    to be taken (``None``: ``emit`` takes them at once); over :data:`BACKLOG_LIMIT`,
    forwarding awaits ``drain``."""

    def __init__(
        self,
        upstream: str,
        emit: Emit,
        *,
        tls: TLSOptions = TLSOptions(),
        backlog: Callable[[], int] | None = None,
        drain: Callable[[], Any] | None = None,
        faults: FaultSpec | None = None,
    ) -> None:
        check_upstream(upstream)
        self.faults = faults
        self.upstream = upstream.rstrip("/")
        self.tls = tls
        self.emit = emit
        self._backlog = backlog
        self._drain = drain
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
        body = await read_request(receive)
        if body is None:
            return  # (the client hung up while sending)
        forward = asyncio.ensure_future(self._exchange(scope, body, send))
        gone = body.gone
        self._open.add(forward)
        try:
            await asyncio.wait({forward, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # uvicorn gave up waiting for the response: end it as below
        finally:
            self._open.discard(forward)
            if not forward.done():  # the client hung up (or the server is stopping)
                forward.cancel()
            body.close()
            with contextlib.suppress(asyncio.CancelledError, _Cut, FaultCut):
                await forward
        if forward.cancelled() or isinstance(forward.exception(), (_Cut, FaultCut)):
            _cut.set(True)  # return with the response unfinished: uvicorn drops the socket

    def stop_exchanges(self) -> None:
        """The server is stopping: end every open exchange now (recorded as cancelled; the
        clients see their connections dropped) rather than wait for endless streams."""
        self.stopping = True
        for task in list(self._open):
            task.cancel()

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            # (as core.net.client.http_client, but with no cap on connections at once)
            self._http = connection_client(
                self.tls,
                follow_redirects=False,
                timeout=httpx.Timeout(10.0, read=None),
                limits=UPSTREAM_LIMITS,
            )
        return self._http

    async def _exchange(self, scope: Scope, body: RequestBody, send: Send) -> None:
        t0 = time.monotonic()
        xid = next(self._ids)
        method: str = scope["method"]
        path: str = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        path = path.partition("?")[0]
        query = scope.get("query_string", b"").decode("latin-1")
        raw_headers = list(scope.get("headers", []))
        headers = _forwarded_request_headers(raw_headers)
        emit = self.emit
        emit(("start", xid, method, path, query, headers, body.head, t0, body.truncated))
        live = faults_for(self.faults, xid, path)
        if live is not None and await replace_response(
            live, xid, path, t0, send, emit, self.stopping
        ):
            return
        try:
            client = self._client()
            url = upstream_url(self.upstream, path, query)
            if body.truncated:  # streamed up as it comes, with the length the client gave
                length = [(k, v) for k, v in _pairs(raw_headers) if k == "content-length"]
                request = client.build_request(
                    method, url, headers=headers + length[:1], content=body.upstream()
                )
            else:
                request = client.build_request(method, url, headers=headers, content=body.head)
            sent_names = {k for k, _v in headers}
            for name in _CLIENT_DEFAULTS:
                if name not in sent_names and name in request.headers:
                    del request.headers[name]
            response = await client.send(request, stream=True)
        except asyncio.CancelledError:
            emit(("end", xid, "cancelled", "", time.monotonic(), self.stopping))
            raise
        except (httpx.HTTPError, NetworkSettingError) as exc:
            detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
            if isinstance(exc, httpx.HTTPError):  # (the chat's words: "Connection refused by …")
                url = upstream_url(self.upstream, path, query)
                proxy = proxy_for(self._http, url) if self._http is not None else None
                detail = describe_connect_error(exc, url, proxy=proxy)
            await _bad_gateway(send, f"streamscope tap: {detail}\n")
            emit(("end", xid, "connect_error", detail, time.monotonic(), self.stopping))
            return
        try:
            if live is None:
                await self._relay(xid, response, send)
            else:
                await relay_faulted(
                    live,
                    xid,
                    response,
                    send,
                    emit,
                    t0=t0,
                    headers=_forwarded_response_headers(response),
                    stopping=lambda: self.stopping,
                )
        finally:
            await response.aclose()

    async def _relay(self, xid: int, response: httpx.Response, send: Send) -> None:
        emit, backlog, clock = self.emit, self._backlog, time.monotonic
        emit(("head", xid, response.status_code, response.headers.multi_items(), clock()))
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": _forwarded_response_headers(response),
            }
        )
        out = ClientWriter(send)
        # The body straight from the connection, a network read at a time (see
        # upstream_body); else httpx's raw reads, one per HTTP chunk (``response.stream``:
        # without aiter_raw's per-read bookkeeping).
        raw = raw_body(response)
        if raw is not None:
            next_read: Callable[[], Awaitable[bytes | None]] = raw.read
        else:
            next_read = functools.partial(anext, aiter(response.stream), None)  # type: ignore[arg-type]
        try:
            while (chunk := await next_read()) is not None:
                if not chunk:
                    continue
                t = clock()
                await out.put(chunk)  # (the client's write goes before the parent's message)
                emit(("read", xid, chunk, t))
                if out.queued_bytes > CLIENT_WRITE_AHEAD:
                    await out.room()
                if backlog is not None and self._drain is not None and backlog() > BACKLOG_LIMIT:
                    await self._drain()
            await out.close()
            # (the upstream connection goes back to the pool before the client, told the
            # body has ended, can send its next request: that one reuses it)
            await response.aclose()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            out.cancel()
            emit(("end", xid, "cancelled", "", clock(), self.stopping))
            raise
        except (httpx.HTTPError, *UPSTREAM_ERRORS) as exc:
            detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
            emit(("end", xid, "broken", detail, clock(), self.stopping))
            await out.close()  # (what came before the break reaches the client)
            raise _Cut(detail) from None
        except BaseException:
            out.cancel()
            raise
        emit(("end", xid, "eof", "", clock(), self.stopping))


def _pairs(raw: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw]


def _forwarded_request_headers(raw: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    pairs = _pairs(raw)
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


# -- uvicorn ----------------------------------------------------------------------------------


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: Forwarder) -> None:
        super().__init__(config)
        self.tap = app
        self.tap_started: Callable[[], None] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.tap_started is not None:
            self.tap_started()

    async def on_tick(self, counter: int) -> bool:
        should_exit = await super().on_tick(counter)
        if should_exit:
            self.tap.stopping = True
        return should_exit

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.tap.stop_exchanges()
        await super().shutdown(sockets)
        await self.tap.aclose()


def make_uvicorn(app: Forwarder, *, log_config: bool = False) -> _Uvicorn:
    """A uvicorn server for ``app`` (its socket is given to ``run``/``serve``)."""
    log_kwargs: dict[str, Any] = {} if log_config else {"log_config": None}
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        loop="asyncio",
        http="h11",
        access_log=False,
        server_header=False,  # the headers are upstream's
        date_header=False,
        timeout_graceful_shutdown=2,
        timeout_keep_alive=75,
        **log_kwargs,
    )
    install_log_filter()
    return _Uvicorn(config, app)
