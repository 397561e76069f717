"""Listening sockets and uvicorn servers in a thread, for the two servers the app runs on
loopback: the built-in demo endpoint and the tap. Standard library and uvicorn only, so the
demo (which never imports the core) and the core's tap share it."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Protocol

__all__ = ["bind_nodelay", "serve_in_thread"]


def bind_nodelay(host: str, port: int) -> socket.socket:
    """A listening TCP socket whose accepted connections have ``TCP_NODELAY``.

    asyncio sets ``TCP_NODELAY`` on a connection's socket only when its ``proto`` is
    ``IPPROTO_TCP``, and an accepted socket inherits the listener's ``proto`` —
    ``socket.create_server`` leaves it 0. Without it, Nagle's algorithm holds a response's
    first body write until the client ACKs the headers, and a client that delays its ACKs
    (Linux: 40 ms) sees every stream after the first on a kept-alive connection start ~45 ms
    late. The option is also set on the listener, which Linux and the BSDs copy to accepted
    sockets."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if os.name != "nt":  # (on Windows SO_REUSEADDR would let another process steal it)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(socket.SOMAXCONN)
    except BaseException:
        sock.close()
        raise
    return sock


class _Server(Protocol):
    started: bool

    def run(self, sockets: list[socket.socket] | None = None) -> None: ...


def serve_in_thread(
    server: _Server, sock: socket.socket, name: str, timeout: float = 10.0
) -> tuple[threading.Thread, bool]:
    """Run ``server`` (a uvicorn server) on ``sock`` in a daemon thread; returns the thread
    once the server is listening, and whether it is (``False``: it died or took longer than
    ``timeout`` seconds — the caller stops it and says so)."""
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            return thread, False
        time.sleep(0.005)
    return thread, True
