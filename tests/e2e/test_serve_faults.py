"""`serve --fault`: each fault kind served to a client whose behaviour the test controls, the
failure that client gets, the fault written into the exchange's line, and the reaction report
stating what the client really did (closed, kept reading, retried and how soon)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from streamscope.core.faults import describe_reaction, describe_summary
from streamscope.core.serve import ServeServer
from support.serve_client import (
    CHAT,
    FINAL,
    Lines,
    ask,
    capture,
    dechunk,
    frame,
    raw_request,
    save,
)

TEXT = frame("Grüß 世界 🙂")
READS = [(0.15, frame("Hello")), (0.4, TEXT[:20]), (0.41, TEXT[20:]), (0.7, FINAL)]
BODY = b"".join(data for _, data in READS)
F0 = frame("Hello")
FINISH, DONE = FINAL.split(b"\n\n", 1)[0] + b"\n\n", b"data: [DONE]\n\n"
"""Frames: 0 Hello, 1 the text (two reads), 2 the finish_reason chunk, 3 [DONE]."""


def serving(tmp_path: Path, spec: str, lines: Lines, **options: object) -> ServeServer:
    path = save(tmp_path, "a.sscap", capture(READS, elapsed=0.72))
    options.setdefault("speed", None)
    return ServeServer([path], port=0, listener=lines, faults=spec, loop=True, **options)  # type: ignore[arg-type]


def only(reactions: dict[str, Any]) -> dict[str, Any]:
    """The one chain of ``reactions`` (read them after ``lines.wait``: each line is told once
    its exchange has ended, on either side)."""
    exchanges: list[dict[str, Any]] = reactions["exchanges"]
    assert len(exchanges) == 1, reactions
    return exchanges[0]


def test_cut_at_frame_drops_the_connection_inside_that_frame(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "cut@frame:1", lines) as server:
        with (
            httpx.Client() as client,
            client.stream("POST", server.base_url + "/chat/completions", json=ask("hi")) as r,
        ):
            got = bytearray()
            with pytest.raises(httpx.RemoteProtocolError):
                for chunk in r.iter_raw():
                    got += chunk
        (line,) = lines.json(1)
        reaction = only(server.reactions())
    cut = len(F0) + len(TEXT) // 2
    assert bytes(got) == BODY[:cut]
    assert (line["outcome"], line["bytes"]) == ("truncated", cut)
    assert line["faults"] == [
        {
            "fault": "cut@frame:1",
            "kind": "cut",
            "when": "always",
            "applied": True,
            "frame": 1,
            "byte": cut,
            "at": 0.0,
        }
    ]
    assert (reaction["read_to_end"], reaction["retries"], reaction["closed_after"]) == (
        True,
        0,
        None,
    )
    assert describe_reaction(reaction) == "cut@frame:1 → read to the end and did not retry"


def test_a_stall_is_silence_a_client_with_a_read_timeout_closes_and_the_report_says_when(
    tmp_path: Path,
) -> None:
    lines = Lines()
    with serving(tmp_path, "stall@frame:1=3", lines) as server:
        timeout = httpx.Timeout(5.0, read=0.3)
        with (
            httpx.Client(timeout=timeout) as client,
            client.stream("POST", server.base_url + "/chat/completions", json=ask("hi")) as r,
        ):
            got = bytearray()
            with pytest.raises(httpx.ReadTimeout):
                for chunk in r.iter_raw():
                    got += chunk
        (line,) = lines.json(1)
        reaction = only(server.reactions())
    assert bytes(got) == F0  # (--fast: the recorded waits are gone, the stall is not)
    assert line["outcome"] == "cancelled"
    assert line["faults"] == [
        {
            "fault": "stall@frame:1=3",
            "kind": "stall",
            "when": "always",
            "applied": True,
            "frame": 1,
            "byte": len(F0),
            "at": 0.0,
            "seconds": 3.0,
        }
    ]
    assert 0.25 <= reaction["closed_after"] < 2.5
    assert (reaction["still_open_after"], reaction["read_to_end"]) == (None, False)
    assert describe_reaction(reaction).startswith("stall@frame:1=3 → closed its side 0.")


def test_a_client_with_no_idle_timeout_is_reported_still_reading(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "stall@frame:1=60", lines) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            data = json.dumps(ask("hi")).encode()
            sock.sendall(
                f"POST {CHAT} HTTP/1.1\r\nhost: t\r\ncontent-length: {len(data)}\r\n\r\n".encode()
                + data
            )
            got = b""
            while F0 not in got:
                got += sock.recv(65536)
            time.sleep(0.4)
            reaction = only(server.reactions())
            assert reaction["closed_after"] is None
            assert 0.35 <= reaction["still_open_after"] < 5
            assert describe_reaction(reaction).startswith(
                "stall@frame:1=60 → still reading after 0."
            )
        lines.wait(1)
        reaction = only(server.reactions())
    assert reaction["still_open_after"] is None
    assert 0.35 <= reaction["closed_after"] < 5


def test_drop_terminal_ends_cleanly_without_done_and_a_client_that_reads_on_finished_as_if_whole(
    tmp_path: Path,
) -> None:
    lines = Lines()
    with serving(tmp_path, "drop-terminal", lines) as server:
        with httpx.Client() as client:
            r = client.post(server.base_url + "/chat/completions", json=ask("hi"))
        (line,) = lines.json(1)
        reaction = only(server.reactions())
    assert r.content == BODY[: len(BODY) - len(DONE)]
    assert r.headers.get("content-length") is None  # (the recording had none: chunked)
    assert line["outcome"] == "truncated"
    assert line["faults"] == [
        {
            "fault": "drop-terminal",
            "kind": "drop-terminal",
            "when": "always",
            "applied": True,
            "frame": 3,
            "byte": len(BODY) - len(DONE),
            "at": 0.0,
            "signal": "[DONE]",
        }
    ]
    assert (reaction["finished_as_if_whole"], reaction["read_to_end"]) == (True, True)
    assert describe_reaction(reaction) == (
        "drop-terminal → read to the end and did not retry: finished as if whole"
    )


def test_an_error_frame_in_the_dialect_then_a_clean_close(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "error@frame:2", lines) as server:
        with httpx.Client() as client:
            r = client.post(server.base_url + "/chat/completions", json=ask("hi"))
        (line,) = lines.json(1)
    assert r.content.startswith(
        F0 + TEXT + b'data: {"error":{"message":"injected by StreamScope: error@frame:2"'
    )
    assert r.content.endswith(b"\n\n") and b"[DONE]" not in r.content
    assert (line["outcome"], line["faults"][0]["frame"]) == ("error", 2)
    assert "injected by StreamScope: error@frame:2" in str(line["reason"])


def test_garble_breaks_one_frame_in_place(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "garble@frame:1=utf8", lines) as server:
        with httpx.Client() as client:
            r = client.post(server.base_url + "/chat/completions", json=ask("hi"))
        (line,) = lines.json(1)
    assert r.content.startswith(F0) and r.content.endswith(FINAL)
    middle = r.content[len(F0) : len(r.content) - len(FINAL)]
    assert middle != TEXT
    with pytest.raises(UnicodeDecodeError):
        middle.decode("utf-8")
    fault = line["faults"][0]
    assert (fault["applied"], fault["frame"], fault["garble"]) == (True, 1, "utf8")


def test_http_429_next_then_the_recording_a_client_that_waits_honours_retry_after(
    tmp_path: Path,
) -> None:
    lines = Lines()
    with (
        serving(tmp_path, "http=429:retry-after=1/next", lines) as server,
        httpx.Client() as client,
    ):
        url = server.base_url + "/chat/completions"
        first = client.post(url, json=ask("hi"))
        time.sleep(1.05)
        second = client.post(url, json=ask("hi"))
        lines.wait(2)
        reaction = only(server.reactions())
    assert (first.status_code, first.headers["retry-after"]) == (429, "1")
    assert first.json()["error"]["message"] == (
        "Rate limit exceeded (injected by StreamScope: http=429:retry-after=1)"
    )
    assert (second.status_code, second.content) == (200, BODY)
    assert lines.items[0].to_json()["faults"] == [
        {
            "fault": "http=429:retry-after=1",
            "kind": "http",
            "when": "next",
            "applied": True,
            "frame": None,
            "byte": None,
            "at": 0.0,
            "status": 429,
            "retry_after": 1,
        }
    ]
    assert lines.items[1].to_json()["faults"] == []
    assert (reaction["retries"], reaction["retry_after_honoured"]) == (1, True)
    assert reaction["attempt_ids"] == ["1", "2"]
    assert 1.0 <= reaction["intervals"][0] < 3


def test_a_client_that_retries_at_once_is_reported_not_honouring_retry_after(
    tmp_path: Path,
) -> None:
    lines = Lines()
    with (
        serving(tmp_path, "http=429:retry-after=5/every=1", lines) as server,
        httpx.Client() as client,
    ):
        url = server.base_url + "/chat/completions"
        codes = [client.post(url, json=ask("hi")).status_code for _ in range(3)]
        client.post(url, json=ask("something else"))
        lines.wait(4)
        reactions = server.reactions()
    assert codes == [429, 429, 429]
    first = reactions["exchanges"][0]
    assert (first["retries"], first["attempt_ids"], first["retry_after_honoured"]) == (
        2,
        ["1", "2", "3"],
        False,
    )
    assert reactions["summary"]["retry_after_ignored"] == 1
    assert reactions["summary"]["faulted"] == 2  # (the other body is a chain of its own)
    assert describe_reaction(first).endswith("(Retry-After 5 s not honoured)")
    assert describe_summary(reactions["summary"]).startswith(
        "2 faulted exchanges (http 2): 1 retried (2 retries)"
    )


def test_slow_delays_every_frame_and_split_reads_writes_every_byte_alone(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "slow=100", lines) as server:
        raw = raw_request(server.port)
        (line,) = lines.json(1)
    chunks, whole = dechunk(raw.body)
    # (the reads stay as recorded, split where frames start: one frame in two reads stays two)
    assert (chunks, whole) == ([F0, TEXT[:20], TEXT[20:], FINISH, DONE], True)
    assert raw.recvs[-1][0] >= 0.38  # (4 frames, 100 ms more each)
    assert line["faults"][0]["ms"] == 100

    lines = Lines()
    with serving(tmp_path, "split-reads", lines) as server:
        raw = raw_request(server.port)
        (line,) = lines.json(1)
    chunks, whole = dechunk(raw.body)
    assert whole and b"".join(chunks) == BODY and {len(c) for c in chunks} == {1}
    assert line["faults"][0]["writes"] == len(READS)


def test_merge_reads_holds_the_body_and_delay_headers_holds_the_head(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "merge-reads,delay-headers=0.4", lines) as server:
        raw = raw_request(server.port)
        (line,) = lines.json(1)
    assert dechunk(raw.body) == ([BODY], True)
    assert raw.recvs[0][0] >= 0.38
    assert [f["fault"] for f in line["faults"]] == ["merge-reads", "delay-headers=0.4"]


def test_every_k_and_a_fault_that_cannot_apply_says_why(tmp_path: Path) -> None:
    lines = Lines()
    with serving(tmp_path, "cut@frame:30/every=2", lines) as server, httpx.Client() as client:
        for _ in range(3):
            assert (
                client.post(server.base_url + "/chat/completions", json=ask("hi")).content == BODY
            )
        got = lines.json(3)
    assert [ln["faults"] for ln in got] == [
        [],
        [
            {
                "fault": "cut@frame:30",
                "kind": "cut",
                "when": "every=2",
                "applied": False,
                "why": "the body has 4 frames",
            }
        ],
        [],
    ]


def test_the_cli_refuses_a_bad_spec_naming_the_part_and_reports_reactions_when_stopped(
    tmp_path: Path,
) -> None:
    path = save(tmp_path, "a.sscap", capture(READS, elapsed=0.72))
    serve = [sys.executable, "-m", "streamscope", "serve", str(path), "--listen", "127.0.0.1:0"]
    bad = subprocess.run(
        [*serve, "--fault", "cut@frame:2,stal@frame:1=2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "at 'stal@', expected cut@, stall@, error@ or garble@" in bad.stderr
    proc = subprocess.Popen(
        [*serve, "--json", "--fast", "--fault", "drop-terminal/next"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = json.loads(proc.stdout.readline())["base_url"]
        with httpx.Client() as client:
            r = client.post(base + "/chat/completions", json=ask("hi"))
        line = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert r.content == BODY[: len(BODY) - len(DONE)]
    assert line["faults"][0]["fault"] == "drop-terminal"
    assert "faults: drop-terminal/next" in err
    last = json.loads(out.splitlines()[-1])
    assert last["reactions"]["summary"]["finished_as_if_whole"] == 1
    assert last["reactions"]["exchanges"][0]["attempt_ids"] == ["1"]
