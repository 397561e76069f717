"""Hostile inputs for ``streamscope replay`` and the capture readers: a valid capture to
damage, zips built by hand (a bomb, a zip of a million members), and an in-process CLI run
that returns what a user sees."""

from __future__ import annotations

import contextlib
import io
import struct
import sys
import zipfile
import zlib
from unittest import mock

from streamscope.cli import main
from streamscope.core.capture.format import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
    dump_capture,
)

CAPTURE_HEADER = (
    b'{"format":"streamscope-capture","version":1,"dialect":"openai","request":null,'
    b'"response":{"status":200,"headers":[["content-type","text/event-stream"]],"t":0.01}}\n'
)
EXIT = {"completed": 0, "truncated": 3, "error": 4, "cancelled": 130}


def sample_capture() -> bytes:
    """A small valid capture of a completed OpenAI turn (every kind of line and field)."""
    chunks = [
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n',
        b"\ndata: [DONE]\n\n",
    ]
    capture = Capture(
        "openai",
        CaptureRequest(
            "POST",
            "https://api.example.com/v1/chat/completions",
            (("authorization", "Bearer ***"), ("content-type", "application/json")),
            b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}',
        ),
        CaptureResponse(200, (("content-type", "text/event-stream"),), 0.01),
        created="2026-11-29T21:30:00+00:00",
        app_version="0.1.0",
    )
    for i, chunk in enumerate(chunks):
        capture.reads.append(0.02 * (i + 1), chunk)
    capture.end = CaptureEnd(
        "eof", 0.1, "", None, None, "completed", "[DONE] received (finish_reason=stop)"
    )
    buf = io.BytesIO()
    dump_capture(capture, buf)
    return buf.getvalue()


def zip_of(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip holding ``members``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _zip_entries(entries: list[tuple[bytes, int, bytes, int, int]]) -> bytes:
    """A zip from ``(name, method, data, crc, size)`` entries, ``data`` already compressed."""
    local = bytearray()
    central = bytearray()
    for name, method, data, crc, size in entries:
        offset = len(local)
        fields = (20, 0, method, 0, 0x21, crc, len(data), size, len(name), 0)
        local += struct.pack("<4s5H3L2H", b"PK\x03\x04", *fields) + name + data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, offset) + name
    n = min(len(entries), 0xFFFF)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, n, n, len(central), len(local), 0)
    return bytes(local + central + end)


def zip_bomb(size: int, *, line: bytes | None = None) -> bytes:
    """A bundle whose ``capture.sscap`` inflates to ``size`` bytes: a valid capture header
    then copies of one read line, deflated as repeated full-flush blocks (built in a
    fraction of the time deflating ``size`` bytes takes)."""
    line = line or b'{"t":0.5,"b64":"' + b"QUFB" * 2000 + b'"}\n'
    chunk = line * ((1 << 20) // len(line))
    copies = (size - len(CAPTURE_HEADER)) // len(chunk)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = deflate.compress(CAPTURE_HEADER) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    data = head + block * copies + deflate.flush()
    crc = zlib.crc32(CAPTURE_HEADER)
    for _ in range(copies):
        crc = zlib.crc32(chunk, crc)
    total = len(CAPTURE_HEADER) + copies * len(chunk)
    return _zip_entries([(b"capture.sscap", zipfile.ZIP_DEFLATED, data, crc, total)])


def many_members_zip(n: int) -> bytes:
    """A zip of ``n`` empty members (no capture among them)."""
    return _zip_entries([(b"%07d" % i, zipfile.ZIP_STORED, b"", 0, 0) for i in range(n)])


def replay(args: list[str], stdin: bytes | None = None) -> tuple[int, str, str]:
    """``streamscope replay ARGS`` in-process: exit code, stdout, stderr. An exception (a
    traceback, for a user) propagates."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            fake = io.TextIOWrapper(io.BytesIO(stdin))
            stack.enter_context(mock.patch.object(sys, "stdin", fake))
        code = main(["replay", *args])
    return code, out.getvalue(), err.getvalue()
