"""Out of file descriptors: said once, the tap keeps serving, and serves again once some close.

When a process is at its descriptor limit (``ulimit -n``), accepting a connection fails with
``EMFILE``. asyncio's accept loop then logs a traceback for the failure — and goes on trying
up to the listen backlog (uvicorn: 2048) more times in the same wakeup, each failure logged
and each scheduling one more retry a second later: megabytes of the same error a second on
stderr, and a process whose stderr nobody reads blocks on it for good.

:func:`guard_accepts` gives the event loop a :class:`GuardedListener` instead of the listening
socket: after such a failure it answers "nothing to accept" (asyncio stops trying) until
asyncio's own retry a second later, and it tells an :class:`AcceptReport`, which says so in
one line, then at most one line every :data:`REPORT_EVERY` seconds with how many tries failed
meanwhile, and once accepting works again, that it does. The loop's exception handler drops
asyncio's traceback for it (any other error still goes to the handler there was).
"""

from __future__ import annotations

import asyncio
import errno
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

try:
    import resource
except ImportError:  # (Windows)
    resource = None  # type: ignore[assignment]

__all__ = ["REPORT_EVERY", "AcceptReport", "GuardedListener", "guard_accepts"]

OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""The accept errors asyncio retries a second later (the others end the accept loop)."""

REPORT_EVERY = 30.0
"""Seconds between two lines about the same trouble, at least."""

_REST = 0.5
"""After a failure, accept answers "nothing to accept" this long: less than asyncio's
retry delay (1 s), so its retry really tries."""

_ASYNCIO_MESSAGE = "socket.accept() out of system resource"


def _limit() -> str:
    """``, limit 1024``: the soft limit (imported before it is needed: at the limit, an
    import cannot open its file)."""
    if resource is None:
        return ""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return f", limit {soft}" if soft != resource.RLIM_INFINITY else ""


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


class AcceptReport:
    """Says what :class:`GuardedListener` tells it (``write``: a line at a time; ``clock``:
    seconds), one line per :data:`REPORT_EVERY` seconds at most; ``prefix``: who says it."""

    def __init__(
        self,
        write: Callable[[str], None] = _stderr,
        *,
        clock: Callable[[], float] = time.monotonic,
        every: float = REPORT_EVERY,
        prefix: str = "streamscope tap",
        limit: Callable[[], str] = _limit,
    ) -> None:
        self._write = write
        self._clock = clock
        self._every = every
        self._prefix = prefix
        self._limit = limit
        self.failing = False
        self.unsaid = 0  # failed tries since the last line
        self.run = 0  # failed tries since this run of failures began
        self._since = 0.0  # when it began
        self._said: float | None = None  # when the last line was written
        self._said_run = False  # this run's beginning was said

    def failed(self, exc: OSError) -> None:
        now = self._clock()
        if not self.failing:
            self.failing, self.run, self._since, self._said_run = True, 0, now, False
        self.run += 1
        self.unsaid += 1
        if self._said is not None and now - self._said < self._every:
            return
        if not self._said_run:
            self._said_run = True
            what = exc.strerror or str(exc)
            self._say(
                f"out of file descriptors ({what}{self._limit()}): new connections wait "
                "until some close",
                now,
            )
        else:
            self._say(f"still out of file descriptors ({_tries(self.unsaid)} failed)", now)

    def accepted(self) -> None:
        if not self.failing:
            return
        self.failing = False
        if self._said_run:  # (said even within REPORT_EVERY: the news that it is over)
            now = self._clock()
            self._say(
                f"accepting connections again after {now - self._since:.1f} s "
                f"({_tries(self.run)} failed)",
                now,
            )

    def _say(self, text: str, now: float) -> None:
        self._said = now
        self.unsaid = 0
        self._write(f"{self._prefix}: {text}\n")


def _tries(n: int) -> str:
    return f"{n} accept{'s' if n != 1 else ''}"


class GuardedListener(socket.socket):
    """A listening socket whose ``accept`` rests after running out of descriptors (see the
    module docstring); ``report`` is told of failures and of the first accept after them."""

    report: AcceptReport
    _rest_until: float

    def accept(self) -> tuple[socket.socket, Any]:
        clock = self.report._clock
        if self._rest_until and clock() < self._rest_until:
            raise BlockingIOError(errno.EAGAIN, "resting after running out of descriptors")
        try:
            accepted = super().accept()
        except OSError as exc:
            if exc.errno in OUT_OF_RESOURCES:
                self._rest_until = clock() + _REST
                self.report.failed(exc)
            raise
        self._rest_until = 0.0
        self.report.accepted()
        return accepted


def guard_accepts(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, report: AcceptReport | None = None
) -> GuardedListener:
    """``sock``'s descriptor as a :class:`GuardedListener` (``sock`` is detached: serve the
    one returned), and ``loop``'s exception handler quiet about what ``report`` says."""
    listener = GuardedListener(sock.family, sock.type, sock.proto, fileno=sock.detach())
    listener.report = report or AcceptReport()
    listener._rest_until = 0.0
    fd = listener.fileno()
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        said = context.get("socket")
        if context.get("message") == _ASYNCIO_MESSAGE and said is not None and said.fileno() == fd:
            return  # (the report said it)
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    return listener
