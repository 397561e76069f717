"""The stream worker: live turns are read and parsed in a child process.

Python runs one thread at a time, so a window that also read and parsed a fast stream would
share one core between the two. :class:`StreamWorker` starts ``streamscope --stream-worker``
once (in the background, before the first send) and talks to it over a socket pair; its
:meth:`StreamWorker.run_turn` has the signature of
:meth:`~streamscope.core.net.client.StreamClient.run_turn`. In the child, the same
``StreamClient`` runs the turn and a :class:`~streamscope.core.turn.progress.ProgressEncoder`
makes compact batches of what arrives; the parent's observer gets ``request_started``,
``response_started``, ``batch`` (instead of ``read``/``progressed``), ``ended`` and
``finished``, in order, on its event loop.

Messages are length-prefixed pickles (:mod:`~streamscope.core.net.messages`: both ends are
this program, over a private socket pair). What the child has read is also on a shared
:class:`~streamscope.core.net.arrivals.ArrivalBoard` (its descriptor handed over with the
socket's), written on every read: the window knows when data last arrived even while the
batches that carry it still wait in the socket. Cancelling ``run_turn`` asks the child to cancel
the turn and waits (briefly) for the cancelled Turn with everything read so far. If the
child dies, the turn ends as an error that keeps the text received so far, and the next
turn starts a new child.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streamscope.core.net.arrivals import ArrivalBoard, ArrivalLog, ArrivalSource
from streamscope.core.net.messages import helper_command, pack, receive
from streamscope.core.turn.model import ToolCallState, Turn, apply_tool_calls
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome
from streamscope.core.turn.progress import Progress, ProgressEncoder

if TYPE_CHECKING:
    from streamscope.core.net.client import StreamClient
    from streamscope.core.net.options import StreamTimeouts, TLSOptions
    from streamscope.core.turn.outcome import StreamEnd
    from streamscope.core.turn.pipeline import PipelineUpdate
    from streamscope.core.wire.dialects.base import RequestSpec

__all__ = ["WORKER_FLAG", "StreamWorker", "WorkerUnavailable", "worker_main"]

WORKER_FLAG = "--stream-worker"
"""``streamscope --stream-worker FD [BOARD_FD]`` runs the child end (not a user-facing
command): the socket's descriptor, the arrival board's."""

SEND_EVERY_S = 0.004
"""The child sends what it has at least this often while a stream flows..."""
SEND_FRAMES = 256
"""... or as soon as this many frames are waiting."""
CANCEL_GRACE_S = 0.4
"""How long a cancelled ``run_turn`` waits for the child's cancelled Turn."""

_log = logging.getLogger("streamscope.worker")


class WorkerUnavailable(RuntimeError):
    """The worker process could not be started (the caller runs the turn in-process)."""


# -- the parent's end -----------------------------------------------------------------------


@dataclass(slots=True)
class _Turn:
    spec: RequestSpec
    observer: TurnObserver
    done: asyncio.Future[Turn]
    # What the reducer (in the child) published so far, kept for a turn the child loses.
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ToolCallState] = field(default_factory=list)
    t0: float = 0.0


class StreamWorker:
    """The parent's handle on the worker process (one turn at a time, or several).
    ``command(socket_fd, board_fd)``: the child's command line."""

    def __init__(self, command: Callable[[int, int], list[str]] | None = None) -> None:
        self._command = command or _default_command
        self._proc: subprocess.Popen[bytes] | None = None
        self._board: ArrivalBoard | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reading: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._turns: dict[int, _Turn] = {}
        self._ids = itertools.count(1)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self._writer is not None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> None:
        """Start the child if it is not running (concurrent callers share one start)."""
        if self.running:
            return
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._spawn())
        await asyncio.shield(self._starting)

    async def _spawn(self) -> None:
        if os.name != "posix":  # the socket is handed over by descriptor number
            raise WorkerUnavailable("the stream worker needs a POSIX system")
        parent, child = socket.socketpair()
        try:
            board = ArrivalBoard.create()
        except OSError as exc:
            parent.close()
            child.close()
            raise WorkerUnavailable(f"could not share memory with the worker: {exc}") from exc
        assert board.fd is not None
        try:
            proc = subprocess.Popen(
                self._command(child.fileno(), board.fd),
                pass_fds=(child.fileno(), board.fd),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in a terminal is the window's to handle
            )
        except OSError as exc:
            parent.close()
            raise WorkerUnavailable(f"could not start the stream worker: {exc}") from exc
        finally:
            child.close()
            board.close_fd()
        self._proc = proc
        self._board = board
        # Reap the child whenever it ends (it ends when its socket closes, with us or not).
        threading.Thread(target=proc.wait, name="stream-worker-reaper", daemon=True).start()
        try:
            reader, self._writer = await asyncio.open_connection(sock=parent)
        except BaseException:
            parent.close()
            raise
        self._reading = asyncio.ensure_future(self._read_loop(reader))

    async def run_turn(
        self,
        spec: RequestSpec,
        *,
        dialect: str = "openai",
        timeouts: StreamTimeouts | None = None,
        tls: TLSOptions | None = None,
        observer: TurnObserver,
        keep_frames: bool = True,
        arrivals: Callable[[ArrivalSource], None] | None = None,
    ) -> Turn:
        """Run a turn in the worker; ``observer`` sees it as described in the module
        docstring; ``arrivals`` is told, before the request goes out, where to read what
        the child has received of it. Raises :class:`WorkerUnavailable` if the worker
        cannot start."""
        from streamscope.core.net.options import StreamTimeouts, TLSOptions

        await self.start()
        assert self._writer is not None
        turn_id = next(self._ids)
        if arrivals is not None and self._board is not None:
            arrivals(self._board.source(turn_id))
        done: asyncio.Future[Turn] = asyncio.get_running_loop().create_future()
        self._turns[turn_id] = _Turn(spec, observer, done, t0=time.monotonic())
        self._writer.write(
            pack(
                (
                    "run",
                    turn_id,
                    spec,
                    dialect,
                    timeouts or StreamTimeouts(),
                    tls or TLSOptions(),
                    keep_frames,
                )
            )
        )
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            if not done.done():
                with contextlib.suppress(ConnectionError, RuntimeError):
                    self._writer.write(pack(("cancel", turn_id)))
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(done), CANCEL_GRACE_S)
                if not done.done():  # the child did not answer in time: end it here
                    self._lose(turn_id, Outcome.CANCELLED, "Cancelled by you")
            raise
        finally:
            self._turns.pop(turn_id, None)

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        try:
            while (message := await receive(reader)) is not None:
                self._dispatch(message)
                await asyncio.sleep(0)  # let the window paint between messages
        finally:
            for turn_id in list(self._turns):
                self._lose(turn_id, Outcome.ERROR, "the stream worker process ended unexpectedly")
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            if self._proc is not None:
                self._proc.poll()  # (reap it if it has exited; aclose() waits for it)

    def _dispatch(self, message: tuple[Any, ...]) -> None:
        kind, turn_id, *args = message
        turn = self._turns.get(turn_id)
        if turn is None or turn.done.done():
            return
        obs = turn.observer
        if kind == "batch":
            batch: Progress = args[0]
            if batch.delta is not None:
                turn.text.append(batch.delta.text)
                turn.reasoning.append(batch.delta.reasoning)
                apply_tool_calls(turn.calls, batch.delta.tool_calls)
            obs.batch(batch)
        elif kind == "request":
            body, t = args
            turn.t0 = t
            obs.request_started(turn.spec, body, t)
        elif kind == "response":
            obs.response_started(*args)
        elif kind == "ended":
            obs.ended(args[0])
        elif kind == "finished":
            result: Turn = args[0]
            obs.finished(result)
            turn.done.set_result(result)
        elif kind == "failed":
            self._lose(turn_id, Outcome.ERROR, f"stream worker error: {args[0]}")

    def _lose(self, turn_id: int, outcome: Outcome, reason: str) -> None:
        """End a turn the child did not finish, with what arrived so far."""
        turn = self._turns.get(turn_id)
        if turn is None or turn.done.done():
            return
        elapsed = time.monotonic() - turn.t0
        if outcome is Outcome.CANCELLED:
            reason = f"{reason} after {elapsed:.1f} s"
        result = Turn(
            text="".join(turn.text),
            reasoning="".join(turn.reasoning),
            tool_calls=tuple(turn.calls),
            outcome=outcome,
            reason=reason,
        )
        turn.observer.finished(result)
        turn.done.set_result(result)

    async def aclose(self) -> None:
        """Stop the child (it also stops by itself when this process ends)."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            await asyncio.gather(self._starting, return_exceptions=True)
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        if self._reading is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        proc = self._proc
        if proc is None:
            return
        deadline = time.monotonic() + 2
        while proc.returncode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # (the reaper thread sets it)
        if proc.returncode is None:
            proc.kill()


def _default_command(fd: int, board: int) -> list[str]:
    return helper_command(WORKER_FLAG, fd, board)


# -- the child's end ------------------------------------------------------------------------


class _Forwarder(TurnObserver):
    """The child's observer: encodes the turn and sends it to the parent, in order; writes
    what arrived on the board (``log``) at once."""

    def __init__(
        self, writer: asyncio.StreamWriter, turn_id: int, log: ArrivalLog | None = None
    ) -> None:
        self._writer = writer
        self._id = turn_id
        self._log = log if log is not None else TurnObserver()
        self._encoder = ProgressEncoder()
        self._last_send = time.monotonic()
        self._later: asyncio.TimerHandle | None = None

    def _send(self, *message: Any) -> None:
        if not self._writer.is_closing():
            self._writer.write(pack((message[0], self._id, *message[1:])))

    def _flush(self, *, final: bool = False) -> None:
        if self._later is not None:
            self._later.cancel()
            self._later = None
        if final or not self._encoder.pending.is_empty():
            self._send("batch", self._encoder.take())
        self._last_send = time.monotonic()

    def request_started(self, spec: RequestSpec, body: bytes, t: float) -> None:
        self._send("request", body, t)

    def response_started(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self._send("response", status, headers, t)

    def read(self, data: bytes, t: float) -> None:
        self._log.read(data, t)
        self._encoder.read(data, t)

    def progressed(self, update: PipelineUpdate, t: float) -> None:
        self._log.progressed(update, t)
        self._encoder.progressed(update, t)
        pending = self._encoder.pending
        if pending.frame_count >= SEND_FRAMES or time.monotonic() - self._last_send >= SEND_EVERY_S:
            self._flush()
        elif self._later is None:
            self._later = asyncio.get_running_loop().call_later(SEND_EVERY_S, self._flush)

    def ended(self, end: StreamEnd) -> None:
        self._log.ended(end)
        self._flush()
        self._send("ended", end)

    def finished(self, turn: Turn) -> None:
        self._flush(final=True)  # (what finishing changed: calls done, last warnings)
        self._send("finished", turn)


async def _serve(sock: socket.socket, board: ArrivalBoard | None) -> None:
    from streamscope.core.net.client import StreamClient

    reader, writer = await asyncio.open_connection(sock=sock)
    client = StreamClient()
    running: dict[int, asyncio.Task[Turn]] = {}
    await _warm_up(client)

    async def run(turn_id: int, args: list[Any]) -> Turn:
        spec, dialect, timeouts, tls, keep_frames = args
        forwarder = _Forwarder(writer, turn_id, board.log(turn_id) if board else None)
        try:
            return await client.run_turn(
                spec,
                dialect=dialect,
                timeouts=timeouts,
                tls=tls,
                observer=forwarder,
                keep_frames=keep_frames,
            )
        except Exception as exc:  # a bug, not a stream problem: the parent must hear of it
            _log.exception("turn %d failed in the stream worker", turn_id)
            writer.write(pack(("failed", turn_id, f"{type(exc).__name__}: {exc}")))
            raise
        finally:
            running.pop(turn_id, None)
            with contextlib.suppress(ConnectionError):
                await writer.drain()

    try:
        while (message := await receive(reader)) is not None:
            kind, turn_id, *args = message
            if kind == "run":
                running[turn_id] = asyncio.ensure_future(run(turn_id, args))
            elif kind == "cancel" and turn_id in running:
                running[turn_id].cancel()
    finally:
        for task in running.values():
            task.cancel()
        await asyncio.gather(*running.values(), return_exceptions=True)
        await client.aclose()
        writer.close()


async def _warm_up(client: StreamClient) -> None:
    """Before the first turn: what its request would load (the HTTP stack's lazy parts, the
    default TLS context; ~50 ms), so the first answer does not wait for it."""
    import importlib

    from streamscope.core.net.options import TLSOptions

    for name in ("anyio._backends._asyncio", "anyio.streams.tls", "h11", "httpcore"):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # (a broken trust store shows on the real request)
        client._http(TLSOptions())


def worker_main(argv: list[str]) -> int:
    """The child process: serve the parent over the socket whose descriptor is ``argv[0]``,
    writing arrivals on the board whose descriptor is ``argv[1]`` (if given)."""
    sock = socket.socket(fileno=int(argv[0]))
    board = ArrivalBoard.attach(int(argv[1])) if len(argv) > 1 else None
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(sock, board))
    return 0
