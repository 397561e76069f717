"""`serve` without sockets: a capture as a playback (ends, headers, error bodies), which
recording answers a request (in turn, by body, volatile fields, the error for none), the
base URL's prefix, and paths that cannot be served."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from streamscope.core.capture.format import CaptureEnd, CaptureResponse, write_capture
from streamscope.core.serve import Matcher, NoMatch, Recorded, ServeInputError, load_recordings
from streamscope.core.serve.matching import request_key
from streamscope.core.serve.playback import playback_of
from streamscope.core.serve.server import base_path
from support.serve_client import CHAT, FINAL, ask, capture, frame, save

READS = [(0.1, frame("Grüß")), (0.25, frame(" 世界")), (0.3, FINAL)]


# -- playback ------------------------------------------------------------------------------


def test_a_clean_capture_plays_each_read_at_its_time_then_closes() -> None:
    pb = playback_of(capture(READS, elapsed=0.31))
    assert (pb.status, pb.headers_at, pb.end, pb.end_at) == (200, 0.005, "close", 0.31)
    assert pb.writes == tuple(READS)
    assert pb.headers == (("content-type", "text/event-stream"),)  # transfer-encoding dropped
    assert pb.size == sum(len(d) for _, d in READS)


@pytest.mark.parametrize(
    ("kind", "action", "end_at"),
    [
        ("eof", "close", 0.5),
        ("broken", "cut", 0.3),  # dropped right after the last read
        (None, "cut", 0.3),  # no end line: the writer was killed
        ("idle_timeout", "stall", 0.5),
        ("first_byte_timeout", "stall", 0.5),
        ("cancelled", "stall", 0.5),
        ("protocol_error", "stall", 0.5),
    ],
)
def test_how_a_capture_ends_is_how_its_playback_ends(
    kind: str | None, action: str, end_at: float
) -> None:
    pb = playback_of(capture(READS, end=kind, elapsed=0.5))  # type: ignore[arg-type]
    assert (pb.end, pb.end_at) == (action, end_at)


def test_no_response_is_a_cut_before_any_head_and_no_headers_a_stall() -> None:
    cap = capture([], end="connect_error", elapsed=0.2)
    cap.response = None
    assert (playback_of(cap).status, playback_of(cap).end, playback_of(cap).end_at) == (
        None,
        "cut",
        0.2,
    )
    cap.end = CaptureEnd("first_byte_timeout", 3.0)
    assert (playback_of(cap).status, playback_of(cap).end) == (None, "stall")


def test_an_error_body_kept_in_the_end_record_is_written_with_the_head() -> None:
    body = b'{"error":{"message":"slow down","type":"rate_limit"}}'
    cap = capture(
        [],
        end="http_error",
        elapsed=0.02,
        status=429,
        head_t=0.01,
        headers=(
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Retry-After", "20"),
            ("Connection", "keep-alive, x-trace"),
            ("X-Trace", "abc"),
        ),
        error_body=body,
    )
    pb = playback_of(cap)
    assert pb.writes == ((0.01, body),)
    assert (pb.status, pb.end) == (429, "close")
    # recorded order kept; Connection and the header it names dropped; the length fits
    assert pb.headers == (
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("Retry-After", "20"),
    )


def test_content_length_and_encoding_are_not_served_when_they_do_not_fit() -> None:
    gz = (("content-type", "application/json"), ("content-encoding", "gzip"))
    wrong = (("content-type", "application/json"), ("content-length", "999"))
    bad = (
        ("content-type", "text/event-stream"),
        ("bad name", "x"),
        ("x-ok", "a\r\nb: c"),
        ("x-note", "café"),
        ("x-emoji", "🙂"),
    )
    data = [(0.1, b'{"a": 1}')]
    # a capture holds the body decoded: the gzip length is the compressed one
    assert playback_of(capture(data, headers=(*gz, ("content-length", "8")))).headers == (
        ("content-type", "application/json"),
    )
    assert playback_of(capture(data, headers=wrong)).headers == (
        ("content-type", "application/json"),
    )
    cut = capture(data, end="broken", headers=(("content-length", "8"),))
    assert playback_of(cut).headers == ()  # a body cut short is sent chunked
    assert playback_of(capture(data, headers=bad)).headers == (
        ("content-type", "text/event-stream"),
        ("x-note", "café"),  # (sent as its Latin-1 byte)
    )


def test_times_never_go_back_and_never_before_the_head() -> None:
    pb = playback_of(capture([(0.0, b"a"), (0.3, b"b"), (0.2, b"c")], head_t=0.1, elapsed=0.25))
    assert pb.writes == ((0.1, b"a"), (0.3, b"b"), (0.3, b"c"))
    assert pb.end_at == 0.3


# -- matching ------------------------------------------------------------------------------


def _rec(name: str, body: dict[str, object], path: str = CHAT) -> Recorded:
    cap = capture(READS, body=body, path=path)
    return Recorded(name, cap, "POST", path, playback_of(cap))


def _body(value: dict[str, object]) -> bytes:
    return json.dumps(value).encode()


def test_order_answers_each_path_in_turn_and_loop_starts_again() -> None:
    recs = [_rec("a1", ask("a")), _rec("r1", ask("r"), "/v1/responses"), _rec("a2", ask("b"))]
    matcher = Matcher(recs, "order")
    picked = [matcher.pick("post", p, b"") for p in (CHAT, "/v1/responses", CHAT)]
    assert [r.source for r in picked if isinstance(r, Recorded)] == ["a1", "r1", "a2"]
    miss = matcher.pick("POST", CHAT, b"")
    assert isinstance(miss, NoMatch)
    assert miss.message == (
        "all 2 recorded exchanges for POST /v1/chat/completions were served "
        "(serve them again with --loop / loop=True)"
    )
    looping = Matcher(recs, "order", loop=True)
    got = [looping.pick("POST", CHAT, b"") for _ in range(3)]
    assert [r.source for r in got if isinstance(r, Recorded)] == ["a1", "a2", "a1"]


def test_request_matching_ignores_volatile_fields_and_key_order() -> None:
    recs = [
        _rec("a1", ask("a", user="alice", stream_options={"include_usage": True})),
        _rec("b1", ask("b", metadata={"run": "1"})),
        _rec("a1-again", ask("a", seed=7)),
    ]
    matcher = Matcher(recs, "request")
    body_b = {"stream": True, "model": "m", "messages": ask("b")["messages"], "user": "x"}
    got = matcher.pick("POST", CHAT, _body(body_b))
    assert isinstance(got, Recorded) and got.source == "b1"
    got = matcher.pick("POST", CHAT, _body(ask("a", safety_identifier="s", prompt_cache_key="k")))
    assert isinstance(got, Recorded) and got.source == "a1"
    # seed counts: only the recording with seed 7 answers it
    got = matcher.pick("POST", CHAT, _body(ask("a", seed=7)))
    assert isinstance(got, Recorded) and got.source == "a1-again"
    again = matcher.pick("POST", CHAT, _body(ask("a")))
    assert isinstance(again, NoMatch)
    assert again.message == (
        "the one recorded exchange with this request body for POST /v1/chat/completions was "
        "served (serve them again with --loop / loop=True)"
    )


def test_a_request_with_no_recorded_body_is_told_the_nearest_and_how_it_differs() -> None:
    recs = [_rec("a.sscap", ask("a", "more")), _rec("b.sscap", ask("b"))]
    miss = Matcher(recs, "request").pick("POST", CHAT, _body(ask("a", "mroe", temperature=0)))
    assert isinstance(miss, NoMatch)
    assert miss.nearest is recs[0]
    assert miss.differences == ('$.messages[2].content: "more" → "mroe"', "$.temperature: added 0")
    assert miss.expected == ("a.sscap", "b.sscap")
    body = miss.body()
    assert body["error"]["type"] == "streamscope_no_match"
    assert body["error"]["nearest"] == {
        "served_from": "a.sscap",
        "method": "POST",
        "path": CHAT,
        "differences": ['$.messages[2].content: "more" → "mroe"', "$.temperature: added 0"],
    }
    assert body["error"]["message"] == (
        "no recorded POST /v1/chat/completions request has this body (compared as JSON, "
        "ignoring top-level metadata, prompt_cache_key, safety_identifier, stream_options, "
        'user); nearest: a.sscap: $.messages[2].content: "more" → "mroe"; '
        "$.temperature: added 0"
    )


def test_an_unknown_path_is_told_the_recorded_ones() -> None:
    recs = [_rec("a", ask("a")), _rec("m", ask("m"), "/v1/messages")]
    miss = Matcher(recs).pick("GET", "/v1/models", b"")
    assert isinstance(miss, NoMatch)
    assert miss.expected == (
        "POST /v1/chat/completions (1 recorded)",
        "POST /v1/messages (1 recorded)",
    )
    assert miss.message == (
        "no recorded exchange for GET /v1/models; recorded: POST /v1/chat/completions "
        "(1 recorded), POST /v1/messages (1 recorded)"
    )
    assert miss.nearest is recs[1]  # /v1/messages is nearer /v1/models


def test_a_body_that_is_not_json_must_be_the_recorded_bytes() -> None:
    assert request_key(b"not json") == b"not json"
    assert request_key(b'{"user": 1, "a": 2}') == {"a": 2}
    assert request_key(b"") is None


# -- the base URL, loading -------------------------------------------------------------------


def test_base_path_is_the_api_prefix() -> None:
    assert base_path("/v1/chat/completions") == "/v1"
    assert base_path("/api/v1/chat/completions") == "/api/v1"
    assert base_path("/v1/messages") == "/v1"
    assert base_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent") == "/v1beta"
    assert base_path("/api/chat") == ""
    assert base_path("/v1/models") is None


def test_folders_are_searched_in_name_order_and_har_entries_named(tmp_path: Path) -> None:
    save(tmp_path / "caps" / "sub", "b.sscap", capture(READS, body=ask("b")))
    save(tmp_path / "caps", "a.sscap", capture(READS, body=ask("a")))
    save(tmp_path / "caps" / ".hidden", "x.sscap", capture(READS))
    (tmp_path / "caps" / "notes.txt").write_text("not served")
    found = load_recordings([tmp_path / "caps"])
    assert [Path(r.source).relative_to(tmp_path).as_posix() for r in found] == [
        "caps/a.sscap",
        "caps/sub/b.sscap",
    ]
    assert [(r.method, r.path) for r in found] == [("POST", CHAT), ("POST", CHAT)]


def test_a_bundle_is_served_from_its_capture(tmp_path: Path) -> None:
    src = save(tmp_path, "c.sscap", capture(READS))
    with zipfile.ZipFile(tmp_path / "bug.sscap.zip", "w") as zf:
        zf.write(src, "capture.sscap")
    [rec] = load_recordings([tmp_path / "bug.sscap.zip"])
    assert rec.playback.writes == tuple(READS)
    assert rec.source == str(tmp_path / "bug.sscap.zip")


def test_paths_that_cannot_be_served_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sscap"
    bad.write_text('{"format": "streamscope-capture", "version": 1}\n{"t": "soon", "b64": ""}\n')
    with pytest.raises(ServeInputError) as info:
        load_recordings([bad])
    assert str(info.value) == f'{bad}: line 2: t: expected a number, got "soon"'
    (tmp_path / "empty").mkdir()
    with pytest.raises(ServeInputError, match=r"empty: no captures in this folder"):
        load_recordings([tmp_path / "empty"])
    with pytest.raises(ServeInputError, match=r"nope\.sscap: no such file or folder"):
        load_recordings([tmp_path / "nope.sscap"])
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ServeInputError) as info:
        load_recordings([text])
    assert str(info.value) == f"{text}: not a capture (.sscap), repro bundle or HAR file"
    har = tmp_path / "page.har"
    har.write_text('{"log": {"entries": []}}')
    with pytest.raises(ServeInputError) as info:
        load_recordings([har])
    assert str(info.value) == f"{har}: no LLM exchange in this HAR file"
    headless = capture(READS)
    headless.request = None
    write_capture(tmp_path / "norequest.sscap", headless)
    with pytest.raises(ServeInputError, match="the capture has no recorded request to answer"):
        load_recordings([tmp_path / "norequest.sscap"])


def test_a_response_head_time_before_zero_is_read_as_zero() -> None:
    cap = capture(READS)
    cap.response = CaptureResponse(200, (), -1.0)
    assert playback_of(cap).headers_at == 0.0


def test_a_har_file_serves_each_llm_exchange_with_its_read_times(tmp_path: Path) -> None:
    from streamscope.core.capture.har import capture_to_har, dump_har

    caps = [capture(READS, body=ask("a")), capture(READS[:1], body=ask("b"), end="broken")]
    har = tmp_path / "session.har"
    har.write_bytes(dump_har(capture_to_har(caps)))
    found = load_recordings([har])
    assert [r.source for r in found] == [f"{har}#1", f"{har}#2"]
    assert [r.playback.writes for r in found] == [tuple(READS), tuple(READS[:1])]
    assert [r.playback.end for r in found] == ["close", "cut"]
