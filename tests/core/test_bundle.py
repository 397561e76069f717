"""The repro bundle, `streamscope replay` of captures and bundles, and the secret-leak check
over every file the app writes."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from streamscope import __version__
from streamscope.cli import main
from streamscope.core.capture.bundle import read_repro_bundle, write_repro_bundle
from streamscope.core.capture.files import CaptureStore
from streamscope.core.capture.format import Capture, read_capture, write_capture
from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.capture.replay import replay_capture
from streamscope.core.net.client import StreamClient, StreamTimeouts, TurnObserver
from streamscope.core.net.curl import parse_curl
from streamscope.core.paths import home
from streamscope.core.store.database import Store
from streamscope.core.turn.model import Turn, turn_to_json
from streamscope.core.turn.observer import MultiObserver
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer

KEY = "sk-LEAKCHECK-4242"


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=200) as server:
        yield server


def run_live(
    demo: DemoServer, model: str, dialect: str, *, observer: TurnObserver | None = None
) -> tuple[Turn, Capture]:
    conv = Conversation(messages=[Message("user", "Hello there")])
    spec = get_dialect(dialect).build_request(
        conv, base_url=demo.base_url(dialect), model=model, api_key=KEY
    )
    sep = "&" if "?" in spec.url else "?"
    spec = replace(spec, url=f"{spec.url}{sep}key={KEY}", headers={**spec.headers, "api-key": KEY})
    recorder = CaptureRecorder(dialect)
    obs = MultiObserver(recorder, observer) if observer is not None else recorder

    async def go() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(
                spec,
                dialect=dialect,
                timeouts=StreamTimeouts(first_byte=10, idle=2.0),
                observer=obs,
            )
        finally:
            await client.aclose()

    return asyncio.run(go()), recorder.capture


def test_the_bundle_holds_everything_and_replays(demo: DemoServer, tmp_path: Path) -> None:
    turn, capture = run_live(demo, "demo-cut", "openai")
    path = write_repro_bundle(tmp_path / "bug.zip", capture, turn, app_version=__version__)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert names == {
            "capture.sscap",
            "body.sse",
            "request.curl.sh",
            "response-headers.txt",
            "outcome.json",
            "outcome.txt",
            "versions.txt",
            "README.txt",
        }
        assert zf.read("body.sse") == capture.reads.body()
        curl = zf.read("request.curl.sh").decode()
        outcome = json.loads(zf.read("outcome.json"))
        text = zf.read("outcome.txt").decode()
        headers = zf.read("response-headers.txt").decode()
        versions = zf.read("versions.txt").decode()
        readme = zf.read("README.txt").decode()
    request = parse_curl(curl.split("\n", 2)[2])
    assert request.url.endswith("/v1/chat/completions?key=$API_KEY")
    assert request.header("authorization") == "Bearer $API_KEY"
    assert request.body is not None and json.loads(request.body)["stream"] is True
    assert outcome["outcome"] == "truncated" and outcome["text"] == turn.text
    assert outcome["summary"] == turn.summary()
    assert outcome["timings"]["ttft"] == pytest.approx(turn.timings.ttft, abs=1e-5)
    assert text.splitlines()[0] == turn.summary()
    assert f"reason: {turn.reason}" in text
    assert headers.startswith("HTTP 200\n") and "content-type: text/event-stream" in headers
    assert f"StreamScope {__version__}" in versions and "Python 3." in versions
    assert "Qt" not in versions
    assert "body.sse" in readme and "API_KEY" in readme

    replayed = asyncio.run(replay_capture(read_repro_bundle(path)))
    assert turn_to_json(replayed) == turn_to_json(turn)


def test_an_ollama_bundle_has_an_ndjson_body(demo: DemoServer, tmp_path: Path) -> None:
    turn, capture = run_live(demo, "demo", "ollama")
    path = write_repro_bundle(tmp_path / "o.zip", capture, turn, app_version="9")
    with zipfile.ZipFile(path) as zf:
        assert "body.ndjson" in zf.namelist() and "body.sse" not in zf.namelist()


def test_replay_command_accepts_captures_bundles_and_raw_bodies(
    demo: DemoServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    turn, capture = run_live(demo, "demo-tools", "anthropic")
    expected = turn_to_json(turn)
    cap = tmp_path / "t.sscap"
    write_capture(cap, capture)
    bundle = write_repro_bundle(tmp_path / "t.zip", capture, turn, app_version="1")
    raw = tmp_path / "t.sse"
    raw.write_bytes(capture.reads.body())

    for path in (cap, bundle, raw):  # the capture's own dialect; auto for the raw body
        assert main(["replay", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == expected
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(cap.read_bytes())))
    assert main(["replay", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected

    # --dialect overrides the capture's: Anthropic frames read as OpenAI give nothing.
    main(["replay", str(cap), "--dialect", "openai", "--json"])
    assert json.loads(capsys.readouterr().out)["text"] == ""

    assert main(["replay", str(cap), "--raw"]) == 0
    out = capsys.readouterr().out
    assert "event: message_start" in out and " ms " in out

    broken = tmp_path / "broken.sscap"
    broken.write_bytes(b'{"format":"streamscope-capture","version":7}\n')
    assert main(["replay", str(broken)]) == 2
    assert "version 7 is not supported" in capsys.readouterr().err


class PartialSaver(TurnObserver):
    """Saves the text as the window does while streaming (here: once, at the end)."""

    def __init__(self, store: Store, message_id: int) -> None:
        self.store = store
        self.message_id = message_id

    def finished(self, turn: Turn) -> None:
        self.store.update_assistant_partial(
            self.message_id, turn.text, turn.reasoning, turn.tool_calls
        )


SCENARIOS = [
    ("demo", "openai"),
    ("demo-tools", "anthropic"),
    ("demo", "gemini"),
    ("demo", "responses"),
    ("demo", "ollama"),
    ("demo-error-429", "openai"),
    ("demo-error-429", "gemini"),
    ("demo-cut", "anthropic"),
    ("demo-html-502", "openai"),
    ("demo-midstream-error", "responses"),
]


def test_the_leak_check_finds_a_planted_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("canary")
    capture = Capture("openai")
    capture.reads.append(0.0, f"data: {KEY}\n\n".encode())
    write_capture(root / "c.sscap", capture)
    with zipfile.ZipFile(root / "b.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.txt", f"key {KEY}")
    assert KEY.encode() not in (root / "c.sscap").read_bytes()  # base64 hides it ...
    leaks = _leaks(root)  # ... but the check decodes
    assert any("c.sscap (reads)" in leak for leak in leaks)
    assert any("b.zip!x.txt" in leak for leak in leaks)


def test_no_file_the_app_writes_contains_the_key(
    demo: DemoServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = home()
    assert str(root) == os.environ["STREAMSCOPE_HOME"]
    bundles = root / "bundles"
    bundles.mkdir(parents=True)
    with Store() as store:
        captures = CaptureStore(index=store)
        conv = store.create_conversation("Leak check", endpoint_name="demo", model="demo")
        for i, (model, dialect) in enumerate(SCENARIOS):
            store.add_user_message(conv, f"Hello there {i}")
            msg = store.begin_assistant_message(conv)

            turn, capture = run_live(demo, model, dialect, observer=PartialSaver(store, msg))
            capture_id = captures.save(capture)
            store.finish_assistant_message(msg, turn, capture_id)
            write_repro_bundle(bundles / f"{i}.zip", capture, turn, app_version=__version__)
            replayed = asyncio.run(replay_capture(captures.load(capture_id)))
            assert turn_to_json(replayed) == turn_to_json(turn)
        exports = root / "exports"
        exports.mkdir()
        for fmt in ("md", "json"):
            assert main(["export", "--format", fmt, "-o", str(exports / f"c.{fmt}")]) == 0
            assert main(["export", "--format", fmt]) == 0
            (exports / f"stdout.{fmt}").write_text(capsys.readouterr().out, encoding="utf-8")
        assert "Hello there 9" in (exports / "c.md").read_text(encoding="utf-8")
        leaks_while_open = _leaks(root)
    assert leaks_while_open == []
    assert _leaks(root) == []
    files = {p.suffix for p in root.rglob("*") if p.is_file()}
    assert {".db", ".sscap", ".zip", ".md", ".json"} <= files


def _leaks(root: Path) -> list[str]:
    """Every place the key (or a fragment of it) shows up: raw files, zip members, and the
    decoded bytes inside captures."""
    needles = [KEY.encode(), KEY.encode("utf-16-le"), b"LEAKCHECK"]
    found: list[str] = []

    def scan(name: str, data: bytes) -> None:
        found.extend(f"{name}: {n!r}" for n in needles if n in data)

    def scan_capture(name: str, capture: Capture) -> None:
        scan(f"{name} (reads)", capture.reads.body())
        if capture.request is not None:
            r = capture.request
            scan(f"{name} (request)", f"{r.url}\n{r.headers}".encode() + r.body)

    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        scan(str(path), data)
        if path.suffix == ".sscap":
            scan_capture(str(path), read_capture(path))
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                for member in zf.namelist():
                    scan(f"{path}!{member}", zf.read(member))
                if "capture.sscap" in zf.namelist():
                    scan_capture(str(path), read_repro_bundle(path))
    return found
