"""Issues 26 and 28 end to end over loopback: real clients -> the tap -> an upstream whose
every byte the test decides. What the tap says of an exchange (its JSON line's outcome and
reason) is what ``streamscope send`` says of the same bytes, and what ``streamscope replay``
says of the exchange's capture; connection troubles are said in plain words; running out of
file descriptors is said once, and the tap serves again once descriptors free up."""

from __future__ import annotations

import asyncio
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from streamscope.cli import main
from streamscope.core.capture.files import CaptureStore
from streamscope.core.tap.proxy import ExchangeResult
from streamscope.core.tap.server import TapServer
from support.rawhttp import RawServer, chunk, head
from support.tap_upstream import FINAL, Collector, ScriptedUpstream, chat_frame

CHAT = "/v1/chat/completions"
ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
ERROR_FRAME = (
    b'data: {"error":{"message":"The server is overloaded","type":"server_error",'
    b'"code":"overloaded"}}\n\n'
)
COMPLETION = (
    b'{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":'
    b'{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
)
TAP = [sys.executable, "-m", "streamscope", "tap"]
LINE_CAP = re.compile(r"protocol error after \d\.\d MB: line longer than 1048576 bytes")


@pytest.fixture
def raw() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.close()


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream() as server:
        yield server


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main(args)
    out, _err = capsys.readouterr()
    said: dict[str, Any] = json.loads(out)
    return said


def send(url: str, capsys: pytest.CaptureFixture[str], *more: str) -> dict[str, Any]:
    """``streamscope send --json`` against ``url`` (the reference)."""
    return run_cli(
        ["send", "--base-url", url + "/v1", "--model", "m", "--json", *more, "hi"], capsys
    )


def replay(result: ExchangeResult, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``streamscope replay CAPTURE --json`` of the exchange's capture."""
    return run_cli(["replay", str(result.exchange.capture), "--json"], capsys)


def tap_for(url: str, collector: Collector) -> TapServer:
    return TapServer(url, port=0, captures=CaptureStore(), listener=collector)


# -- 1 -----------------------------------------------------------------------------------


def test_an_sdk_hanging_up_after_an_in_stream_error_is_that_error(
    raw: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async def error_then_open(_request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(head() + chunk(chat_frame("par")) + chunk(ERROR_FRAME))
        await writer.drain()
        await asyncio.sleep(30)  # the body stays open (until the client or the test leaves)

    raw.handler = error_then_open
    reference = send(raw.url, capsys, "--idle-timeout", "0.5")
    said = "in-stream error: overloaded: The server is overloaded"
    assert (reference["outcome"], reference["reason"]) == ("error", said)
    collector = Collector()
    with tap_for(raw.url, collector) as tap:
        with openai.OpenAI(base_url=tap.base_url + "/v1", api_key="sk-x", max_retries=0) as oai:
            stream = oai.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            with pytest.raises(openai.APIError, match="The server is overloaded"):
                for _chunk in stream:
                    pass
            stream.close()  # the SDK hangs up; upstream still keeps the body open
        [result] = collector.wait()
    line = result.to_json()
    assert (line["outcome"], line["reason"], line["status"]) == ("error", said, 200)
    again = replay(result, capsys)
    assert (again["outcome"], again["reason"]) == ("error", said)


# -- 2 -----------------------------------------------------------------------------------


def test_a_streaming_request_answered_with_plain_json_is_the_error_send_says(
    upstream: ScriptedUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream.script.reads = [COMPLETION]
    upstream.script.headers = {"content-type": "application/json"}
    reference = send(upstream.url, capsys)
    said = "200 application/json body, not an event stream"
    assert (reference["outcome"], reference["reason"]) == ("error", said)
    collector = Collector()
    with tap_for(upstream.url, collector) as tap:
        response = httpx.post(tap.root_url + CHAT, json=ASK, timeout=5.0)
        [result] = collector.wait()
    assert (response.status_code, response.content) == (200, COMPLETION)  # (passed as it was)
    line = result.to_json()
    assert (line["outcome"], line["reason"], line["frames"], line["bytes"]) == (
        "error",
        said,
        0,
        len(COMPLETION),
    )
    again = replay(result, capsys)
    assert (again["outcome"], again["reason"]) == ("error", said)


# -- 3 -----------------------------------------------------------------------------------


def test_a_2_mib_line_is_an_error_in_the_tap_and_in_its_capture_s_replay(
    upstream: ScriptedUpstream, capsys: pytest.CaptureFixture[str]
) -> None:
    line = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * (2 << 20) + b'"}}]}\n\n'
    upstream.script.reads = [line, b"data: [DONE]\n\n"]
    reference = send(upstream.url, capsys)
    assert reference["outcome"] == "error" and LINE_CAP.fullmatch(reference["reason"])
    collector = Collector()
    with tap_for(upstream.url, collector) as tap:
        response = httpx.post(tap.root_url + CHAT, json=ASK, timeout=10.0)
        [result] = collector.wait()
    assert response.content == line + b"data: [DONE]\n\n"  # the client got it all
    said = result.to_json()
    assert said["outcome"] == "error" and LINE_CAP.fullmatch(str(said["reason"]))
    again = replay(result, capsys)
    assert (again["outcome"], again["reason"]) == ("error", said["reason"])


# -- 4 -----------------------------------------------------------------------------------


def test_an_upstream_answering_no_http_is_said_to_as_send_says_it(
    raw: RawServer, capsys: pytest.CaptureFixture[str]
) -> None:
    async def hello(_request: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HELLO\r\n\r\n")
        await writer.drain()

    raw.handler = hello
    said = (
        f"The server at 127.0.0.1:{raw.port} answered something that is not HTTP (illegal "
        "status line: bytearray(b'HELLO')) — is that the right port?"
    )
    assert send(raw.url, capsys)["reason"] == said
    collector = Collector()
    with tap_for(raw.url, collector) as tap:
        response = httpx.post(tap.root_url + CHAT, json=ASK, timeout=5.0)
        [result] = collector.wait()
    assert (response.status_code, response.text) == (502, f"streamscope tap: {said}\n")
    assert (result.to_json()["outcome"], result.to_json()["reason"]) == ("error", said)


def test_an_unreachable_upstream_is_said_in_the_chat_s_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # (closed: nothing listens there now)
    url = f"http://127.0.0.1:{port}"
    said = f"Connection refused by 127.0.0.1:{port} — is the server running?"
    assert send(url, capsys)["reason"] == said
    collector = Collector()
    with tap_for(url, collector) as tap:
        response = httpx.post(tap.root_url + CHAT, json=ASK, timeout=5.0)
        [result] = collector.wait()
    assert (response.status_code, response.text) == (502, f"streamscope tap: {said}\n")
    assert (result.outcome, result.reason) == ("error", said)


def test_a_busy_listen_port_is_said_plainly(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        code = main(["tap", "--upstream", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}"])
    _out, err = capsys.readouterr()
    assert code == 1
    assert err == (
        f"streamscope tap: cannot listen on 127.0.0.1:{port}: port {port} is in use — pick "
        "another\n"
    )


# -- 5 -----------------------------------------------------------------------------------

FD_LIMIT = 64


def _few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Stderr:
    """Reads a process's stderr as it comes (so nothing blocks on it) and keeps it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.data = bytearray()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):
            with self._cond:
                self.data += chunk
                self._cond.notify_all()

    def wait_for(self, text: bytes, timeout: float = 15.0) -> None:
        with self._cond:
            ok = self._cond.wait_for(lambda: text in self.data, timeout)
        assert ok, bytes(self.data[-2000:])

    def join(self) -> bytes:
        self._thread.join(10)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return bytes(self.data)


@pytest.mark.skipif(os.name != "posix", reason="RLIMIT_NOFILE")
def test_out_of_descriptors_is_said_once_and_the_tap_serves_again(
    upstream: ScriptedUpstream, tmp_path: Any
) -> None:
    upstream.script.reads = [chat_frame("ok"), FINAL]
    env = {**os.environ, "STREAMSCOPE_HOME": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*TAP, "--upstream", upstream.url, "--listen", "127.0.0.1:0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=_few_descriptors,
    )
    stderr = Stderr(proc)
    held: list[socket.socket] = []
    try:
        stderr.wait_for(b"Press Ctrl-C")
        found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", bytes(stderr.data))
        assert found is not None
        port = int(found.group(1))
        for _ in range(3 * FD_LIMIT):  # (the kernel queues what the tap cannot accept)
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        stderr.wait_for(b"out of file descriptors")
        time.sleep(2.0)  # a soak, not a check: unguarded, this wrote megabytes
        for sock in held:
            sock.close()
        held.clear()
        response = httpx.post(f"http://127.0.0.1:{port}{CHAT}", json=ASK, timeout=15.0)
        assert response.status_code == 200 and response.content.endswith(b"data: [DONE]\n\n")
        stderr.wait_for(b"accepting connections again")
        assert proc.stdout is not None
        done = json.loads(proc.stdout.readline())
        assert (done["outcome"], done["reason"]) == (
            "completed",
            "[DONE] received (finish_reason=stop)",
        )
    finally:
        for sock in held:
            sock.close()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(15)
        said = stderr.join()
        assert proc.stdout is not None
        proc.stdout.close()
    assert rc == 0
    assert len(said) < 10_000, said[-2000:]
    text = said.decode()
    assert text.count("out of file descriptors") == 1
    assert (
        f"streamscope tap: out of file descriptors (Too many open files, limit {FD_LIMIT}): "
        "new connections wait until some close\n"
    ) in text
    assert re.search(
        r"streamscope tap: accepting connections again after \d+\.\d s \(\d+ accepts? failed\)\n",
        text,
    )
