"""The core and the demo endpoint never import Qt (checked in a fresh interpreter)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

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
        "streamscope.tap_cli",
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


# -- import directions --------------------------------------------------------------------------
# Every import statement counts: module level, inside functions and under TYPE_CHECKING.

APP = Path(streamscope.__file__).resolve().parent  # type: ignore[attr-defined]

STAGES = ("wire", "turn", "verdict", "net", "capture", "store", "tap")
"""The core's stages in import order: a stage may import the ones before it, never after."""
SHARED = ("streamscope.core.paths", "streamscope.core.redact")
ALIASES = {"sse": "wire"}  # core/sse.py: the decoder's public import path (a wire module)


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def import_violations(app: Path = APP) -> list[str]:
    """Every import that breaks the layering described in ``streamscope.core.__init__``."""
    bad: list[str] = []
    for path in sorted(app.rglob("*.py")):
        module = ".".join(path.relative_to(app.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        for name in _imports(path):
            if _within(module, "streamscope.core") or _within(module, "streamscope.demo"):
                for banned in ("PySide6", "shiboken6", "qasync", "streamscope.ui"):
                    if _within(name, banned):
                        bad.append(f"{module} imports {name} (no Qt, no UI below the UI)")
            if _within(module, "streamscope.core") and _within(name, "streamscope.demo"):
                bad.append(f"{module} imports {name} (the demo is an independent oracle)")
            if _within(module, "streamscope.demo") and _within(name, "streamscope.core"):
                bad.append(f"{module} imports {name} (the demo never uses core's dialects)")
            if not (_within(module, "streamscope.core") and _within(name, "streamscope.core")):
                continue
            if any(_within(name, shared) for shared in SHARED) or name == "streamscope.core":
                continue
            if module in SHARED:
                bad.append(f"{module} imports {name} (shared modules import no stage)")
                continue
            mine, theirs = (ALIASES.get(n.split(".")[2], n.split(".")[2]) for n in (module, name))
            if theirs in STAGES and mine in STAGES and STAGES.index(theirs) > STAGES.index(mine):
                bad.append(f"{module} imports {name} ({mine} comes before {theirs})")
    return list(dict.fromkeys(bad))


def test_imports_point_one_way() -> None:
    assert import_violations() == []


def test_the_layering_check_catches_a_backward_import(tmp_path: Path) -> None:
    fake = tmp_path / "streamscope"
    for sub, text in {
        "core/wire/bad.py": "from streamscope.core.turn.pipeline import StreamPipeline\n",
        "core/turn/ok.py": "from streamscope.core.wire.events import TextDelta\n",
        "core/net/qt.py": "def f():\n    from PySide6.QtCore import QObject\n",
        "demo/oracle.py": "from streamscope.core.wire.dialects import get_dialect\n",
        "core/store/ui.py": "if True:\n    import streamscope.ui.app\n",
    }.items():
        (fake / sub).parent.mkdir(parents=True, exist_ok=True)
        (fake / sub).write_text(text)
    found = import_violations(fake)
    assert list(dict.fromkeys(line.split(" imports ")[0] for line in found)) == [
        "streamscope.core.net.qt",
        "streamscope.core.store.ui",
        "streamscope.core.wire.bad",
        "streamscope.demo.oracle",
    ]
