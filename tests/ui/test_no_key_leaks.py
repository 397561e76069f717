"""A planted key never reaches any file the app writes: database, captures, bundles,
exports, logs, settings — through successful and failing turns alike."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import qasync
from pytestqt.qtbot import QtBot

from streamscope.core import paths
from streamscope.core.capture.bundle import write_repro_bundle
from streamscope.core.capture.format import write_capture
from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.store.export import conversation_to_json, conversation_to_markdown
from streamscope.core.turn.model import Turn
from streamscope.demo.server import DemoServer
from streamscope.ui.shell.app import open_profile, setup_logging
from streamscope.ui.shell.main_window import MainWindow
from support.memory_keyring import MemoryKeyring, installed

KEY = "sk-PLANTED-LEAKTEST-7731"


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with installed(backend):
        yield backend


def test_a_planted_key_appears_in_no_file(
    qtbot: QtBot, aloop: qasync.QEventLoop, ring: MemoryKeyring, tmp_path: Path
) -> None:
    setup_logging()
    store, captures = open_profile()
    assert store is not None and captures is not None
    window = MainWindow(demo_speed=50, store=store, captures=captures)
    qtbot.addWidget(window)
    window.show()
    exports = tmp_path / "exports"
    exports.mkdir()
    try:
        with DemoServer(speed=100) as demo:
            endpoint = replace(
                new_endpoint("custom", name="Leak test"),
                base_url=demo.base_url("openai"),
                key_source="keyring",
                extra_headers={"x-api-key": "", "X-Trace": "visible"},
            )
            window.secrets().set(endpoint.id, KEY)
            window.endpoint_bar.set_endpoints(
                window.endpoints.with_endpoint(endpoint).select(endpoint.id)
            )
            assert window.current_endpoint().id == endpoint.id
            for model in ("demo", "demo-error-429", "demo-cut", "demo-html-502", "demo-tools"):
                window.model_combo.setCurrentText(model)
                window.controller.send(f"hello {model}")

                async def wait() -> Turn | None:
                    await asyncio.sleep(0.05)
                    return await window.controller.runner.wait()

                turn = aloop.run_until_complete(wait())
                assert turn is not None and turn.outcome is not None
                expected = {"demo": "completed", "demo-tools": "completed", "demo-cut": "truncated"}
                assert turn.outcome.value == expected.get(model, "error"), turn.reason
                capture = window.controller.last_capture
                assert capture is not None and capture.request is not None
                sent = {k.lower(): v for k, v in capture.request.headers}
                assert sent["authorization"] == "Bearer ***"  # a key was sent, and masked
                write_capture(exports / f"{model}.sscap", capture)
                write_repro_bundle(exports / f"{model}.zip", capture, turn, app_version="test")
            request = store.load_conversation(
                window.controller.session.conversation_id or 0, limit=None
            )
            (exports / "conv.md").write_text(conversation_to_markdown(request))
            (exports / "conv.json").write_text(json.dumps(conversation_to_json(request)))
            window.save_settings()
    finally:
        aloop.run_until_complete(window.shutdown())
        for handler in logging.getLogger("streamscope").handlers[:]:
            handler.close()
            logging.getLogger("streamscope").removeHandler(handler)
        store.close()

    needles = [KEY.encode(), base64.b64encode(KEY.encode())[:16]]
    written = [p for root in (paths.home(), exports) for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in written)
    assert any(p.name.endswith(".log") for p in written)
    assert any(p.suffix == ".sscap" for p in written)
    blobs: list[tuple[str, bytes]] = []
    for path in written:
        data = path.read_bytes()
        blobs.append((str(path), data))
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                blobs += [(f"{path}:{n}", z.read(n)) for n in z.namelist()]
        if path.suffix == ".sscap" or path.name.endswith(".sscap"):
            for line in data.splitlines():
                obj = json.loads(line)
                if "b64" in obj:
                    blobs.append((f"{path}:read", base64.b64decode(obj["b64"])))
    leaks = [name for name, data in blobs for needle in needles if needle in data]
    assert leaks == []
    # the key really was sent (so the check above means something)
    assert ring.items[("StreamScope", endpoint.id)] == KEY
