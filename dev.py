#!/usr/bin/env python3
"""StreamScope's task runner: set up a pinned virtual environment, then run the app or the tests.

    python3 dev.py run     # create .venv, install pinned deps, open the app (demo endpoint)
    python3 dev.py test    # create .venv, install pinned deps + test tools, run ruff, mypy, pytest

Only the standard library is used here, so it works on a machine that has nothing but Python 3.11+
(with venv) and git. Installs are skipped when pyproject.toml and constraints.txt are unchanged.
Extra arguments after `test` go to pytest; after `run`, to the app.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("STREAMSCOPE_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")

# Shared objects Qt needs, by soname, with the Debian/Ubuntu package that ships each.
HEADLESS_LIBS = {
    "libglib-2.0.so.0": "libglib2.0-0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libX11.so.6": "libx11-6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libxkbcommon.so.0": "libxkbcommon0",
}
WINDOW_LIBS = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}


def say(message: str) -> None:
    print(f"[dev.py] {message}", file=sys.stderr, flush=True)


def fail(message: str) -> None:
    print(f"\n[dev.py] {message}\n", file=sys.stderr, flush=True)
    raise SystemExit(1)


def run(*cmd: str | Path, **kwargs: object) -> None:
    result = subprocess.run([str(c) for c in cmd], check=False, **kwargs)  # type: ignore[call-overload]
    if result.returncode:
        raise SystemExit(result.returncode)


def ensure_venv(extra: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py itself may run on an older Python
        fail(f"Python 3.11 or newer is needed; this is {sys.version.split()[0]}.")
    if not PY.exists():
        say(f"creating virtual environment in {VENV}")
        made = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True)
        if made.returncode or not PY.exists():
            shutil.rmtree(VENV, ignore_errors=True)
            fail(
                "Could not create a virtual environment (the venv module or ensurepip is "
                "missing).\nFix it with:  sudo apt-get install python3-venv\n"
                + made.stderr.decode(errors="replace")
            )
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    digest.update(extra.encode())
    stamp = VENV / f".streamscope-installed-{extra or 'app'}"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
    say("installing pinned dependencies (constraints.txt)")
    target = f"{ROOT}[{extra}]" if extra else str(ROOT)
    run(
        PY,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-c",
        ROOT / "constraints.txt",
        "-e",
        target,
    )
    stamp.write_text(digest.hexdigest())


def missing_libs(table: dict[str, str]) -> list[str]:
    """Debian packages whose libraries the dynamic loader cannot find (Linux only)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return []
    return sorted({pkg for soname, pkg in table.items() if soname not in cache})


def check_qt(window: bool) -> None:
    packages = missing_libs(HEADLESS_LIBS)
    if window and os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        packages += missing_libs(WINDOW_LIBS)
    if packages:
        fail(
            "Qt needs system libraries that are not installed. Fix it with:\n\n"
            f"    sudo apt-get install --no-install-recommends {' '.join(packages)}"
        )
    probe = subprocess.run(
        [PY, "-c", "from PySide6 import QtGui, QtWidgets"], capture_output=True, text=True
    )
    if probe.returncode:
        fail("PySide6 does not load:\n" + probe.stderr.strip().splitlines()[-1])


def cmd_run(args: list[str]) -> int:
    ensure_venv("")
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        fail(
            "No display: DISPLAY and WAYLAND_DISPLAY are unset. StreamScope is a desktop app;\n"
            "run it in a desktop session, or on a headless machine under a virtual screen:\n\n"
            "    sudo apt-get install xvfb xauth && xvfb-run -a python3 dev.py run"
        )
    check_qt(window=True)
    return subprocess.call([PY, "-m", "streamscope", *args])


def cmd_test(args: list[str]) -> int:
    ensure_venv("test")
    check_qt(window=False)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LANG=os.environ.get("LANG") or "C.UTF-8")
    steps: list[list[str | Path]] = [
        [BIN / "ruff", "check", "app", "tests", "dev.py"],
        [BIN / "ruff", "format", "--check", "app", "tests", "dev.py"],
        [BIN / "mypy"],
        [PY, "-m", "pytest", *args],
    ]
    for step in steps:
        say("$ " + " ".join(str(part) for part in step))
        code = subprocess.call([str(part) for part in step], cwd=ROOT, env=env)
        if code:
            return code
    return 0


def main() -> int:
    commands = {"run": cmd_run, "test": cmd_test}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(__doc__)
        return 2
    return commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
