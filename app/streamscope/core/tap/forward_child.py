"""The tap's forwarding child process (``streamscope --tap-forwarder``): the
:class:`~streamscope.core.tap.forward.Forwarder` under uvicorn on the socket the parent bound,
its messages sent to the parent from a thread (:class:`Sender`), up to
:data:`~streamscope.core.tap.forward.BACKLOG_LIMIT` bytes queued in this process."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from typing import Any

from streamscope.core.net.messages import pack, receive_blocking
from streamscope.core.tap.accept_guard import guard_accepts
from streamscope.core.tap.forward import BACKLOG_LIMIT, Forwarder, make_uvicorn

__all__ = ["Sender", "forwarder_main"]


_CLOSE_TIMEOUT = 10.0
"""How long a stopping child may take to hand over the messages still queued."""


class Sender:
    """The child's messages to the parent. The event loop packs each one (a pickle and an
    append) and sends what a turn of the loop gathered with one write, at the end of that
    turn, without waiting: a socket the parent keeps empty takes it at once. What the socket
    cannot take yet goes to a thread, which writes it with the GIL released while it waits
    for the parent — a recording that has fallen behind costs the forwarding nothing until
    :data:`BACKLOG_LIMIT` bytes wait (then :meth:`drain` waits for half)."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = sock
        self._loop = loop
        self._cond = threading.Condition()
        self._outbox: list[bytes] = []  # (this turn of the loop's: the loop's own)
        self._outbox_size = 0
        self._flushing = False
        self._pending: list[bytes] = []  # (the thread's to send, in order)
        self._pending_size = 0
        self._busy = False  # (the thread is sending)
        self._closed = False
        self._room: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="tap-sender", daemon=True)
        self._thread.start()

    def emit(self, message: tuple[Any, ...]) -> None:
        """Queue ``message`` (on the event loop's thread); it leaves at the end of this turn
        of the loop, with the others of the turn."""
        if self._closed:
            return
        data = pack(message)
        self._outbox.append(data)
        self._outbox_size += len(data)
        if not self._flushing:
            self._flushing = True
            self._loop.call_soon(self._flush)

    def backlog(self) -> int:
        return self._outbox_size + self._pending_size

    async def drain(self) -> None:
        while self.backlog() > BACKLOG_LIMIT // 2 and not self._closed:
            room = self._room = asyncio.Event()
            if self.backlog() <= BACKLOG_LIMIT // 2:  # (sent while the event was being made)
                break
            await room.wait()

    def close(self, timeout: float) -> None:
        """Send what is queued (for up to ``timeout`` seconds), then stop."""
        with self._cond:
            self._closed = True
            self._hand_over(self._take_outbox())
            self._cond.notify()
        self._thread.join(timeout)

    def _take_outbox(self) -> bytes:
        batch, self._outbox = self._outbox, []
        self._outbox_size = 0
        return batch[0] if len(batch) == 1 else b"".join(batch)

    def _hand_over(self, data: bytes) -> None:
        """Give ``data`` to the thread (with ``_cond`` held)."""
        if data:
            self._pending.append(data)
            self._pending_size += len(data)
            self._cond.notify()

    def _flush(self) -> None:
        """The end of the loop's turn: send what it gathered, or what of it the socket takes
        now, and leave the rest to the thread."""
        self._flushing = False
        with self._cond:
            if self._closed:
                return  # (close() took the outbox)
            direct = not self._pending and not self._busy
            data = self._take_outbox()
        if direct:
            try:
                sent = self._sock.send(data, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:  # the parent has gone
                self._gone()
                return
            if sent == len(data):
                if self._room is not None and self.backlog() <= BACKLOG_LIMIT // 2:
                    room, self._room = self._room, None
                    room.set()
                return
            data = data[sent:]
        with self._cond:
            if not self._closed:
                self._hand_over(data)

    def _gone(self) -> None:
        with self._cond:
            self._closed = True
            self._pending = []
            self._pending_size = 0
        self._wake()

    def _run(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._pending and not self._closed:
                    cond.wait()
                batch, self._pending = self._pending, []
                self._busy = bool(batch)
            if not batch:
                return  # closed, and all sent
            try:
                self._sock.sendall(b"".join(batch))
            except OSError:  # the parent has gone
                self._gone()
                return
            with cond:
                self._pending_size -= sum(map(len, batch))
                self._busy = False
            if self._room is not None and self.backlog() <= BACKLOG_LIMIT // 2:
                self._wake()

    def _wake(self) -> None:
        room, self._room = self._room, None
        if room is not None:
            with contextlib.suppress(RuntimeError):  # (the loop has closed)
                self._loop.call_soon_threadsafe(room.set)


async def _serve_child(control: socket.socket, listener: socket.socket) -> None:
    config = receive_blocking(control)
    if config is None or config[0] != "config":
        return
    _kind, upstream, tls, log_config, *rest = config
    faults = rest[0] if rest else None
    loop = asyncio.get_running_loop()
    listener = guard_accepts(loop, listener)  # (out of descriptors: said once, not per try)
    sender = Sender(control, loop)
    app = Forwarder(
        upstream,
        sender.emit,
        tls=tls,
        backlog=sender.backlog,
        drain=sender.drain,
        faults=faults,
    )
    server = make_uvicorn(app, log_config=log_config)
    server.tap_started = lambda: sender.emit(("ready",))

    def stop() -> None:
        server.should_exit = True

    def parent_says_stop() -> None:
        while (message := receive_blocking(control)) is not None and message[0] != "stop":
            pass
        with contextlib.suppress(RuntimeError):  # (the loop has closed)
            loop.call_soon_threadsafe(stop)  # asked to, or the parent has gone

    threading.Thread(target=parent_says_stop, name="tap-control", daemon=True).start()
    try:
        await server.serve(sockets=[listener])
        # (the exchanges were cancelled as the server stopped: let them say so)
        deadline = time.monotonic() + 2
        while app._open and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    finally:
        await asyncio.to_thread(sender.close, _CLOSE_TIMEOUT)
        with contextlib.suppress(OSError):
            control.shutdown(socket.SHUT_RDWR)


def forwarder_main(argv: list[str]) -> int:
    """The child: ``argv`` is the control socket's and the listening socket's descriptors."""
    control = socket.socket(fileno=int(argv[0]))
    control.setblocking(True)
    listener = socket.socket(fileno=int(argv[1]))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_child(control, listener))
    return 0
