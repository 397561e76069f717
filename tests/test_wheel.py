"""StreamScope as a Python tool: the wheel carries its resources and works outside the repo.

The full route (hatchling builds wheel + sdist, a fresh venv installs the wheel with its
dependencies from the package index, ``streamscope --self-test``) is the CI stage
``packaging/ci_wheel.py``, run by ``.ci/run``; these tests check its checks and build the
wheel once (with pip, which fetches the pinned backend from the package index).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_ci_wheel", ROOT / "packaging/ci_wheel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ci_wheel = _load()


def _fake_wheel(path: Path, names: list[str], entry: str) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "")
        zf.writestr("streamscope-0.1.0.dist-info/entry_points.txt", entry)
    return path


GOOD_ENTRY = "[console_scripts]\nstreamscope = streamscope.cli:main\n"


def test_wheel_check_names_a_missing_resource(tmp_path: Path) -> None:
    names = list(ci_wheel.WHEEL_MUST_HOLD)
    ci_wheel.check_wheel(_fake_wheel(tmp_path / "ok.whl", names, GOOD_ENTRY))
    names.remove("streamscope/resources/icons/streamscope.svg")
    with pytest.raises(SystemExit, match=r"lacks streamscope/resources/icons/streamscope\.svg"):
        ci_wheel.check_wheel(_fake_wheel(tmp_path / "bad.whl", names, GOOD_ENTRY))


def test_wheel_check_wants_the_console_script(tmp_path: Path) -> None:
    wheel = _fake_wheel(tmp_path / "x.whl", list(ci_wheel.WHEEL_MUST_HOLD), "[console_scripts]\n")
    with pytest.raises(SystemExit, match="no streamscope console script"):
        ci_wheel.check_wheel(wheel)


def test_wheel_check_lists_every_file_under_resources() -> None:
    shipped = {
        "streamscope/resources/" + p.relative_to(ROOT / "resources").as_posix()
        for p in (ROOT / "resources").rglob("*")
        if p.is_file()
    }
    listed = {n for n in ci_wheel.WHEEL_MUST_HOLD if n.startswith("streamscope/resources/")}
    assert listed == shipped


def test_ci_runs_the_wheel_stage_after_the_tests() -> None:
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    test_line = next(i for i, line in enumerate(ci) if line.startswith("python3 dev.py test"))
    assert test_line < ci.index("python3 packaging/ci_wheel.py")
    assert ci_wheel.build_requirements() == ["hatchling==1.27.0"]
    workflow = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert "run: python packaging/ci_wheel.py" in workflow  # the release's wheel job
    assert "needs: [linux-deb, windows, macos, wheel]" in workflow


@pytest.mark.slow
def test_built_wheel_runs_outside_the_repository(tmp_path: Path) -> None:
    """Build the real wheel, unpack it elsewhere and load the icon through the package's own
    resource lookup, from a working directory where the repository is not importable."""
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = out.glob("streamscope-*.whl")
    ci_wheel.check_wheel(wheel)
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    code = (
        "import streamscope, sys\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from streamscope.ui.base.resources import resources_dir, app_icon\n"
        "app = QApplication([])\n"
        "print(streamscope.__file__)\n"
        "print(resources_dir())\n"
        "print(app_icon().pixmap(32, 32).width())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), QT_QPA_PLATFORM="offscreen")
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        str(site / "streamscope/__init__.py"),
        str(site / "streamscope/resources"),
        "32",
    ]
