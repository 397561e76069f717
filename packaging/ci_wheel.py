#!/usr/bin/env python3
"""CI stage: StreamScope as a Python tool (``pipx install`` / ``uv tool install``).

    python3 packaging/ci_wheel.py [--dist DIR] [--keep]

1. builds the wheel and the sdist with the pinned build backend (hatchling, from
   ``[build-system]`` in pyproject.toml) in a throw-away build venv;
2. checks the wheel carries what the app loads at runtime (:data:`WHEEL_MUST_HOLD`) and the
   ``streamscope`` console script, and the sdist carries the sources and resources;
3. creates a fresh venv, installs the wheel with its dependencies from the package index,
   pinned by ``constraints.txt`` (what pipx/uv would do, with our pins), and runs
   ``streamscope --version`` and ``streamscope --self-test`` from ``/`` (offscreen when there is
   no display) — nothing from the source tree is importable there.

Only the standard library is used here. Prints the sizes and the stage's time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WHEEL_MUST_HOLD = (
    "streamscope/__init__.py",
    "streamscope/cli.py",
    "streamscope/selftest.py",
    "streamscope/resources/icons/streamscope.svg",
    "streamscope/resources/io.github.streamscope.StreamScope.desktop",
)
SDIST_MUST_HOLD = (
    "pyproject.toml",
    "README.md",
    "constraints.txt",
    "app/streamscope/cli.py",
    "resources/icons/streamscope.svg",
)


def say(message: str) -> None:
    print(f"[wheel] {message}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    say("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [str(c) for c in cmd], check=True, text=True, **kwargs
    )


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def make_venv(venv: Path) -> Path:
    run(sys.executable, "-m", "venv", venv)
    return venv_python(venv)


def build_requirements() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    requires: list[str] = pyproject["build-system"]["requires"]
    return requires


def build(dist: Path, work: Path) -> tuple[Path, Path]:
    """The wheel and the sdist, built by the pinned backend. Returns (wheel, sdist)."""
    py = make_venv(work / "build-venv")
    pip = (py, "-m", "pip", "--disable-pip-version-check", "install", "--quiet")
    run(*pip, *build_requirements())
    dist.mkdir(parents=True, exist_ok=True)
    for old in [*dist.glob("streamscope-*.whl"), *dist.glob("streamscope-*.tar.gz")]:
        old.unlink()
    run(py, "-m", "hatchling", "build", "-t", "wheel", "-t", "sdist", "-d", dist, cwd=ROOT)
    (wheel,) = dist.glob("streamscope-*.whl")
    (sdist,) = dist.glob("streamscope-*.tar.gz")
    return wheel, sdist


def check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [n for n in WHEEL_MUST_HOLD if n not in names]
        if missing:
            raise SystemExit(f"[wheel] FAIL: {wheel.name} lacks {', '.join(missing)}")
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        text = zf.read(entry_points).decode()
        if "streamscope = streamscope.cli:main" not in text:
            raise SystemExit(f"[wheel] FAIL: no streamscope console script in {entry_points}")
        stray = [n for n in names if n.startswith(("tests/", "packaging/", "app/"))]
        if stray:
            raise SystemExit(f"[wheel] FAIL: source-tree files in the wheel: {stray[:5]}")


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as tf:
        top = sdist.name.removesuffix(".tar.gz")
        names = {n.removeprefix(top + "/") for n in tf.getnames()}
    missing = [n for n in SDIST_MUST_HOLD if n not in names]
    if missing:
        raise SystemExit(f"[wheel] FAIL: {sdist.name} lacks {', '.join(missing)}")


def install_and_self_test(wheel: Path, work: Path) -> None:
    py = make_venv(work / "tool-venv")
    started = time.monotonic()
    run(
        py,
        "-m",
        "pip",
        "--disable-pip-version-check",
        "install",
        "--quiet",
        "-c",
        ROOT / "constraints.txt",
        wheel,
    )
    say(f"installed from the package index in {time.monotonic() - started:.0f} s")
    exe = py.parent / ("streamscope.exe" if os.name == "nt" else "streamscope")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STREAMSCOPE_HOME")}
    env.setdefault("LANG", "C.UTF-8")
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")) and sys.platform.startswith("linux"):
        env["QT_QPA_PLATFORM"] = "offscreen"
    version = run(exe, "--version", cwd="/", env=env, capture_output=True).stdout.strip()
    if not re.fullmatch(r"streamscope \S+", version):
        raise SystemExit(f"[wheel] FAIL: --version printed {version!r}")
    # The installed package, not the source tree, answers:
    where = run(
        py,
        "-c",
        "import streamscope; print(streamscope.__file__)",
        cwd="/",
        env=env,
        capture_output=True,
    ).stdout.strip()
    if not where.startswith(str(work)):
        raise SystemExit(f"[wheel] FAIL: streamscope imported from {where}, not the venv")
    result = subprocess.run(
        [str(exe), "--self-test"], cwd="/", env=env, capture_output=True, text=True, timeout=300
    )
    print(result.stdout.strip())
    if result.returncode != 0 or not result.stdout.startswith("self-test ok"):
        print(result.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"[wheel] FAIL: --self-test exited {result.returncode}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument("--keep", action="store_true", help="keep the venvs (prints where)")
    args = parser.parse_args()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="streamscope-wheel-"))
    try:
        wheel, sdist = build(args.dist.resolve(), work)
        check_wheel(wheel)
        check_sdist(sdist)
        say(f"{wheel.name}: {wheel.stat().st_size} bytes; {sdist.name}: {sdist.stat().st_size}")
        install_and_self_test(wheel, work)
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    say(
        "ok: wheel + sdist built, wheel installed and self-tested "
        f"({time.monotonic() - started:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
