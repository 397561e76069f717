"""Run the tap: from a background thread (:class:`TapServer.start`, for tests and the
window off POSIX) or in the foreground until Ctrl-C (:meth:`TapServer.serve_forever`,
``streamscope tap``, and the window's recording process ``streamscope --tap-recorder``: see
:mod:`.recording`, which keeps the recording's Python off the window's process).

    with TapServer("http://127.0.0.1:8765", port=0) as tap:
        tap.base_url          # http://127.0.0.1:PORT (+ upstream's path, when it has one)

The listening socket is bound first, so the port is known at once; it is 127.0.0.1 unless
the caller passes another host on purpose (:func:`is_loopback`). The forwarding runs in a
child process (``streamscope --tap-forwarder``: uvicorn serving
:class:`~streamscope.core.tap.forward.Forwarder` on that socket) and this process records:
an event loop reads the child's messages and gives them to a
:class:`~streamscope.core.tap.proxy.TapRecorder`, whose listener is called on that loop's
thread. Stopping asks the child to stop (its open exchanges end as cancelled); if the child
dies, the exchanges it had open end as cancelled by the tap.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from streamscope.core.capture.files import CaptureStore
from streamscope.core.faults import FaultSpec, parse_fault_spec
from streamscope.core.net.messages import helper_command, pack, receive
from streamscope.core.net.options import TLSOptions
from streamscope.core.tap.accept_guard import guard_accepts
from streamscope.core.tap.forward import FORWARDER_FLAG, Forwarder, check_upstream, make_uvicorn
from streamscope.core.tap.proxy import TapListener, TapRecorder
from streamscope.listen import bind_nodelay

__all__ = [
    "DEFAULT_PORT",
    "SDK_BASE_URLS",
    "ListenError",
    "TapServer",
    "bind_nodelay",
    "env_lines",
    "is_loopback",
    "listen_error",
    "parse_listen",
    "sdk_base_urls",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8700
_START_TIMEOUT = 10.0
RECORDING_NICE = 10
"""``streamscope tap`` records at this lower CPU priority (its forwarding child does not):
on a busy machine the streams it passes go first and the recording catches up after."""
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


class ListenError(OSError):
    """The tap cannot listen where it was asked to; ``str()`` says why in plain words
    (``port 8700 is in use — pick another``), for the CLI's stderr and the Tap dialog."""


def listen_error(host: str, port: int, exc: OSError) -> ListenError:
    """``exc`` (from binding ``host:port``) as a :class:`ListenError`."""
    match exc.errno:
        case errno.EADDRINUSE:
            text = f"port {port} is in use — pick another"
        case errno.EACCES:
            text = f"port {port} is reserved for the system — pick one above 1023"
        case errno.EADDRNOTAVAIL:
            text = f"{host} is not an address of this machine — use 127.0.0.1"
        case _:
            text = exc.strerror or str(exc)
    error = ListenError(text)
    error.errno = exc.errno
    return error


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


SDK_BASE_URLS = (
    ("OpenAI SDK", "OPENAI_BASE_URL"),
    ("Anthropic SDK", "ANTHROPIC_BASE_URL"),
    ("Google GenAI SDK", "GOOGLE_GEMINI_BASE_URL"),
    ("Ollama", "OLLAMA_HOST"),
)
"""The SDKs a tap names a base URL for: (who, the environment variable it reads)."""


def sdk_base_urls(base_root: str, upstream: str) -> list[str]:
    """The base URL each SDK of :data:`SDK_BASE_URLS` wants for a tap at ``base_root``
    (``http://127.0.0.1:8700``), in that order: OpenAI's includes the upstream's path, or
    ``/v1`` for a path-less upstream (the SDK appends ``/chat/completions`` to it);
    Anthropic's, Gemini's and Ollama's are the root (they append ``/v1/…`` themselves)."""
    prefix = urlsplit(upstream).path.rstrip("/")
    return [base_root + (prefix or "/v1"), base_root, base_root, base_root]


def env_lines(base_root: str, upstream: str) -> list[str]:
    """The environment lines that point the common SDKs at a tap at ``base_root``: each
    SDK's variable set to its base URL (:func:`sdk_base_urls`)."""
    urls = sdk_base_urls(base_root, upstream)
    return [f"{var}={url}" for (_who, var), url in zip(SDK_BASE_URLS, urls, strict=True)]


class TapServer:
    """The tap (see the module docstring); ``captures=None`` records nothing.
    ``in_process``: forward in this process too (slower: the default off POSIX, where the
    listening socket cannot be handed to a child by its descriptor). ``died``: told (on the
    tap's thread) why the tap stopped serving when nobody asked it to. ``faults``: a fault
    spec (text, validated here: :class:`~streamscope.core.faults.FaultSpecError`) served on
    its cadence (:mod:`.faulting`); :meth:`reactions` says how the clients took them."""

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
        in_process: bool | None = None,
        command: Callable[[int, int], list[str]] | None = None,
        died: Callable[[str], None] | None = None,
        faults: str | FaultSpec | None = None,
    ) -> None:
        check_upstream(upstream)
        self.faults = parse_fault_spec(faults) if isinstance(faults, str) else faults
        self.upstream = upstream.rstrip("/")
        self.tls = tls
        self.recorder = TapRecorder(
            upstream, dialect=dialect, tls=tls, captures=captures, listener=listener
        )
        self.host = host
        self.port = port
        self.in_process = os.name != "posix" if in_process is None else in_process
        self._command = command or _default_command
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: Callable[[], None] | None = None
        self._stopping = False
        self._log_config = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._died = died

    @property
    def root_url(self) -> str:
        return f"http://{_url_host(self.host)}:{self.port}"

    def reactions(self, now: float | None = None) -> dict[str, Any]:
        """How the clients reacted to the faults on cue so far (``{"exchanges", "summary"}``,
        see :func:`~streamscope.core.faults.client_reactions`)."""
        return self.recorder.reactions(now)

    @property
    def base_url(self) -> str:
        """What a client's base URL should be: the tap's root plus upstream's path."""
        return self.root_url + urlsplit(self.upstream).path.rstrip("/")

    def env_lines(self) -> list[str]:
        return env_lines(self.root_url, self.upstream)

    def bind(self) -> socket.socket:
        """Bind the listening socket (the port is known from here on); :class:`ListenError`
        when it cannot be."""
        if self._sock is None:
            try:
                self._sock = bind_nodelay(self.host, self.port)
            except OSError as exc:
                raise listen_error(self.host, self.port, exc) from exc
            self.port = self._sock.getsockname()[1]
        return self._sock

    # -- in a thread (tests; the window off POSIX) -----------------------------------------

    def start(self) -> None:
        """Serve from a daemon thread; returns once the tap is serving."""
        if self.running:
            return
        self.bind()
        ready = threading.Event()
        self._stopping = False
        thread = self._thread = threading.Thread(
            target=asyncio.run,
            args=(self._serve(ready.set),),
            name="streamscope-tap",
            daemon=True,
        )
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not ready.wait(0.01):
            if not thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the tap did not start on {self.root_url}")

    def stop(self) -> None:
        """Stop serving (open exchanges end as cancelled); safe to call twice."""
        self._ask_stop()
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)
            self._thread = None
        self._close_socket()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def forwarder_pids(self) -> list[int]:
        """The forwarding child's process id while it runs (none when forwarding here)."""
        proc = self._proc
        return [proc.pid] if proc is not None and proc.poll() is None else []

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

    # -- in the foreground (streamscope tap) --------------------------------------------------

    def serve_forever(self, started: Callable[[], None] | None = None) -> None:
        """Serve in this thread until SIGINT/SIGTERM, then return; ``started`` is called
        once it serves (Ctrl-C is handled from then on)."""
        self.bind()
        self._log_config = True

        async def serve() -> None:
            loop = asyncio.get_running_loop()
            if not self.in_process:  # (in this process, uvicorn handles the signals)
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, self._ask_stop)
            await self._serve(started or (lambda: None))

        try:
            asyncio.run(serve())
        except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled
            pass
        finally:
            self._close_socket()

    # -- both ---------------------------------------------------------------------------------

    def _ask_stop(self) -> None:
        """Ask the forwarder to stop (from any thread; a second call, in the foreground,
        a second Ctrl-C, ends the child at once)."""
        loop, stop = self._loop, self._stop
        if loop is None or stop is None:
            self._stopping = True
            return
        with contextlib.suppress(RuntimeError):  # (the loop has just closed)
            loop.call_soon_threadsafe(stop)

    def _close_socket(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    async def _serve(self, ready: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        try:
            if self.in_process:
                await self._serve_here(ready)
            else:
                await self._serve_child(ready)
        finally:
            self._stop = None
            await self.recorder.settle(_JOIN_TIMEOUT)
            self._loop = None

    async def _serve_here(self, ready: Callable[[], None]) -> None:
        sock = self.bind()
        app = Forwarder(self.upstream, self.recorder.handle, tls=self.tls, faults=self.faults)
        server = make_uvicorn(app, log_config=self._log_config)
        server.tap_started = ready

        def stop() -> None:
            server.should_exit = True

        self._stop = stop
        if self._stopping:
            return
        listener = guard_accepts(asyncio.get_running_loop(), sock.dup())
        await server.serve(sockets=[listener])

    async def _serve_child(self, ready: Callable[[], None]) -> None:
        sock = self.bind()
        parent, child = socket.socketpair()
        try:
            proc = subprocess.Popen(
                self._command(child.fileno(), sock.fileno()),
                pass_fds=(child.fileno(), sock.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # (ours carries the JSON lines; errors: stderr)
                start_new_session=True,  # Ctrl-C in a terminal is this process's to handle
            )
        except OSError:
            parent.close()
            raise
        finally:
            child.close()
        self._proc = proc
        self._close_socket()  # (the child's now: if it dies, clients are refused, not queued)
        reader, writer = await asyncio.open_connection(sock=parent)
        asked = False

        def stop() -> None:
            nonlocal asked
            if asked:  # asked twice: do not wait for it
                proc.kill()
            asked = True
            if not writer.is_closing():
                writer.write(pack(("stop",)))

        self._stop = stop
        writer.write(pack(("config", self.upstream, self.tls, self._log_config, self.faults)))
        if self._stopping:
            stop()
        if self._log_config and hasattr(os, "nice"):  # (the foreground: streamscope tap)
            os.nice(RECORDING_NICE)  # this process only: the child forwards at full priority
        handle = self.recorder.handle
        try:
            while (message := await receive(reader)) is not None:
                if message[0] == "ready":
                    ready()
                else:
                    handle(message)
        finally:
            writer.close()
            code = await _reap(proc)
            died = None if asked else f"the tap's forwarding process ended (exit code {code})"
            self.recorder.lose_all(time.monotonic(), died)
            if died is not None and self._died is not None:
                self._died(died)


async def _reap(proc: subprocess.Popen[bytes]) -> int:
    """Wait for the child to end (it does once its socket has closed), briefly; its code."""
    deadline = time.monotonic() + _JOIN_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    if proc.poll() is None:
        proc.kill()
    return proc.wait()


def _default_command(control: int, listener: int) -> list[str]:
    return helper_command(FORWARDER_FLAG, control, listener)
