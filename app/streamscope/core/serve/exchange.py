"""Serving recorded exchanges over HTTP/1.1: each connection read with h11, each answer
written by carrying out a :class:`~streamscope.core.serve.playback.Playback`.

A small asyncio server of its own (not an ASGI framework): every recorded read is exactly one
``transport.write`` at its recorded offset from the request's arrival (divided by the speed),
after the previous write has left for the kernel (the write buffer's limit is 0); a cut is
``transport.abort()`` once those bytes are out, so the client sees the body end at the same
byte; a stall writes nothing more and keeps the connection until the client hangs up. The body
goes chunked to an HTTP/1.1 client (one chunk per recorded read), with a ``Content-Length``
when the recording had one that fits, close-delimited to HTTP/1.0.

While an answer is being written the connection is still read, so a client that hangs up is
noticed at once (the answer stops; its line says so). Hostile input gets a JSON error and the
connection closed, never a crash: a request head over :data:`MAX_HEAD_BYTES` (431), a body over
:data:`MAX_BODY_BYTES` (413), anything h11 cannot parse (400). A client that never finishes its
head holds only its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import h11
import orjson

from streamscope.core.faults import FaultSpec, apply
from streamscope.core.faults.observing import Observations
from streamscope.core.faults.playback import Playback
from streamscope.core.redact import redact_url
from streamscope.core.serve.matching import NO_MATCH_STATUS, Matcher, NoMatch
from streamscope.core.serve.playing import PlaybackRun, status_phrase
from streamscope.core.serve.report import Ending, ServedExchange, judge_in_thread
from streamscope.core.wire.sizes import format_bytes

__all__ = ["MAX_BODY_BYTES", "MAX_HEAD_BYTES", "ExchangeListener", "ServeApp", "Transform"]

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
"""A request body larger than this is refused (413): a recorded LLM request is far smaller
(a 1 MB conversation is large), and the server keeps a body in memory to match it."""

_READ_SIZE = 64 * 1024
_LINGER_S = 1.0

Transform = Callable[[Playback, int], Playback]
"""Changes a playback before it is served (a fault on cue); gets the exchange's id (1, 2 …)."""
ExchangeListener = Callable[[ServedExchange], None]
"""Told of each finished exchange, on the serving loop's thread."""


class ServeApp:
    """The connections of one server: give :meth:`handle` to ``asyncio.start_server``.
    ``speed``: ``None`` writes without waiting (``--fast``), else offsets are divided by it."""

    def __init__(
        self,
        matcher: Matcher,
        *,
        speed: float | None = 1.0,
        transform: Transform | None = None,
        faults: FaultSpec | None = None,
        listener: ExchangeListener | None = None,
    ) -> None:
        if speed is not None and speed <= 0:
            raise ValueError(f"speed must be > 0, not {speed}")
        self.matcher = matcher
        self.speed = speed
        self.transform = transform
        self.faults = faults
        self.listener = listener
        self.observed = Observations()
        self.stopping = False
        self._ids = itertools.count(1)
        self._open: set[asyncio.Task[Any]] = set()
        self.reporting: set[asyncio.Task[None]] = set()  # exchanges being judged
        self._judging: ThreadPoolExecutor | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._open.add(task)
        connection = _Connection(self, reader, writer)
        try:
            await connection.run()
        except (OSError, h11.ProtocolError, asyncio.CancelledError):
            pass  # (the client left, sent what h11 refuses mid-answer, or serve is stopping)
        finally:
            if task is not None:
                self._open.discard(task)
            connection.forget()
            writer.transport.abort()

    async def stop(self) -> None:
        """End every open connection (their lines say ``serve stopped``)."""
        self.stopping = True
        tasks = list(self._open)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        if self.reporting:  # (the lines of the exchanges just ended)
            await asyncio.wait(set(self.reporting), timeout=5.0)
        judging, self._judging = self._judging, None
        if judging is not None:
            judging.shutdown(wait=False)

    def judging(self) -> ThreadPoolExecutor:
        """The one thread exchanges are judged on, in the order they ended (so are the
        lines), off the serving loop (whose timing the parsing would disturb)."""
        if self._judging is None:
            self._judging = ThreadPoolExecutor(1, thread_name_prefix="serve-judge")
        return self._judging

    def exchange_id(self) -> int:
        return next(self._ids)

    def prepare(self, playback: Playback, xid: int) -> tuple[Playback, float | None]:
        """The playback as request ``xid`` gets it and the speed to play it at: the
        ``transform``, then the faults whose cadence takes the request. Faults are applied in
        real seconds (the recorded timing divided by the speed, or none with ``--fast``),
        then played at speed 1: a stall of 2 s is 2 s at any speed, ``--fast`` included."""
        if self.transform is not None:
            playback = self.transform(playback, xid)
        if self.faults is None:
            return playback, self.speed
        playback = playback.scaled(0.0 if self.speed is None else 1.0 / self.speed)
        return apply(self.faults, playback, playback.dialect, xid), 1.0


class _Connection:
    """One client connection: requests in turn (keep-alive), each answered."""

    def __init__(
        self, app: ServeApp, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.app = app
        self.reader = reader
        self.writer = writer
        self.transport = writer.transport
        self.transport.set_write_buffer_limits(high=0)  # (drain waits until it is all out)
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
        self.loop = asyncio.get_running_loop()
        self._reading: asyncio.Future[bytes] | None = None

    async def run(self) -> None:
        while True:
            try:
                got = await self._request()
            except h11.RemoteProtocolError as exc:  # (431 for a head over MAX_HEAD_BYTES)
                await self._refuse(exc.error_status_hint, f"bad request: {exc}")
                return
            if got is None:
                return
            request, body = got
            if len(body) > MAX_BODY_BYTES:
                await self._refuse(
                    413,
                    f"request body over {format_bytes(MAX_BODY_BYTES)} (serve keeps it to match)",
                )
                return
            await self._answer(request, body)
            if self.conn.our_state is h11.MUST_CLOSE or self.conn.their_state is h11.MUST_CLOSE:
                return
            if self.conn.our_state is not h11.DONE or self.conn.their_state is not h11.DONE:
                return  # (an answer cut or stalled ended the connection)
            self.conn.start_next_cycle()

    def send(self, event: Any) -> bytes:
        """``event``'s bytes as h11 frames them (a chunk, the last chunk, a head)."""
        data: bytes | None = self.conn.send(event)
        assert data is not None  # (None only for ConnectionClosed, never sent here)
        return data

    def forget(self) -> None:
        """Drop a read still waiting (the connection is over)."""
        reading, self._reading = self._reading, None
        if reading is not None:
            if reading.done() and not reading.cancelled():
                reading.exception()  # (retrieved: a reset is no news)
            reading.cancel()

    # -- reading ---------------------------------------------------------------------------------

    async def _recv(self) -> bytes:
        if self._reading is None:
            self._reading = asyncio.ensure_future(self.reader.read(_READ_SIZE))
        try:
            return await self._reading
        finally:
            self._reading = None

    async def _request(self) -> tuple[h11.Request, bytes] | None:
        """The next request and its body (``None``: the client closed the connection). A
        body past :data:`MAX_BODY_BYTES` is returned cut at one byte more."""
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                if self.conn.they_are_waiting_for_100_continue:  # (curl, for a large body)
                    self.transport.write(
                        self.send(h11.InformationalResponse(status_code=100, headers=[]))
                    )
                self.conn.receive_data(await self._recv())
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    assert request is not None  # (h11: a body comes after its head)
                    return request, bytes(body)
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            else:  # ConnectionClosed, PAUSED
                return None

    async def _refuse(self, status: int, message: str) -> None:
        """A JSON error, then the connection closed (the request could not be read)."""
        body = orjson.dumps(
            {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        )
        phrase = status_phrase(status).decode()
        self.transport.write(
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(OSError):
            await self.writer.drain()
            # Lingering close: what the client is still sending is read and dropped for a
            # moment, so that closing with it unread (a reset) does not destroy the answer.
            self.transport.write_eof()
            deadline = self.loop.time() + _LINGER_S
            while (left := deadline - self.loop.time()) > 0:
                if not await asyncio.wait_for(self._recv(), left):
                    break

    # -- answering -------------------------------------------------------------------------------

    async def _answer(self, request: h11.Request, body: bytes) -> None:
        arrived = self.loop.time()
        xid = self.app.exchange_id()
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        path = target.split("?", 1)[0] or "/"
        picked = self.app.matcher.pick(method, path, body)
        if isinstance(picked, NoMatch):
            self.app.observed.start(xid, arrived, body, [])
            self._no_match(picked, method, target, xid, arrived)
            self.app.observed.end(xid, "close", self.loop.time())
            return
        playback, speed = self.app.prepare(picked.playback, xid)
        self.app.observed.start(xid, arrived, body, playback.describe())
        run = PlaybackRun(
            playback,
            arrived,
            send=self.send,
            writer=self.writer,
            speed=speed,
            head_only=method.upper() == "HEAD",
        )
        ending: Ending = "stopped"
        try:
            ending = await self._watching(run.play())
        finally:
            self.app.observed.end(xid, ending, self.loop.time())
            if self.app.listener is not None:
                self._report(run, ending, xid, method, target, picked.source, picked.capture)

    async def _watching(self, play: Any) -> Ending:
        """Run ``play`` while watching for the client hanging up."""
        task: asyncio.Task[Ending] = asyncio.ensure_future(play)
        watching = True
        try:
            while not task.done():
                if watching and self._reading is None:
                    self._reading = asyncio.ensure_future(self.reader.read(_READ_SIZE))
                waiting: set[asyncio.Future[Any]] = {task}
                if watching and self._reading is not None:
                    waiting.add(self._reading)
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                reading = self._reading
                if reading is not None and reading.done() and not task.done():
                    self._reading = None
                    data = b"" if reading.exception() else reading.result()
                    if not data:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                            await task
                        return "client_closed"
                    self.conn.receive_data(data)  # (a pipelined request: read it after)
                    watching = False
            return task.result()
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await task

    def _no_match(self, miss: NoMatch, method: str, target: str, xid: int, t0: float) -> None:
        body = orjson.dumps(miss.body())
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        self.transport.write(
            self.send(h11.Response(status_code=NO_MATCH_STATUS, headers=headers))
            + self.send(h11.Data(data=body))
            + self.send(h11.EndOfMessage())
        )
        if self.app.listener is not None:
            line = ServedExchange(
                xid,
                method,
                redact_url(target),
                NO_MATCH_STATUS,
                "error",
                miss.message,
                None,
                0,
                len(body),
                None,
                round((self.loop.time() - t0) * 1000, 1),
                None,
            )
            self._tell(lambda: line)

    def _report(
        self,
        run: PlaybackRun,
        ending: Ending,
        xid: int,
        method: str,
        target: str,
        source: str,
        capture: Any,
    ) -> None:
        """Judge what was sent (see :meth:`_tell`)."""
        elapsed = self.loop.time() - run.arrived
        sent = list(run.sent)
        status = run.playback.status if run.head_t is not None else None

        def line() -> ServedExchange:
            try:
                outcome, reason, dialect, frames, ttft = judge_in_thread(
                    recorded=capture,
                    status=status,
                    headers=run.playback.headers,
                    head_t=run.head_t,
                    sent=sent,
                    ending=ending,
                    elapsed=elapsed,
                )
            except Exception as exc:  # (a line is still owed: say why it has no outcome)
                outcome, reason, dialect, frames, ttft = (
                    "error",
                    f"not judged: {exc}",
                    None,
                    0,
                    None,
                )
            return ServedExchange(
                xid,
                method,
                redact_url(target),
                status,
                outcome,
                reason,
                dialect,
                frames,
                sum(len(data) for _, data in sent),
                ttft,
                round(elapsed * 1000, 1),
                source,
                tuple(run.playback.describe()),
            )

        self._tell(line)

    def _tell(self, line: Callable[[], ServedExchange]) -> None:
        """Make an exchange's line on the judging thread, in the order exchanges ended, and
        give it to the listener on the serving loop — in a task of the loop, not of this
        connection (it outlives a cancelled connection)."""
        listener = self.app.listener
        assert listener is not None
        loop = self.loop

        async def tell() -> None:
            listener(await loop.run_in_executor(self.app.judging(), line))

        task = loop.create_task(tell())
        self.app.reporting.add(task)
        task.add_done_callback(self.app.reporting.discard)
