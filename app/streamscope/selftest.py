"""`streamscope --self-test`: does this installed copy of StreamScope work?

Checks, in order, with the real code an installer ships (nothing from a source tree):

    modules    every module of the package imports (a bundle that left out a library fails)
    startup    the profile pieces the app starts with: single-instance lock, conversation store
    window     the main window opens (offscreen when there is no display)
    icon       the app icon renders (resources and the SVG plugins are in the bundle)
    fonts      QFontDatabase knows at least one family (without fonts every glyph is a box)
    demo turn  the embedded demo endpoint starts and one `demo` turn runs through the real
               pipeline (httpx -> SSE decoder -> dialect -> TurnAssembler -> chat view) and
               completes with exactly the text the demo scenario scripts

The profile is a temporary folder (``STREAMSCOPE_HOME``) removed at the end, and the keyring
is the null backend, so the user's conversations, settings and keys are never read or written.
Prints one line and returns 0, or prints ``self-test failed: <reason>`` and returns 1.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamscope.core.turn.model import Turn
    from streamscope.ui.shell.main_window import MainWindow

PROMPT = "StreamScope self-test"
SCENARIO = "demo"
DEMO_SPEED = 20.0  # pacing multiplier: the scripted answer takes ~0.3 s instead of ~6 s
TIMEOUT = 60.0


class SelfTestError(Exception):
    """A check failed; the message is the reason printed for the user."""


@dataclass(frozen=True, slots=True)
class Report:
    modules: int
    platform: str
    families: int
    chars: int
    seconds: float
    where: str


def has_display(environ: os._Environ[str] | dict[str, str] = os.environ) -> bool:
    """Whether a window can be shown on screen (X11/Wayland on Linux; always elsewhere)."""
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def expected_text(prompt: str = PROMPT) -> str:
    """The answer the demo scenario scripts for `prompt` (the text deltas, joined)."""
    from streamscope.demo.scenarios import SCENARIOS
    from streamscope.demo.script import Ask, TextDelta, build_script

    steps = build_script(SCENARIOS[SCENARIO], Ask(model=SCENARIO, stream=True, last_user=prompt))
    return "".join(t.step.text for t in steps if isinstance(t.step, TextDelta))


def run() -> int:
    """Run every check; print one line; return the process exit code."""
    if not has_display():
        os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before Qt is imported
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    previous_home = os.environ.get("STREAMSCOPE_HOME")
    try:
        with tempfile.TemporaryDirectory(
            prefix="streamscope-selftest-", ignore_cleanup_errors=True
        ) as home:
            os.environ["STREAMSCOPE_HOME"] = home
            report = _run_checks()
    except SelfTestError as exc:
        _emit(f"self-test failed: {exc}")
        return 1
    except Exception as exc:  # an unexpected crash is a failure with its reason, too
        _emit(f"self-test failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        if previous_home is None:
            os.environ.pop("STREAMSCOPE_HOME", None)
        else:
            os.environ["STREAMSCOPE_HOME"] = previous_home
    _emit(
        f"self-test ok: {report.modules} modules, window ({report.platform}), "
        f"{report.families} font families, "
        f"demo turn completed in the {report.where} ({report.chars} chars, "
        f"{report.seconds:.1f} s); "
        "profile: a temporary folder, now removed"
    )
    return 0


def _emit(line: str) -> None:
    # A windowed build on Windows has no stdout unless the caller redirects it.
    stream = sys.stdout or sys.stderr
    if stream is not None:
        print(line, file=stream, flush=True)


def _run_checks() -> Report:
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    # Qt's warnings (e.g. the offscreen plugin's) would add lines; keep the last for a failure.
    qt_said: list[str] = []

    def keep(kind: QtMsgType, _context: object, message: str) -> None:
        if kind != QtMsgType.QtDebugMsg:
            qt_said.append(message)

    previous = qInstallMessageHandler(keep)
    try:
        return _checks_with_qt()
    except SelfTestError as exc:
        raise SelfTestError(f"{exc}{f' (Qt: {qt_said[-1]})' if qt_said else ''}") from None
    finally:
        qInstallMessageHandler(previous)


NOT_APP_MODULES = ("streamscope.pytest_plugin",)
"""Modules of the package the app itself never imports: the pytest plugin imports pytest,
which an installed app does not have (the bundle leaves it out)."""


def import_all() -> int:
    """Import every module of the package; the number imported."""
    import importlib
    import pkgutil

    import streamscope

    count = 0
    for info in pkgutil.walk_packages(streamscope.__path__, "streamscope."):
        if info.name.endswith("__main__") or info.name in NOT_APP_MODULES:
            continue  # running it would start the app; pytest's plugin needs pytest
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            raise SelfTestError(
                f"{info.name} does not import: {type(exc).__name__}: {exc}"
            ) from exc
        count += 1
    return count


def _checks_with_qt() -> Report:
    import asyncio

    from PySide6.QtGui import QFontDatabase
    from PySide6.QtWidgets import QApplication

    from streamscope.core.turn.outcome import Outcome
    from streamscope.ui.base.event_loop import AppLoop

    modules = import_all()
    from streamscope.core.verdict.catalog import dialect_lints
    from streamscope.core.wire.dialects import dialect_names

    unlinted = [name for name in dialect_names() if name not in dialect_lints()]
    if unlinted:  # (each dialect names its rules' module: loaded by name, so check it is there)
        raise SelfTestError(f"no lint rules found for the dialects {', '.join(unlinted)}")
    app = QApplication.instance() or QApplication(sys.argv[:1])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)

    families = len(QFontDatabase.families())
    if families == 0:
        raise SelfTestError("no fonts: QFontDatabase.families() is empty (install fontconfig)")

    from streamscope.ui.base.resources import app_icon
    from streamscope.ui.shell.app import open_profile
    from streamscope.ui.shell.main_window import MainWindow
    from streamscope.ui.shell.single_instance import SingleInstance

    if app_icon().pixmap(32, 32).isNull():
        raise SelfTestError("the app icon does not render (resources or the SVG plugins missing)")

    instance = SingleInstance()
    if not instance.acquire():
        raise SelfTestError("the single-instance lock of a fresh profile is taken")
    instance.listen()
    store, captures = open_profile()
    if store is None:
        instance.release()
        raise SelfTestError("the conversation database does not open")
    loop = AppLoop(app, already_running=False)
    asyncio.set_event_loop(loop)
    window = MainWindow(demo_speed=DEMO_SPEED, store=store, captures=captures)
    try:
        window.show()
        app.processEvents()
        if not window.isVisible():
            raise SelfTestError("the main window did not open")
        if not window.current_endpoint().is_demo:
            raise SelfTestError("the default endpoint is not the built-in demo")
        window.model_combo.setCurrentText(SCENARIO)
        started = time.monotonic()
        turn = loop.run_until_complete(asyncio.wait_for(_one_turn(window), TIMEOUT))
        seconds = time.monotonic() - started
        worker = window.controller.runner.worker
        where = "stream worker process" if worker is not None and worker.running else "window"
        if os.name == "posix" and where != "stream worker process":
            raise SelfTestError("the stream worker process did not run the demo turn")
    except TimeoutError:
        raise SelfTestError(f"the demo turn did not finish within {TIMEOUT:.0f} s") from None
    finally:
        loop.run_until_complete(window.shutdown())
        window.close()
        loop.close()
        asyncio.set_event_loop(None)
        store.close()
        instance.release()

    if turn.outcome is not Outcome.COMPLETED:
        ended = turn.outcome.value if turn.outcome is not None else "without an outcome"
        raise SelfTestError(f"the demo turn ended {ended}: {turn.reason}")
    expected = expected_text()
    if turn.text != expected:
        raise SelfTestError(
            f"the demo turn's text differs from the scenario's ({len(turn.text)} chars, "
            f"expected {len(expected)})"
        )
    return Report(modules, app.platformName(), families, len(turn.text), seconds, where)


async def _one_turn(window: MainWindow) -> Turn:
    """Send the prompt as the composer does and wait for the turn's outcome."""
    import asyncio

    controller = window.controller
    controller.send(PROMPT)
    while controller.busy:
        await asyncio.sleep(0.02)
    turn = await controller.runner.wait()
    if turn is None:  # it failed before the request went out (e.g. the demo did not start)
        raise SelfTestError(f"the demo turn did not start: {window.status.text()}")
    return turn
