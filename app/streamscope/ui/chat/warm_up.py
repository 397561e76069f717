"""What the first send would do on the UI thread, done in a background thread once the window
has painted: imports (the keyring, the capture recorder, the verdict's checker, the HTTP stack
when the window reads the stream itself) and detecting the keyring's backend."""

from __future__ import annotations

import contextlib
import importlib
import threading

__all__ = ["WARM_UP_DELAY_MS", "warm_up_network"]

WARM_UP_DELAY_MS = 250

_HTTP_MODULES = (
    *("httpx", "httpcore", "h11", "sniffio", "certifi", "truststore"),  # the HTTP stack
    *("anyio._backends._asyncio", "anyio.streams.tls", "anyio.to_thread"),  # (anyio is lazy)
    "streamscope.core.net.client",
)
_KEY_MODULES = ("keyring", "streamscope.core.net.secrets")  # the API key lookup
_TURN_MODULES = (
    "streamscope.core.capture.recorder",  # every live turn is recorded (TurnRunner.start)
    "streamscope.core.verdict",  # the Verdict tab's checker, at the turn's end (~25 ms)
)
_warming: dict[bool, threading.Thread] = {}


def warm_up_network(*, http: bool = True) -> threading.Thread:
    """Do what the first send would do on the UI thread, in a background thread, once:
    import the keyring, the capture recorder, the verdict's checker and, unless the stream
    worker reads the stream, the HTTP stack (~60 ms); then detect the keyring's backend
    (``keyring.get_keyring()``: its plugins' imports, 0.1-0.4 s on a desktop; it reads no
    key, so nothing can prompt). No Qt, no sockets. Returns the thread (the one of an
    earlier call)."""
    thread = _warming.get(http)
    if thread is None:
        names = (*_KEY_MODULES, *_TURN_MODULES, *(_HTTP_MODULES if http else ()))

        def load() -> None:
            for name in names:
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)
            with contextlib.suppress(Exception):  # (a broken keyring says so when it is used)
                import keyring

                keyring.get_keyring()

        thread = _warming[http] = threading.Thread(target=load, name="network-warm-up", daemon=True)
        thread.start()
    return thread
