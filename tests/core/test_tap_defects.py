"""Issues 26 and 28, in the tap's recording half (the forwarder's messages in, no sockets):
an exchange's outcome and reason are what ``streamscope send`` says of the same bytes, and
replaying the exchange's capture says them again. Also the plain words the tap uses when it
cannot listen, when upstream answers no HTTP, and when it runs out of descriptors."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

import httpx
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import Capture, read_capture
from streamscope.core.capture.replay import replay_capture
from streamscope.core.net.connect_errors import describe_connect_error
from streamscope.core.tap.accept_guard import AcceptReport, GuardedListener, guard_accepts
from streamscope.core.tap.decide import asks_for_stream
from streamscope.core.tap.proxy import ExchangeResult, TapExchange, TapRecorder
from streamscope.core.tap.server import ListenError, TapServer, listen_error
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver

UP = "http://127.0.0.1:1"
CHAT = "/v1/chat/completions"
SSE = [("content-type", "text/event-stream")]
JSON = [("content-type", "application/json")]
ASK = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
ERROR_FRAME = (
    b'data: {"error":{"message":"The server is overloaded","type":"server_error",'
    b'"code":"overloaded"}}\n\n'
)
COMPLETION = (
    b'{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":'
    b'{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
)


def frame(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"' + text.encode() + b'"}}]}\n\n'


class Listener:
    def __init__(self) -> None:
        self.results: list[ExchangeResult] = []

    def exchange_started(self, exchange: TapExchange) -> TurnObserver | None:
        return None

    def exchange_finished(self, result: ExchangeResult) -> None:
        self.results.append(result)


def recorded(
    messages: list[tuple[Any, ...]], *, path: str = CHAT, body: bytes = ASK
) -> tuple[ExchangeResult, Capture, Turn]:
    """The exchange as the tap reports it, its capture, and the capture replayed (as
    ``streamscope replay CAPTURE`` does: the capture's own dialect)."""

    async def go() -> tuple[ExchangeResult, Capture, Turn]:
        listener = Listener()
        recorder = TapRecorder(UP, captures=CaptureStore(), listener=listener)
        recorder.handle(("start", 1, "POST", path, "", [], body, 100.0))
        for message in messages:
            recorder.handle(message)
        await recorder.settle(10)
        [result] = listener.results
        assert result.exchange.capture is not None
        capture = read_capture(result.exchange.capture)
        return result, capture, await replay_capture(capture)

    return asyncio.run(go())


# -- 1. a client hanging up after an in-stream error ---------------------------------------


@pytest.mark.parametrize("stopping", [False, True])
def test_a_hang_up_after_an_in_stream_error_is_that_error(stopping: bool) -> None:
    result, capture, replayed = recorded(
        [
            ("head", 1, 200, SSE, 100.1),
            ("read", 1, frame("par") + ERROR_FRAME, 100.2),
            ("end", 1, "cancelled", "", 100.3, stopping),  # the SDK raised and hung up
        ]
    )
    said = "in-stream error: overloaded: The server is overloaded"
    assert (result.outcome, result.reason, result.frames) == ("error", said, 2)
    assert (replayed.outcome.value if replayed.outcome else None, replayed.reason) == (
        "error",
        said,
    )
    assert capture.end is not None
    assert (capture.end.kind, capture.end.outcome, capture.end.reason) == ("eof", "error", said)


def test_a_hang_up_before_any_error_stays_cancelled() -> None:
    result, capture, replayed = recorded(
        [
            ("head", 1, 200, SSE, 100.1),
            ("read", 1, frame("par"), 100.2),
            ("end", 1, "cancelled", "", 100.5, False),
        ]
    )
    assert (result.outcome, result.reason) == (
        "cancelled",
        "the client closed the connection after 0.5 s",
    )
    assert capture.end is not None and capture.end.kind == "cancelled"
    assert replayed.outcome is not None and replayed.outcome.value == "cancelled"


# -- 2. a streaming request answered with plain JSON ---------------------------------------


def test_a_streaming_request_answered_with_plain_json_is_an_error_as_send_says() -> None:
    result, capture, replayed = recorded(
        [
            ("head", 1, 200, JSON, 100.1),
            ("read", 1, COMPLETION[:40], 100.2),
            ("read", 1, COMPLETION[40:], 100.3),
            ("end", 1, "eof", "", 100.4, False),
        ]
    )
    said = "200 application/json body, not an event stream"
    assert (result.status, result.outcome, result.reason) == (200, "error", said)
    assert (result.frames, result.bytes, result.dialect) == (0, len(COMPLETION), None)
    assert (replayed.outcome.value if replayed.outcome else None, replayed.reason) == (
        "error",
        said,
    )
    # kept as the chat's client keeps it: the body in the end record, not as reads
    assert capture.end is not None
    assert (capture.end.kind, capture.end.body) == ("not_a_stream", COMPLETION)
    assert capture.reads.body() == b""


def test_a_plain_json_error_object_for_a_streaming_request_names_its_message() -> None:
    body = b'{"error":{"message":"model not found","code":"model_not_found"}}'
    result, _capture, replayed = recorded(
        [
            ("head", 1, 200, JSON, 100.1),
            ("read", 1, body, 100.2),
            ("end", 1, "broken", "x", 101.0, False),
        ]
    )
    said = "200 application/json body, not an event stream · model_not_found: model not found"
    assert (result.outcome, result.reason) == ("error", said)
    assert replayed.reason == said


def test_an_empty_answer_to_a_streaming_request_is_what_send_makes_of_it() -> None:
    result, _capture, replayed = recorded(
        [("head", 1, 200, JSON, 100.1), ("end", 1, "eof", "", 100.2, False)]
    )
    said = "200 application/json body, not an event stream"
    assert (result.outcome, result.reason, replayed.reason) == ("error", said, said)
    result, _capture, replayed = recorded(
        [("head", 1, 200, SSE, 100.1), ("end", 1, "eof", "", 100.2, False)]
    )
    said = "connection closed after 0 B, no terminal signal"  # (the tap's dialect: auto)
    assert (result.outcome, result.reason, replayed.reason) == ("truncated", said, said)


def test_a_plain_answer_to_a_request_that_asked_for_none_is_still_completed() -> None:
    body = b'{"model":"m","messages":[],"stream":false}'
    result, _capture, _replayed = recorded(
        [
            ("head", 1, 200, JSON, 100.1),
            ("read", 1, COMPLETION, 100.2),
            ("end", 1, "eof", "", 100.3, False),
        ],
        body=body,
    )
    assert (result.outcome, result.reason) == (
        "completed",
        f"HTTP 200, not a stream (application/json, {len(COMPLETION)} bytes)",
    )


def test_which_requests_ask_for_a_stream() -> None:
    def asks(path: str, body: bytes) -> bool:
        return asks_for_stream("https://up.test/api" + path, body)

    assert [
        asks(CHAT, b'{"stream":true}'),
        asks(CHAT, b'{"stream":false}'),
        asks(CHAT, b"{}"),
        asks("/v1/models", b""),
        asks(CHAT, b"not json"),
        asks("/v1beta/models/g:streamGenerateContent?alt=sse&key=k", b"{}"),
        asks("/v1beta/models/g:streamGenerateContent", b"{}"),
        asks("/v1beta/models/g:generateContent?alt=sse", b"{}"),
        asks("/api/chat", b'{"model":"m"}'),
        asks("/api/chat", b'{"model":"m","stream":false}'),
        asks("/api/generate", b'{"model":"m"}'),
    ] == [True, False, False, False, False, True, False, False, True, False, True]


# -- 3. a line over the cap -----------------------------------------------------------------


def test_a_line_over_the_cap_is_an_error_in_the_capture_too() -> None:
    line = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * (2 << 20) + b'"}}]}\n\n'
    reads = [line[i : i + 65536] for i in range(0, len(line), 65536)]
    messages: list[tuple[Any, ...]] = [("head", 1, 200, SSE, 100.1)]
    messages += [("read", 1, data, 100.2 + i / 1000) for i, data in enumerate(reads)]
    messages += [("read", 1, b"data: [DONE]\n\n", 100.5), ("end", 1, "eof", "", 100.6, False)]
    result, capture, replayed = recorded(messages)
    said = "protocol error after 1.1 MB: line longer than 1048576 bytes"
    assert (result.outcome, result.reason) == ("error", said)
    assert (replayed.outcome.value if replayed.outcome else None, replayed.reason) == (
        "error",
        said,
    )
    assert capture.end is not None
    assert (capture.end.kind, capture.end.detail) == (
        "protocol_error",
        "line longer than 1048576 bytes",
    )
    assert capture.reads.body() == line + b"data: [DONE]\n\n"  # (what the client got)
    # the client hanging up does not undo it
    result, capture, replayed = recorded(
        [*messages[:-2], ("end", 1, "cancelled", "", 100.6, False)]
    )
    assert (result.outcome, result.reason, replayed.reason) == ("error", said, said)


# -- 4. plain words ----------------------------------------------------------------------


def test_an_answer_that_is_not_http_is_said_as_such() -> None:
    url = "http://127.0.0.1:5432/v1/chat/completions"
    request = httpx.Request("POST", url)
    garbage = httpx.RemoteProtocolError("illegal status line: bytearray(b'HELLO')", request=request)
    assert describe_connect_error(garbage, url) == (
        "The server at 127.0.0.1:5432 answered something that is not HTTP (illegal status "
        "line: bytearray(b'HELLO')) — is that the right port?"
    )
    gone = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    assert describe_connect_error(gone, url) == (
        "No response from 127.0.0.1:5432: RemoteProtocolError: Server disconnected without "
        "sending a response."
    )


def test_a_port_that_cannot_be_listened_on_is_said_plainly() -> None:
    said = [
        str(listen_error("127.0.0.1", 8700, OSError(errno.EADDRINUSE, "Address already in use"))),
        str(listen_error("127.0.0.1", 80, OSError(errno.EACCES, "Permission denied"))),
        str(listen_error("10.9.9.9", 8700, OSError(errno.EADDRNOTAVAIL, "Cannot assign"))),
        str(listen_error("127.0.0.1", 8700, OSError(errno.ENOBUFS, "No buffer space"))),
    ]
    assert said == [
        "port 8700 is in use — pick another",
        "port 80 is reserved for the system — pick one above 1023",
        "10.9.9.9 is not an address of this machine — use 127.0.0.1",
        "No buffer space",
    ]
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        tap = TapServer("http://127.0.0.1:1", port=port)
        with pytest.raises(ListenError) as caught:
            tap.start()  # (what the window's Tap dialog shows: str() of this)
    assert str(caught.value) == f"port {port} is in use — pick another"
    assert caught.value.errno == errno.EADDRINUSE


# -- 5. out of file descriptors -----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_running_out_of_descriptors_is_said_once_then_counted_then_its_end() -> None:
    lines: list[str] = []
    clock = Clock()
    report = AcceptReport(lines.append, clock=clock, every=30.0, limit=lambda: ", limit 64")
    emfile = OSError(errno.EMFILE, "Too many open files")
    report.accepted()  # (nothing to say)
    for _ in range(25):  # one try a second (asyncio's retry)
        report.failed(emfile)
        clock.now += 1.0
    assert lines == [
        "streamscope tap: out of file descriptors (Too many open files, limit 64): new "
        "connections wait until some close\n"
    ]
    clock.now += 10.0  # 35 s since it was said
    report.failed(emfile)
    report.failed(emfile)
    clock.now += 4.0
    report.accepted()
    report.accepted()
    assert lines[1:] == [
        "streamscope tap: still out of file descriptors (25 accepts failed)\n",
        "streamscope tap: accepting connections again after 39.0 s (27 accepts failed)\n",
    ]
    # it runs out again within REPORT_EVERY: counted, said with the next line that may be
    clock.now += 1.0
    report.failed(emfile)
    clock.now += 1.0
    report.accepted()
    assert len(lines) == 3
    clock.now += 40.0
    report.failed(emfile)
    assert lines[3:] == [
        "streamscope tap: out of file descriptors (Too many open files, limit 64): new "
        "connections wait until some close\n"
    ]


def test_the_guarded_listener_rests_after_a_failure_and_the_loop_stays_quiet() -> None:
    class Failing(GuardedListener):
        fail = True

        def _accept(self) -> Any:
            if self.fail:
                raise OSError(errno.EMFILE, "Too many open files")
            return super()._accept()

    lines: list[str] = []
    clock = Clock()
    handled: list[str] = []
    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(lambda _loop, ctx: handled.append(ctx["message"]))
        plain = socket.create_server(("127.0.0.1", 0))
        guarded = guard_accepts(loop, plain, AcceptReport(lines.append, clock=clock))
        assert plain.fileno() == -1  # (detached: the guarded one owns the descriptor)
        guarded.__class__ = Failing
        with pytest.raises(OSError) as first:
            guarded.accept()
        assert first.value.errno == errno.EMFILE
        with pytest.raises(BlockingIOError):  # the rest of asyncio's tries: nothing to accept
            guarded.accept()
        assert guarded.report.run == 1
        handler = loop.get_exception_handler()
        assert handler is not None
        handler(loop, {"message": "socket.accept() out of system resource", "socket": guarded})
        handler(loop, {"message": "something else"})
        assert handled == ["something else"]
        clock.now += 1.0  # asyncio's retry
        Failing.fail = False
        with socket.create_connection(guarded.getsockname()[:2]):
            conn, _addr = guarded.accept()
            conn.close()
        assert len(lines) == 2 and lines[1].startswith(
            "streamscope tap: accepting connections again after 1.0 s (1 accept failed)"
        )
        guarded.close()
    finally:
        loop.close()
