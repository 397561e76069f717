"""Fast consistency checks of packaging/ (no builds): the spec, its filter rules, the .deb
templates, the desktop entry, the Windows and macOS scripts and the release workflow agree
with each other and with the project. The real build runs in .ci/run (packaging/ci_deb.sh).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import shutil
import struct
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "streamscope.spec"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_packaging_{name}", PACKAGING / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


rules = load("bundle_rules")
build = load("build")
icons = load("icons")
notices = load("notices")
pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def desktop_entry(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def spec_call_kwargs(call: str) -> dict[str, ast.expr]:
    tree = ast.parse(SPEC.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == call:
            return {k.arg: k.value for k in node.keywords if k.arg}
    raise AssertionError(f"no {call}(...) in the spec")


# -- the spec ------------------------------------------------------------------------------


def test_spec_builds_the_console_script_entry_point_windowed_one_folder() -> None:
    assert pyproject["project"]["scripts"] == {"streamscope": "streamscope.cli:main"}
    main = (ROOT / "app/streamscope/__main__.py").read_text(encoding="utf-8")
    assert "from streamscope.cli import main" in main
    assert 'app" / "streamscope" / "__main__.py"' in SPEC.read_text(encoding="utf-8")
    exe = spec_call_kwargs("EXE")
    assert ast.literal_eval(exe["name"]) == "streamscope"
    assert ast.literal_eval(exe["console"]) is False
    assert ast.literal_eval(exe["exclude_binaries"]) is True  # one folder
    assert ast.literal_eval(spec_call_kwargs("COLLECT")["name"]) == "streamscope"
    assert ast.literal_eval(spec_call_kwargs("BUNDLE")["name"]) == "StreamScope.app"


def test_spec_puts_resources_where_the_app_looks_for_them() -> None:
    text = SPEC.read_text(encoding="utf-8")
    assert '(str(ROOT / "resources"), "streamscope/resources")' in text
    import streamscope
    from streamscope.ui.base import resources

    resources_py = Path(resources.__file__).read_text(encoding="utf-8")
    assert '_PACKAGE / "resources"' in resources_py  # (an installed streamscope/resources)
    assert Path(streamscope.__file__).resolve().parent == resources._PACKAGE
    assert (ROOT / "resources/icons/streamscope.svg").is_file()


def test_spec_hidden_imports_exist() -> None:
    hidden = spec_call_kwargs("Analysis")["hiddenimports"]
    assert isinstance(hidden, ast.List)
    names = [e.value for e in hidden.elts if isinstance(e, ast.Constant)]
    assert "keyring.backends.null" in names  # what the self-test selects
    for name in names:
        assert importlib.util.find_spec(name) is not None, name
    assert 'collect_submodules("streamscope"' in SPEC.read_text(encoding="utf-8")


def test_test_only_packages_are_excluded_and_runtime_ones_are_not() -> None:
    import_names = {"google-genai": "google", "pytest-qt": "pytestqt", "httpx-sse": "httpx_sse"}
    for requirement in pyproject["project"]["optional-dependencies"]["test"]:
        name = re.split(r"[<>=\[ ;]", requirement)[0]
        assert import_names.get(name, name.replace("-", "_")) in rules.EXCLUDED_MODULES, name
    runtime_imports = {"PySide6", "httpx", "qasync", "orjson", "uvicorn", "starlette"}
    runtime_imports |= {"keyring", "platformdirs", "pygments", "truststore", "jiter"}
    runtime_imports |= {"pyqtgraph", "numpy"}  # (the Bench window's plots)
    runtime_imports |= {"h11"}  # (streamscope serve's HTTP/1.1; httpx's too)
    for requirement in pyproject["project"]["dependencies"]:
        name = re.split(r"[<>=\[ ;]", requirement)[0].lower()
        assert any(name.startswith(m.lower()) for m in runtime_imports), name
    assert not runtime_imports & set(rules.EXCLUDED_MODULES)


def test_packaging_extra_is_pinned() -> None:
    assert pyproject["project"]["optional-dependencies"]["packaging"] == ["pyinstaller"]
    pins = dict(
        line.split("==")
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line
    )
    for name in ("pyinstaller", "pyinstaller-hooks-contrib", "altgraph"):
        assert name in pins, name


# -- what the bundle keeps -----------------------------------------------------------------

QT = "PySide6/Qt/plugins"


@pytest.mark.parametrize(
    "dest",
    [
        f"{QT}/platforms/libqxcb.so",
        f"{QT}/platforms/libqwayland.so",
        f"{QT}/platforms/libqoffscreen.so",
        f"{QT}/imageformats/libqsvg.so",
        f"{QT}/iconengines/libqsvgicon.so",
        f"{QT}/platforminputcontexts/libibusplatforminputcontextplugin.so",
        f"{QT}/platformthemes/libqxdgdesktopportal.so",
        "PySide6\\plugins\\platforms\\qwindows.dll",
        "PySide6/Qt/plugins/platforms/libqcocoa.dylib",
        "PySide6/Qt/lib/libQt6Core.so.6",
        "PySide6/Qt/lib/libQt6Svg.so.6",
        "PySide6/Qt/lib/libQt6DBus.so.6",
        "PySide6/Qt/lib/libicudata.so.73",
        "PySide6/QtWidgets.abi3.so",
        "PySide6/QtNetwork.abi3.so",  # QLocalServer: one instance per profile
        "PySide6/Qt/lib/libQt6Network.so.6",
        "streamscope/resources/icons/streamscope.svg",
    ],
)
def test_bundle_keeps(dest: str) -> None:
    assert rules.keep(dest)


@pytest.mark.parametrize(
    "dest",
    [
        f"{QT}/platformthemes/libqgtk3.so",
        f"{QT}/platforminputcontexts/libqtvirtualkeyboardplugin.so",
        f"{QT}/platforms/libqeglfs.so",
        f"{QT}/imageformats/libqjpeg.so",
        f"{QT}/tls/libqopensslbackend.so",
        f"{QT}/networkinformation/libqnetworkmanager.so",
        f"{QT}/qmltooling/libqmldbg_tcp.so",
        "PySide6/Qt/lib/libQt6Quick.so.6",
        "PySide6/Qt/lib/libQt6Qml.so.6",
        "PySide6/Qt/translations/qtbase_de.qm",
        "PySide6/Qt/qml/QtQuick/Controls/qmldir",
        "libgtk-3.so.0",
        "libpangocairo-1.0.so.0",
        "PySide6/opengl32sw.dll",
    ],
)
def test_bundle_drops(dest: str) -> None:
    assert not rules.keep(dest)


def test_linked_closure_drops_libraries_only_dropped_plugins_linked() -> None:
    entries = [
        ("PySide6/Qt/plugins/platforms/libqxcb.so", "/s/libqxcb.so", "BINARY"),
        ("PySide6/Qt/lib/libQt6XcbQpa.so.6", "/s/libQt6XcbQpa.so.6", "BINARY"),
        ("PySide6/Qt/lib/libQt6Gui.so.6", "/s/libQt6Gui.so.6", "BINARY"),
        ("PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6", "/s/eglfs", "BINARY"),
        ("PySide6/QtCore.abi3.so", "/s/QtCore.abi3.so", "EXTENSION"),
        ("PySide6/Qt/lib/libQt6Core.so.6", "/s/libQt6Core.so.6", "BINARY"),
    ]
    links = {
        "/s/libqxcb.so": ["libQt6XcbQpa.so.6"],
        "/s/libQt6XcbQpa.so.6": ["libQt6Gui.so.6", "libc.so.6"],
        "/s/libQt6Gui.so.6": ["libQt6Core.so.6"],
        "/s/QtCore.abi3.so": ["libQt6Core.so.6"],
    }
    reachable = rules.linked_closure(entries, lambda src: links.get(src, []))
    assert "PySide6/Qt/lib/libQt6Gui.so.6" in reachable
    assert "PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6" not in reachable

    debian = "/usr/lib/x86_64-linux-gnu"
    assert rules.is_system_library("/lib/x86_64-linux-gnu/libxcb.so.1", "libxcb.so.1")
    assert not rules.is_system_library(f"{debian}/libpython3.11.so.1.0", "libpython3.11.so.1.0")
    pyenv = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"
    assert not rules.is_system_library(pyenv, "libpython3.11.so.1.0")
    ssl = "/usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so"
    assert not rules.is_system_library(ssl, "python3.11/lib-dynload/" + ssl.rsplit("/", 1)[1])


# -- icons and notices ---------------------------------------------------------------------


def test_ico_and_icns_containers() -> None:
    pngs = {16: b"\x89PNG-16", 256: b"\x89PNG-256-longer"}
    ico = icons.ico(pngs)
    assert struct.unpack("<HHH", ico[:6]) == (0, 1, 2)
    width, height, *_rest, size, offset = struct.unpack("<BBBBHHII", ico[22:38])
    assert (width, height) == (0, 0) and ico[offset : offset + size] == pngs[256]
    icns = icons.icns(pngs)
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    assert b"icp4" in icns and b"ic08" in icns


def test_notices_list_bundled_packages_and_qt_lgpl() -> None:
    text = notices.render(["httpx", "PySide6", "streamscope.ui"])
    assert "httpx 0.28" in text and "BSD" in text
    assert "PySide6_Essentials 6.11.3: LGPL-3.0-only" in text
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in text
    assert "LGPL-3.0" in text


# -- the .deb --------------------------------------------------------------------------------


def test_desktop_entry_matches_the_package_and_the_wheel_copy() -> None:
    from streamscope import APP_ID

    linux = PACKAGING / f"linux/{APP_ID}.desktop"
    wheel_copy = ROOT / f"resources/{APP_ID}.desktop"
    assert linux.read_text(encoding="utf-8") == wheel_copy.read_text(encoding="utf-8")
    entry = desktop_entry(linux)
    assert entry["Exec"].split()[0] in pyproject["project"]["scripts"]
    assert entry["Icon"] == APP_ID == icons.APP_ID == build.APP_ID
    assert Path(icons.SVG).stem == "streamscope"  # the source file; installed as <APP_ID>.svg
    assert entry["Type"] == "Application" and entry["Terminal"] == "false"
    app = (ROOT / "app/streamscope/ui/shell/app.py").read_text(encoding="utf-8")
    assert "setDesktopFileName(APP_ID)" in app  # Wayland app id = the .desktop name


@pytest.mark.skipif(not shutil.which("desktop-file-validate"), reason="desktop-file-utils")
def test_desktop_entry_validates() -> None:
    from streamscope import APP_ID

    result = subprocess.run(
        ["desktop-file-validate", str(PACKAGING / f"linux/{APP_ID}.desktop")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_control_template_and_maintainer_scripts() -> None:
    control = (PACKAGING / "linux/control.in").read_text(encoding="utf-8")
    placeholders = set(re.findall(r"@[A-Z_]+@", control))
    assert placeholders == {"@VERSION@", "@ARCH@", "@INSTALLED_SIZE@", "@DEPENDS@"}
    assert all(p in (PACKAGING / "build.py").read_text(encoding="utf-8") for p in placeholders)
    for name in ("postinst", "postrm"):
        script = PACKAGING / "linux" / name
        assert script.stat().st_mode & 0o111, f"{name} is not executable"
        assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    assert "update-desktop-database" in (PACKAGING / "linux/postinst").read_text(encoding="utf-8")
    assert "rm -rf /opt/streamscope" in (PACKAGING / "linux/postrm").read_text(encoding="utf-8")
    for lib in ("libgl1", "libegl1", "libxcb1", "libfontconfig1", "libxkbcommon0", "libdbus-1-3"):
        assert lib in build.BASE_DEPENDS


@pytest.mark.parametrize(
    ("pep440", "debian"), [("0.1.0", "0.1.0"), ("0.2.0rc1", "0.2.0~rc1"), ("1.0.0b2", "1.0.0~b2")]
)
def test_debian_version(pep440: str, debian: str) -> None:
    assert build.debian_version(pep440) == debian


def test_version_comes_from_the_package() -> None:
    from streamscope import __version__

    assert build.version() == __version__


# -- Windows, macOS, the workflow, CI ------------------------------------------------------


def test_inno_setup_script_matches_the_spec() -> None:
    iss = (PACKAGING / "windows/streamscope.iss").read_text(encoding="utf-8")
    assert '#define AppExe "streamscope.exe"' in iss
    assert '"..\\..\\dist\\streamscope"' in iss  # COLLECT's folder
    assert "PrivilegesRequiredOverridesAllowed=dialog" in iss  # per user or all users
    assert "{autoprograms}" in iss  # Start menu
    assert "Software\\Classes\\.sscap" in iss  # file association
    assert "build\\pyinstaller\\streamscope\\icons\\streamscope.ico" in iss  # spec's workpath


def test_macos_script_and_notes() -> None:
    script = (PACKAGING / "macos/build_dmg.sh").read_text(encoding="utf-8")
    assert "dist/StreamScope.app" in script and "hdiutil create" in script
    assert "--self-test" in script
    readme = (PACKAGING / "macos/README.md").read_text(encoding="utf-8")
    assert "notarytool" in readme and "Info.plist" in readme
    assert "sscap" in SPEC.read_text(encoding="utf-8")


def test_release_workflow_builds_and_self_tests_every_platform() -> None:
    workflow = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    for job in ("linux-deb:", "windows:", "macos:"):
        assert f"\n  {job}" in workflow
    assert workflow.count("--self-test") >= 5
    for path in re.findall(r"packaging[/\\][\w/\\.]+\.(?:py|sh|iss)", workflow):
        assert (ROOT / path.replace("\\", "/")).is_file(), path
    assert "python packaging/build.py bundle" in workflow
    assert "packaging/build.py deb --compression xz" in workflow


def test_ci_runs_the_packaging_stage_after_the_tests() -> None:
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    test_line = next(i for i, line in enumerate(ci) if line.startswith("python3 dev.py test"))
    assert test_line < ci.index("bash packaging/ci_deb.sh")
    stage = (PACKAGING / "ci_deb.sh").read_text(encoding="utf-8")
    for step in ("--self-test", "--version", "Installed-Size", "apt-get purge", "/opt/streamscope"):
        assert step in stage


def test_numpys_bundled_libraries_are_never_stripped() -> None:
    """Stripped, numpy's OpenBLAS no longer loads (the .deb's self-test caught it)."""
    assert rules.NEVER_STRIP.match("numpy.libs/libscipy_openblas64_-32a4b2a6.so")
    assert rules.NEVER_STRIP.match("numpy.libs/libgfortran-040039e1-0352e75f.so.5.0.0")
    assert not rules.NEVER_STRIP.match("numpy/_core/_multiarray_umath.cpython-311.so")
    assert not rules.NEVER_STRIP.match("PySide6/Qt/lib/libQt6Core.so.6")
    assert "bundle_rules.NEVER_STRIP.match(d)" in SPEC.read_text(encoding="utf-8")
