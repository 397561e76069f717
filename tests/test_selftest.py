"""`streamscope --self-test`: the check an installed app runs on itself.

Run as a child process, the way an installer or CI calls it (its own QApplication, its own
event loop); the installed bundle runs the same code in packaging/ci_deb.sh.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamscope import selftest


def _run(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)  # the self-test must choose offscreen by itself
    env["STREAMSCOPE_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_expected_text_is_the_demo_scenarios_answer() -> None:
    text = selftest.expected_text("hello")
    assert text.startswith("You wrote: “hello”")
    assert "naïve café — 日本語 — 🚀" in text


@pytest.mark.parametrize(
    ("environ", "expected"),
    [({}, False), ({"DISPLAY": ":0"}, True), ({"WAYLAND_DISPLAY": "wayland-0"}, True)],
)
def test_has_display(environ: dict[str, str], expected: bool) -> None:
    if sys.platform in ("win32", "darwin"):
        expected = True
    assert selftest.has_display(environ) is expected


def test_self_test_passes_offscreen_and_leaves_the_profile_alone(tmp_path: Path) -> None:
    result = _run(
        "from streamscope.cli import main; raise SystemExit(main(['--self-test']))", tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert re.match(r"self-test ok: \d+ modules, window \(offscreen\), \d+ font families", lines[0])
    assert "font families, demo turn completed in the stream worker process (" in lines[0]
    assert list(tmp_path.iterdir()) == []  # it used a temporary profile, not STREAMSCOPE_HOME


def test_self_test_fails_with_a_reason(tmp_path: Path) -> None:
    code = (
        "import streamscope.selftest as s\n"
        "s.expected_text = lambda prompt=s.PROMPT: 'something else'\n"
        "raise SystemExit(s.run())\n"
    )
    result = _run(code, tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("self-test failed: the demo turn's text differs")
    assert len(result.stdout.splitlines()) == 1
