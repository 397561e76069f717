"""Every reason the outcome rules produce, pinned exactly: the one-line reason is what a user
reads in the status bar, the history and ``streamscope send --json``; a changed word, byte
count or separator is a changed interface. (Found wanting by mutation testing: see
tests/MUTATION.md.)"""

from __future__ import annotations

from typing import Any

import pytest

from streamscope.core.turn.outcome import (
    Outcome,
    StreamEnd,
    describe_end,
    describe_http_error,
    describe_not_a_stream,
    error_body_fields,
    format_bytes,
    is_error_document,
)
from streamscope.core.wire.events import ServerError


def _describe(
    end: StreamEnd,
    *,
    elapsed: float | None = None,
    terminal: str | None = None,
    expected: str = "[DONE]",
    finish: str | None = None,
    error: ServerError | None = None,
    partial: bool = False,
) -> tuple[Outcome, str]:
    return describe_end(
        end,
        elapsed=elapsed,
        terminal=terminal,
        expected_terminal=expected,
        finish_reason=finish,
        server_error=error,
        partial_frame=partial,
    )


# -- describe_end ------------------------------------------------------------------------------

T, C, X, E = Outcome.TRUNCATED, Outcome.COMPLETED, Outcome.CANCELLED, Outcome.ERROR
LONG = "word " * 40  # 200 characters, 199 once its spaces are collapsed and trimmed

END_CASES: list[tuple[str, StreamEnd, dict[str, Any], tuple[Outcome, str]]] = [
    ("cancelled", StreamEnd("cancelled"), {"elapsed": 2.14}, (X, "Cancelled by you after 2.1 s")),
    (
        "cancelled-at-0",
        StreamEnd("cancelled"),
        {"elapsed": 0.0},
        (X, "Cancelled by you after 0.0 s"),
    ),
    ("cancelled-no-time", StreamEnd("cancelled"), {}, (X, "Cancelled by you")),
    (
        "cancelled-beats-terminal-and-error",
        StreamEnd("cancelled"),
        {"elapsed": 1.0, "terminal": "[DONE]", "error": ServerError("boom")},
        (X, "Cancelled by you after 1.0 s"),
    ),
    (
        "connect",
        StreamEnd("connect_error", detail="refused"),
        {},
        (E, "refused"),  # (the net layer words it: see connect_errors)
    ),
    ("connect-no-detail", StreamEnd("connect_error"), {}, (E, "could not connect: no response")),
    (
        "protocol",
        StreamEnd("protocol_error", bytes_received=1536, detail="line too long"),
        {},
        (E, "protocol error after 1.5 KB: line too long"),
    ),
    (
        "protocol-no-detail",
        StreamEnd("protocol_error"),
        {"terminal": "[DONE]"},
        (E, "protocol error after 0 B: framing error"),
    ),
    (
        "in-stream-error-with-code",
        StreamEnd("eof"),
        {"error": ServerError("Over\n  loaded", "overloaded"), "terminal": "[DONE]"},
        (E, "in-stream error: overloaded: Over loaded"),
    ),
    (
        "in-stream-error-no-code",
        StreamEnd("broken"),
        {"error": ServerError("Overloaded", "")},
        (E, "in-stream error: Overloaded"),
    ),
    (
        "in-stream-error-whole",
        StreamEnd("eof"),
        {"error": ServerError(LONG)},
        (E, "in-stream error: " + LONG.strip()),  # (only views elide)
    ),
    ("completed", StreamEnd("eof"), {"terminal": "[DONE]"}, (C, "[DONE] received")),
    (
        "completed-with-finish",
        StreamEnd("broken", detail="reset"),
        {"terminal": "message_stop", "finish": "end_turn"},
        (C, "message_stop received (finish_reason=end_turn)"),
    ),
    (
        "eof",
        StreamEnd("eof", bytes_received=18637),
        {},
        (T, "connection closed after 18.2 KB, no [DONE]"),
    ),
    (
        "eof-mid-frame-finish-had-arrived",
        StreamEnd("eof", bytes_received=10),
        {"finish": "stop", "partial": True},
        (T, "connection closed mid-frame after 10 B, no [DONE] (finish_reason=stop had arrived)"),
    ),
    (
        "eof-gemini-names-its-field",
        StreamEnd("eof", bytes_received=2048),
        {"finish": "STOP", "expected": "finishReason"},
        (T, "connection closed after 2.0 KB, no finishReason (finishReason=STOP had arrived)"),
    ),
    (
        "broken",
        StreamEnd("broken", bytes_received=3, detail="peer  closed\nconnection"),
        {"expected": "message_stop"},
        (T, "connection broken after 3 B, no message_stop: peer closed connection"),
    ),
    (
        "broken-mid-frame-no-detail",
        StreamEnd("broken", bytes_received=0),
        {"partial": True, "finish": "length"},
        (T, "connection broken mid-frame after 0 B, no [DONE] (finish_reason=length had arrived)"),
    ),
    (
        "broken-detail-whole",
        StreamEnd("broken", detail="x" * 81),
        {},
        (T, "connection broken after 0 B, no [DONE]: " + "x" * 81),
    ),
    (
        "broken-detail-80-kept",
        StreamEnd("broken", detail="x" * 80),
        {},
        (T, "connection broken after 0 B, no [DONE]: " + "x" * 80),
    ),
    (
        "idle",
        StreamEnd("idle_timeout", bytes_received=5000, timeout=2.5),
        {"finish": "stop"},
        (
            T,
            "idle timeout after 2.5 s with no progress (4.9 KB received), no [DONE]"
            " (finish_reason=stop had arrived)",
        ),
    ),
    (
        "idle-no-limit",
        StreamEnd("idle_timeout", bytes_received=1),
        {"partial": True},
        (T, "idle timeout with no progress (1 B received), no [DONE]"),
    ),
    (
        "idle-limit-zero",
        StreamEnd("idle_timeout", timeout=0.0),
        {},
        (T, "idle timeout after 0 s with no progress (0 B received), no [DONE]"),
    ),
    (
        "first-byte",
        StreamEnd("first_byte_timeout", timeout=300.0),
        {"finish": "stop", "partial": True},
        (T, "no response body within 300 s, no [DONE]"),
    ),
    (
        "first-byte-no-limit",
        StreamEnd("first_byte_timeout"),
        {"expected": "response.completed"},
        (T, "no response body, no response.completed"),
    ),
]


@pytest.mark.parametrize(
    ("end", "kwargs", "expected"),
    [c[1:] for c in END_CASES],
    ids=[c[0] for c in END_CASES],
)
def test_describe_end(
    end: StreamEnd, kwargs: dict[str, Any], expected: tuple[Outcome, str]
) -> None:
    assert _describe(end, **kwargs) == expected


def test_describe_end_hands_errors_and_documents_to_their_describers() -> None:
    http = StreamEnd("http_error", status=503, body=b"", headers={"Retry-After": "7"})
    assert _describe(http, terminal="[DONE]") == (
        E,
        "503 Service Unavailable · empty body · retry after 7 s",
    )
    page = StreamEnd("not_a_stream", status=200, content_type="text/plain", body=b"hello")
    assert _describe(page, finish="stop") == (E, "200 text/plain body, not an event stream")


def test_a_frame_is_whole_unless_the_caller_says_otherwise() -> None:
    """``partial_frame`` defaults to False: no "mid-frame" for callers that do not know."""
    end = StreamEnd("eof", bytes_received=10)
    assert describe_end(
        end, elapsed=None, terminal=None, expected_terminal="[DONE]", finish_reason=None,
        server_error=None,
    ) == (T, "connection closed after 10 B, no [DONE]")  # fmt: skip


# -- format_bytes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (1536, "1.5 KB"),
        (18637, "18.2 KB"),
        ((1 << 20) - 1, "1024.0 KB"),
        (1 << 20, "1.0 MB"),
        (3 * (1 << 20) // 2, "1.5 MB"),
        (5 << 30, "5120.0 MB"),
    ],
)
def test_format_bytes_at_each_unit_boundary(n: int, text: str) -> None:
    assert format_bytes(n) == text


# -- error bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (b"", (None, None)),
        (b"not json", (None, None)),
        (b"[1, 2]", (None, None)),
        (b'"just a string"', (None, None)),
        (b'{"error": "model not found"}', (None, "model not found")),
        (b'{"error": 42}', (None, None)),
        (b'{"error": null}', (None, None)),
        (b'{"error": {"code": "c", "status": "s", "type": "t", "message": "m"}}', ("c", "m")),
        (b'{"error": {"code": 400, "status": "INVALID", "message": "m"}}', ("INVALID", "m")),
        (b'{"error": {"code": "", "type": "auth", "message": "m"}}', ("auth", "m")),
        (b'{"error": {"status": "s", "type": "t"}}', ("s", None)),
        (b'{"error": {"type": "t", "detail": "d"}}', ("t", "d")),
        (b'{"error": {"message": "", "detail": "d"}}', (None, "d")),
        (b'{"error": {"message": 7}}', (None, "7")),
        (b'{"error": {"message": "m", "detail": "d"}}', (None, "m")),
        (b'{"error": {}}', (None, None)),
        (b'{"detail": "Not Found"}', (None, "Not Found")),
        (b'{"type": "error", "message": "top level"}', ("error", "top level")),
        (b'{"object": "error", "message": "vllm", "code": 400}', (None, "vllm")),
    ],
)
def test_error_body_fields(body: bytes, fields: tuple[str | None, str | None]) -> None:
    assert error_body_fields(body) == fields


@pytest.mark.parametrize(
    ("end", "whole", "expected"),
    [
        (StreamEnd("eof", content_type="text/HTML"), False, True),
        (StreamEnd("eof", headers={"Content-Type": "text/html; charset=utf-8"}), False, True),
        (StreamEnd("eof", body=b"  \n<!DOCTYPE html><p>"), False, True),
        (StreamEnd("eof", body=b"<HTML lang=en>"), False, True),
        (StreamEnd("eof", body=b"<htm"), False, False),
        (StreamEnd("eof", body=b"<p><html>"), False, False),
        (StreamEnd("eof", body=b'{"error": {"message": "m"}}'), True, True),
        (StreamEnd("eof", body=b'{"error": {"message": "m"}}'), False, False),
        (StreamEnd("eof", body=b'{"error": "m"}'), True, True),
        (StreamEnd("eof", body=b'{"error": ""}'), True, False),
        (StreamEnd("eof", body=b'{"error": null, "type": "error"}'), True, True),
        (StreamEnd("eof", body=b'{"object": "error", "message": "m"}'), True, True),
        (StreamEnd("eof", body=b'{"type": "message", "object": "chat"}'), True, False),
        (StreamEnd("eof", body=b'{"type": "errors"}'), True, False),
        (StreamEnd("eof", body=b'["error"]'), True, False),
        (StreamEnd("eof", body=b"error"), True, False),
        (StreamEnd("eof", content_type="application/json", body=b"{}"), True, False),
    ],
)
def test_is_error_document(end: StreamEnd, whole: bool, expected: bool) -> None:
    assert is_error_document(end, whole=whole) is expected


def test_html_is_sniffed_in_the_first_512_bytes_only() -> None:
    near = StreamEnd("eof", body=b" " * 507 + b"<html>")  # "<html" ends at byte 512
    far = StreamEnd("eof", body=b" " * 508 + b"<html>")
    assert is_error_document(near, whole=False) is True
    assert is_error_document(far, whole=False) is False


# -- HTTP errors -----------------------------------------------------------------------------------

PAGE = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        (StreamEnd("http_error", status=500), "500 Internal Server Error · empty body"),
        (
            StreamEnd("http_error", status=500, body=b" \r\n"),
            "500 Internal Server Error · empty body",
        ),
        (StreamEnd("http_error", status=500, body=b"oops"), "500 Internal Server Error"),
        (StreamEnd("http_error", status=599, body=b"x"), "599 HTTP error"),
        (StreamEnd("http_error"), "0 HTTP error · empty body"),
        (
            StreamEnd("http_error", status=400, body=b'{"error": {"message": "bad\\n\\nthing"}}'),
            "400 Bad Request · bad thing",
        ),
        (
            StreamEnd(
                "http_error", status=400, body=b'{"error": {"message": "' + b"m" * 161 + b'"}}'
            ),
            "400 Bad Request · " + "m" * 161,
        ),
        (
            StreamEnd(
                "http_error", status=400, body=b'{"error": {"message": "' + b"m" * 160 + b'"}}'
            ),
            "400 Bad Request · " + "m" * 160,
        ),
        (
            StreamEnd("http_error", status=403, body=b'{"error": {"type": "denied"}}'),
            "403 denied",
        ),
        (
            StreamEnd("http_error", status=429, headers={"RETRY-AFTER": " 20 "}, body=b"{}"),
            "429 Too Many Requests · retry after 20 s",
        ),
        (
            StreamEnd("http_error", status=429, headers={"retry-after": "1.5"}, body=b"{}"),
            "429 Too Many Requests · retry after 1.5",
        ),
        (
            StreamEnd("http_error", status=429, headers={"x-retry-after": "5"}, body=b"{}"),
            "429 Too Many Requests",
        ),
        (
            StreamEnd("http_error", status=502, content_type="text/html", body=PAGE),
            "502 HTML page, not an event stream: 502 Bad Gateway",
        ),
        (
            StreamEnd(
                "http_error", status=503, headers={"Retry-After": "60"}, body=b"<html><p>down"
            ),
            "503 HTML page, not an event stream · retry after 60 s",
        ),
        (
            StreamEnd(
                "http_error",
                status=502,
                body=b"<html><title>" + b"t" * 101 + b"</title>",
            ),
            "502 HTML page, not an event stream: " + "t" * 101,
        ),
        (
            StreamEnd(
                "http_error",
                status=502,
                body=b"<html><title>" + b"t" * 100 + b"</title>",
            ),
            "502 HTML page, not an event stream: " + "t" * 100,
        ),
    ],
)
def test_describe_http_error(end: StreamEnd, reason: str) -> None:
    assert describe_http_error(end) == reason


@pytest.mark.parametrize(
    ("body", "title"),
    [
        (b'<html><TITLE lang="en">\n  Sign\tin \n</TITLE>', "Sign in"),
        (b"<html><title>  </title>", None),
        (b"<html><title></title><title>second</title>", None),
        (b"<html><title>caf\xc3\xa9 \xff</title>", "café \ufffd"),
        (b"<html><title>unclosed", None),
        (b"<html>" + b" " * 65513 + b"<title>in</title>", "in"),  # ends at byte 65536
        (b"<html>" + b" " * 65514 + b"<title>in</title>", None),  # past the first 64 KiB
        (b"<html><title>a</title><title>b</title>", "a"),
        (b"<html><title>a</title> <p> </title>", "a"),  # not greedy
    ],
)
def test_the_html_title_named_in_a_reason(body: bytes, title: str | None) -> None:
    reason = describe_not_a_stream(StreamEnd("not_a_stream", status=200, body=body))
    head = "200 HTML page, not an event stream"
    assert reason == (f"{head}: {title}" if title else head)


# -- bodies that are not streams -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("end", "reason"),
    [
        (
            StreamEnd("not_a_stream", status=200, content_type=" application/json ", body=b"{}"),
            "200 application/json body, not an event stream",
        ),
        (
            StreamEnd("not_a_stream", status=200, body=b"{}"),
            "200 no content type body, not an event stream",
        ),
        (
            StreamEnd("not_a_stream", content_type="application/json", body=b"{}"),
            "application/json body, not an event stream",
        ),
        (
            StreamEnd(
                "not_a_stream",
                status=200,
                headers={"Content-Type": "application/json"},
                body=b'{"error": {"message": "no  streaming"}}',
            ),
            "200 application/json body, not an event stream · no streaming",
        ),
        (
            StreamEnd(
                "not_a_stream",
                status=0,
                content_type="application/json",
                body=b'{"error": {"code": "bad", "message": "m"}}',
            ),
            "0 application/json body, not an event stream · bad: m",
        ),
        (
            StreamEnd(
                "not_a_stream",
                status=200,
                content_type="text/plain",
                body=b'{"error": {"code": "bad"}}',
            ),
            "200 text/plain body, not an event stream",
        ),
        (
            StreamEnd("not_a_stream", status=200, content_type="text/html", body=b"<p>hi"),
            "200 HTML page, not an event stream",
        ),
        (
            StreamEnd("not_a_stream", content_type="text/html", body=b"<title>Portal</title>"),
            "HTML page, not an event stream: Portal",
        ),
        (
            StreamEnd(
                "not_a_stream",
                status=200,
                content_type="text/plain",
                body=b"<html><title>" + b"t" * 101 + b"</title>",
            ),
            "200 HTML page, not an event stream: " + "t" * 101,
        ),
        (
            StreamEnd(
                "not_a_stream",
                status=200,
                content_type="application/json",
                body=b'{"error": {"message": "' + b"m" * 161 + b'"}}',
            ),
            "200 application/json body, not an event stream · " + "m" * 161,
        ),
    ],
)
def test_describe_not_a_stream(end: StreamEnd, reason: str) -> None:
    assert describe_not_a_stream(end) == reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><title>502 Bad Gateway</title>", "HTML error page: 502 Bad Gateway"),
        (b"<!doctype html><p>no title", "HTML error page"),
        (b"<html><title>" + b"t" * 101 + b"</title>", "HTML error page: " + "t" * 101),
        (
            b'{"error": {"code": "invalid_api_key", "message": "Incorrect  API key"}}',
            "JSON error body: invalid_api_key: Incorrect API key",
        ),
        (b'{"error": "model not found"}', "JSON error body: model not found"),
        (
            b'{"error": {"message": "' + b"m" * 161 + b'"}}',
            "JSON error body: " + "m" * 161,
        ),
        (b'{"error": {"code": "c"}}', "JSON error body"),
        (b"plain words", "JSON error body"),
    ],
)
def test_a_saved_body_alone_is_described_by_what_it_is(body: bytes, reason: str) -> None:
    assert describe_not_a_stream(StreamEnd("not_a_stream", body=body)) == reason
