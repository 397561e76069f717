"""The ``streamscope_serve`` pytest fixture: an app's own tests against recorded streams.

Installed with StreamScope and registered through the ``pytest11`` entry point (name
``streamscope``; ``-p no:streamscope`` turns it off), it does nothing until a test asks for
the fixture: importing it imports neither Qt nor the server, and starts nothing. ::

    def test_the_answer(streamscope_serve):
        base_url = streamscope_serve("captures/hello.sscap", speed=None)
        client = openai.OpenAI(base_url=base_url, api_key="unused")
        ...

``streamscope_serve(*paths, speed=1.0, match="order", loop=False, ignore=…)`` starts a server
on 127.0.0.1 (a free port, a thread) for the recordings under ``paths`` — captures, folders,
repro bundles, HAR files; a relative path is taken from the test file's folder — and returns
its base URL (:func:`~streamscope.core.serve.server.serve_captures` explains the options).
Every server a test started stops when the test ends. ``streamscope_serve.exchanges`` lists
the exchanges served so far (:class:`~streamscope.core.serve.report.ServedExchange`: status,
outcome, reason, ``served`` …); :meth:`ServeFixture.wait_for` waits until there are ``n``.
With ``faults="…"`` (a ``--fault`` spec), :meth:`ServeFixture.reactions` says how the client
took them (its retries, their intervals, whether it honoured ``Retry-After`` …).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from streamscope.core.serve import ServedExchange, ServeServer

__all__ = ["ServeFixture", "streamscope_serve"]


class ServeFixture:
    """What the fixture gives a test: call it to serve recordings (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.exchanges: list[ServedExchange] = []
        self.servers: list[ServeServer] = []
        self._changed = threading.Condition()

    def __call__(self, *paths: str | Path, **options: Any) -> str:
        """Serve the recordings under ``paths``; returns the base URL (see
        :class:`~streamscope.core.serve.server.ServeServer` for ``options``)."""
        from streamscope.core.serve import ServeServer

        resolved = [p if Path(p).is_absolute() else self.folder / p for p in paths]
        options.setdefault("port", 0)
        server = ServeServer(resolved, listener=self._told, **options)
        server.start()
        self.servers.append(server)
        return server.base_url

    def _told(self, exchange: ServedExchange) -> None:
        with self._changed:
            self.exchanges.append(exchange)
            self._changed.notify_all()

    def wait_for(self, n: int, timeout: float = 10.0) -> list[ServedExchange]:
        """The first ``n`` exchanges, once they have ended (``TimeoutError`` after
        ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.exchanges) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.exchanges)} of {n} exchanges after {timeout} s")
                self._changed.wait(left)
            return self.exchanges[:n]

    def reactions(self, timeout: float = 5.0) -> dict[str, Any]:
        """How the client reacted to the faults (``faults="…"``) of the server started last,
        once its exchanges have ended: ``{"exchanges": [...], "summary": {...}}`` (see
        :func:`streamscope.core.faults.client_reactions`)."""
        if not self.servers:
            raise RuntimeError("no server was started")
        server = self.servers[-1]
        server.wait_idle(timeout)
        return server.reactions()

    def stop(self) -> None:
        """Stop every server started (the fixture does it at the end of the test)."""
        servers, self.servers = self.servers, []
        for server in servers:
            server.stop()


@pytest.fixture
def streamscope_serve(request: pytest.FixtureRequest) -> Iterator[ServeFixture]:
    """Serve recorded LLM exchanges to the code under test (see the module docstring)."""
    fixture = ServeFixture(Path(request.path).parent)
    try:
        yield fixture
    finally:
        fixture.stop()
