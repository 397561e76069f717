"""A scriptable raw HTTP/1.1 server on 127.0.0.1 for client tests.

Each test gives an ``async def handler(request: bytes, writer)`` that writes whatever bytes it
likes — a clean chunked stream, a body cut mid-chunk, a stall, an error page — so the client
meets real sockets, real resets and real timeouts. The server runs its own asyncio loop in a
thread so that in-process CLI runs (which call ``asyncio.run``) can use it too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

Handler = Callable[[bytes, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    def __init__(self) -> None:
        self.handler: Handler | None = None
        self.requests: list[bytes] = []
        self.disconnected = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._tasks: set[asyncio.Task[None]] = set()
        started = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port: int = started.result(5)
        self.url = f"http://127.0.0.1:{self.port}"

    async def _start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            self.requests.append(head + body)
            assert self.handler is not None
            await self.handler(head + body, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client left, or the server is stopping
        finally:
            self.disconnected.set()
            writer.close()
            self._tasks.discard(task)  # type: ignore[arg-type]

    def close(self) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0.05)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def head(status: str = "200 OK", ctype: str = "text/event-stream", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\n{extra}"
        "transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    ).encode()
