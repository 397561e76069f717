"""Run the tap under uvicorn: in a background thread (:class:`TapServer`, for the window and
tests) or in the foreground until Ctrl-C (:func:`serve_forever`, ``streamscope tap``).

    with TapServer("http://127.0.0.1:8765", port=0) as tap:
        tap.base_url          # http://127.0.0.1:PORT (+ upstream's path, when it has one)

The listening socket is bound before uvicorn starts, so the port is known at once; it is
127.0.0.1 unless the caller passes another host on purpose (:func:`is_loopback`).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from streamscope.core.capture.files import CaptureStore
from streamscope.core.net.options import TLSOptions
from streamscope.core.tap.proxy import TapApp, TapListener, install_log_filter
from streamscope.listen import bind_nodelay, serve_in_thread

__all__ = [
    "DEFAULT_PORT",
    "TapServer",
    "bind_nodelay",
    "env_lines",
    "is_loopback",
    "parse_listen",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
_START_TIMEOUT = 10.0
_JOIN_TIMEOUT = 5.0


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6, or just ``PORT``) -> (host, port)."""
    text = text.strip()
    if text.isdigit():
        host, port_text = DEFAULT_HOST, text
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or not host:
            raise ValueError(f"expected HOST:PORT, not {text!r}")
        host = host.removeprefix("[").removesuffix("]")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"not a port: {port_text!r}")
    return host, int(port_text)


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def env_lines(base_root: str, upstream: str) -> list[str]:
    """The environment lines that point the common SDKs at a tap at ``base_root``
    (``http://127.0.0.1:8700``): each SDK's base URL convention (OpenAI's includes ``/v1``,
    Anthropic's and Ollama's are the root)."""
    prefix = urlsplit(upstream).path.rstrip("/")
    openai = base_root + (prefix or "/v1")
    return [
        f"OPENAI_BASE_URL={openai}",
        f"ANTHROPIC_BASE_URL={base_root}",
        f"GOOGLE_GEMINI_BASE_URL={base_root}",
        f"OLLAMA_HOST={base_root}",
    ]


class _Uvicorn(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: TapApp) -> None:
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


class TapServer:
    """The tap in uvicorn (see the module docstring); ``captures=None`` records nothing."""

    def __init__(
        self,
        upstream: str,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        dialect: str = "auto",
        tls: TLSOptions = TLSOptions(),
        captures: CaptureStore | None = None,
        listener: TapListener | None = None,
    ) -> None:
        self.app = TapApp(upstream, dialect=dialect, tls=tls, captures=captures, listener=listener)
        self.host = host
        self.port = port
        self._server: _Uvicorn | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def root_url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.port}"

    @property
    def base_url(self) -> str:
        """What a client's base URL should be: the tap's root plus upstream's path."""
        return self.root_url + urlsplit(self.app.upstream).path.rstrip("/")

    def env_lines(self) -> list[str]:
        return env_lines(self.root_url, self.app.upstream)

    def bind(self) -> socket.socket:
        """Bind the listening socket (the port is known from here on)."""
        sock = bind_nodelay(self.host, self.port)
        self._sock = sock
        self.port = sock.getsockname()[1]
        return sock

    def make_server(self, *, log_config: bool = False) -> _Uvicorn:
        log_kwargs: dict[str, Any] = {} if log_config else {"log_config": None}
        config = uvicorn.Config(
            self.app,
            host=self.host,
            port=self.port,
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
        self._server = _Uvicorn(config, self.app)
        return self._server

    def start(self) -> None:
        """Serve in a daemon thread; returns once the socket is listening."""
        if self._thread is not None and self._thread.is_alive():
            return
        sock = self.bind()
        server = self.make_server()
        self._thread, listening = serve_in_thread(server, sock, "streamscope-tap", _START_TIMEOUT)
        if not listening:
            self.stop()
            raise RuntimeError(f"the tap did not start on {self.root_url}")

    def stop(self) -> None:
        """Stop serving (open exchanges end as cancelled); safe to call twice."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._server = None

    def serve_forever(self, started: Callable[[], None] | None = None) -> None:
        """Serve in this thread until SIGINT/SIGTERM (uvicorn's handlers), then return;
        ``started`` is called once it serves (Ctrl-C is handled from then on)."""
        sock = self._sock or self.bind()
        server = self._server or self.make_server(log_config=True)
        server.tap_started = started
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled
            pass
        finally:
            sock.close()
            self._sock = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> TapServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
