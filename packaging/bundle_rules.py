"""Which files the PyInstaller bundle keeps: the rules the spec applies, as plain data.

PyInstaller's PySide6 hooks collect every Qt plugin of a kind the app's modules *might* load,
and every library those plugins link (the virtual-keyboard input context alone drags in QML
and Quick). ``--exclude-module`` only removes Python modules, so the spec filters the
binaries and datas lists through :func:`keep` instead.

StreamScope uses QtCore, QtGui, QtWidgets, QtNetwork (QLocalServer: one instance per
profile), and QtSvg and QtDBus through plugins. It needs:
the xcb, wayland and offscreen platforms (windows, cocoa on the others), input methods
(compose, ibus), the xdg-desktop-portal theme, SVG/ICO image formats and the SVG icon engine.
Widgets paint in software, so no OpenGL widgets or Wayland-EGL integration. Nothing else —
but QtOpenGL and QtOpenGLWidgets: pyqtgraph (the Bench window's plots) imports them as it
loads (it draws without them).

On Linux the spec then drops libraries no kept binary links (:func:`linked_closure`) and the
OS's own libraries (:func:`is_system_library`), which the .deb depends on instead.
Plain functions of bundle-relative paths, no PyInstaller import: tests check them directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePath

# Python packages that are in the development venv for tests and tools only.
EXCLUDED_MODULES = (
    "tkinter",
    "readline",  # GNU readline is GPL, and a windowed app has no prompt
    "curses",
    "_tkinter",
    "test",
    "idlelib",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "setuptools",
    "pkg_resources",
    "distutils",
    "pytest",
    "_pytest",
    "pytestqt",
    "pytest_timeout",
    "hypothesis",
    "mypy",
    "mypyc",
    "ruff",
    "openai",
    "anthropic",
    "google",
    "ollama",
    "httpx_sse",
    "jsonschema",  # (the tests check SARIF output with it)
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "rfc3339_validator",
    "rfc3986_validator",
    "pydantic",
    "pydantic_core",
    "IPython",
    "PyInstaller",
    "pyqtgraph.opengl",  # (3D plots: PyOpenGL, not installed; the Bench window draws 2D)
    "pyqtgraph.jupyter",
    "pyqtgraph.examples",
    "PySide6.QtQml",
    "PySide6.QtQuick",
    "PySide6.QtQuickWidgets",
    "PySide6.QtPrintSupport",
    "PySide6.QtSql",
    "PySide6.QtTest",
    "PySide6.QtXml",
    "PySide6.QtConcurrent",
    "PySide6.QtHelp",
    "PySide6.QtDesigner",
    "PySide6.QtUiTools",
)

# Plugins kept, per plugin folder; a folder not listed is dropped whole (QtNetwork's tls and
# networkinformation plugins too: local sockets need neither).
KEEP_PLUGINS: dict[str, tuple[str, ...]] = {
    "platforms": ("qxcb", "qwayland", "qoffscreen", "qwindows", "qcocoa", "qminimal"),
    "platforminputcontexts": (
        "composeplatforminputcontextplugin",
        "ibusplatforminputcontextplugin",
    ),
    "platformthemes": ("qxdgdesktopportal",),
    "imageformats": ("qsvg", "qico"),
    "iconengines": ("qsvgicon",),
    "xcbglintegrations": ("qxcb-egl-integration", "qxcb-glx-integration"),
    "wayland-shell-integration": ("xdg-shell",),
    "wayland-decoration-client": ("bradient", "adwaita"),
    "styles": ("qwindowsvistastyle", "qmodernwindowsstyle", "qmacstyle"),
}

# Qt libraries that only dropped plugins or unused modules link.
DROP_QT_LIBS = re.compile(
    r"Qt6?(Qml|Quick|Pdf|VirtualKeyboard|Designer|Help|Sql|Test|Xml|Concurrent"
    r"|UiTools|WaylandCompositor|WaylandEgl(Compositor|Client)HwIntegration|LabsStyleKit"
    r"|ShaderTools|Positioning|Multimedia|WebEngine|WebChannel|WebSockets|SvgWidgets"
    r"|PrintSupport|Charts|DataVisualization|3D|Graphs|Location|Sensors|SerialPort|Bluetooth|Nfc"
    r"|RemoteObjects|Scxml|StateMachine|TextToSpeech|HttpServer|SpatialAudio|Lottie)"
)

# GTK and friends arrive only with the gtk3 platform theme (dropped above).
DROP_SYSTEM_LIBS = re.compile(
    r"^lib(gtk-3|gdk-3|gdk_pixbuf|pango\w*|cairo\w*|atk|atspi|epoxy|harfbuzz-gobject|fribidi|pixman"
    r"|thai|datrie|graphite2|Xcomposite|Xcursor|Xdamage|Xi|Xinerama|Xrandr)[-.]"
)

# Windows: Qt's software OpenGL fallback (20 MB); widgets paint without OpenGL.
DROP_OTHER = re.compile(r"^opengl32sw\.dll$", re.I)

# Libraries that stripping breaks: numpy's bundled OpenBLAS and gfortran are linked with
# aligned segments that `strip` leaves unloadable ("ELF load command address/offset not
# page-aligned"); the spec copies them as they are.
NEVER_STRIP = re.compile(r"^numpy\.libs/")

# Data files the app never reads.
DROP_DATA = re.compile(
    r"(^|/)(translations|qml|metatypes|typesystems|glue|include|doc|examples|scripts)/"
    r"|\.(qm|pyi|qmltypes|pdb|prl|a|lib)$"
)


def _plugin_kept(parts: list[str]) -> bool:
    i = parts.index("plugins")
    if len(parts) < i + 3:
        return True
    folder, filename = parts[i + 1], parts[-1]
    stem = re.sub(r"^lib|\.(so|dll|dylib)$", "", filename)
    return stem in KEEP_PLUGINS.get(folder, ())


def keep(dest: str) -> bool:
    """Whether the bundle keeps the file PyInstaller would put at `dest` (bundle-relative)."""
    path = dest.replace("\\", "/")
    parts = path.split("/")
    name = parts[-1]
    if "plugins" in parts and ("PySide6" in parts or "Qt" in parts):
        return _plugin_kept(parts)
    if any(p.endswith(".framework") and DROP_QT_LIBS.search(p) for p in parts):
        return False  # macOS: everything inside a dropped Qt framework
    if DROP_QT_LIBS.search(name):
        return False
    if DROP_SYSTEM_LIBS.search(name) or DROP_OTHER.search(name):
        return False
    return not DROP_DATA.search(path)


def is_system_library(src: str, dest: str) -> bool:
    """A shared library from the OS (a Debian package), which the .deb depends on instead.

    Not libpython (the bootloader loads the bundle's copy, also when it is Debian's) and not
    Python extension modules (Debian's Python keeps them under /usr/lib/python3.x)."""
    name = dest.replace("\\", "/")
    return (
        src.startswith(("/usr/lib/", "/lib/", "/usr/lib64/", "/lib64/"))
        and "/" not in name
        and name.startswith("lib")
        and not name.startswith("libpython")
        and "/python3" not in src
    )


def _is_root(dest: str) -> bool:
    """Files loaded by name, not by a link: extension modules, Qt plugins, the executable."""
    path = dest.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    return (
        "/plugins/" in path
        or "lib-dynload/" in path
        or re.search(r"\.(cpython-[^.]+|abi3)\.so$|\.pyd$", name) is not None
        or name.startswith("libpython")
    )


def linked_closure(
    entries: Iterable[tuple[str, str, str]], needed: Callable[[str], Iterable[str]]
) -> set[str]:
    """The destinations of binaries reachable by links from the roots (see :func:`_is_root`).

    `entries` are PyInstaller TOC tuples (dest, src, kind); `needed(src)` gives the names a
    binary links (DT_NEEDED). A library only a dropped plugin linked is not reachable."""
    entries = list(entries)
    by_name = {PurePath(dest.replace("\\", "/")).name: (dest, src) for dest, src, _ in entries}
    todo = [(dest, src) for dest, src, _ in entries if _is_root(dest)]
    seen = {dest for dest, _ in todo}
    while todo:
        _dest, src = todo.pop()
        for name in needed(src):
            hit = by_name.get(PurePath(name).name)
            if hit is not None and hit[0] not in seen:
                seen.add(hit[0])
                todo.append(hit)
    return seen
