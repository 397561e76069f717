"""THIRD_PARTY_NOTICES.txt for a bundle: every bundled Python distribution with its licence.

The spec calls :func:`write_notices` with the top-level module names PyInstaller collected;
each is mapped to its distribution through ``importlib.metadata`` (run in the build's venv),
and the distribution's licence expression / classifiers and licence files are copied in.
Qt (through PySide6) is LGPLv3: the notice says where its source is and that the Qt libraries
are separate, replaceable shared objects in the bundle. On Debian, shared libraries the bundle
carries from the system are listed with their package's copyright file.
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

QT_NOTICE = """\
Qt 6 and Qt for Python (PySide6, shiboken6)
  Licence: GNU Lesser General Public License v3.0 (LGPL-3.0-only)
  https://www.qt.io/licensing  ·  source: https://download.qt.io/official_releases/qt/
  and https://download.qt.io/official_releases/QtForPython/
  The Qt libraries and the PySide6 modules are bundled unmodified as separate shared
  libraries (Qt/lib, PySide6/*.so|*.pyd|*.dylib). You may replace them with your own builds
  of the same version; StreamScope links to them dynamically. The full LGPLv3 and GPLv3 texts
  are at the end of this file. Qt bundles third-party code (ICU, HarfBuzz, FreeType, libpng,
  PCRE2, zlib ...); see https://doc.qt.io/qt-6/licenses-used-in-qt.html.
"""

PYTHON_NOTICE = """\
Python {version}
  Licence: Python Software Foundation License Version 2 (PSF-2.0)
  https://docs.python.org/3/license.html
"""

LICENCES = Path(__file__).resolve().parent / "licenses"
LICENSE_NAMES = ("LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS")


def distributions_for(modules: Iterable[str]) -> list[md.Distribution]:
    """The installed distributions providing the given top-level module names."""
    by_module = md.packages_distributions()
    names: set[str] = set()
    for module in modules:
        names.update(by_module.get(module.split(".")[0], ()))
    dists = {}
    for name in names:
        dist = md.distribution(name)
        dists[dist.metadata["Name"].lower()] = dist
    return [dists[k] for k in sorted(dists)]


def licence_of(dist: md.Distribution) -> str:
    meta = dist.metadata
    expression = meta.get("License-Expression")
    if expression:
        return expression
    classifiers = [
        c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")
    ]
    if classifiers:
        return ", ".join(classifiers)
    text = (meta.get("License") or "").strip()
    return text.splitlines()[0] if text else "see the licence text below"


def licence_texts(dist: md.Distribution) -> list[tuple[str, str]]:
    out = []
    for file in dist.files or ():
        name = file.name.upper()
        if any(name.startswith(n) for n in LICENSE_NAMES) and "dist-info" in str(file):
            try:
                out.append(
                    (file.name, Path(str(file.locate())).read_text("utf-8", errors="replace"))
                )
            except OSError:
                continue
    return out


def system_library_packages(paths: Iterable[str]) -> dict[str, list[str]]:
    """Debian package -> bundled library paths, for libraries taken from the system."""
    if not shutil.which("dpkg-query"):
        return {}
    found: dict[str, list[str]] = {}
    for path in sorted(set(paths)):
        if not path.startswith(("/usr/lib", "/lib")):
            continue
        result = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True)
        if result.returncode == 0:
            package = result.stdout.split(":")[0]
            found.setdefault(package, []).append(Path(path).name)
    return found


def render(modules: Iterable[str], system_libs: Iterable[str] = ()) -> str:
    dists = distributions_for(modules)
    out = [
        "StreamScope — third-party notices",
        "=" * 34,
        "",
        "StreamScope is MIT-licensed (see LICENSE). This bundle also contains the software",
        "listed below, each under its own licence.",
        "",
        PYTHON_NOTICE.format(version=platform.python_version()),
        QT_NOTICE,
        "Bundled Python packages",
        "-----------------------",
    ]
    for dist in dists:
        out.append(f"{dist.metadata['Name']} {dist.version}: {licence_of(dist)}")
    system = system_library_packages(system_libs)
    if system:
        out += ["", "Shared libraries taken from the build system (Debian packages)", "-" * 62]
        for package, libs in sorted(system.items()):
            out.append(f"{package}: {', '.join(libs)}  (/usr/share/doc/{package}/copyright)")
    out += ["", "", "Licence texts", "=============", ""]
    for dist in dists:
        for filename, text in licence_texts(dist):
            out += [f"--- {dist.metadata['Name']} {dist.version}: {filename} ---", text.strip(), ""]
    for licence in ("LGPL-3.0.txt", "GPL-3.0.txt"):
        text = (LICENCES / licence).read_text(encoding="utf-8").strip()
        out += [f"--- Qt 6 / PySide6 / shiboken6: {licence} ---", text, ""]
    for package in sorted(system):
        copyright_file = Path("/usr/share/doc") / package / "copyright"
        if copyright_file.is_file():
            text = copyright_file.read_text(encoding="utf-8", errors="replace").strip()
            out += [f"--- Debian package {package}: copyright ---", text, ""]
    return "\n".join(out) + "\n"


def write_notices(target: Path, modules: Iterable[str], system_libs: Iterable[str] = ()) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(modules, system_libs), encoding="utf-8")
    return target
