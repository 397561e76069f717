"""The window's tap: :class:`TapProcess` records in a child process, like the stream worker.

A tapped firehose costs its recording ~160 µs of Python per read; in a thread of the window
that would hold the window's interpreter lock for most of each second. So the window starts
``streamscope --tap-recorder`` (:mod:`~streamscope.core.tap.recorder_child`: what
``streamscope tap`` runs — it starts the forwarding child and records, niced) and hears from
it only what it shows. :class:`TapProcess` has :class:`~streamscope.core.tap.server.TapServer`'s
API for the window (``start``/``stop``, ``root_url``, ``base_url``, ``env_lines``,
``forwarder_pids``); its keyword arguments other than ``listener``, ``died`` and ``command``
go to the child's ``TapServer`` as given. Its listener is called on a thread of its own, as a
``TapServer``'s is on the tap's: ``exchange_started`` for each exchange (the observer it
returns gets ``response_started`` and ``batch`` calls: coalesced
:class:`~streamscope.core.turn.progress.Progress`, as the stream worker sends), then
``exchange_finished`` with the :class:`~streamscope.core.tap.exchange.ExchangeResult` (its
``exchange`` the very object ``exchange_started`` got). :meth:`TapProcess.arrivals` reads what
the child has received of an exchange, at any moment (a shared arrival board).

If the child dies, ``died`` is told so and the exchanges it had open end as errors that keep
the text received so far.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from streamscope.core.net.arrivals import ArrivalBoard, ArrivalSource
from streamscope.core.net.messages import helper_command, pack, receive_blocking
from streamscope.core.net.options import TLSOptions
from streamscope.core.tap.exchange import ExchangeResult, TapExchange, TapListener
from streamscope.core.tap.forward import check_upstream
from streamscope.core.tap.recorder_child import BOARD_SLOTS, RECORDER_FLAG
from streamscope.core.tap.server import DEFAULT_HOST, DEFAULT_PORT, ListenError, env_lines
from streamscope.core.turn.model import ToolCallState, Turn, apply_tool_calls
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.progress import Progress

__all__ = ["TapProcess"]

START_TIMEOUT = 20.0
"""How long :meth:`TapProcess.start` waits for the child to serve (its own start included)."""
_STOP_TIMEOUT = 12.0  # (the child's tap waits up to 5 s for its forwarder, 5 s for captures)


@dataclass(slots=True)
class _Open:
    """An exchange the child has not finished: what the window was told of it."""

    exchange: TapExchange
    observer: TurnObserver | None
    status: int | None = None
    bytes: int = 0
    frames: int = 0
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ToolCallState] = field(default_factory=list)


class TapProcess:
    """See the module docstring."""

    def __init__(
        self,
        upstream: str,
        *,
        listener: TapListener | None = None,
        died: Callable[[str], None] | None = None,
        command: Callable[[int, int], list[str]] | None = None,
        **server_kwargs: Any,
    ) -> None:
        check_upstream(upstream)
        self.upstream = upstream.rstrip("/")
        self.host: str = server_kwargs.get("host", DEFAULT_HOST)
        self.port: int = server_kwargs.get("port", DEFAULT_PORT)
        self.tls: TLSOptions = server_kwargs.get("tls", TLSOptions())
        self.listener = listener
        self._kwargs = server_kwargs
        self._died = died
        self._command = command or _default_command
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._board: ArrivalBoard | None = None
        self._thread: threading.Thread | None = None
        self._forwarders: list[int] = []
        self._open: dict[int, _Open] = {}
        self._asked = False
        self._said = False  # (the child said why the tap stopped)

    @property
    def root_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """What a client's base URL should be: the tap's root plus upstream's path."""
        return self.root_url + urlsplit(self.upstream).path.rstrip("/")

    def env_lines(self) -> list[str]:
        return env_lines(self.root_url, self.upstream)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def pid(self) -> int | None:
        """The recording child's process id."""
        return self._proc.pid if self._proc is not None else None

    def forwarder_pids(self) -> list[int]:
        """The forwarding process's id while the tap runs."""
        return list(self._forwarders) if self.running else []

    def arrivals(self, exchange_id: int) -> ArrivalSource:
        """What the child has received of exchange ``exchange_id`` (see ``ArrivalBoard``)."""

        def source(shown: int) -> Any:
            board = self._board
            return board.arrivals(exchange_id, shown) if board is not None else None

        return source

    # -- start, stop ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the child; returns once the tap serves. :class:`ListenError` (the child's
        words) when it cannot listen, ``RuntimeError`` when it does not start."""
        if self.running:
            return
        self._asked = self._said = False
        parent, child = socket.socketpair()
        board = ArrivalBoard.create(BOARD_SLOTS)
        assert board.fd is not None
        try:
            proc = subprocess.Popen(
                self._command(child.fileno(), board.fd),
                pass_fds=(child.fileno(), board.fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal is the window's to handle
            )
        except OSError:
            parent.close()
            raise
        finally:
            child.close()
            board.close_fd()
        self._proc, self._sock, self._board = proc, parent, board
        parent.sendall(pack(("config", self.upstream, self._kwargs)))
        parent.settimeout(START_TIMEOUT)
        while True:
            message = receive_blocking(parent)  # (None too when the time is up)
            kind = message[0] if message is not None else None
            if kind == "ready":
                assert message is not None
                self.port, self._forwarders = message[1], message[2]
                break
            if kind not in ("failed", "died", None):
                assert message is not None
                self._dispatch(message)
                continue
            self._end_child()
            parent.close()
            self._sock = None
            if kind == "failed":
                assert message is not None
                _kind, text, errno = message
                if errno is None:
                    raise RuntimeError(text)
                error = ListenError(text)
                error.errno = errno
                raise error
            why = message[1] if message is not None else "it did not answer"
            raise RuntimeError(f"the tap did not start on {self.root_url}: {why}")
        parent.settimeout(None)
        self._thread = threading.Thread(target=self._read, name="tap-recording", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the tap (open exchanges end as cancelled, their results told); safe twice."""
        self._asked = True
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.sendall(pack(("stop",)))
        thread = self._thread
        if thread is not None:
            thread.join(_STOP_TIMEOUT)
            if thread.is_alive():  # (the child did not stop in time)
                self._end_child()
                thread.join(_STOP_TIMEOUT)
            self._thread = None

    def _end_child(self) -> None:
        """End the child now (its socket's end with it: the reading thread stops)."""
        proc, sock = self._proc, self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    # -- the reading thread ---------------------------------------------------------------

    def _read(self) -> None:
        sock = self._sock
        assert sock is not None and self._proc is not None
        try:
            while (message := receive_blocking(sock)) is not None:
                self._dispatch(message)
        finally:
            proc = self._proc
            try:
                code = proc.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            sock.close()
            why = None if self._asked else f"the tap's recording process ended (exit code {code})"
            self._lose_all(why)
            if why is not None and not self._said and self._died is not None:
                self._died(why)

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "batches":
            for xid, batch in message[1]:
                self._batch(xid, batch)
        elif kind == "start":
            exchange: TapExchange = message[1]
            listener = self.listener
            observer = listener.exchange_started(exchange) if listener is not None else None
            self._open[exchange.id] = _Open(exchange, observer)
        elif kind == "response":
            _kind, xid, status, headers, t = message
            run = self._open.get(xid)
            if run is not None:
                run.status = status
                if run.observer is not None:
                    run.observer.response_started(status, headers, t)
        elif kind == "finished":
            result: ExchangeResult = message[1]
            run = self._open.pop(result.exchange.id, None)
            if run is not None:  # (the listener's own exchange object)
                result = _with_exchange(result, run.exchange)
            if self.listener is not None:
                self.listener.exchange_finished(result)
        elif kind == "died":
            self._said = True
            if self._died is not None:
                self._died(message[1])

    def _batch(self, xid: int, batch: Progress) -> None:
        run = self._open.get(xid)
        if run is None:
            return
        run.bytes += sum(len(data) for data, _t in batch.reads)
        run.frames += batch.frame_count
        if batch.delta is not None:
            run.text.append(batch.delta.text)
            run.reasoning.append(batch.delta.reasoning)
            apply_tool_calls(run.calls, batch.delta.tool_calls)
        if run.observer is not None:
            run.observer.batch(batch)

    def _lose_all(self, why: str | None) -> None:
        """The child has gone: the exchanges it left open end (``why``: it died; ``None``:
        the tap was stopped), with what the window got of them."""
        runs, self._open = self._open, {}
        now = time.monotonic()
        for run in runs.values():
            elapsed = now - run.exchange.started
            reason = why or f"the tap stopped after {elapsed:.1f} s"
            outcome = Outcome.ERROR if why else Outcome.CANCELLED
            turn = Turn(
                text="".join(run.text),
                reasoning="".join(run.reasoning),
                tool_calls=tuple(run.calls),
                outcome=outcome,
                reason=reason,
                status=run.status,
            )
            if run.observer is not None:
                run.observer.finished(turn)
            if self.listener is not None:
                self.listener.exchange_finished(
                    ExchangeResult(
                        exchange=run.exchange,
                        status=run.status,
                        outcome=outcome.value,
                        reason=reason,
                        dialect=None,
                        frames=run.frames,
                        bytes=run.bytes,
                        ttft_ms=None,
                        duration_ms=round(elapsed * 1000, 1),
                        turn=turn,
                    )
                )


def _with_exchange(result: ExchangeResult, exchange: TapExchange) -> ExchangeResult:
    from dataclasses import replace

    return replace(result, exchange=exchange)


def _default_command(fd: int, board: int) -> list[str]:
    return helper_command(RECORDER_FLAG, fd, board)
