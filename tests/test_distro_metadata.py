"""Distro metadata: one reverse-DNS app id everywhere, AppStream metainfo, the man page from
the CLI's argparse, the Debian changelog, the shared-mime-info types, and the .deb layout
that installs them (staged from a stand-in bundle: no PyInstaller here; the real .deb is
built, checked with appstreamcli and lintian, and installed by packaging/ci_deb.sh)."""

from __future__ import annotations

import gzip
import importlib.util
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

from streamscope import APP_ID, __version__
from streamscope.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
LINUX = ROOT / "packaging/linux"
METAINFO = LINUX / f"{APP_ID}.metainfo.xml"
MIME = LINUX / f"{APP_ID}.mime.xml"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_distro_{name}", ROOT / f"packaging/{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = load("build")
manpage = load("manpage")


def desktop_entry() -> dict[str, str]:
    lines = (LINUX / f"{APP_ID}.desktop").read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines[1:] if "=" in line)


# -- the app id ------------------------------------------------------------------------------


def test_one_reverse_dns_app_id_everywhere() -> None:
    assert APP_ID == "io.github.streamscope.StreamScope"
    meta = ET.parse(METAINFO).getroot()
    assert meta.findtext("id") == APP_ID
    assert meta.findtext("launchable") == f"{APP_ID}.desktop"
    assert meta.findtext("icon") == APP_ID
    assert desktop_entry()["Icon"] == APP_ID
    assert build.APP_ID == APP_ID
    assert f'bundle_identifier="{APP_ID}"' in (ROOT / "packaging/streamscope.spec").read_text()
    # the running app tells Wayland/X11 its id (the .desktop file's name without .desktop)
    assert (
        "app.setDesktopFileName(APP_ID)" in (ROOT / "app/streamscope/ui/shell/app.py").read_text()
    )
    assert sorted(p.name for p in (ROOT / "resources").glob("*.desktop")) == [f"{APP_ID}.desktop"]


def test_metainfo_release_mediatypes_and_binary_match_the_project() -> None:
    meta = ET.parse(METAINFO).getroot()
    releases = meta.findall("releases/release")
    assert releases[0].get("version") == __version__  # newest first
    assert meta.findtext("provides/binary") == "streamscope"
    mediatypes = [m.text for m in meta.findall("provides/mediatype")]
    assert mediatypes == desktop_entry()["MimeType"].rstrip(";").split(";")
    mime_types = [m.get("type") for m in ET.parse(MIME).getroot()]
    assert mediatypes == mime_types
    assert meta.findtext("project_license") == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")


@pytest.mark.skipif(not shutil.which("appstreamcli"), reason="appstream")
def test_metainfo_validates() -> None:
    result = subprocess.run(
        ["appstreamcli", "validate", "--no-net", "--pedantic", str(METAINFO)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout
    # The only remark left: a capital letter in the id (kept: it is the macOS bundle id too).
    remarks = [line for line in result.stdout.splitlines() if re.match(r"[EWIP]: ", line)]
    assert [r.split()[2] for r in remarks] == ["cid-contains-uppercase-letter"], result.stdout


# -- the man page ----------------------------------------------------------------------------


def test_man_page_has_every_subcommand_and_option() -> None:
    page = manpage.render()
    parser = build_parser()
    subcommands = manpage.subcommands(parser)
    assert list(subcommands) == [
        "send",
        "replay",
        "lint",
        "export",
        "tap",
        "serve",
        "bench",
        "demo-server",
    ]
    sections = re.findall(r'^\.SS "(.+)"$', page, re.M)
    assert sections == [manpage.esc(name) for name in subcommands]
    for name, (_help, sub) in subcommands.items():
        body = page.split(f'.SS "{manpage.esc(name)}"', 1)[1].split("\n.SS ", 1)[0]
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"\\fB{manpage.esc(option)}\\fR" in body, (name, option)
    for option in ("--version", "--self-test"):
        assert f"\\fB{manpage.esc(option)}\\fR" in page.split(".SH COMMANDS")[0]
    assert page.startswith(f'.TH STREAMSCOPE 1 "" "streamscope {__version__}"')
    assert "\\fB\\-\\-base\\-url\\fR \\fIBASE_URL\\fR" in page
    assert "(default: 127.0.0.1:8700)" in page  # tap --listen
    for code in ("0", "2", "3", "4", "130"):
        assert f".TP\n\\fB{code}\\fR\n" in page


def test_man_page_escapes_roff() -> None:
    assert manpage.esc("--x") == "\\-\\-x"
    assert manpage.esc(".sscap file") == "\\&.sscap file"
    assert manpage.esc("a\\b") == "a\\eb"


@pytest.mark.skipif(not shutil.which("groff"), reason="groff")
def test_man_page_renders_without_warnings(tmp_path: Path) -> None:
    page = tmp_path / "streamscope.1"
    page.write_text(manpage.render(), encoding="utf-8")
    result = subprocess.run(
        ["groff", "-man", "-Tutf8", "-ww", "-rLL=80n", "-z", str(page)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


# -- the Debian changelog --------------------------------------------------------------------


def test_debian_changelog_top_entry_is_this_version() -> None:
    text = (LINUX / "changelog").read_text(encoding="utf-8")
    first = text.splitlines()[0]
    assert first == f"streamscope ({build.debian_version(__version__)}) unstable; urgency=medium"
    control = (LINUX / "control.in").read_text(encoding="utf-8")
    maintainer = re.search(r"^Maintainer: (.+)$", control, re.M)
    assert maintainer is not None
    trailer = re.search(r"^ -- (.+?)  (\w{3}, \d\d \w{3} \d{4} [\d:]{8} [+-]\d{4})$", text, re.M)
    assert trailer is not None and trailer.group(1) == maintainer.group(1)
    if shutil.which("dpkg-parsechangelog"):
        version = subprocess.run(
            ["dpkg-parsechangelog", "-l", str(LINUX / "changelog"), "-S", "Version"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        assert version == build.debian_version(__version__)


# -- the .deb layout -------------------------------------------------------------------------


def test_deb_stage_installs_the_metadata(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "_internal").mkdir(parents=True)
    (bundle / "_internal/THIRD_PARTY_NOTICES.txt").write_text("notices\n", encoding="utf-8")
    (bundle / "streamscope").write_bytes(b"#!/bin/sh\n")
    (bundle / "streamscope").chmod(0o755)
    work = tmp_path / "work"
    png = work / f"pyinstaller/streamscope/icons/hicolor/48x48/apps/{APP_ID}.png"
    png.parent.mkdir(parents=True)
    png.write_bytes(b"\x89PNG")
    monkeypatch.setattr(build, "WORK", work)
    stage = tmp_path / "stage"
    build.stage_deb(bundle, stage)

    share = stage / "usr/share"
    assert (share / f"metainfo/{APP_ID}.metainfo.xml").read_bytes() == METAINFO.read_bytes()
    assert (share / f"mime/packages/{APP_ID}.xml").read_bytes() == MIME.read_bytes()
    assert (share / f"applications/{APP_ID}.desktop").is_file()
    assert (share / f"icons/hicolor/scalable/apps/{APP_ID}.svg").is_file()
    assert (share / f"icons/hicolor/48x48/apps/{APP_ID}.png").is_file()
    man = (share / "man/man1/streamscope.1.gz").read_bytes()
    assert man[3] == 0 and man[4:8] == b"\0\0\0\0"  # gzip -n: no name, no time stamp
    assert gzip.decompress(man).decode() == manpage.render()
    changelog = (share / "doc/streamscope/changelog.gz").read_bytes()
    assert gzip.decompress(changelog) == (LINUX / "changelog").read_bytes()
    assert (share / f"metainfo/{APP_ID}.metainfo.xml").stat().st_mode & 0o777 == 0o644
    assert (share / "lintian/overrides/streamscope").read_bytes() == (
        LINUX / "lintian-overrides"
    ).read_bytes()
    copyright = (share / "doc/streamscope/copyright").read_text(encoding="utf-8")
    assert copyright.startswith("StreamScope\n\nMIT License")
    assert "/opt/streamscope/_internal/THIRD_PARTY_NOTICES.txt" in copyright
    assert "GNU LESSER GENERAL PUBLIC LICENSE" not in copyright  # lintian: no full texts here


def test_ci_deb_stage_validates_metainfo_and_runs_lintian() -> None:
    stage = (ROOT / "packaging/ci_deb.sh").read_text(encoding="utf-8")
    assert "appstream lintian patchelf" in stage  # apt-get installs them
    assert f"appstreamcli validate --no-net packaging/linux/{APP_ID}.metainfo.xml" in stage
    lintian = next(line for line in stage.splitlines() if line.startswith("lintian "))
    assert "--fail-on error" in lintian
    assert re.findall(r"--suppress-tags (\S+)", lintian) == ["malformed-deb-archive"]  # zstd
    overrides = (LINUX / "lintian-overrides").read_text(encoding="utf-8")
    tags = [line.split()[1] for line in overrides.splitlines() if line.startswith("streamscope: ")]
    assert tags == [
        "dir-or-file-in-opt",
        "embedded-library",
        "library-not-linked-against-libc",
        "shared-library-lacks-prerequisites",
        "hardening-no-pie",
        "unstripped-binary-or-object",  # (numpy.libs only: stripped, OpenBLAS does not load)
    ]
    assert "[opt/streamscope/_internal/numpy.libs/*]" in overrides  # (no wider than that)
    workflow = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    assert "lintian --fail-on error --tag-display-limit 0 dist/streamscope_*.deb" in workflow
    assert "appstream lintian patchelf" in workflow  # (the release .deb is xz: no suppression)
    readme = (ROOT / "packaging/README.md").read_text(encoding="utf-8")
    for tag in [*tags, "malformed-deb-archive"]:  # each one kept is justified in the README
        assert f"`{tag}`" in readme, tag


def test_shared_libraries_are_not_marked_executable() -> None:
    for name in ("libQt6Gui.so.6", "libshiboken6.abi3.so.6.11", "_json.cpython-311.so", "x.so"):
        assert build.SHARED_LIBRARY.search(name), name
    for name in ("streamscope", "libicudata.so.73.txt", "notes.sox"):
        assert not build.SHARED_LIBRARY.search(name), name


def test_md5sums_list_every_file_but_the_control_area(tmp_path: Path) -> None:
    (tmp_path / "DEBIAN").mkdir()
    (tmp_path / "DEBIAN/control").write_text("Package: x\n")
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/tool").write_bytes(b"abc")
    (tmp_path / "usr/bin/link").symlink_to("tool")
    build.write_md5sums(tmp_path)
    assert (tmp_path / "DEBIAN/md5sums").read_text() == (
        "900150983cd24fb0d6963f7d28e17f72  usr/bin/tool\n"
    )
