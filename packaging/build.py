#!/usr/bin/env python3
"""Build StreamScope's one-folder bundle and its Linux .deb.

    python3 packaging/build.py bundle                     # dist/streamscope/ (any OS)
    python3 packaging/build.py deb [--compression xz]     # + dist/streamscope_<v>_<arch>.deb

Uses the project's .venv (created if missing) with the pinned versions:
``pip install -c constraints.txt -e '.[packaging]'`` (editable, as dev.py installs it), then
runs PyInstaller with packaging/streamscope.spec. `deb` lays out the package (bundle in
/opt/streamscope, /usr/bin/streamscope, .desktop entry, hicolor icons, copyright), computes
Depends from the system libraries the bundle links but does not carry (objdump + dpkg-query)
and builds with dpkg-deb: zstd (fast, for CI) by default, xz for releases. Prints the sizes.
Only the standard library is used here.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
import dev  # noqa: E402  (the task runner: one venv location, one soname -> package table)

VENV, PY = dev.VENV, dev.PY
DIST = ROOT / "dist"
WORK = ROOT / "build"
BUNDLE = DIST / "streamscope"
PREFIX = "/opt/streamscope"
APP_ID = "io.github.streamscope.StreamScope"  # = streamscope.APP_ID (a test checks)
LINUX = HERE / "linux"

# Always depended on, whatever objdump finds: Qt loads some of these with dlopen
# (libdbus-1, libGL/libEGL through the xcb GL integrations).
BASE_DEPENDS = ("libgl1", "libegl1", "libxcb1", "libfontconfig1", "libxkbcommon0", "libdbus-1-3")
# Sonames whose package is known when the library is not installed on the build machine.
KNOWN_PACKAGES = {
    **dev.HEADLESS_LIBS,
    **dev.WINDOW_LIBS,
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}


def say(message: str) -> None:
    print(f"[build] {message}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, **kwargs: object) -> None:
    say("$ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)  # type: ignore[call-overload]


def version() -> str:
    text = (ROOT / "app" / "streamscope" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not match:
        raise SystemExit("no __version__ in app/streamscope/__init__.py")
    return match.group(1)


def debian_version(v: str) -> str:
    """PEP 440 -> Debian: pre-releases sort before the release (0.2.0rc1 -> 0.2.0~rc1)."""
    return re.sub(r"(\d)(a|b|rc|\.dev)(\d+)", r"\1~\2\3", v).replace("~.dev", "~dev")


# -- the bundle ---------------------------------------------------------------------------


def ensure_venv() -> None:
    if not PY.exists():
        run(sys.executable, "-m", "venv", VENV)
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    stamp = VENV / ".streamscope-installed-packaging"
    if stamp.exists() and stamp.read_text() == digest.hexdigest():
        return
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
        f"{ROOT}[packaging]",
    )
    stamp.write_text(digest.hexdigest())


def build_bundle() -> Path:
    ensure_venv()
    started = time.monotonic()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    run(
        PY,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--clean",
        "--log-level",
        "WARN",
        "--distpath",
        DIST,
        "--workpath",
        WORK / "pyinstaller",
        HERE / "streamscope.spec",
        env=env,
    )
    say(f"bundle: {BUNDLE} ({du_kib(BUNDLE) / 1024:.1f} MiB) in {time.monotonic() - started:.0f} s")
    return BUNDLE


def du_kib(path: Path) -> int:
    """Disk usage the way dpkg counts Installed-Size: KiB per file, rounded up."""
    total = 0
    for p in [path, *path.rglob("*")]:
        st = p.lstat()
        total += 1 if p.is_symlink() or p.is_dir() else (st.st_size + 1023) // 1024
    return total


# -- Depends ------------------------------------------------------------------------------


def elf_files(root: Path) -> list[Path]:
    out = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            with p.open("rb") as f:
                if f.read(4) == b"\x7fELF":
                    out.append(p)
    return out


def needed_and_glibc(files: list[Path]) -> tuple[set[str], tuple[int, ...]]:
    """The NEEDED sonames of `files` and the newest GLIBC_x.y symbol version they require."""
    needed: set[str] = set()
    glibc: tuple[int, ...] = (0,)
    for chunk in range(0, len(files), 50):
        out = subprocess.run(
            ["objdump", "-p", *map(str, files[chunk : chunk + 50])],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        needed.update(re.findall(r"^\s+NEEDED\s+(\S+)", out, re.M))
        for v in re.findall(r"\bGLIBC_(\d+(?:\.\d+)+)\b", out):
            glibc = max(glibc, tuple(int(x) for x in v.split(".")))
    return needed, glibc


def package_of(soname: str, ldconfig: dict[str, str]) -> str | None:
    path = ldconfig.get(soname)
    candidates: list[str] = []
    if path:
        for p in (path, os.path.realpath(path)):
            candidates += [p, p.removeprefix("/usr") if p.startswith("/usr/") else "/usr" + p]
    for candidate in candidates:
        result = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True, text=True)
        if result.returncode == 0:
            return result.stdout.split(":")[0].split(",")[0].strip()
    return KNOWN_PACKAGES.get(soname)


def compute_depends(bundle: Path) -> list[str]:
    files = elf_files(bundle)
    needed, glibc = needed_and_glibc(files)
    carried = {p.name for p in bundle.rglob("*")}
    ldconfig = dict(
        re.findall(
            r"^\s+(\S+) \(libc6,x86-64[^)]*\) => (\S+)$",
            subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout,
            re.M,
        )
    )
    packages = set(BASE_DEPENDS)
    unknown = []
    for soname in sorted(needed - carried):
        package = package_of(soname, ldconfig)
        if package is None:
            unknown.append(soname)
        else:
            packages.add(package)
    if unknown:
        raise SystemExit(
            "no Debian package found for " + ", ".join(unknown) + ": install the libraries on "
            "the build machine, or add them to KNOWN_PACKAGES in packaging/build.py"
        )
    packages.discard("libc6")
    depends = [f"libc6 (>= {'.'.join(map(str, glibc))})", *sorted(packages)]
    say(f"Depends: {', '.join(depends)}")
    return depends


# -- the .deb -----------------------------------------------------------------------------


def stage_deb(bundle: Path, stage: Path) -> None:
    if stage.exists():
        shutil.rmtree(stage)
    opt = stage / PREFIX.lstrip("/")
    shutil.copytree(bundle, opt, symlinks=True)
    (stage / "usr/bin").mkdir(parents=True)
    (stage / "usr/bin/streamscope").symlink_to(f"{PREFIX}/streamscope")
    for folder, name in (
        ("usr/share/applications", f"{APP_ID}.desktop"),
        ("usr/share/metainfo", f"{APP_ID}.metainfo.xml"),
        ("usr/share/mime/packages", f"{APP_ID}.mime.xml"),  # dpkg triggers update the cache
    ):
        (stage / folder).mkdir(parents=True)
        shutil.copy2(LINUX / name, stage / folder / name.replace(".mime.xml", ".xml"))
    icons = WORK / "pyinstaller" / "streamscope" / "icons" / "hicolor"  # rendered by the spec
    shutil.copytree(icons, stage / "usr/share/icons/hicolor")
    scalable = stage / "usr/share/icons/hicolor/scalable/apps"
    scalable.mkdir(parents=True)
    shutil.copy2(ROOT / "resources/icons/streamscope.svg", scalable / f"{APP_ID}.svg")
    man1 = stage / "usr/share/man/man1"
    man1.mkdir(parents=True)
    (man1 / "streamscope.1.gz").write_bytes(gz(manpage()))
    doc = stage / "usr/share/doc/streamscope"
    doc.mkdir(parents=True)
    # A native package (no Debian revision): its Debian changelog is changelog.gz.
    (doc / "changelog.gz").write_bytes(gz((LINUX / "changelog").read_bytes()))
    if not (bundle / "_internal/THIRD_PARTY_NOTICES.txt").is_file():
        raise SystemExit("the bundle has no _internal/THIRD_PARTY_NOTICES.txt")
    (doc / "copyright").write_text(COPYRIGHT.format(license=read_license()), encoding="utf-8")
    overrides = stage / "usr/share/lintian/overrides"
    overrides.mkdir(parents=True)
    shutil.copy2(LINUX / "lintian-overrides", overrides / "streamscope")
    drop_foreign_runpaths(opt)
    for p in [stage, *stage.rglob("*")]:
        if p.is_symlink():
            continue
        executable = p.is_dir() or (p.stat().st_mode & 0o111 and not SHARED_LIBRARY.search(p.name))
        p.chmod(0o755 if executable else 0o644)


SHARED_LIBRARY = re.compile(r"\.so(\.[\d.]+)?$")  # libfoo.so, libfoo.so.6, x.abi3.so.6.11

COPYRIGHT = f"""StreamScope

{{license}}


The third-party components bundled in {PREFIX} (Python, Qt/PySide6 and the Python
packages StreamScope uses) are listed with their licences, and the licence texts they
require are reproduced, in {PREFIX}/_internal/THIRD_PARTY_NOTICES.txt. On Debian systems
the GNU LGPL 3, GNU GPL 3 and Apache 2.0 licences are also in /usr/share/common-licenses/.
"""


def read_license() -> str:
    return (ROOT / "LICENSE").read_text(encoding="utf-8").strip()


def drop_foreign_runpaths(root: Path) -> None:
    """Remove RUNPATHs naming folders outside the package (the build machine's Python, e.g.
    /root/.pyenv/.../lib): the bundle's loader finds its libraries itself, and a path into
    someone's home is where a planted library would be picked up. Needs patchelf."""
    if not shutil.which("patchelf"):
        say("patchelf is missing: RUNPATHs left as they are (apt-get install patchelf)")
        return
    cleared = 0
    for elf in elf_files(root):
        result = subprocess.run(["patchelf", "--print-rpath", str(elf)], capture_output=True)
        paths = result.stdout.decode().strip().split(":") if result.returncode == 0 else []
        if any(p and not p.startswith("$ORIGIN") for p in paths):
            subprocess.run(["patchelf", "--remove-rpath", str(elf)], check=True)
            cleared += 1
    say(f"RUNPATH removed from {cleared} files")


def write_md5sums(stage: Path) -> None:
    """DEBIAN/md5sums: what `dpkg --verify` (debsums) checks installed files against."""
    lines = []
    for p in sorted(stage.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.relative_to(stage).parts[0] != "DEBIAN":
            digest = hashlib.md5(p.read_bytes()).hexdigest()
            lines.append(f"{digest}  {p.relative_to(stage).as_posix()}\n")
    (stage / "DEBIAN/md5sums").write_text("".join(lines), encoding="utf-8")


def gz(data: bytes) -> bytes:
    """gzip -9n: no name, no time stamp (reproducible; what lintian expects)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def manpage() -> bytes:
    """streamscope(1) from the CLI's argparse definition (packaging/manpage.py, run by the
    venv's Python: the parser loads the dialect registry)."""
    python = PY if PY.exists() else Path(sys.executable)
    return subprocess.run(
        [str(python), str(HERE / "manpage.py")], check=True, capture_output=True
    ).stdout


def build_deb(bundle: Path, compression: str) -> Path:
    for tool in ("dpkg-deb", "dpkg-query", "objdump"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing: apt-get install dpkg-dev binutils")
    arch = subprocess.run(
        ["dpkg", "--print-architecture"], check=True, capture_output=True, text=True
    ).stdout.strip()
    deb_version = debian_version(version())
    stage = WORK / "deb" / f"streamscope_{deb_version}_{arch}"
    stage_deb(bundle, stage)
    if shutil.which("desktop-file-validate"):
        run("desktop-file-validate", stage / f"usr/share/applications/{APP_ID}.desktop")
    if shutil.which("appstreamcli"):
        run(
            "appstreamcli",
            "validate",
            "--no-net",
            stage / f"usr/share/metainfo/{APP_ID}.metainfo.xml",
        )
    control = (HERE / "linux/control.in").read_text(encoding="utf-8")
    installed_kib = du_kib(stage)
    fields = {
        "@VERSION@": deb_version,
        "@ARCH@": arch,
        "@INSTALLED_SIZE@": str(installed_kib),
        "@DEPENDS@": ", ".join(compute_depends(stage / PREFIX.lstrip("/"))),
    }
    for key, value in fields.items():
        control = control.replace(key, value)
    debian = stage / "DEBIAN"
    debian.mkdir()
    (debian / "control").write_text(control, encoding="utf-8")
    for script in ("postinst", "postrm"):
        shutil.copy2(HERE / "linux" / script, debian / script)
        (debian / script).chmod(0o755)
    write_md5sums(stage)
    (debian / "md5sums").chmod(0o644)
    DIST.mkdir(exist_ok=True)
    for old in DIST.glob("streamscope_*.deb"):
        old.unlink()
    deb = DIST / f"streamscope_{deb_version}_{arch}.deb"
    started = time.monotonic()
    run("dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", stage, deb)
    seconds = time.monotonic() - started
    say(
        f"{deb.name}: {deb.stat().st_size / 1e6:.1f} MB ({compression}, {seconds:.0f} s); "
        f"installed size {installed_kib} KiB ({installed_kib / 1024:.1f} MiB)"
    )
    return deb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("bundle", help="the PyInstaller one-folder bundle in dist/streamscope/")
    deb = sub.add_parser("deb", help="the bundle, then dist/streamscope_<version>_<arch>.deb")
    deb.add_argument(
        "--compression",
        choices=("zstd", "xz"),
        default="zstd",
        help="zstd (default, fast: CI) or xz (smaller: releases)",
    )
    deb.add_argument("--no-bundle", action="store_true", help="reuse dist/streamscope/")
    args = parser.parse_args()
    if args.command == "bundle":
        build_bundle()
        return 0
    if not sys.platform.startswith("linux"):
        raise SystemExit("a .deb is built on Linux (Debian 12 or newer)")
    bundle = BUNDLE if args.no_bundle else build_bundle()
    build_deb(bundle, args.compression)
    return 0


if __name__ == "__main__":
    sys.exit(main())
