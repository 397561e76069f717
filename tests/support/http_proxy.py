"""A tiny HTTP forward proxy on 127.0.0.1 for tests: ``CONNECT host:port`` tunnels (what
clients do for https:// targets) and absolute-form requests (``GET http://host/...``, what
they do for http:// targets), optionally requiring ``Proxy-Authorization: Basic``, optionally
itself behind TLS (an "HTTPS proxy"). Run by an asyncio loop in a thread; it relays only to
loopback and records every request it saw::

    with HttpProxy(username="u", password="p") as proxy:
        ...  # point a client at f"http://127.0.0.1:{proxy.port}"
    assert proxy.requests[0].target == f"127.0.0.1:{port}"

A request with missing or wrong credentials gets ``407`` with a body that echoes what the
client sent (as some real proxies' error pages do), so tests can check that secrets in a
response are masked.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import ssl
import threading
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class Seen:
    """One request the proxy received: ``CONNECT`` or the forwarded method, its target
    (``host:port`` for CONNECT, the absolute URL otherwise), the username it authenticated
    with (``None`` without credentials) and whether it was relayed."""

    method: str
    target: str
    username: str | None
    relayed: bool


class HttpProxy:
    """See the module docstring."""

    def __init__(
        self,
        *,
        username: str | None = None,
        password: str | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.username = username
        self.password = password
        self.tls = tls
        self.requests: list[Seen] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def relayed(self) -> list[Seen]:
        return [r for r in self.requests if r.relayed]

    def __enter__(self) -> HttpProxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port = future.result(timeout=10)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return int(self._server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        await asyncio.sleep(0.01)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:] if line]
        auth = next((v for k, v in headers if k.lower() == "proxy-authorization"), None)
        sent = _basic(auth)
        username = sent[0] if sent else None
        if self.username is not None and sent != (self.username, self.password):
            self.requests.append(Seen(method, target, username, False))
            body = f"Proxy authentication failed for {sent[0]}:{sent[1]}\n" if sent else ""
            await _answer(writer, 407, "Proxy Authentication Required", body)
            return
        if method == "CONNECT":
            host, _, port = target.rpartition(":")
            host = host.strip("[]")
        else:
            url = urlsplit(target)
            host, port = url.hostname or "", str(url.port or 80)
        if not _is_loopback(host):
            self.requests.append(Seen(method, target, username, False))
            await _answer(writer, 403, "Forbidden", "only loopback targets\n")
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            self.requests.append(Seen(method, target, username, False))
            await _answer(writer, 502, "Bad Gateway", "upstream refused\n")
            return
        self.requests.append(Seen(method, target, username, True))
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            url = urlsplit(target)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            kept = [
                f"{k}: {v}"
                for k, v in headers
                if k.lower() not in ("proxy-authorization", "proxy-connection", "connection")
            ]
            request = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
            up_writer.write(request.encode("latin-1") + b"\r\n\r\n")
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            with contextlib.suppress(ConnectionError):
                await up_writer.wait_closed()


def _basic(value: str | None) -> tuple[str, str] | None:
    """``(username, password)`` from a ``Basic`` Proxy-Authorization value."""
    if not value or not value.lower().startswith("basic "):
        return None
    try:
        user, _, password = base64.b64decode(value[6:].strip()).decode().partition(":")
    except ValueError:
        return None
    return user, password


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, body: str) -> None:
    data = body.encode()
    extra = 'Proxy-Authenticate: Basic realm="test"\r\n' if status == 407 else ""
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\n{extra}Content-Type: text/plain\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    await writer.drain()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host.lower() == "localhost"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close the other side."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        else:
            writer.close()
    except (ConnectionError, ssl.SSLError):
        writer.close()
