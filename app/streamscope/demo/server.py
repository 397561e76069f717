"""Run the demo endpoint: in a background thread (`DemoServer`) or in the foreground
(`serve_forever`, behind `streamscope demo-server`).

    with DemoServer(speed=50) as srv:          # 127.0.0.1, ephemeral port
        base = srv.base_url("openai")          # http://127.0.0.1:PORT/v1

The listening socket is bound before uvicorn starts, so the port is known at once. Stopping sets
a flag that every waiting stream polls (keep-alive waits, `demo-stall`), so shutdown takes well
under a second even with open streams; uvicorn's graceful timeout is the backstop.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Any

import uvicorn

from streamscope.demo.app import DemoApp, install_log_filter
from streamscope.demo.dialects import demo_dialect, demo_dialects
from streamscope.demo.scenarios import SCENARIOS
from streamscope.demo.stamping import StampingH11Protocol
from streamscope.listen import bind_nodelay as _bind
from streamscope.listen import serve_in_thread

_START_TIMEOUT = 10.0
_JOIN_TIMEOUT = 5.0


class _Uvicorn(uvicorn.Server):
    """Tells the streams when uvicorn decides to exit (Ctrl-C in the foreground, or stop())."""

    def __init__(self, config: uvicorn.Config, stopping: threading.Event) -> None:
        super().__init__(config)
        self.stopping = stopping

    async def on_tick(self, counter: int) -> bool:
        should_exit = await super().on_tick(counter)
        if should_exit:
            self.stopping.set()
        return should_exit


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class DemoServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be > 0, not {speed}")
        self.host = host
        self.port = port
        self.speed = speed
        self._stopping = threading.Event()
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def root_url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.port}"

    def base_url(self, dialect: str) -> str:
        try:
            return self.root_url + demo_dialect(dialect).base_path
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None

    def _make_server(self, log_config: bool) -> _Uvicorn:
        self._stopping = threading.Event()
        log_kwargs: dict[str, Any] = {} if log_config else {"log_config": None}
        config = uvicorn.Config(
            DemoApp(self.speed, self._stopping, stamp_at_write=True),
            host=self.host,
            port=self.port,
            log_level="warning",
            lifespan="off",
            loop="asyncio",
            http=StampingH11Protocol,  # (h11, writing demo-bench's send stamps as it writes)
            access_log=False,
            timeout_graceful_shutdown=2,
            **log_kwargs,
        )
        install_log_filter()
        return _Uvicorn(config, self._stopping)

    def start(self) -> None:
        """Start serving in a daemon thread; returns once the socket is listening."""
        if self._thread is not None and self._thread.is_alive():
            return
        sock = _bind(self.host, self.port)
        self._sock = sock
        self.port = sock.getsockname()[1]
        server = self._server = self._make_server(log_config=False)
        self._thread, listening = serve_in_thread(server, sock, "streamscope-demo", _START_TIMEOUT)
        if not listening:
            self.stop()
            raise RuntimeError(f"the demo server did not start on {self.root_url}")

    def stop(self) -> None:
        """Stop serving: open streams end, the thread is joined. Safe to call twice."""
        self._stopping.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._server = None

    def __enter__(self) -> DemoServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def describe(self) -> str:
        lines = [f"StreamScope demo endpoint on {self.root_url}", "Base URLs:"]
        lines += [f"  {d.name:<10} {self.base_url(d.name)}" for d in demo_dialects()]
        lines.append("Models (scenarios): " + ", ".join(SCENARIOS))
        return "\n".join(lines)


def serve_forever(host: str = "127.0.0.1", port: int = 8765, speed: float = 1.0) -> int:
    """Serve in the foreground until Ctrl-C (used by `streamscope demo-server`)."""
    demo = DemoServer(host, port, speed)
    try:
        sock = _bind(host, port)
    except OSError as exc:
        print(f"streamscope demo-server: cannot listen on {host}:{port}: {exc}", flush=True)
        return 1
    demo.port = sock.getsockname()[1]
    server = demo._make_server(log_config=True)
    print(demo.describe(), flush=True)
    print("Press Ctrl-C to stop.", flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled
        pass
    finally:
        sock.close()
    return 0
