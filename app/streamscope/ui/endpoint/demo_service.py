"""The built-in demo endpoint inside the app: started on first use, stopped on exit.

Starting imports uvicorn and binds a socket, so it runs in a worker thread and never blocks
the Qt event loop; the window paints long before the demo server exists. The worker is a plain
Python thread of our own, not qasync's default executor (whose QThreads outlive their loop and
crashed the process in tests when a loop was replaced).

The imports are most of a start (~0.2 s of uvicorn, Starlette, h11, websockets, anyio, held
under the GIL the window's thread needs too): :meth:`DemoService.warm_up` does them in the
background once the window shows, when the demo is the endpoint the user will send to, so
the first send only binds a socket and starts the server's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamscope.core.net.endpoints import Endpoint
    from streamscope.demo.server import DemoServer

SERVER_MODULES = (
    "streamscope.demo.server",  # uvicorn, Starlette, the scenarios, the dialects' writers
    # what uvicorn loads as it starts serving (asyncio, h11, websockets, no lifespan) and
    # Starlette as the first request comes (anyio's asyncio backend)
    "uvicorn.loops.asyncio",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.lifespan.off",
    "anyio._backends._asyncio",
)


class DemoService:
    """Owns one :class:`~streamscope.demo.server.DemoServer` on 127.0.0.1 (ephemeral port)."""

    def __init__(self, speed: float = 1.0) -> None:
        self.speed = speed
        self._server: DemoServer | None = None
        self._starting: asyncio.Future[DemoServer] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.warming: threading.Thread | None = None
        """The thread loading the server's modules (:meth:`warm_up`), once started."""

    @property
    def running(self) -> bool:
        return self._server is not None

    def warm_up(self, endpoint: Endpoint | None = None) -> None:
        """Load the server's modules in a background thread (once; imports only: no socket,
        no server), so that starting it on the first send takes a few milliseconds —
        when ``endpoint`` (the one the user will send to), if given, is the demo."""
        if self.warming is not None or self._server is not None:
            return
        if endpoint is not None and not endpoint.is_demo:
            return

        def load() -> None:
            for name in SERVER_MODULES:
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)

        self.warming = threading.Thread(target=load, name="demo-warm-up", daemon=True)
        self.warming.start()

    async def ensure_started(self) -> DemoServer:
        """The running server, starting it (off the UI thread) if needed."""
        if self._server is not None:
            return self._server
        if self._starting is None:
            loop = asyncio.get_running_loop()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="demo-server")
            self._starting = loop.run_in_executor(self._executor, self._start)
        try:
            server = await asyncio.shield(self._starting)
        except BaseException:
            self._starting = None
            raise
        self._server = server
        return server

    def _start(self) -> DemoServer:
        from streamscope.demo.server import DemoServer

        server = DemoServer(host="127.0.0.1", port=0, speed=self.speed)
        server.start()
        return server

    def base_url(self, dialect: str) -> str:
        """The demo's base URL for ``dialect`` (``auto``: the dialect requests assume), as the
        dialect's ``demo_name`` says; ``ValueError`` if the demo does not serve it."""
        from streamscope.core.wire.dialects import resolve

        if self._server is None:
            raise RuntimeError("the demo server is not running")
        served = resolve(dialect).demo_name
        if served is None:
            raise ValueError(f"the built-in demo does not serve the {dialect!r} dialect")
        return self._server.base_url(served)

    async def aclose(self) -> None:
        """Stop the server without blocking the event loop."""
        if self._server is None and self._starting is None:
            return
        if self._starting is not None and self._server is None:
            try:
                await asyncio.shield(self._starting)
            except Exception:
                pass
            else:
                self._server = self._starting.result()
        executor = self._executor or ThreadPoolExecutor(1, thread_name_prefix="demo-server")
        self._executor = None
        await asyncio.get_running_loop().run_in_executor(executor, self.stop)
        executor.shutdown(wait=False)

    def stop(self) -> None:
        """Stop the server now (blocks up to a few seconds)."""
        server, self._server, self._starting = self._server, None, None
        if server is not None:
            server.stop()
