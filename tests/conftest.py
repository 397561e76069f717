"""Test configuration shared by every layer.

Qt runs offscreen, and nothing a test does touches the developer's real profile or keyring.
"""

from __future__ import annotations

import os
import tempfile

os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("LANG", "C.UTF-8")
os.environ["STREAMSCOPE_HOME"] = tempfile.mkdtemp(prefix="streamscope-test-home-")
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMSCOPE_HOME", str(tmp_path))
