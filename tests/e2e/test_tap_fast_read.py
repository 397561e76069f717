"""The tap reading its upstream's body straight from the connection (core/tap/upstream_body.py),
end to end over loopback: a raw upstream whose every byte the test writes -> the tap (its
forwarding child) -> httpx. Bodies pass byte for byte whatever their framing; a recorded read
is one network read; a cut stays a cut at the same byte; TLS and proxies take the same path."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import read_capture
from streamscope.core.net.options import ProxyOptions, TLSOptions
from streamscope.core.tap.server import TapServer
from support.http_proxy import HttpProxy
from support.socks5 import Socks5Proxy
from support.tap_upstream import Collector
from support.tls_server import Certs, make_certs, server_context

SSE = b"content-type: text/event-stream\r\n"
DONE = b"data: [DONE]\n\n"


def frame(text: str) -> bytes:
    return b"data: %s\n\n" % text.encode()


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return b"%x%s\r\n%s\r\n" % (len(data), ext, data)


class Upstream:
    """A raw HTTP/1.1 upstream (plain or TLS) on 127.0.0.1 that answers each request on a
    connection with ``head``, then each of ``writes`` as one write, each once the test sets
    ``go`` (the client has what came before it: each write is a network read of its own),
    then closes the connection if ``close`` (else it waits for the next request on it)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.head = b""
        self.writes: list[bytes] = []
        self.close = False
        self.go = threading.Event()
        self.connections = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._tls = tls
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> Upstream:
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()

        self.go.set()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._tls)
        return int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                writer.write(self.head)
                await writer.drain()
                for data in self.writes:
                    await asyncio.to_thread(self.go.wait, 10)
                    self.go.clear()
                    writer.write(data)
                    await writer.drain()
                if self.close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


def _fetch(
    client: httpx.Client, url: str, upstream: Upstream
) -> tuple[httpx.Response, bytes, Exception | None]:
    """GET ``url``: the response, the body's bytes as they came, and the error that ended it."""
    got = bytearray()
    error: Exception | None = None
    with client.stream("GET", url) as response:
        upstream.go.set()  # (the head is here: the body goes in reads of its own)
        try:
            for data in response.iter_raw():
                got += data
                upstream.go.set()
        except httpx.HTTPError as exc:
            error = exc
    return response, bytes(got), error


def _tap(upstream_url: str, collector: Collector, tls: TLSOptions = TLSOptions()) -> TapServer:
    return TapServer(upstream_url, port=0, captures=CaptureStore(), listener=collector, tls=tls)


def _reads(collector: Collector, count: int = 1) -> list[bytes]:
    result = collector.wait(count)[count - 1]
    capture = read_capture(Path(str(result.exchange.capture)))
    return [data for _t, data in capture.reads]


def test_a_chunked_body_passes_exact_one_read_per_network_read(upstream: Upstream) -> None:
    upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
    first = chunk(frame("one"), b";ext=1") + chunk(frame("two")) + chunk(frame("thr"))[:9]
    end = chunk(frame("thr"))[9:] + chunk(DONE) + b"0\r\nx-trailer: yes\r\n\r\n"
    upstream.writes = [first, end]
    collector = Collector()
    with _tap(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        response, got, error = _fetch(client, tap.root_url + "/v1/x", upstream)
        reads = _reads(collector)
    body = frame("one") + frame("two") + frame("thr") + DONE
    assert (response.status_code, got, error) == (200, body, None)
    # (two network reads, the third chunk split between them: two recorded reads)
    assert reads == [frame("one") + frame("two") + frame("thr")[:6], frame("thr")[6:] + DONE]
    assert collector.results[0].outcome == "completed"


def test_content_length_and_close_delimited_bodies_pass_exact(upstream: Upstream) -> None:
    body = frame("sized") + DONE
    head = b"HTTP/1.1 200 OK\r\n" + SSE
    collector = Collector()
    with _tap(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        upstream.head = head + b"content-length: %d\r\n\r\n" % len(body)
        upstream.writes = [body[:10], body[10:]]
        response, got, error = _fetch(client, tap.root_url + "/a", upstream)
        assert (response.headers["content-length"], got, error) == (str(len(body)), body, None)
        assert _reads(collector) == [body[:10], body[10:]]
        upstream.head, upstream.close = head + b"\r\n", True  # (up to the close)
        upstream.writes = [body]
        response, got, error = _fetch(client, tap.root_url + "/b", upstream)
        assert (got, error) == (body, None)
        assert _reads(collector, 2) == [body]
    assert [r.outcome for r in collector.results] == ["completed", "completed"]


def test_a_cut_mid_chunk_is_a_cut_at_the_same_byte(upstream: Upstream) -> None:
    upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
    upstream.writes = [chunk(frame("one")) + chunk(frame("two"))[:12]]
    upstream.close = True
    collector = Collector()
    with _tap(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        _response, got, error = _fetch(client, tap.root_url + "/v1/x", upstream)
        reads = _reads(collector)
    came = frame("one") + frame("two")[:9]
    assert got == came
    assert isinstance(error, httpx.RemoteProtocolError)
    assert "incomplete chunked read" in str(error)
    assert reads == [came]
    [result] = collector.results
    assert (result.outcome, result.bytes) == ("truncated", len(came))
    assert result.reason.endswith(
        "RemoteProtocolError: peer closed connection without sending complete message body "
        "(incomplete chunked read)"
    )


def test_a_keep_alive_client_reuses_its_connection_to_the_tap(upstream: Upstream) -> None:
    upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
    upstream.writes = [chunk(frame("again")) + b"0\r\n\r\n"]
    collector = Collector()
    ports = set()
    with _tap(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        for i in range(3):
            response, got, error = _fetch(client, tap.root_url + f"/{i}", upstream)
            assert (got, error) == (frame("again"), None)
            stream = response.extensions["network_stream"]
            ports.add(stream.get_extra_info("client_addr")[1])
        collector.wait(3)
    assert len(ports) == 1  # one client connection for all three
    # a chunked body that ended cleanly gives its upstream connection back to the pool
    assert upstream.connections == 1


def test_bytes_after_a_body_keep_its_connection_out_of_the_pool(upstream: Upstream) -> None:
    upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
    upstream.writes = [chunk(frame("again")) + b"0\r\n\r\nHTTP/1.1 200 OK\r\n"]
    collector = Collector()
    with _tap(upstream.url, collector) as tap, httpx.Client(timeout=5.0) as client:
        for i in range(2):
            _response, got, error = _fetch(client, tap.root_url + f"/{i}", upstream)
            assert (got, error) == (frame("again"), None)
        collector.wait(2)
    assert upstream.connections == 2  # (what came after the body is no answer to anything)


@pytest.mark.parametrize("via", ["direct", "http proxy", "socks5"])
def test_a_tls_upstream_passes_the_same_way(certs: Certs, via: str) -> None:
    body = frame("secret") * 3
    with (
        Upstream(tls=server_context(certs, require_client_cert=False)) as upstream,
        HttpProxy() as http_proxy,
        Socks5Proxy() as socks,
    ):
        upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
        upstream.writes = [chunk(frame("secret")) * 3 + b"0\r\n\r\n"]  # (3 chunks, 1 read)
        proxy = {
            "direct": ProxyOptions(mode="none"),
            "http proxy": ProxyOptions(mode="http", host="127.0.0.1", port=http_proxy.port),
            "socks5": ProxyOptions(mode="socks5", host="127.0.0.1", port=socks.port),
        }[via]
        tls = replace(TLSOptions(), ca_bundle=str(certs.ca), proxy=proxy)
        collector = Collector()
        with _tap(upstream.url, collector, tls) as tap, httpx.Client(timeout=5.0) as client:
            response, got, error = _fetch(client, tap.root_url + "/v1/x", upstream)
            reads = _reads(collector)
        relayed = len(http_proxy.relayed) + len(socks.connections)
    assert (response.status_code, got, error) == (200, body, None)
    assert reads == [body]
    assert relayed == (0 if via == "direct" else 1)


def test_a_plain_upstream_through_an_http_proxy_passes_exact(upstream: Upstream) -> None:
    upstream.head = b"HTTP/1.1 200 OK\r\n" + SSE + b"transfer-encoding: chunked\r\n\r\n"
    upstream.writes = [chunk(frame("a")) + chunk(frame("b")) + b"0\r\n\r\n"]
    with HttpProxy() as proxy:
        tls = replace(
            TLSOptions(), proxy=ProxyOptions(mode="http", host="127.0.0.1", port=proxy.port)
        )
        collector = Collector()
        with _tap(upstream.url, collector, tls) as tap, httpx.Client(timeout=5.0) as client:
            _response, got, error = _fetch(client, tap.root_url + "/v1/x", upstream)
            reads = _reads(collector)
        assert [r.method for r in proxy.relayed] == ["GET"]
    assert (got, error, reads) == (frame("a") + frame("b"), None, [frame("a") + frame("b")])
