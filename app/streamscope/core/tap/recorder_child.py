"""The window's tap records in a process of its own (``streamscope --tap-recorder``): this is
that process's end (the window's is :class:`~streamscope.core.tap.recording.TapProcess`).

It runs what ``streamscope tap`` runs — a :class:`~streamscope.core.tap.server.TapServer` in
the foreground, whose forwarding child it starts, recording at
:data:`~streamscope.core.tap.server.RECORDING_NICE` — with a listener (:class:`Relay`) that
sends the window only what it shows, as length-prefixed pickles over the socket pair: each
exchange's start (``("start", TapExchange)``), its response head, coalesced
:class:`~streamscope.core.turn.progress.Progress` batches of every exchange in one message
(``("batches", [(id, batch), …])``, like the stream worker's: at least every
:data:`~streamscope.core.net.worker.SEND_EVERY_S` while frames flow, or once
:data:`~streamscope.core.net.worker.SEND_FRAMES` wait), each
:class:`~streamscope.core.tap.exchange.ExchangeResult` once its capture is written, and why
the tap stopped when nobody asked it to (``("died", why)``). What each exchange has received
is also on a shared :class:`~streamscope.core.net.arrivals.ArrivalBoard` (:data:`BOARD_SLOTS`
slots), written on every read. The window asks it to stop with ``("stop",)``; it stops too
when the window has gone (its socket closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streamscope.core.net.arrivals import ArrivalBoard, ArrivalLog
from streamscope.core.net.messages import pack, receive_blocking
from streamscope.core.net.worker import SEND_EVERY_S, SEND_FRAMES
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.progress import Progress, ProgressEncoder

if TYPE_CHECKING:
    from streamscope.core.tap.exchange import ExchangeResult, TapExchange
    from streamscope.core.turn.model import Turn
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import PipelineUpdate

__all__ = ["BOARD_SLOTS", "RECORDER_FLAG", "Relay", "recorder_main"]

RECORDER_FLAG = "--tap-recorder"
"""``streamscope --tap-recorder FD BOARD_FD`` runs this process (not a user command)."""

BOARD_SLOTS = 128
"""Exchanges the arrival board holds at once (exchange ``n`` uses slot ``n % BOARD_SLOTS``:
of more open at once, the older ones' arrivals are not known)."""


class _Out:
    """The window's end of the socket: whole messages, from any thread."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self.gone = False

    def send(self, message: tuple[Any, ...]) -> None:
        data = pack(message)
        with self._lock:
            if self.gone:
                return
            try:
                self._sock.sendall(data)  # (a window behind holds the recording back)
            except OSError:
                self.gone = True


class _Watch(TurnObserver):
    """One exchange, as the window will see it: its batches and its arrivals."""

    def __init__(self, relay: Relay, xid: int, log: ArrivalLog) -> None:
        self.relay = relay
        self.xid = xid
        self.log = log
        self.encoder = ProgressEncoder()

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.relay.out.send(("response", self.xid, status, headers, t))

    def read(self, data: bytes, t: float) -> None:
        self.log.read(data, t)
        self.encoder.read(data, t)
        self.relay.dirty[self.xid] = self

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self.log.progressed(update, t)
        self.encoder.progressed(update, t)
        self.relay.progressed(self, len(update.frames))

    def ended(self, end: StreamEnd) -> None:
        self.log.ended(end)

    def finished(self, turn: Turn) -> None:
        self.relay.dirty[self.xid] = self  # (what finishing changed: calls done, warnings)


class Relay:
    """The tap's listener here (see the module docstring); called on the tap's loop."""

    def __init__(self, out: _Out, board: ArrivalBoard) -> None:
        self.out = out
        self.board = board
        self.dirty: dict[int, _Watch] = {}
        self._frames = 0
        self._last = time.monotonic()
        self._later: asyncio.TimerHandle | None = None

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        self.out.send(("start", exchange))
        return _Watch(self, exchange.id, self.board.log(exchange.id))

    def exchange_finished(self, result: ExchangeResult) -> None:
        self.flush()  # (its last batch goes first)
        self.out.send(("finished", result))

    def progressed(self, watch: _Watch, frames: int) -> None:
        self.dirty[watch.xid] = watch
        self._frames += frames
        if self._frames >= SEND_FRAMES or time.monotonic() - self._last >= SEND_EVERY_S:
            self.flush()
        elif self._later is None:
            self._later = asyncio.get_running_loop().call_later(SEND_EVERY_S, self.flush)

    def flush(self) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None
        dirty, self.dirty = self.dirty, {}
        self._frames = 0
        self._last = time.monotonic()
        batches: list[tuple[int, Progress]] = []
        for xid, watch in dirty.items():
            batch = watch.encoder.take()
            if not batch.is_empty():
                batches.append((xid, batch))
        if batches:
            self.out.send(("batches", batches))


class _Control:
    """The window's requests (a thread): ``stop``, or the window gone. A stop asked before
    the tap serves is done once it does."""

    def __init__(self, sock: socket.socket, stop: Callable[[], None]) -> None:
        self._stop = stop
        self._lock = threading.Lock()
        self._served = self._asked = False
        threading.Thread(target=self._read, args=(sock,), name="tap-control", daemon=True).start()

    def _read(self, sock: socket.socket) -> None:
        while (message := receive_blocking(sock)) is not None and message[0] != "stop":
            pass
        with self._lock:
            self._asked = True
            served = self._served
        if served:
            self._stop()

    def served(self) -> None:
        with self._lock:
            self._served = True
            asked = self._asked
        if asked:
            self._stop()


def recorder_main(argv: list[str]) -> int:
    """This process: ``argv`` is the socket's descriptor and the arrival board's."""
    from streamscope.core.tap.server import ListenError, TapServer

    sock = socket.socket(fileno=int(argv[0]))
    sock.setblocking(True)
    board = ArrivalBoard.attach(int(argv[1]), BOARD_SLOTS)
    config = receive_blocking(sock)
    if config is None or config[0] != "config":
        return 0
    _kind, upstream, kwargs = config
    out = _Out(sock)
    relay = Relay(out, board)
    try:
        server = TapServer(
            upstream, listener=relay, died=lambda why: out.send(("died", why)), **kwargs
        )
        server.bind()
    except ListenError as exc:
        out.send(("failed", str(exc), exc.errno))
        return 1
    except (OSError, ValueError) as exc:
        out.send(("failed", str(exc), None))
        return 1
    control = _Control(sock, server.stop)

    def started() -> None:
        out.send(("ready", server.port, server.forwarder_pids()))
        control.served()

    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(started)
    relay.flush()
    return 0
