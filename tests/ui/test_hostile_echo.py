"""A hostile server echoes the key back everywhere; it reaches no file the app writes.

The vectors (the issue "Nothing lost, nothing leaked"): (1) an in-stream error frame quoting
the key, (2) the key split across two network reads, (3) the key in the answer text — also
split across deltas, and base64 (at each alignment), URL-encoded and hex —, (4) the key in a
response header of any name; plus an HTTP error body quoting it. Through the real window
(keyring, database with its WAL, captures written as they stream, logs, settings, exports, a
repro bundle) and through ``streamscope send --json``. Every file is searched for the key in
every form, each form computed here (not by the scrubber under test).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import logging
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.cli import main as cli_main
from streamscope.core import paths
from streamscope.core.capture.bundle import write_repro_bundle
from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.store.export import conversation_to_json, conversation_to_markdown
from streamscope.core.turn.model import Turn
from streamscope.headless import replay_body
from streamscope.ui.shell.app import open_profile, setup_logging
from streamscope.ui.shell.main_window import MainWindow
from support.memory_keyring import MemoryKeyring, installed
from support.rawhttp import RawServer, chunk, head

KEY = "sk-proj-CANARY-4f9b2c7d1e8a6b3c"


def forms(secret: str) -> list[bytes]:
    """The key as it could be echoed: plain, URL-encoded, hex, and base64 at every alignment
    (a 16-character stretch from the middle of each: present wherever it was encoded)."""
    raw = secret.encode()
    out = [raw, quote(secret, safe="").encode(), raw.hex().encode(), raw.hex().upper().encode()]
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        out.append(encoded[8:24])
        out.append(base64.urlsafe_b64encode(b"\0" * shift + raw)[8:24])
    return out


def _frame(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _text(t: str) -> bytes:
    return _frame(
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": t}}]}
    )


def _finish() -> bytes:
    stop = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return _frame(stop) + b"data: [DONE]\n\n"


def _echoes() -> list[str]:
    raw = KEY.encode()
    b64 = [base64.b64encode(b"x" * s + raw).decode() for s in range(3)]
    return [
        f"Your key is {KEY[:9]}",  # split across two deltas ...
        f"{KEY[9:]}. ",
        f"base64: {' '.join(b64)} ",
        f"url: {quote(KEY, safe='')} hex: {raw.hex()} ",
        f"json: {json.dumps({'authorization': 'Bearer ' + KEY})}",
    ]


async def _hostile(request: bytes, w: asyncio.StreamWriter) -> None:
    """Answer by the model named in the request (each one a vector)."""
    body = json.loads(request.split(b"\r\n\r\n", 1)[1] or b"{}")
    model = body.get("model", "")
    if model == "http-401":
        error = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}",
                                      "code": "invalid_api_key"}}).encode()  # fmt: skip
        w.write(head("401 Unauthorized", "application/json") + chunk(error) + b"0\r\n\r\n")
        return
    extra = f"x-echo-authorization: Bearer {KEY}\r\nx-trace: {KEY[4:]}\r\n"
    w.write(head(extra=extra if model == "header-echo" else ""))
    if model == "error-frame":
        w.write(chunk(_text("Partial ")))
        w.write(chunk(_frame({"error": {"message": f"Invalid credentials Bearer {KEY}"}})))
    elif model == "split-reads":
        stream = _text(f"the key: {KEY}") + _finish()
        cut = stream.index(KEY.encode()) + 10  # the key itself split between two reads
        w.write(chunk(stream[:cut]))
        await w.drain()
        await asyncio.sleep(0.3)
        w.write(chunk(stream[cut:]))
    else:  # echo-text, header-echo
        for text in _echoes():
            w.write(chunk(_text(text)))
            await w.drain()
            await asyncio.sleep(0.01)
        w.write(chunk(_finish()))
    w.write(b"0\r\n\r\n")
    await w.drain()


MODELS = {
    "echo-text": "completed",
    "split-reads": "completed",
    "error-frame": "error",
    "header-echo": "completed",
    "http-401": "error",
}


@pytest.fixture
def server() -> Iterator[RawServer]:
    srv = RawServer()
    srv.handler = _hostile
    yield srv
    srv.close()


def _files(roots: list[Path]) -> list[tuple[str, bytes]]:
    """Every file written (zip members and capture reads decoded too)."""
    blobs: list[tuple[str, bytes]] = []
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            blobs.append((str(path), data))
            if path.suffix == ".zip":
                with zipfile.ZipFile(path) as z:
                    blobs += [(f"{path}:{n}", z.read(n)) for n in z.namelist()]
            if path.suffix == ".sscap":
                body = b""
                for line in data.splitlines():
                    obj = json.loads(line)
                    if "b64" in obj:
                        body += base64.b64decode(obj["b64"])
                        blobs.append((f"{path}:read", base64.b64decode(obj["b64"])))
                    elif "end" in obj and obj["end"].get("body_b64"):
                        blobs.append((f"{path}:end", base64.b64decode(obj["end"]["body_b64"])))
                # and what a replay of it would show: pieces spelled out across deltas, joined
                replayed = replay_body(body, "openai")
                blobs.append((f"{path}:replayed", replayed.text.encode()))
    return blobs


def test_an_echoed_key_reaches_no_file_the_window_writes(
    qtbot: QtBot, aloop: qasync.QEventLoop, server: RawServer, tmp_path: Path
) -> None:
    with installed(MemoryKeyring()):
        setup_logging()
        store, captures = open_profile()
        assert store is not None and captures is not None
        window = MainWindow(store=store, captures=captures)
        qtbot.addWidget(window)
        exports = tmp_path / "exports"
        exports.mkdir()
        try:
            endpoint = replace(
                new_endpoint("custom", name="Hostile"),
                base_url=f"{server.url}/v1",
                key_source="keyring",
            )
            window.secrets().set(endpoint.id, KEY)
            window.endpoint_bar.set_endpoints(
                window.endpoints.with_endpoint(endpoint).select(endpoint.id)
            )
            shown: dict[str, str] = {}
            for model, outcome in MODELS.items():
                window.model_combo.setCurrentText(model)
                window.controller.send(f"hello {model}")

                async def wait() -> Turn | None:
                    await asyncio.sleep(0.05)
                    return await window.controller.runner.wait()

                turn = aloop.run_until_complete(wait())
                assert turn is not None and turn.outcome is not None
                assert turn.outcome.value == outcome, (model, turn.reason)
                card = window.controller.answer_card(-1)
                shown[model] = card.text()  # (live, the text is as it came)
                if model in ("echo-text", "split-reads"):
                    assert not card.redacted_label.isHidden()  # the saved copy differs: said
                capture, saved = (
                    window.controller.last_capture,
                    window.controller.runner.last_saved_turn,
                )
                assert capture is not None and saved is not None
                write_repro_bundle(exports / f"{model}.zip", capture, saved, app_version="test")
                if model == "http-401":  # its body: shown, a frame row, exported — masked
                    shown_body = window.inspector.request_panel.response_view.toPlainText()
                    assert f"Incorrect API key provided: {'*' * len(KEY)}" in shown_body
                    _request, *response = window.inspector.request_panel.texts()
                    assert KEY not in "\n".join(response)  # (the request quotes the history)
                    assert window.inspector.frames_model.event_and_summary(0)[0] == "body"
                    window.power_tools.export_frames_to(exports / "frames-401.jsonl")
            assert KEY in shown["echo-text"] and KEY in shown["split-reads"]
            conv = store.load_conversation(
                window.controller.session.conversation_id or 0, limit=None
            )
            (exports / "conv.md").write_text(conversation_to_markdown(conv))
            (exports / "conv.json").write_text(json.dumps(conversation_to_json(conv)))
            assert "*" * len(KEY) in conv.messages[1].text  # masked in place, same length
            window.save_settings()
        finally:
            aloop.run_until_complete(window.shutdown())
            for handler in logging.getLogger("streamscope").handlers[:]:
                handler.close()
                logging.getLogger("streamscope").removeHandler(handler)
            store.close()

    written = _files([paths.home(), exports])
    assert any(name.endswith(".db-wal") or name.endswith(".db") for name, _ in written)
    assert any(name.endswith(".sscap:read") for name, _ in written)
    assert sum(name.endswith(".log") for name, _ in written) == 1
    assert any(name.endswith("frames-401.jsonl") for name, _ in written)
    leaks = [(name, needle) for name, data in written for needle in forms(KEY) if needle in data]
    assert leaks == []
    assert len(server.requests) == len(MODELS)
    assert all(f"Bearer {KEY}".encode() in r for r in server.requests)  # the key was sent


def test_send_json_masks_an_echoed_key(server: RawServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CANARY_KEY", KEY)
    for model in MODELS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli_main(["send", "--base-url", f"{server.url}/v1", "--model", model,
                             "--api-key-env", "CANARY_KEY", "--json", "hi"])  # fmt: skip
        printed = out.getvalue().encode()
        assert code == {"completed": 0, "error": 4}[MODELS[model]], printed
        assert [f for f in forms(KEY) if f in printed] == [], model
        result = json.loads(printed)
        if model == "echo-text":
            assert "*" * len(KEY) in result["text"]
        if model == "error-frame":
            assert result["reason"] == "in-stream error: Invalid credentials Bearer " + "*" * len(
                KEY
            )
