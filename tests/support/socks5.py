"""A tiny SOCKS5 proxy on 127.0.0.1 for tests (RFC 1928 CONNECT; no authentication, or
RFC 1929 username/password), run by an asyncio loop in a thread. It relays only to loopback
addresses and records every connection it relayed::

    with Socks5Proxy(username="u", password="p") as proxy:
        env["ALL_PROXY"] = f"socks5://u:p@127.0.0.1:{proxy.port}"
        ...
    assert proxy.connections[0].port == demo.port
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
import threading
from dataclasses import dataclass
from types import TracebackType

NO_AUTH, USER_PASS, NO_METHOD = 0x00, 0x02, 0xFF
CONNECT = 0x01
IPV4, DOMAIN, IPV6 = 0x01, 0x03, 0x04
SUCCEEDED, NOT_ALLOWED, REFUSED, BAD_COMMAND = 0x00, 0x02, 0x05, 0x07
LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True, slots=True)
class Relayed:
    """One CONNECT the proxy carried out: the target as the client named it, and the
    username it authenticated with (``None`` without authentication)."""

    host: str
    port: int
    address_type: int
    username: str | None


class Socks5Proxy:
    """See the module docstring; ``rejected`` counts handshakes refused (bad credentials,
    another command than CONNECT, a target off loopback)."""

    def __init__(self, *, username: str | None = None, password: str | None = None) -> None:
        self.username = username
        self.password = password
        self.connections: list[Relayed] = []
        self.rejected = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    def __enter__(self) -> Socks5Proxy:
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
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _stop(self) -> None:
        assert self._server is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        await asyncio.sleep(0.01)  # let the transports' close callbacks run

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            username = await self._greet(reader, writer)
            if username is not False:
                await self._connect(reader, writer, username)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _greet(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> str | bool | None:
        """Pick the method; the authenticated username, ``None`` (no auth) or ``False``."""
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        wanted = USER_PASS if self.username is not None else NO_AUTH
        if version != 5 or wanted not in methods:
            self.rejected += 1
            writer.write(bytes([5, NO_METHOD]))
            return False
        writer.write(bytes([5, wanted]))
        if wanted == NO_AUTH:
            return None
        _version, size = await reader.readexactly(2)
        user = (await reader.readexactly(size)).decode()
        size = (await reader.readexactly(1))[0]
        password = (await reader.readexactly(size)).decode()
        ok = (user, password) == (self.username, self.password)
        writer.write(bytes([1, 0 if ok else 1]))
        if not ok:
            self.rejected += 1
            return False
        return user

    async def _connect(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, username: str | None
    ) -> None:
        _version, command, _reserved, address_type = await reader.readexactly(4)
        host = await _read_host(reader, address_type)
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        if command != CONNECT or not _is_loopback(host):
            self.rejected += 1
            writer.write(_reply(BAD_COMMAND if command != CONNECT else NOT_ALLOWED))
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.write(_reply(REFUSED))
            return
        self.connections.append(Relayed(host, port, address_type, username))
        writer.write(_reply(SUCCEEDED))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            with contextlib.suppress(ConnectionError):
                await up_writer.wait_closed()


async def _read_host(reader: asyncio.StreamReader, address_type: int) -> str:
    if address_type == IPV4:
        return socket.inet_ntop(socket.AF_INET, await reader.readexactly(4))
    if address_type == IPV6:
        return socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
    size = (await reader.readexactly(1))[0]
    return (await reader.readexactly(size)).decode("idna")


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host.lower() in LOOPBACK_NAMES


def _reply(code: int) -> bytes:
    return bytes([5, code, 0, IPV4, 127, 0, 0, 1, 0, 0])


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close the other side."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except ConnectionError:
        writer.close()
