"""`tap --fault`: faults on cue applied to a live upstream's stream as the tap forwards it —
what the client gets, the exchange's line and capture (which replays what the client met),
an http= fault answered without asking upstream, and the reaction report of a client whose
behaviour the test controls."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import read_capture
from streamscope.core.capture.replay import replay_capture
from streamscope.core.tap.server import TapServer
from support.tap_upstream import FINAL, Collector, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
F0, F1 = chat_frame("Hello"), chat_frame(", world")
BODY = F0 + F1 + FINAL


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as up:
        up.script.reads = [F0, F1, FINAL]
        yield up


def tapping(upstream: ScriptedUpstream, spec: str, collector: Collector) -> TapServer:
    tap = TapServer(upstream.url, port=0, captures=CaptureStore(), listener=collector, faults=spec)
    tap.start()
    return tap


def test_a_cut_reaches_the_client_and_its_capture_replays_what_the_client_met(
    upstream: ScriptedUpstream,
) -> None:
    got = Collector()
    tap = tapping(upstream, "cut@frame:1", got)
    try:
        received = bytearray()
        with (
            httpx.Client() as client,
            client.stream("POST", tap.root_url + CHAT, json=ASK) as r,
            pytest.raises(httpx.RemoteProtocolError),
        ):
            for chunk in r.iter_raw():
                received += chunk
        (result,) = got.wait(1)
    finally:
        tap.stop()
    cut = len(F0) + len(F1) // 2
    assert bytes(received) == BODY[:cut]
    assert result.faults == (
        {"fault": "cut@frame:1", "kind": "cut", "when": "always", "applied": True, "frame": 1,
         "byte": cut, "at": result.faults[0]["at"]},
    )  # fmt: skip
    assert result.to_json()["faults"] == list(result.faults)
    assert result.outcome == "truncated"
    assert result.reason.endswith("cut by the fault cut@frame:1 (injected by StreamScope)")
    assert result.exchange.capture is not None
    capture = read_capture(result.exchange.capture)
    assert capture.reads.body() == BODY[:cut]
    assert capture.end is not None and capture.end.faults == result.faults
    replayed = asyncio.run(replay_capture(capture))
    assert (replayed.outcome.value if replayed.outcome else None) == "truncated"


def test_an_http_fault_answers_without_asking_upstream_and_a_client_that_waits_honours_it(
    upstream: ScriptedUpstream,
) -> None:
    got = Collector()
    tap = tapping(upstream, "http=429:retry-after=1/next", got)
    try:
        with httpx.Client() as client:
            first = client.post(tap.root_url + CHAT, json=ASK)
            time.sleep(1.05)
            second = client.post(tap.root_url + CHAT, json=ASK)
        results = got.wait(2)
        time.sleep(0.1)
        reactions = tap.reactions()
    finally:
        tap.stop()
    assert (first.status_code, first.headers["retry-after"]) == (429, "1")
    assert (second.status_code, second.content) == (200, BODY)
    assert len(upstream.seen) == 1  # (the 429 never reached upstream)
    assert [r.outcome for r in results] == ["error", "completed"]
    assert [len(r.faults) for r in results] == [1, 0]
    (report,) = reactions["exchanges"]
    assert (report["attempt_ids"], report["retry_after_honoured"]) == (["1", "2"], True)


def test_drop_terminal_a_client_reading_to_the_clean_close_finished_as_if_whole(
    upstream: ScriptedUpstream,
) -> None:
    got = Collector()
    tap = tapping(upstream, "drop-terminal", got)
    try:
        with httpx.Client() as client:
            r = client.post(tap.root_url + CHAT, json=ASK)
        (result,) = got.wait(1)
        time.sleep(0.1)
        (report,) = tap.reactions()["exchanges"]
    finally:
        tap.stop()
    assert r.content == BODY[: len(BODY) - len(b"data: [DONE]\n\n")]
    assert result.outcome == "truncated"
    assert result.faults[0]["signal"] == "[DONE]"
    assert report["finished_as_if_whole"] is True


def test_a_stall_a_client_with_a_read_timeout_closes_and_the_report_says_when(
    upstream: ScriptedUpstream,
) -> None:
    got = Collector()
    tap = tapping(upstream, "stall@frame:1=5", got)
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(5.0, read=0.4)) as client,
            client.stream("POST", tap.root_url + CHAT, json=ASK) as r,
            pytest.raises(httpx.ReadTimeout),
        ):
            for _ in r.iter_raw():
                pass
        (result,) = got.wait(1)
        (report,) = tap.reactions()["exchanges"]
    finally:
        tap.stop()
    assert result.outcome == "cancelled"
    assert 0.3 <= report["closed_after"] < 4 and report["still_open_after"] is None


def test_a_compressed_body_has_no_frames_to_strike(
    upstream: ScriptedUpstream,
) -> None:
    upstream.script.gzip = True
    got = Collector()
    tap = tapping(upstream, "cut@frame:1,slow=5", got)
    try:
        with httpx.Client() as client:
            assert client.post(tap.root_url + CHAT, json=ASK).content == BODY  # (decoded)
        (result,) = got.wait(1)
    finally:
        tap.stop()
    assert [(f["applied"], f["why"]) for f in result.faults] == [
        (False, "the body is gzip-encoded: its frames cannot be counted"),
    ] * 2
    assert result.outcome == "completed"


def test_the_cli_checks_the_spec_and_prints_the_reactions_when_stopped(
    upstream: ScriptedUpstream,
) -> None:
    tap = [sys.executable, "-m", "streamscope", "tap", "--upstream", upstream.url]
    bad = subprocess.run([*tap, "--fault", "http=200"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "at '200', expected http=CODE with CODE from 400 to 599" in bad.stderr
    proc = subprocess.Popen(
        [*tap, "--listen", "127.0.0.1:0", "--json", "--fault", "error@frame:1/next"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None and proc.stdout is not None
        said = []
        while not said or not said[-1].startswith("Press Ctrl-C"):
            said.append(proc.stderr.readline())
            assert said[-1], "the tap stopped"
        root = said[0].split("listening on ", 1)[1].split(" ")[0]
        with httpx.Client() as client:
            r = client.post(root + CHAT, json=ASK)
        line = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert r.content.startswith(F0 + b'data: {"error":{"message":"injected by StreamScope')
    assert (line["outcome"], line["faults"][0]["fault"]) == ("error", "error@frame:1")
    assert "  faults: error@frame:1/next\n" in said
    last = json.loads(out.splitlines()[-1])
    assert last["reactions"]["summary"]["faulted"] == 1
