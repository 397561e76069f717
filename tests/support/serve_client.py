"""Helpers for `streamscope serve`'s tests: captures made by hand (every read, its time and
the end decided by the test) and a raw HTTP/1.1 client that keeps each ``recv`` with its
time, so a test sees exactly what crossed the socket."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    ReadLog,
    write_capture,
)
from streamscope.core.turn.outcome import EndKind

if TYPE_CHECKING:
    from streamscope.core.serve import ServedExchange

CHAT = "/v1/chat/completions"
SSE_HEADERS = (("content-type", "text/event-stream"), ("transfer-encoding", "chunked"))


def frame(text: str) -> bytes:
    """An OpenAI chat chunk carrying ``text`` (non-ASCII kept as UTF-8)."""
    data = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


FINAL = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def ask(*contents: str, **extra: Any) -> dict[str, Any]:
    """A chat request body whose user messages are ``contents`` (answers between them)."""
    messages: list[dict[str, str]] = []
    for i, text in enumerate(contents):
        if i:
            messages.append({"role": "assistant", "content": f"answer to {contents[i - 1]}"})
        messages.append({"role": "user", "content": text})
    return {"model": "m", "messages": messages, "stream": True, **extra}


def capture(
    reads: list[tuple[float, bytes]],
    *,
    end: EndKind | None = "eof",
    elapsed: float | None = None,
    status: int = 200,
    headers: tuple[tuple[str, str], ...] = SSE_HEADERS,
    head_t: float = 0.005,
    path: str = CHAT,
    body: dict[str, Any] | None = None,
    method: str = "POST",
    error_body: bytes | None = None,
) -> Capture:
    """A capture of one exchange, every value given (``end=None``: no end line)."""
    request = CaptureRequest(
        method,
        "https://api.example.com" + path,
        (("authorization", "Bearer ***"),),
        json.dumps(body if body is not None else ask("hi")).encode(),
    )
    last = reads[-1][0] if reads else head_t
    return Capture(
        "openai",
        request,
        CaptureResponse(status, headers, head_t),
        ReadLog(reads),
        None
        if end is None
        else CaptureEnd(end, elapsed if elapsed is not None else last, body=error_body),
    )


def save(folder: Path, name: str, cap: Capture) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    write_capture(path, cap)
    return path


@dataclass
class RawResponse:
    """What came back on the socket: the head, each ``recv`` with its time since the request
    was sent, and how the connection ended (``eof``, ``reset`` or ``timeout``: still open)."""

    head: bytes = b""
    recvs: list[tuple[float, bytes]] = field(default_factory=list)
    ended: str = ""

    @property
    def raw(self) -> bytes:
        return b"".join(data for _, data in self.recvs)

    @property
    def status(self) -> int:
        return int(self.head.split(b" ", 2)[1])

    def header(self, name: str) -> str | None:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.encode():
                return value.strip().decode()
        return None

    @property
    def body(self) -> bytes:
        return self.raw.split(b"\r\n\r\n", 1)[1]


def raw_request(
    port: int,
    path: str = CHAT,
    body: bytes | dict[str, Any] | None = None,
    *,
    method: str = "POST",
    timeout: float = 5.0,
) -> RawResponse:
    """One request on a fresh connection (``Connection: close``); reads until the server
    closes, resets, or is silent for ``timeout`` seconds."""
    data = (
        json.dumps(body if body is not None else ask("hi")).encode()
        if not isinstance(body, bytes)
        else body
    )
    out = RawResponse()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode()
            + data
        )
        t0 = time.monotonic()
        while True:
            try:
                got = sock.recv(1 << 20)
            except TimeoutError:
                out.ended = "timeout"
                break
            except ConnectionResetError:
                out.ended = "reset"
                break
            if not got:
                out.ended = "eof"
                break
            out.recvs.append((time.monotonic() - t0, got))
    raw = out.raw
    out.head = raw.split(b"\r\n\r\n", 1)[0]
    return out


def dechunk(data: bytes) -> tuple[list[bytes], bool]:
    """The chunks of a chunked body, and whether it ended with the last (zero) chunk."""
    chunks: list[bytes] = []
    pos = 0
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return chunks, False
        size = int(data[pos:eol], 16)
        if size == 0:
            return chunks, data[eol:] == b"\r\n\r\n"
        start = eol + 2
        if len(data) < start + size + 2:
            chunks.append(data[start:])  # (a chunk cut short)
            return chunks, False
        chunks.append(data[start : start + size])
        pos = start + size + 2


class Lines:
    """A server's listener: every finished exchange, as it is told."""

    def __init__(self) -> None:
        self.items: list[ServedExchange] = []
        self._cond = threading.Condition()

    def __call__(self, exchange: ServedExchange) -> None:
        with self._cond:
            self.items.append(exchange)
            self._cond.notify_all()

    def wait(self, n: int, timeout: float = 10.0) -> list[ServedExchange]:
        """The first ``n`` exchanges, once they have ended."""
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.items) >= n, timeout), self.items
            return list(self.items)

    def json(self, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The first ``n`` exchanges' JSON lines, once they have ended."""
        return [x.to_json() for x in self.wait(n, timeout)]
