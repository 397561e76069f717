"""apply(): each fault turns a recorded response into the exact writes, times, end and record
it names — on an SSE body whose reads do not line up with its frames, and on an NDJSON one."""

from __future__ import annotations

import pytest

from streamscope.core.faults import Playback, Write, apply, body_frames, parse_fault_spec

F0 = b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n'  # 48 bytes, at 0
F1 = b'data: {"choices":[{"delta":{"content":" there"}}]}\n\n'  # 52, at 48
F2 = b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'  # 57, at 100
F3 = b"data: [DONE]\n\n"  # 14, at 157
BODY = F0 + F1 + F2 + F3  # 171
SSE = Playback(
    status=200,
    headers=(("content-type", "text/event-stream"),),
    # reads that cut frames: F0 and 10 bytes of F1 / the rest of F1 and F2 / F3
    writes=(Write(0.5, BODY[:58]), Write(0.75, BODY[58:157]), Write(1.0, BODY[157:])),
    headers_at=0.25,
)


def _run(text: str, playback: Playback = SSE, dialect: str = "openai", n: int = 1) -> Playback:
    return apply(parse_fault_spec(text), playback, dialect, n)


def test_the_recorded_body_is_as_the_comments_say() -> None:
    frames = body_frames(BODY, "openai")
    assert (len(BODY), frames.starts) == (171, (0, 48, 100, 157))
    assert (frames.terminal, frames.terminal_signal, frames.line_end) == (3, "[DONE]", b"\n")


def test_cut_at_a_frame_drops_the_connection_in_its_middle() -> None:
    out = _run("cut@frame:1")
    assert out.writes == (Write(0.5, BODY[:58]), Write(0.75, BODY[58:74]))
    assert (out.end, out.end_at, out.status, out.headers_at) == ("cut", None, 200, 0.25)
    assert out.describe() == [
        {
            "fault": "cut@frame:1",
            "kind": "cut",
            "when": "always",
            "applied": True,
            "frame": 1,
            "byte": 74,
            "at": 0.75,
        }
    ]


def test_cut_at_a_byte_inside_a_read_and_at_a_read_boundary() -> None:
    inside = _run("cut@byte:20")
    assert (inside.writes, inside.end) == ((Write(0.5, BODY[:20]),), "cut")
    assert [inside.describe()[0][k] for k in ("frame", "byte", "at")] == [0, 20, 0.5]
    boundary = _run("cut@byte:58")  # the drop comes when the next read was due
    assert boundary.writes == (Write(0.5, BODY[:58]),)
    assert [boundary.describe()[0][k] for k in ("frame", "byte", "at")] == [1, 58, 0.75]
    later_frame = _run("cut@byte:120")  # inside the read that starts in frame 1: frame 2
    assert later_frame.writes == (Write(0.5, BODY[:58]), Write(0.75, BODY[58:120]))
    assert [later_frame.describe()[0][k] for k in ("frame", "byte", "at")] == [2, 120, 0.75]
    before_any = _run("cut@byte:0")
    assert (before_any.writes, before_any.end) == ((), "cut")


def test_a_fault_past_the_body_is_not_applied_and_says_why() -> None:
    for text, why in [
        ("cut@byte:171", "the body has 171 bytes"),
        ("cut@frame:4", "the body has 4 frames"),
        ("stall@frame:9=1", "the body has 4 frames"),
    ]:
        out = _run(text)
        assert (out.writes, out.end, out.end_at) == (SSE.writes, "close", None)
        assert out.describe() == [
            {
                "fault": parse_fault_spec(text).faults[0].label,
                "kind": parse_fault_spec(text).faults[0].kind,
                "when": "always",
                "applied": False,
                "why": why,
            }
        ]


def test_stall_shifts_everything_from_the_frame_on() -> None:
    out = _run("stall@frame:2=2")
    assert out.writes == (
        Write(0.5, BODY[:58]),
        Write(0.75, BODY[58:100]),
        Write(2.75, BODY[100:157]),
        Write(3.0, BODY[157:]),
    )
    assert out.end == "close"
    assert out.describe()[0] == {
        "fault": "stall@frame:2=2",
        "kind": "stall",
        "when": "always",
        "applied": True,
        "frame": 2,
        "byte": 100,
        "at": 0.75,
        "seconds": 2.0,
    }


def test_drop_terminal_closes_when_the_terminal_was_due() -> None:
    out = _run("drop-terminal")
    assert out.writes == (Write(0.5, BODY[:58]), Write(0.75, BODY[58:157]))
    assert (out.end, out.end_at) == ("close", 1.0)
    assert out.describe()[0] == {
        "fault": "drop-terminal",
        "kind": "drop-terminal",
        "when": "always",
        "applied": True,
        "frame": 3,
        "byte": 157,
        "at": 1.0,
        "signal": "[DONE]",
    }


def test_drop_terminal_without_one_is_not_applied() -> None:
    cut = Playback(200, (), (Write(0.1, F0 + F1),))
    out = _run("drop-terminal", cut)
    assert out.describe()[0]["why"] == "the body has no terminal signal (openai)"
    assert out.writes == cut.writes


ERROR = (
    b'data: {"error":{"message":"injected by StreamScope: error@frame:2",'
    b'"type":"server_error","param":null,"code":null}}\n\n'
)


def test_error_replaces_the_frame_in_the_same_read_then_closes() -> None:
    out = _run("error@frame:2")
    assert out.writes == (Write(0.5, BODY[:58]), Write(0.75, BODY[58:100] + ERROR))
    assert (out.end, out.end_at, out.headers) == ("close", None, SSE.headers)
    assert [out.describe()[0][k] for k in ("frame", "byte", "at")] == [2, 100, 0.75]


def test_garble_json_removes_the_last_byte_of_the_payload() -> None:
    out = _run("garble@frame:1=json")
    assert BODY[97:98] == b"}"
    assert out.writes == (
        Write(0.5, BODY[:58]),
        Write(0.75, BODY[58:97] + BODY[98:157]),
        Write(1.0, BODY[157:]),
    )
    assert out.describe()[0] | {"at": 0.75} == {
        "fault": "garble@frame:1=json",
        "kind": "garble",
        "when": "always",
        "applied": True,
        "frame": 1,
        "byte": 97,
        "at": 0.75,
        "garble": "json",
    }


def test_garble_utf8_puts_an_invalid_byte_inside_the_first_string() -> None:
    out = _run("garble@frame:1=utf8")
    assert out.writes == (
        Write(0.5, BODY[:56] + b"\xff" + BODY[56:58]),
        Write(0.75, BODY[58:157]),
        Write(1.0, BODY[157:]),
    )
    assert BODY[48:57] == b'data: {"c'
    assert [out.describe()[0][k] for k in ("frame", "byte", "at")] == [1, 56, 0.5]


def test_garble_of_a_comment_or_a_frame_the_cut_removed_is_not_applied() -> None:
    body = b": keep-alive\n\n" + F0
    out = _run("garble@frame:0", Playback(200, (), (Write(0.1, body),)))
    assert out.describe()[0]["why"] == "frame 0 carries no data (a comment or blank lines)"
    cut = _run("cut@frame:1,garble@frame:1")
    assert cut.describe()[1]["why"] == "frame 1 is not sent whole"
    assert cut.writes == (Write(0.5, BODY[:58]), Write(0.75, BODY[58:74]))


def test_slow_delays_each_frame_more_than_the_one_before() -> None:
    out = _run("slow=250")
    assert out.writes == (
        Write(0.75, F0),
        Write(1.0, BODY[48:58]),
        Write(1.25, BODY[58:100]),
        Write(1.5, BODY[100:157]),
        Write(2.0, BODY[157:]),
    )
    assert out.describe()[0] == {
        "fault": "slow=250",
        "kind": "slow",
        "when": "always",
        "applied": True,
        "frame": None,
        "byte": None,
        "at": None,
        "ms": 250,
    }


def test_a_cut_is_timed_where_the_slowed_stream_reaches_it() -> None:
    out = _run("cut@frame:1,slow=250")
    assert out.writes == (Write(0.75, F0), Write(1.0, BODY[48:58]), Write(1.25, BODY[58:74]))
    assert out.describe()[0]["at"] == 1.25


def test_delay_headers_moves_the_headers_and_everything_after() -> None:
    out = _run("delay-headers=1")
    assert out.headers_at == 1.25
    assert out.writes == (Write(1.5, BODY[:58]), Write(1.75, BODY[58:157]), Write(2.0, BODY[157:]))
    assert [out.describe()[0][k] for k in ("at", "seconds")] == [0.25, 1.0]


def test_merge_and_split_reads() -> None:
    merged = _run("merge-reads")
    assert merged.writes == (Write(1.0, BODY),)
    assert merged.describe()[0]["writes"] == 3
    split = _run("split-reads")
    assert len(split.writes) == 171
    assert split.writes[:2] == (Write(0.5, b"d"), Write(0.5, b"a"))
    assert split.writes[57:59] == (Write(0.5, BODY[57:58]), Write(0.75, BODY[58:59]))
    assert split.writes[-1] == Write(1.0, b"\n")
    assert split.body == BODY


RATE_LIMIT = (
    b'{"error":{"message":"Rate limit exceeded (injected by StreamScope: '
    b'http=429:retry-after=1)","type":"requests","param":null,"code":"rate_limit_exceeded"}}'
)


def test_http_replaces_the_response_and_body_faults_say_so() -> None:
    out = _run("http=429:retry-after=1,cut@frame:1,delay-headers=0.5")
    assert out.status == 429
    assert out.headers == (
        ("content-type", "application/json"),
        ("content-length", str(len(RATE_LIMIT))),
        ("retry-after", "1"),
    )
    assert (out.writes, out.end, out.end_at, out.headers_at) == (
        (Write(0.75, RATE_LIMIT),),
        "close",
        None,
        0.75,
    )
    assert out.describe() == [
        {
            "fault": "http=429:retry-after=1",
            "kind": "http",
            "when": "always",
            "applied": True,
            "frame": None,
            "byte": None,
            "at": 0.75,
            "status": 429,
            "retry_after": 1,
        },
        {
            "fault": "cut@frame:1",
            "kind": "cut",
            "when": "always",
            "applied": False,
            "why": "the response was replaced by http=429:retry-after=1",
        },
        {
            "fault": "delay-headers=0.5",
            "kind": "delay-headers",
            "when": "always",
            "applied": True,
            "frame": None,
            "byte": None,
            "at": 0.25,
            "seconds": 0.5,
        },
    ]


@pytest.mark.parametrize(
    ("dialect", "status", "body"),
    [
        (
            "anthropic",
            529,
            b'{"type":"error","error":{"type":"overloaded_error","message":"HTTP 529'
            b' (injected by StreamScope: http=529)"}}',
        ),
        (
            "gemini",
            503,
            b'{"error":{"code":503,"message":"Service unavailable (injected by StreamScope:'
            b' http=503)","status":"UNAVAILABLE"}}',
        ),
        ("ollama", 500, b'{"error":"Internal server error (injected by StreamScope: http=500)"}'),
        (
            "responses",
            500,
            b'{"error":{"message":"Internal server error (injected by StreamScope: http=500)",'
            b'"type":"server_error","param":null,"code":null}}',
        ),
    ],
)
def test_http_error_bodies_per_dialect(dialect: str, status: int, body: bytes) -> None:
    out = _run(f"http={status}", dialect=dialect)
    assert (out.status, out.body, out.header("retry-after")) == (status, body, None)


def test_cadence_leaves_other_requests_alone() -> None:
    spec = parse_fault_spec("cut@frame:1/every=2")
    first = apply(spec, SSE, "openai", 1)
    assert first == SSE  # nothing scheduled: no record either
    second = apply(spec, SSE, "openai", 2)
    assert second.end == "cut"
    assert second.describe()[0]["when"] == "every=2"


def test_content_length_follows_a_body_that_changed_length() -> None:
    headers = (("content-type", "text/event-stream"), ("Content-Length", "171"))
    sized = Playback(200, headers, SSE.writes)
    assert _run("garble@frame:1", sized).header("content-length") == "170"
    assert _run("cut@frame:1", sized).header("content-length") == "171"  # a cut keeps it


LINES = [
    b'{"model":"llama3.2","message":{"role":"assistant","content":"The"},"done":false}\n',
    b'{"model":"llama3.2","message":{"role":"assistant","content":" sky"},"done":false}\n',
    b'{"model":"llama3.2","message":{"role":"assistant","content":" is blue."},"done":false}\n',
    b'{"model":"llama3.2","message":{"role":"assistant","content":""},"done":true,'
    b'"done_reason":"stop"}\n',
]
NDJSON = Playback(
    200,
    (("content-type", "application/x-ndjson"),),
    tuple(Write(0.25 * (i + 1), line) for i, line in enumerate(LINES)),
)


def test_ndjson_error_drop_terminal_garble_and_cut() -> None:
    error = _run("error@frame:1", NDJSON, "ollama")
    assert error.writes == (
        Write(0.25, LINES[0]),
        Write(0.5, b'{"error":"injected by StreamScope: error@frame:1"}\n'),
    )
    dropped = _run("drop-terminal", NDJSON, "ollama")
    assert dropped.writes == NDJSON.writes[:3]
    assert (dropped.end_at, dropped.describe()[0]["signal"]) == (1.0, "done:true")
    assert dropped.describe()[0]["byte"] == sum(map(len, LINES[:3]))
    garbled = _run("garble@frame:2=json", NDJSON, "ollama")
    assert garbled.writes[2] == Write(0.75, LINES[2][:-2] + b"\n")
    cut = _run("cut@frame:0", NDJSON, "auto")
    assert cut.writes == (Write(0.25, LINES[0][: len(LINES[0]) // 2]),)
    assert cut.describe()[0]["byte"] == len(LINES[0]) // 2


def test_frames_are_numbered_as_the_frames_tab_counts_them() -> None:
    # a keep-alive comment and a run of blank lines are frames of their own
    body = b": ping\n\n\n\n" + F0 + F3
    frames = body_frames(body, "openai")
    assert frames.starts == (0, 8, 10, 58)
    out = _run("error@frame:2", Playback(200, (), (Write(0.0, body),)))
    assert out.body.startswith(body[:10] + b'data: {"error"')


def test_reads_recorded_at_the_same_time_stay_separate_writes() -> None:
    same_time = Playback(
        200, (), (Write(0.5, BODY[:30]), Write(0.5, BODY[30:100]), Write(0.5, BODY[100:]))
    )
    out = _run("stall@frame:3=1", same_time)
    assert out.writes == (
        Write(0.5, BODY[:30]),
        Write(0.5, BODY[30:100]),
        Write(0.5, BODY[100:157]),
        Write(1.5, BODY[157:]),
    )
