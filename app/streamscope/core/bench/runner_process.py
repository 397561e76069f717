"""The load runs in a process of its own: ``streamscope --bench-runner FD``.

The window (or the CLI) does not share its event loop, its CPU time or its garbage collector
with the load: :class:`BenchRunner` starts the child once and hands it a step at a time over
a private socket pair (length-prefixed pickles, :mod:`~streamscope.core.net.messages`, as the
stream worker does); the child runs :func:`~streamscope.core.bench.load.run_step` and sends
back every request as it ends (``("exchange", Exchange, sent_so_far)``), then the step's
:class:`~streamscope.core.bench.load.StepStats`. The requests, the API key in their headers
included, travel only over that socket: never on a command line, never on disk.

Closing the socket (or cancelling :meth:`BenchRunner.run_step`) stops the child's step: the
requests in flight end as ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import threading
from collections.abc import Callable, Sequence

from streamscope.core.bench.load import LoadRequest, LoadStep, StepStats, run_step
from streamscope.core.bench.transport import Exchange
from streamscope.core.net.messages import helper_command, pack, receive

__all__ = ["RUNNER_FLAG", "BenchRunner", "runner_main"]

RUNNER_FLAG = "--bench-runner"


class BenchRunner:
    """The parent's handle on the load process (one step at a time)."""

    def __init__(self, command: Callable[[int], list[str]] | None = None) -> None:
        self._command = command or (lambda fd: helper_command(RUNNER_FLAG, fd))
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> None:
        if self._proc is not None:
            return
        parent, child = socket.socketpair()
        try:
            self._proc = subprocess.Popen(
                self._command(child.fileno()),
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            child.close()
        threading.Thread(target=self._proc.wait, name="bench-runner-reaper", daemon=True).start()
        self._reader, self._writer = await asyncio.open_connection(sock=parent)

    async def run_step(
        self,
        step: LoadStep,
        requests: Sequence[LoadRequest],
        on_exchange: Callable[[Exchange, int], None],
    ) -> StepStats:
        """Run ``step`` in the child; ``on_exchange(exchange, sent_so_far)`` for every request
        as it ends. ``RuntimeError`` if the child fails or ends."""
        await self.start()
        assert self._reader is not None and self._writer is not None
        self._writer.write(pack(("run", step, list(requests))))
        try:
            while (message := await receive(self._reader)) is not None:
                kind, *args = message
                if kind == "exchange":
                    on_exchange(args[0], args[1])
                elif kind == "stats":
                    stats: StepStats = args[0]
                    return stats
                elif kind == "failed":
                    raise RuntimeError(f"the bench runner failed: {args[0]}")
        except asyncio.CancelledError:
            with contextlib.suppress(ConnectionError, RuntimeError):
                self._writer.write(pack(("cancel",)))
            raise
        raise RuntimeError("the bench runner process ended unexpectedly")

    async def aclose(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        proc = self._proc
        if proc is None:
            return
        for _ in range(200):
            if proc.returncode is not None:
                return
            await asyncio.sleep(0.01)
        proc.kill()


async def _serve(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    listen = asyncio.ensure_future(receive(reader))  # (one reader of the socket at a time)
    while (message := await listen) is not None:
        listen = asyncio.ensure_future(receive(reader))
        if message[0] != "run":
            continue
        step, requests = message[1], message[2]

        def on_exchange(ex: Exchange, sent: int) -> None:
            writer.write(pack(("exchange", ex, sent)))

        task = asyncio.ensure_future(run_step(step, requests, on_exchange))
        await asyncio.wait({task, listen}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():  # a cancel, or the parent went away
            task.cancel()
            await asyncio.wait({task})
            continue
        exc = task.exception()
        writer.write(pack(("failed", repr(exc)) if exc else ("stats", task.result())))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    writer.close()


def runner_main(argv: list[str]) -> int:
    """The child process: serve the parent over the socket whose descriptor is ``argv[0]``."""
    sock = socket.socket(fileno=int(argv[0]))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(sock))
    return 0
