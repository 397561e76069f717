"""dev.py (the README's two commands): clear messages instead of Qt stack traces."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_ldconfig(missing: set[str]) -> Any:
    real_run = subprocess.run

    def run(cmd: Any, *args: Any, **kwargs: Any) -> Any:
        if cmd and str(cmd[0]).endswith("ldconfig"):
            dev = load_dev()
            names = [*dev.HEADLESS_LIBS, *dev.WINDOW_LIBS]
            listing = "".join(
                f"\t{n} (libc6,x86-64) => /usr/lib/{n}\n" for n in names if n not in missing
            )
            return subprocess.CompletedProcess(cmd, 0, stdout=listing, stderr="")
        return real_run(cmd, *args, **kwargs)

    return run


def test_missing_qt_libraries_print_the_apt_get_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = load_dev()
    monkeypatch.setattr(dev.sys, "platform", "linux")
    monkeypatch.setattr(
        dev.subprocess, "run", fake_ldconfig({"libglib-2.0.so.0", "libxkbcommon.so.0"})
    )
    with pytest.raises(SystemExit) as info:
        dev.check_qt(window=False)
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "sudo apt-get install --no-install-recommends libglib2.0-0 libxkbcommon0" in err


def test_window_libraries_are_checked_only_for_a_window(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = load_dev()
    monkeypatch.setattr(dev.sys, "platform", "linux")
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(dev.subprocess, "run", fake_ldconfig({"libxcb-cursor.so.0"}))
    assert dev.missing_libs(dev.HEADLESS_LIBS) == []
    assert dev.missing_libs(dev.WINDOW_LIBS) == ["libxcb-cursor0"]
    with pytest.raises(SystemExit):
        dev.check_qt(window=True)
    assert "libxcb-cursor0" in capsys.readouterr().err


def test_usage_without_a_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = load_dev()
    monkeypatch.setattr(dev.sys, "argv", ["dev.py"])
    assert dev.main() == 2
    assert "python3 dev.py test" in capsys.readouterr().out
