"""Issue 28 (N7): the tap's earlier exchanges, read back from its captures — the tap tags
its captures' ids, and the Tapped list lists them after a restart (when, the request, how it
ended), reading only each file's first and last line."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import write_capture
from streamscope.core.capture.format.model import (
    Capture,
    CaptureEnd,
    CaptureRequest,
    CaptureResponse,
)
from streamscope.core.tap.history import PastExchange, past_exchanges, tap_capture_store

NANOS = 1_796_249_431_197_571_979


def capture(url: str, status: int | None, end: CaptureEnd | None, *, reads: bytes = b"") -> Capture:
    c = Capture(
        "openai",
        request=CaptureRequest("POST", url, (("content-type", "application/json"),), b"{}"),
        response=CaptureResponse(status, (), 0.01) if status is not None else None,
        end=end,
    )
    if reads:
        c.reads.append(0.02, reads)
    return c


def test_the_tap_tags_its_captures_ids(tmp_path: Path) -> None:
    assert re.fullmatch(r"\d{20}-tap-[0-9a-f]{6}", tap_capture_store(tmp_path).begin())
    assert re.fullmatch(r"\d{20}-[0-9a-f]{6}", CaptureStore(tmp_path).begin())  # (a chat turn's)


def test_past_exchanges_are_read_from_the_first_and_last_lines(tmp_path: Path) -> None:
    done = CaptureEnd("eof", 0.5, outcome="completed", reason="finish_reason=stop")
    refused = "Connection refused by 127.0.0.1:9 — is the server running?"
    unreachable = CaptureEnd("connect_error", 0.01, detail=refused, outcome="error", reason=refused)
    big = CaptureEnd(
        "http_error", 0.2, body=b"x" * 200_000, outcome="error", reason="HTTP 500 · overloaded"
    )
    files = {
        f"{NANOS:020d}-tap-000001": capture(
            "http://127.0.0.1:8000/v1/chat/completions", 200, done, reads=b"data: {}\n\n"
        ),
        f"{NANOS + 1:020d}-tap-000002": capture(
            "http://127.0.0.1:9/v1/models?x=1", None, unreachable
        ),
        f"{NANOS + 2:020d}-tap-000003": capture("http://u/v1/responses", 500, big),
        f"{NANOS + 3:020d}-tap-000004": capture("http://u/v1/chat/completions", 200, None),
        f"{NANOS + 4:020d}-abcdef": capture("http://u/v1/chat/completions", 200, done),  # chat
    }
    for name, c in files.items():
        write_capture(tmp_path / f"{name}.sscap", c)
    (tmp_path / f"{NANOS + 5:020d}-tap-000005.sscap").write_bytes(b"not a capture\n")
    at = [datetime.fromtimestamp((NANOS + i) / 1e9) for i in range(4)]
    path = [tmp_path / f"{name}.sscap" for name in files]
    assert past_exchanges(tmp_path) == [
        PastExchange(path[0], at[0], "POST", "/v1/chat/completions", 200, "completed", done.reason),
        PastExchange(path[1], at[1], "POST", "/v1/models?x=1", 502, "error", refused),
        PastExchange(path[2], at[2], "POST", "/v1/responses", 500, "error", big.reason),
        PastExchange(path[3], at[3], "POST", "/v1/chat/completions", 200, None, ""),
    ]
    assert [p.path for p in past_exchanges(tmp_path, limit=3)] == path[2:4]  # (the newest files)
    assert past_exchanges(tmp_path / "gone") == []
