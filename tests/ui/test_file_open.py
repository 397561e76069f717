"""Opening files the way the OS does (Linux): drag and drop onto the window, a second start
handing its file to the running instance, and the shared-mime-info type that makes a
double-click reach `streamscope %f`."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QMimeData, QObject, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QWindow
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from streamscope import APP_ID
from streamscope.core.capture.bundle import write_repro_bundle
from streamscope.core.capture.format import Capture, ReadLog, write_capture
from streamscope.core.capture.replay import replay_capture
from streamscope.ui.shell.file_drop import openable_paths
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.shell.single_instance import SingleInstance, parse_open, request_line

ROOT = Path(__file__).resolve().parents[2]
BODY = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\ndata: [DONE]\n\n'


def _capture() -> Capture:
    return Capture(dialect="openai", reads=ReadLog([(0.01, BODY)]))


def _mime(*paths: str | Path, remote: str | None = None) -> QMimeData:
    mime = QMimeData()
    urls = [QUrl.fromLocalFile(str(p)) for p in paths]
    if remote:
        urls.append(QUrl(remote))
    mime.setUrls(urls)
    return mime


def _drag_and_drop(
    window: QWidget | QWindow, mime: QMimeData, at: QPoint | None = None
) -> tuple[bool, bool]:
    """Send a drag-enter then a drop (at ``at``); returns whether each was accepted. Sent to a
    QWindow, they go where the platform's go: on to the widget under ``at`` (unless taken)."""
    at = at or QPoint(20, 20)
    enter = QDragEnterEvent(
        at,
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, enter)
    drop = QDropEvent(
        QPointF(at),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(window, drop)
    return enter.isAccepted(), drop.isAccepted()


# -- drag and drop -----------------------------------------------------------------------------


def test_openable_paths_keeps_local_captures_and_bundles_in_order(tmp_path: Path) -> None:
    mime = _mime(
        tmp_path / "notes.txt",
        tmp_path / "b.ZIP",
        tmp_path / "a.sscap",
        remote="https://example.com/c.sscap",
    )
    assert openable_paths(mime) == [tmp_path / "b.ZIP", tmp_path / "a.sscap"]
    assert openable_paths(_mime(tmp_path / "x.har", tmp_path / "x.har.txt")) == [tmp_path / "x.har"]
    text_only = QMimeData()
    text_only.setText("/tmp/x.sscap")
    assert openable_paths(text_only) == []


def test_dropping_a_capture_on_the_window_opens_it(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    opened: list[tuple[Path, float | None]] = []
    monkeypatch.setattr(window, "open_capture", lambda p, speed=None: opened.append((p, speed)))
    capture = tmp_path / "turn.sscap"
    write_capture(capture, _capture())

    assert window.acceptDrops()
    assert _drag_and_drop(window, _mime(tmp_path / "notes.txt")) == (False, False)
    assert opened == []
    assert _drag_and_drop(window, _mime(tmp_path / "notes.txt", capture)) == (True, True)
    assert opened == [(capture, None)]


def test_a_dropped_har_file_is_imported(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    opened: list[Path] = []
    imported: list[Path] = []
    monkeypatch.setattr(window, "open_capture", lambda p, speed=None: opened.append(p))
    monkeypatch.setattr(window.files, "import_har", imported.append)
    har = tmp_path / "session.HAR"
    har.write_text('{"log": {"version": "1.2", "entries": []}}')
    assert _drag_and_drop(window, _mime(tmp_path / "notes.txt", har)) == (True, True)
    assert (imported, opened) == ([har], [])
    capture = tmp_path / "turn.sscap"
    write_capture(capture, _capture())
    assert _drag_and_drop(window, _mime(capture, har)) == (True, True)  # (the first one opens)
    assert (imported, opened) == ([har], [capture])


def test_a_capture_dropped_on_the_composer_opens_and_text_still_drops_there(
    qtbot: QtBot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    opened: list[Path] = []
    monkeypatch.setattr(window, "open_capture", lambda p, speed=None: opened.append(p))
    capture = tmp_path / "turn.sscap"
    write_capture(capture, _capture())
    editor = window.composer.editor
    handle = window.windowHandle()  # (what the platform sends a drag to)
    at = editor.viewport().mapTo(window, editor.viewport().rect().center())
    assert window.childAt(at) is editor.viewport()
    assert _drag_and_drop(handle, _mime(capture), at) == (True, True)
    assert opened == [capture]
    assert editor.toPlainText() == ""  # not pasted as the path's text
    text = QMimeData()
    text.setText("hello")
    assert _drag_and_drop(handle, text, at) == (True, True)  # the editor takes it
    assert opened == [capture]  # a text drag is the editor's own business
    assert editor.toPlainText() == "hello"


def test_the_drop_filter_does_not_see_every_event_of_the_application(qtbot: QtBot) -> None:
    """Only the window's own events and its QWindow's: a Python filter on the application
    would cost every event (thousands while the window is built)."""
    from PySide6.QtWidgets import QLineEdit, QVBoxLayout

    from streamscope.ui.shell.file_drop import FileDropFilter

    seen: list[QObject] = []

    class Counting(FileDropFilter):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.User:
                seen.append(watched)
            return super().eventFilter(watched, event)

    window = QWidget()
    qtbot.addWidget(window)
    field = QLineEdit(window)
    QVBoxLayout(window).addWidget(field)
    Counting(window, lambda _path: None)
    window.show()
    qtbot.waitExposed(window)
    for _ in range(10):
        QApplication.sendEvent(field, QEvent(QEvent.Type.User))
    assert seen == []
    QApplication.sendEvent(window, QEvent(QEvent.Type.User))
    assert seen == [window]
    QApplication.sendEvent(window.windowHandle(), QEvent(QEvent.Type.User))
    assert seen[1] is window.windowHandle()  # (which hands what it does not use on: window)
    assert all(o in (window, window.windowHandle()) for o in seen)


def test_a_window_still_starting_refuses_drops(qtbot: QtBot, tmp_path: Path) -> None:
    window = MainWindow(deferred=True)
    qtbot.addWidget(window)
    capture = tmp_path / "turn.sscap"
    write_capture(capture, _capture())
    assert _drag_and_drop(window, _mime(capture)) == (False, False)


# -- a second start hands its file over --------------------------------------------------------


def test_request_lines_round_trip_any_path(tmp_path: Path) -> None:
    odd = tmp_path / 'a "quoted"\nname é.sscap'
    line = request_line(odd)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_open(line[:-1]) == str(odd)
    assert request_line(None) == b"raise\n"
    assert parse_open(b'open "relative.sscap"') is None
    assert parse_open(b"open [1]") is None
    assert parse_open(b"raise") is None


def _wait(condition: object, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        QCoreApplication.processEvents()
        time.sleep(0.01)


def test_a_second_instance_hands_its_file_to_the_first(qapp: object, tmp_path: Path) -> None:
    first, second = SingleInstance(), SingleInstance()
    opened: list[str] = []
    raised: list[bool] = []
    first.openRequested.connect(opened.append)
    first.raiseRequested.connect(lambda: raised.append(True))
    capture = tmp_path / "turn.sscap"
    try:
        assert first.acquire()
        first.listen()
        assert not second.acquire(capture)
        assert second.delivered
        _wait(lambda: opened and raised)
        assert opened == [str(capture)]
        assert raised == [True]
    finally:
        first.release()


SECOND_START = r"""
import os, sys
from pathlib import Path
os.chdir(sys.argv[2])
from PySide6.QtCore import QCoreApplication
from streamscope.ui.shell.single_instance import SingleInstance
app = QCoreApplication([])
instance = SingleInstance()
if instance.acquire(Path(sys.argv[1])):
    print("second acquired")
else:
    print("handed over" if instance.delivered else "not delivered", flush=True)
"""


def test_a_second_process_hands_a_relative_path_over_made_absolute(
    qapp: object, tmp_path: Path
) -> None:
    first = SingleInstance()
    opened: list[str] = []
    first.openRequested.connect(opened.append)
    assert first.acquire()
    first.listen()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", SECOND_START, "bug report.zip", str(tmp_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        _wait(lambda: opened or child.poll() is not None)
        _wait(lambda: opened)
        out, _ = child.communicate(timeout=20)
        assert out.strip() == "handed over"
        assert opened == [str(tmp_path / "bug report.zip")]
    finally:
        first.release()


def test_run_app_with_a_file_while_running_hands_it_over(
    qapp: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from streamscope.ui.shell.app import run_app

    first = SingleInstance()
    opened: list[str] = []
    first.openRequested.connect(opened.append)
    assert first.acquire()
    first.listen()
    try:
        assert run_app(open_path=tmp_path / "x.sscap") == 0
        _wait(lambda: opened)
    finally:
        first.release()
    assert opened == [str(tmp_path / "x.sscap")]
    assert capsys.readouterr().out == (
        f"StreamScope is already running for this profile; opened {tmp_path / 'x.sscap'} there.\n"
    )


def test_a_garbage_or_oversized_request_is_dropped(qapp: object) -> None:
    from PySide6.QtNetwork import QLocalSocket

    from streamscope.ui.shell import single_instance

    first = SingleInstance()
    opened: list[str] = []
    raised: list[bool] = []
    first.openRequested.connect(opened.append)
    first.raiseRequested.connect(lambda: raised.append(True))
    assert first.acquire()
    first.listen()
    try:
        socket = QLocalSocket()
        socket.connectToServer(single_instance._server_name())
        assert socket.waitForConnected(2000)
        socket.write(b"hello\nopen relative\n" + b"x" * (SingleInstance.MAX_REQUEST_BYTES + 10))
        socket.waitForBytesWritten(2000)
        _wait(lambda: socket.state() == QLocalSocket.LocalSocketState.UnconnectedState, 5)
        assert socket.state() == QLocalSocket.LocalSocketState.UnconnectedState  # aborted
        assert opened == [] and raised == []
    finally:
        first.release()


# -- the shared-mime-info type -----------------------------------------------------------------

FREEDESKTOP = Path("/usr/share/mime/packages/freedesktop.org.xml")


@pytest.mark.skipif(
    not (shutil.which("update-mime-database") and FREEDESKTOP.is_file()),
    reason="shared-mime-info",
)
def test_mime_database_knows_captures_and_bundles_by_name_and_content(tmp_path: Path) -> None:
    share = tmp_path / "share"
    packages = share / "mime/packages"
    packages.mkdir(parents=True)
    shutil.copy2(FREEDESKTOP, packages)
    shutil.copy2(ROOT / f"packaging/linux/{APP_ID}.mime.xml", packages / f"{APP_ID}.xml")
    subprocess.run(["update-mime-database", str(share / "mime")], check=True, capture_output=True)

    files = tmp_path / "files"
    files.mkdir()
    capture = _capture()
    write_capture(files / "turn.sscap", capture)
    write_capture(files / "turn-without-suffix", capture)
    turn = asyncio.run(replay_capture(capture))
    write_repro_bundle(files / "bug.zip", capture, turn, app_version="test")
    write_repro_bundle(files / "streamscope-repro.sscap.zip", capture, turn, app_version="test")
    write_repro_bundle(files / "bug-without-suffix", capture, turn, app_version="test")
    shutil.make_archive(str(files / "plain"), "zip", ROOT / "resources")

    code = (
        "import sys\n"
        "from PySide6.QtCore import QMimeDatabase\n"
        "db = QMimeDatabase()\n"
        "for name in sys.argv[1:]:\n"
        "    print(name, db.mimeTypeForFile(name).name())\n"
    )
    names = ["turn.sscap", "turn-without-suffix", "streamscope-repro.sscap.zip"]
    names += ["bug-without-suffix", "bug.zip", "plain.zip"]
    env = dict(os.environ, XDG_DATA_DIRS=str(share), XDG_DATA_HOME=str(tmp_path / "home"))
    result = subprocess.run(
        [sys.executable, "-c", code, *names],
        cwd=files,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert dict(line.split(" ", 1) for line in result.stdout.splitlines()) == {
        "turn.sscap": "application/x-streamscope-capture",
        "turn-without-suffix": "application/x-streamscope-capture",
        "streamscope-repro.sscap.zip": "application/x-streamscope-bundle",  # the default save name
        "bug-without-suffix": "application/x-streamscope-bundle",  # by content
        # A renamed bundle is a zip to the OS: a unique glob match wins over content sniffing
        # (xdgmime and Qt alike); StreamScope still opens it (Open, drop, command line).
        "bug.zip": "application/zip",
        "plain.zip": "application/zip",
    }


def test_desktop_entry_takes_a_file_and_names_the_types() -> None:
    text = (ROOT / f"packaging/linux/{APP_ID}.desktop").read_text(encoding="utf-8")
    assert "\nExec=streamscope %f\n" in text
    assert (
        "\nMimeType=application/x-streamscope-capture;application/x-streamscope-bundle;\n" in text
    )
