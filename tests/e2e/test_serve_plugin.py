"""The pytest plugin as an app's test suite uses it: the ``streamscope_serve`` fixture, never
imported (the ``pytest11`` entry point provides it), serving captures committed beside the
tests; loading it imports neither Qt nor the server and starts nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import openai

from streamscope.pytest_plugin import ServeFixture

HI = [{"role": "user", "content": "hi"}]


def test_an_app_test_replays_committed_captures(streamscope_serve: ServeFixture) -> None:
    base_url = streamscope_serve("serve_captures", speed=None)  # (beside this file)
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model="demo", messages=HI, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("You wrote: “hi”\n\n## What this demo shows\n")
    assert text.endswith("Multi-byte text survives every split: naïve café — 日本語 — 🚀\n")
    assert len(text) == 634  # (the demo answer, as the live SDK read it)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (8, 101)
    [served] = streamscope_serve.wait_for(1)
    assert (served.outcome, Path(served.served or "").name) == ("completed", "demo-chat.sscap")


def test_an_app_test_pins_how_its_client_takes_a_rate_limit(
    streamscope_serve: ServeFixture,
) -> None:
    base_url = streamscope_serve(
        "serve_captures", speed=None, loop=True, faults="http=429:retry-after=0/next"
    )
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=1)
    stream = client.chat.completions.create(model="demo", messages=HI, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert len(text) == 634  # (the retry got the recorded answer)
    [report] = streamscope_serve.reactions()["exchanges"]
    assert (report["fault"], report["retries"], report["retry_after_honoured"]) == (
        "http=429:retry-after=0",
        1,
        True,
    )
    assert [x.status for x in streamscope_serve.wait_for(2)] == [429, 200]


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(folder)],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
    )


def test_the_entry_point_loads_the_fixture_and_no_streamscope_turns_it_off(
    tmp_path: Path,
) -> None:
    captures = Path(__file__).parent / "serve_captures"
    (tmp_path / "test_app.py").write_text(
        textwrap.dedent(
            f"""
            import httpx

            def test_replay(streamscope_serve):
                base_url = streamscope_serve({str(captures)!r}, speed=None)
                r = httpx.post(base_url + "/chat/completions", json={{"model": "demo"}})
                assert r.status_code == 200
                assert r.text.endswith("data: [DONE]\\n\\n")
            """
        )
    )
    loaded = _pytest(tmp_path)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert "1 passed" in loaded.stdout
    off = _pytest(tmp_path, "-p", "no:streamscope")
    assert off.returncode == 1
    assert "fixture 'streamscope_serve' not found" in off.stdout


def test_loading_the_plugin_imports_no_qt_and_starts_nothing() -> None:
    code = (
        "import sys, threading\n"
        "import streamscope.pytest_plugin\n"
        "heavy = ('PySide6', 'streamscope.core.serve', 'streamscope.core.capture')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), threading.active_count())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] 1"
