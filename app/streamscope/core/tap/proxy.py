"""The tap's recording half: each exchange the forwarder passes through, read as a turn.

:class:`TapRecorder` takes the forwarder's messages (see :mod:`streamscope.core.tap.forward`)
and reads each exchange as a turn — the same :class:`StreamPipeline` as chat turns, on the
decoded bytes when upstream compressed them — recorded as a ``.sscap`` capture through
:class:`CaptureRecorder`, which writes as reads arrive and scrubs with the request's
:class:`~streamscope.core.redact.Scrubber`: keys in the request's headers or query go upstream
untouched and never reach a file. A listener (the CLI, the window) is told of each exchange as
it starts (it may watch it with a :class:`TurnObserver`) and when it ends
(:class:`ExchangeResult`).
Its outcome is the one ``streamscope send`` gives the same bytes (:mod:`.decide`).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from httpx._decoders import SUPPORTED_DECODERS, ContentDecoder

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.faults.observing import Ending, Observations
from streamscope.core.net.client import MAX_ERROR_BODY
from streamscope.core.net.options import TLSOptions
from streamscope.core.redact import Scrubber, redact_url
from streamscope.core.tap.decide import asks_for_stream, plain_turn, said_end
from streamscope.core.tap.exchange import ExchangeResult, TapExchange, TapListener
from streamscope.core.tap.forward import HOP_BY_HOP, upstream_url
from streamscope.core.turn.model import Timings, Turn
from streamscope.core.turn.observer import MultiObserver, TurnObserver
from streamscope.core.turn.outcome import EndKind, StreamEnd
from streamscope.core.turn.pipeline import MarkedFrame, StreamPipeline
from streamscope.core.wire.content_type import classify_content_type
from streamscope.core.wire.dialects.base import RequestSpec
from streamscope.core.wire.events import DialectWarning

__all__ = [
    "HOP_BY_HOP",
    "ExchangeResult",
    "TapExchange",
    "TapListener",
    "TapRecorder",
    "upstream_url",
]


# -- the recorder -----------------------------------------------------------------------------


class TapRecorder:
    """Reads and records what the forwarder passed (see the module docstring): call
    :meth:`handle` with each message, in order, on one event loop's thread; ``captures``:
    where exchanges are recorded (``None``: not recorded)."""

    def __init__(
        self,
        upstream: str,
        *,
        dialect: str = "auto",
        tls: TLSOptions = TLSOptions(),
        captures: CaptureStore | None = None,
        listener: TapListener | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.dialect = dialect
        self.tls = tls
        self.captures = captures
        self.listener = listener
        self.stopping = False
        self._runs: dict[int, _Run] = {}
        self._delivering: set[asyncio.Future[None]] = set()
        self.observed = Observations()
        """What the tap saw of each exchange, for :meth:`reactions` (``--fault``)."""

    def reactions(self, now: float | None = None) -> dict[str, Any]:
        """How the clients reacted to the faults on cue so far: ``{"exchanges", "summary"}``
        (:func:`~streamscope.core.faults.client_reactions`)."""
        return self.observed.reactions(now)

    async def settle(self, timeout: float) -> None:
        """Wait (up to ``timeout`` seconds) until every ended exchange's capture is written
        and its listener told — before the event loop they are told on stops."""
        if self._delivering:
            await asyncio.wait(set(self._delivering), timeout=timeout)

    def handle(self, message: tuple[Any, ...]) -> None:
        kind, xid = message[0], message[1]
        if kind == "read":
            run = self._runs.get(xid)
            if run is not None:
                run.read(message[2], message[3])
        elif kind == "start":
            self._start(*message[1:])
        elif kind == "head":
            run = self._runs.get(xid)
            if run is not None:
                run.head(*message[2:])
        elif kind == "faults":
            run = self._runs.get(xid)
            if run is not None:
                run.faults = tuple(message[2])
                if run.recorder is not None:
                    run.recorder.faults = run.faults
                self.observed.faulted(xid, list(run.faults))
        elif kind == "end":
            run = self._runs.pop(xid, None)
            if run is not None:
                _kind, _xid, end_kind, detail, t, stopping = message
                self.stopping = self.stopping or stopping
                self.observed.end(
                    xid, _ENDINGS.get(end_kind, "stopped") if not stopping else "stopped", t
                )
                run.end(end_kind, detail, t)

    def lose_all(self, t: float, died: str | None = None) -> None:
        """The forwarder has gone: every exchange still open ends — as cancelled by the tap
        stopping, or (``died``: what happened) cut off, as its client saw it."""
        runs, self._runs = self._runs, {}
        if died is None:
            self.stopping = True
        for run in runs.values():
            if died is None:
                run.end("cancelled", "", t)
            else:
                run.end("broken", died, t)

    def _start(
        self,
        xid: int,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        body: bytes,
        t0: float,
        body_cut: bool = False,
    ) -> None:
        url = upstream_url(self.upstream, path, query)
        joined: dict[str, str] = {}
        for name, value in headers:
            joined[name] = f"{joined[name]}, {value}" if name in joined else value
        spec = RequestSpec(method, url, joined)
        capture_path: Path | None = None
        capture_id: str | None = None
        if self.captures is not None:
            capture_id = self.captures.begin()
            capture_path = self.captures.path(capture_id)
        shown_path = redact_url(path + (f"?{query}" if query else ""))
        exchange = TapExchange(xid, method, shown_path, url, joined, body, capture_path, t0, spec)
        run = self._runs[xid] = _Run(self, exchange, t0)
        self.observed.start(xid, t0, body, [])
        if body_cut:  # (the forwarder streamed a longer body up and sent us its start)
            run.note = (
                f"the request body is longer than {len(body):,} bytes: the upstream got all "
                f"of it, the capture keeps its first {len(body):,}"
            )
        if self.captures is not None and capture_id is not None:
            run.capture_id = capture_id
            password = self.tls.proxy.password  # (an upstream proxy's, masked too)
            run.recorder = CaptureRecorder(
                self.dialect,
                path=capture_path,
                keep_reads=False,
                secrets=(password,) if password else (),
                client_defaults=False,  # (the request as the other app sent it)
            )
        watcher = self.listener.exchange_started(exchange) if self.listener else None
        run.observer = MultiObserver(*(o for o in (run.recorder, watcher) if o is not None))
        run.observer.request_started(spec, body, t0)


def _complete(store: CaptureStore, capture_id: str) -> None:
    with contextlib.suppress(OSError):
        store.complete(capture_id)


class _Run:
    """One exchange while it runs: feeds the pipeline, tells the observers."""

    def __init__(self, app: TapRecorder, exchange: TapExchange, t0: float) -> None:
        self.app = app
        self.wants_stream = asks_for_stream(exchange.url, exchange.body)
        self.exchange = exchange
        self.t0 = t0
        self.recorder: CaptureRecorder | None = None
        self.capture_id: str | None = None
        self.observer: TurnObserver = TurnObserver()
        self.pipeline: StreamPipeline | None = None
        self.status: int | None = None
        self.headers_at: float | None = None
        self.wire_bytes = 0
        self.frames = 0
        self.decoder: ContentDecoder | None = None
        self.error_body = bytearray()  # (an HTTP error's, or a body that should be a stream)
        self.protocol_error: str | None = None  # the line cap broke: the turn ended there
        self._head: tuple[int, list[tuple[str, str]], float] | None = None
        self._base = StreamEnd("eof")
        self._content_type: str | None = None
        self._encoding = "identity"
        self._streaming: bool | None = None
        self.note: str | None = None  # said as a warning of the turn
        self.faults: tuple[dict[str, Any], ...] = ()  # the faults on cue it was served

    def head(self, status: int, headers: list[tuple[str, str]], t: float) -> None:
        self.status = status
        self.headers_at = t
        # The observers hear of the head with the first read (a body-less answer: its end).
        self._head = (status, headers, t)
        joined = httpx.Headers(headers)
        self._content_type = content_type = joined.get("content-type")
        encoding = self._encoding = joined.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            decoder_type = SUPPORTED_DECODERS.get(encoding)
            self.decoder = decoder_type() if decoder_type is not None else None
        self._base = StreamEnd(
            "eof", status=status, headers=dict(joined), content_type=content_type
        )
        self._streaming = False if status >= 400 else None

    @property
    def _kept_whole(self) -> bool:  # (bounded, for the end record: as the chat's client)
        """An HTTP error's body, or a streaming request's answer that is no stream."""
        return self.status is not None and (
            self.status >= 400 or (self._streaming is False and self.wants_stream)
        )

    def read(self, chunk: bytes, t: float) -> None:
        self._tell_head()
        self.wire_bytes += len(chunk)
        data = self._decode(chunk)
        if self._streaming is None:
            self._streaming, warning = classify_content_type(self._content_type, data)
            if self._streaming:
                self._pipeline(self._content_type, warning, self._encoding, t)
        self._take(data, t, self._streaming)

    def end(self, kind: EndKind, detail: str, t: float) -> None:
        """The forwarder's end: ``eof`` (the body ended), ``broken``, ``cancelled`` or
        ``connect_error`` (the tap answered 502)."""
        elapsed = t - self.t0
        streaming = self._streaming
        if kind == "connect_error":
            self.status = 502
            self._finish(StreamEnd("connect_error", detail=detail, elapsed=elapsed), t)
            return
        if self.status is None:  # (no head yet: cancelled while connecting)
            self._finish(StreamEnd(kind, detail=detail, elapsed=elapsed), t)
            return
        if kind == "eof":
            tail = self._decode(b"", final=True)
            if tail:
                self._take(tail, t, bool(streaming))
        if streaming is None and self.wants_stream and self.status < 400:
            # no body byte came: what the chat's client makes of an empty body
            streaming = self._streaming = classify_content_type(self._content_type, b"")[0]
        if self._kept_whole and (kind == "eof" or self.status < 400):
            # (as the chat's client, which reads such a body to its end or its break)
            what: EndKind = "http_error" if self.status >= 400 else "not_a_stream"
            end = replace(_with(self._base, what, elapsed), body=bytes(self.error_body))
        else:
            end = _with(self._base, kind, elapsed, detail)
        self._finish(end, t, streaming)

    def _tell_head(self) -> None:
        head, self._head = self._head, None
        if head is not None:
            self.observer.response_started(*head)

    def _decode(self, chunk: bytes, *, final: bool = False) -> bytes:
        if self.decoder is None:
            return chunk
        try:
            return self.decoder.flush() if final else self.decoder.decode(chunk)
        except httpx.DecodingError:
            self.decoder = None  # shown raw from here on (the client got the bytes anyway)
            return b"" if final else chunk

    def _pipeline(
        self, content_type: str | None, warning: str | None, encoding: str, t: float
    ) -> None:
        pipe = self.pipeline = StreamPipeline(
            self.app.dialect,
            keep_frames=True,
            content_type=content_type,
            request_sent=self.t0,
            headers=self.headers_at,
        )
        for said in (warning, self.note):
            if said:
                pipe.assembler.apply(DialectWarning(said), t)
        if encoding not in ("", "identity"):
            decoded = "frames show the decompressed bytes" if self.decoder else "not decoded"
            pipe.assembler.apply(
                DialectWarning(
                    f"upstream compressed the body (Content-Encoding: {encoding}); it was "
                    f"passed to the client untouched; {decoded}"
                ),
                t,
            )

    def _take(self, data: bytes, t: float, streaming: bool | None) -> None:
        if self._kept_whole:
            room = MAX_ERROR_BODY - len(self.error_body)
            if room > 0:
                self.error_body += data[:room]
            return
        self.observer.read(data, t)
        if streaming and self.pipeline is not None:
            update = self.pipeline.feed(data, t)
            self.frames += len(update.frames)
            if update.protocol_error and self.protocol_error is None:
                self.protocol_error = update.protocol_error
            self.observer.progressed(update, t)

    def _finish(self, end: StreamEnd, now: float, streaming: bool | None = None) -> None:
        """Once (the recorder forgets a run as it ends it)."""
        self._tell_head()
        obs = self.observer
        pipe = self.pipeline
        if pipe is not None:
            end = said_end(end, pipe, self.protocol_error)
        if pipe is None and (streaming is None or not streaming) and end.kind in ("eof",):
            turn = plain_turn(
                end,
                self.status,
                self.wire_bytes,
                Timings(request_sent=self.t0, headers=self.headers_at, end=now),
                note=self.note,
            )
        else:
            if pipe is None:
                pipe = self.pipeline = StreamPipeline(
                    self.app.dialect,
                    keep_frames=True,
                    content_type=end.content_type,
                    request_sent=self.t0,
                    headers=self.headers_at,
                )
                if self.note:
                    pipe.assembler.apply(DialectWarning(self.note), now)
            tail = pipe.end_input(end, now)
            # (an error's body is a row of the Frames tab, but no frame of a stream: a
            # non-streaming exchange counts 0 frames, as its JSON line promises)
            self.frames += sum(
                1
                for f in tail.frames
                if not (isinstance(f.frame, MarkedFrame) and f.frame.role == "body")
            )
            if tail.frames or tail.events:
                obs.progressed(tail, now)
            turn = pipe.close(end, now)
            if end.kind == "cancelled":  # not "by you": the client, or the tap stopping
                who = "the tap stopped" if self.app.stopping else "the client closed the connection"
                turn = replace(turn, reason=f"{who} after {end.elapsed or 0.0:.1f} s")
            if turn.status is None and self.status is not None:
                turn = replace(turn, status=self.status)
        obs.ended(end)
        obs.finished(turn)
        self._deliver(self._result(turn, now))

    def _deliver(self, result: ExchangeResult) -> None:
        """Once the capture is written (its end line too): index it, tell the listener —
        on the event loop's thread, so a listener is called from one thread only."""
        app, recorder, capture_id = self.app, self.recorder, self.capture_id

        def deliver() -> None:
            if app.captures is not None and capture_id is not None:
                _complete(app.captures, capture_id)
            if app.listener is not None:
                app.listener.exchange_finished(result)

        if recorder is None:
            deliver()
            return
        loop = asyncio.get_running_loop()
        delivered: asyncio.Future[None] = loop.create_future()
        app._delivering.add(delivered)

        def deliver_once() -> None:
            if not delivered.done():
                delivered.set_result(None)
                app._delivering.discard(delivered)
                deliver()

        def written(_done: object) -> None:
            try:
                loop.call_soon_threadsafe(deliver_once)
            except RuntimeError:  # the loop has closed (the tap stopped): deliver here
                deliver_once()

        recorder.done.add_done_callback(written)

    def _result(self, turn: Turn, now: float) -> ExchangeResult:
        scrub = self.recorder.scrubber if self.recorder is not None else _scrubber(self.exchange)
        ttft = turn.timings.ttft
        return ExchangeResult(
            exchange=self.exchange,
            status=self.status,
            outcome=turn.outcome.value if turn.outcome is not None else "error",
            reason=scrub.text(turn.reason),
            dialect=turn.dialect if self.pipeline is not None else None,
            frames=self.frames,
            bytes=self.wire_bytes,
            ttft_ms=round(ttft * 1000, 1) if ttft is not None else None,
            duration_ms=round((now - self.t0) * 1000, 1),
            turn=turn,
            faults=self.faults,
        )


_ENDINGS: dict[str, Ending] = {
    "eof": "close",
    "connect_error": "close",
    "broken": "cut",
    "cancelled": "client_closed",
}
"""The forwarder's end kinds as the reactions see them (who ended the exchange)."""


def _scrubber(exchange: TapExchange) -> Scrubber:
    return Scrubber.for_request(exchange.headers, exchange.url)


def _with(base: StreamEnd, kind: EndKind, elapsed: float, detail: str = "") -> StreamEnd:
    return replace(base, kind=kind, elapsed=elapsed, detail=detail)
