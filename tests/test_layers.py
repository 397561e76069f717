"""The core and the demo endpoint never import Qt (checked in a fresh interpreter)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import streamscope
import streamscope.core
import streamscope.demo


def _modules(package: object) -> list[str]:
    path = package.__path__  # type: ignore[attr-defined]
    prefix = package.__name__ + "."  # type: ignore[attr-defined]
    return [m.name for m in pkgutil.walk_packages(path, prefix)]


def test_core_and_demo_never_import_qt() -> None:
    modules = [
        "streamscope.core",
        "streamscope.demo",
        "streamscope.cli",
        *_modules(streamscope.core),
        *_modules(streamscope.demo),
    ]
    assert len(modules) > 2
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "qt = ('PySide6', 'shiboken6', 'qasync')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in qt)\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"Qt imported by core/demo: {result.stdout}"


def test_version_and_help_are_fast_and_headless() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "streamscope", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0
    assert result.stdout.startswith("streamscope ")
    assert result.stdout.split()[1] == streamscope.__version__  # type: ignore[attr-defined]
