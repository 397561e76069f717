"""Hostile inputs for ``streamscope replay`` and the capture readers: a valid capture to
damage, and an in-process CLI run that returns what a user sees."""

from __future__ import annotations

import contextlib
import io
import sys
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
