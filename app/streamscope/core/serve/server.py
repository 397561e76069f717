"""Run ``serve``: from a background thread (:func:`serve_captures`, :class:`ServeServer` as a
context manager — tests, the pytest fixture) or in the foreground until Ctrl-C or SIGTERM
(:meth:`ServeServer.serve_forever`, ``streamscope serve``).

    with serve_captures(["tests/captures"], speed=None) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="unused")

The recordings are loaded (and every file checked) before anything listens; the listening
socket is bound next, so the port is known at once (port 0: a free one). The base URL is the
root plus the API prefix every recorded request shares (``/v1`` for OpenAI's and Anthropic's
paths), as StreamScope's base URLs include the version prefix; the root when they share none.
OpenAI's SDK takes the base URL; Anthropic's, Google's and Ollama's take the root.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from streamscope.core.faults import FaultSpec, parse_fault_spec
from streamscope.core.serve.exchange import ExchangeListener, ServeApp, Transform
from streamscope.core.serve.library import Recorded, load_recordings
from streamscope.core.serve.matching import VOLATILE_FIELDS, Matcher, MatchMode
from streamscope.core.wire.dialects import dialects
from streamscope.listen import bind_nodelay

__all__ = ["DEFAULT_PORT", "ServeServer", "base_path", "serve_captures"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8701
_START_TIMEOUT = 10.0
_JOIN_TIMEOUT = 10.0


def base_path(path: str) -> str | None:
    """The API prefix of a request path (``/v1/chat/completions`` -> ``/v1``;
    ``/v1beta/models/m:streamGenerateContent`` -> ``/v1beta``), ``None`` when no dialect's
    path ends it."""
    for dialect in dialects():
        for suffix in getattr(dialect, "request_paths", ()):
            if not path.endswith(suffix):
                continue
            if suffix.startswith(":"):  # (Gemini: …/models/{model}:method)
                cut = path.rfind("/models/")
                return path[:cut] if cut >= 0 else None
            return path[: -len(suffix)]
    return None


class ServeServer:
    """Serves recorded exchanges (see the package docstring for what is served how).

    ``paths``: captures, bundles, HAR files, folders (or ``recordings`` already loaded).
    ``speed``: ``1.0`` the recorded timing, ``10.0`` ten times faster, ``None`` no waits.
    ``match``: ``"order"`` or ``"request"`` (:mod:`.matching`); ``loop``: start again after
    the last; ``ignore``: the body fields ``request`` matching leaves out. ``transform``: a
    function that changes each playback before it is served. ``faults``: a fault spec
    (text, validated here: :class:`~streamscope.core.faults.FaultSpecError`, or parsed)
    applied on its cadence; :meth:`reactions` says how the clients took them.
    ``listener``: told of each finished exchange (:class:`~.report.ServedExchange`), on the
    server's thread."""

    def __init__(
        self,
        paths: Sequence[str | Path] = (),
        *,
        recordings: Sequence[Recorded] | None = None,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        speed: float | None = 1.0,
        match: MatchMode = "order",
        loop: bool = False,
        ignore: frozenset[str] = VOLATILE_FIELDS,
        transform: Transform | None = None,
        faults: str | FaultSpec | None = None,
        listener: ExchangeListener | None = None,
    ) -> None:
        spec = parse_fault_spec(faults) if isinstance(faults, str) else faults
        self.recordings = list(recordings) if recordings is not None else load_recordings(paths)
        self.matcher = Matcher(self.recordings, match, loop=loop, ignore=ignore)
        self.app = ServeApp(
            self.matcher, speed=speed, transform=transform, faults=spec, listener=listener
        )
        self.host = host
        self.port = port
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._stopping = False

    @property
    def root_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The root plus the API prefix every recorded request shares (see the module
        docstring)."""
        prefixes = {base_path(rec.path) for rec in self.recordings}
        prefixes.discard(None)
        if len(prefixes) == 1:
            (prefix,) = prefixes
            return self.root_url + (prefix or "")
        return self.root_url

    def bind(self) -> socket.socket:
        """Bind the listening socket (the port is known from here on)."""
        if self._sock is None:
            self._sock = bind_nodelay(self.host, self.port)
            self.port = self._sock.getsockname()[1]
        return self._sock

    def reactions(self, now: float | None = None) -> dict[str, Any]:
        """How the clients reacted to the faults served so far: ``{"exchanges": [...],
        "summary": {...}}`` (:func:`~streamscope.core.faults.client_reactions`; ``now`` on
        ``time.monotonic()``'s clock, default now)."""
        return self.app.observed.reactions(now)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no exchange is being answered (each has ended, on either side): a
        client that has just raised may not have been seen to close yet. ``False`` when
        one still is after ``timeout`` seconds (a client still reading a stall)."""
        deadline = time.monotonic() + timeout
        while self.app.observed.answering():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    # -- in a thread -------------------------------------------------------------------------

    def start(self) -> ServeServer:
        """Serve from a daemon thread; returns once it serves."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self.bind()
        ready = threading.Event()
        self._stopping = False
        thread = self._thread = threading.Thread(
            target=asyncio.run,
            args=(self._serve(ready.set),),
            name="streamscope-serve",
            daemon=True,
        )
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not ready.wait(0.01):
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"serve did not start on {self.root_url}")
        return self

    def stop(self) -> None:
        """Stop serving (open exchanges end, their lines say so); safe to call twice."""
        self._ask_stop()
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)
            self._thread = None
        self._close_socket()

    def __enter__(self) -> ServeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- in the foreground -------------------------------------------------------------------

    def serve_forever(self, started: Callable[[], None] | None = None) -> None:
        """Serve in this thread until SIGINT/SIGTERM (or Ctrl-C), then return; ``started`` is
        called once it serves."""
        self.bind()

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, ValueError, RuntimeError):
                    loop.add_signal_handler(sig, self._ask_stop)  # (POSIX, main thread)
            await self._serve(started or (lambda: None))

        try:
            asyncio.run(serve())
        except KeyboardInterrupt:  # (where signal handlers cannot be set: Windows)
            pass
        finally:
            self._close_socket()

    # -- both --------------------------------------------------------------------------------

    def _ask_stop(self) -> None:
        loop, event = self._loop, self._stop_event
        self._stopping = True
        if loop is None or event is None:
            return
        with contextlib.suppress(RuntimeError):  # (the loop has just closed)
            loop.call_soon_threadsafe(event.set)

    def _close_socket(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    async def _serve(self, ready: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        server = await asyncio.start_server(self.app.handle, sock=self.bind())
        try:
            ready()
            if not self._stopping:
                await self._stop_event.wait()
        finally:
            server.close()
            await self.app.stop()
            self._loop = self._stop_event = None


@contextlib.contextmanager
def serve_captures(
    paths: str | Path | Sequence[str | Path],
    *,
    speed: float | None = 1.0,
    match: MatchMode = "order",
    loop: bool = False,
    host: str = DEFAULT_HOST,
    port: int = 0,
    ignore: frozenset[str] = VOLATILE_FIELDS,
    transform: Transform | None = None,
    faults: str | FaultSpec | None = None,
    listener: ExchangeListener | None = None,
) -> Iterator[str]:
    """Serve the recorded exchanges under ``paths`` from a thread; yields the base URL and
    stops when the block ends. Options as :class:`ServeServer` (``port`` 0: a free one);
    a path that cannot be served raises :class:`~.library.ServeInputError` before anything
    listens."""
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    server = ServeServer(
        given,
        host=host,
        port=port,
        speed=speed,
        match=match,
        loop=loop,
        ignore=ignore,
        transform=transform,
        faults=faults,
        listener=listener,
    )
    with server:
        yield server.base_url
