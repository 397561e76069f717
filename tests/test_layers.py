"""The layers: the core and the demo endpoint never import Qt (checked in a fresh interpreter);
the core's stages and the window's sub-packages import one way; no module imports itself in a
loop (every import counts: in functions and under TYPE_CHECKING too)."""

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
        "streamscope.serve_cli",
        "streamscope.serve",
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

STAGES = ("wire", "turn", "verdict", "net", "capture", "store", "faults", "tap", "bench", "serve")
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


UI_LAYERS: tuple[tuple[str, ...], ...] = (
    ("shell",),
    ("tools", "tap", "bench"),
    ("inspector",),
    ("chat",),
    ("endpoint",),
    ("base",),
)
"""The window's sub-packages from the top down: one imports only those on later rows (the
two of a row never each other), as ``streamscope.ui.__init__`` says."""


def _ui_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["streamscope", "ui"] else None


def ui_violations(app: Path = APP) -> list[str]:
    """Every import between the window's sub-packages that points up, or sideways."""
    rank = {name: i for i, row in enumerate(UI_LAYERS) for name in row}
    bad: list[str] = []
    for path in sorted((app / "ui").rglob("*.py")):
        module = ".".join(path.relative_to(app.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        where = path.relative_to(app / "ui").parts
        if len(where) == 1:  # (ui/ itself holds its __init__ only)
            if where[0] != "__init__.py":
                bad.append(f"{module} is in no sub-package of streamscope.ui")
            continue
        mine = where[0]
        seen: set[str] = set()
        for name in _imports(path):
            theirs = _ui_part(name)
            if theirs is None or theirs == mine or theirs in seen:
                continue
            seen.add(theirs)
            if theirs not in rank or mine not in rank:
                bad.append(f"{module} imports {name} (unknown sub-package)")
            elif rank[theirs] <= rank[mine]:
                bad.append(f"{module} imports {name} ({mine} comes before {theirs})")
    return list(dict.fromkeys(bad))


def import_cycles(app: Path = APP) -> list[list[str]]:
    """Every set of the package's modules that import each other in a loop (every import
    counts: in functions and under TYPE_CHECKING too), each sorted."""
    modules: dict[str, Path] = {}
    for path in sorted(app.rglob("*.py")):
        module = ".".join(path.relative_to(app.parent).with_suffix("").parts)
        modules[module.removesuffix(".__init__")] = path
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for name in _imports(path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            # (a package's face hands names on: its own submodules are not a loop)
            if name and name != module and not _within(module, name):
                graph[module].add(name)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in graph:
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_imports_point_one_way() -> None:
    assert import_violations() == []


def test_the_window_s_code_points_one_way() -> None:
    assert ui_violations() == []


def test_no_module_imports_itself_in_a_loop() -> None:
    assert import_cycles() == []


def test_the_ui_checks_catch_an_upward_import_and_a_loop(tmp_path: Path) -> None:
    fake = tmp_path / "streamscope"
    for sub, text in {
        "ui/__init__.py": "",
        "ui/base/theme.py": "from streamscope.ui.chat.card import Card\n",  # up
        "ui/chat/card.py": "from streamscope.ui.base.theme import TEXT\n",
        "ui/tools/a.py": "if False:\n    from streamscope.ui.tap.b import B\n",  # sideways
        "ui/tap/b.py": "from streamscope.ui.inspector.c import C\n",
        "ui/inspector/c.py": "def f():\n    from streamscope.ui.shell.app import run\n",  # up
        "ui/shell/app.py": "",
        "ui/loose.py": "",
    }.items():
        (fake / sub).parent.mkdir(parents=True, exist_ok=True)
        (fake / sub).write_text(text)
    assert ui_violations(fake) == [
        "streamscope.ui.base.theme imports streamscope.ui.chat.card (base comes before chat)",
        "streamscope.ui.inspector.c imports streamscope.ui.shell.app "
        "(inspector comes before shell)",
        "streamscope.ui.loose is in no sub-package of streamscope.ui",
        "streamscope.ui.tools.a imports streamscope.ui.tap.b (tools comes before tap)",
    ]
    assert import_cycles(fake) == [["streamscope.ui.base.theme", "streamscope.ui.chat.card"]]


def test_the_layering_check_catches_a_backward_import(tmp_path: Path) -> None:
    fake = tmp_path / "streamscope"
    for sub, text in {
        "core/wire/bad.py": "from streamscope.core.turn.pipeline import StreamPipeline\n",
        "core/turn/ok.py": "from streamscope.core.wire.events import TextDelta\n",
        "core/net/qt.py": "def f():\n    from PySide6.QtCore import QObject\n",
        "demo/oracle.py": "from streamscope.core.wire.dialects import get_dialect\n",
        "core/store/ui.py": "if True:\n    import streamscope.ui.shell.app\n",
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


MAX_LINES = 450
"""A module longer than this is split where its code has seams (a dialog and its model, a
format's reader and writer, rules by family)."""


def long_modules(app: Path = APP) -> list[str]:
    """Modules of the package over :data:`MAX_LINES` lines, with their length."""
    found = []
    for path in sorted(app.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(app.parent)}: {lines} lines")
    return found


def test_no_module_is_over_450_lines(tmp_path: Path) -> None:
    assert long_modules() == []
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * 451, encoding="utf-8")
    (tmp_path / "pkg" / "fits.py").write_text("x = 1\n" * 450, encoding="utf-8")
    assert long_modules(tmp_path / "pkg") == ["pkg/big.py: 451 lines"]
