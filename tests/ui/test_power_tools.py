"""The Stream menu's power tools in the real window against the built-in demo endpoint."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from streamscope.core.net.curl import parse_curl
from streamscope.core.net.raw_request import secret_account
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.ui.shell.main_window import MainWindow
from streamscope.ui.tools.power_tools import PowerTools
from streamscope.ui.tools.request_editor import EditResendDialog
from support.memory_keyring import MemoryKeyring, installed

KEY = "sk-power-tools-SECRET-42"


@pytest.fixture
def ring() -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    with installed(backend):
        yield backend


@pytest.fixture
def window(qtbot: QtBot, aloop: qasync.QEventLoop, ring: MemoryKeyring) -> Iterator[MainWindow]:
    win = MainWindow(demo_speed=25)
    qtbot.addWidget(win)
    win.show()
    # (the Stream menu is built once the panels have painted, its modules loaded in a thread)
    qtbot.waitUntil(lambda: win._power_tools is not None, timeout=10_000)
    yield win
    for dialog in tools_of(win).dialogs:
        dialog.close()
    aloop.run_until_complete(win.shutdown())


def tools_of(window: MainWindow) -> PowerTools:
    tools = window.power_tools
    assert isinstance(tools, PowerTools)
    return tools


def wait_turn(window: MainWindow, aloop: qasync.QEventLoop) -> Turn:
    async def wait() -> Turn:
        for _ in range(600):
            if not window.controller.busy and window.controller.runner.last_turn is not None:
                break
            await asyncio.sleep(0.01)
        turn = await window.controller.runner.wait()
        assert turn is not None
        return turn

    return aloop.run_until_complete(wait())


def send(window: MainWindow, aloop: qasync.QEventLoop, model: str, text: str = "Hi there") -> Turn:
    window.model_combo.setCurrentText(model)
    window.composer.editor.setPlainText(text)
    window.composer._on_submit()
    return wait_turn(window, aloop)


def test_the_stream_menu_has_every_tool(window: MainWindow) -> None:
    menus = [a.text() for a in window.menuBar().actions()]
    assert "&Stream" in menus and menus.index("&Stream") < menus.index("&Help")
    tools = tools_of(window)
    assert set(tools.actions) == {
        "edit", "raw", "import", "copy_curl", "copy_python", "export", "compare", "find"
    }  # fmt: skip
    assert tools.actions["find"].shortcut().toString() == "Ctrl+F"
    assert not tools.actions["edit"].isEnabled()  # nothing sent yet


def test_edit_and_resend_really_sends_the_edited_body(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    first = send(window, aloop, "demo", "original question")
    assert "You wrote: “original question”" in first.text
    tools = tools_of(window)
    assert tools.edit_button.isEnabled() and tools.actions["edit"].isEnabled()
    dialog = tools.edit_and_resend()
    assert isinstance(dialog, EditResendDialog)
    body = json.loads(dialog.body_edit.toPlainText())
    assert body["messages"][-1]["content"] == "original question"
    body["messages"][-1]["content"] = "edited question ✎"
    dialog.body_edit.setPlainText(json.dumps(body))
    dialog.send()
    turn = wait_turn(window, aloop)
    assert turn.outcome is Outcome.COMPLETED
    assert "You wrote: “edited question ✎”" in turn.text  # the server got the edited body
    assert "edited question ✎" in window.inspector.request_panel.texts()[0]
    card = window.controller.answer_card(-1)
    assert "edited question" in card.text()
    # the history alternates user / answer and ends with the edited exchange
    kinds = [k for k, _ in window.controller.history.entries()]
    assert kinds == ["user", "answers", "user", "answers"]
    assert window.controller.history.last_user_text() == "edited question ✎"
    # the conversation goes on normally afterwards
    after = send(window, aloop, "demo", "and then?")
    assert after.outcome is Outcome.COMPLETED


def test_an_invalid_body_cannot_be_sent(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    send(window, aloop, "demo")
    dialog = tools_of(window).edit_and_resend()
    assert dialog is not None
    dialog.body_edit.setPlainText('{"model": ')
    assert not dialog.send_button.isEnabled()
    assert dialog.body_status.text().startswith("✗ invalid JSON")
    dialog.body_edit.setPlainText("[1]")
    assert "JSON object" in dialog.body_status.text()


def test_raw_mode_with_auto_detects_the_dialect_from_the_frames(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    send(window, aloop, "demo")  # starts the demo server
    tools = tools_of(window)
    dialog = tools.new_raw_request()
    assert dialog.dialect_combo.currentText() == "auto"
    dialog.url_edit.setText(window.demo.base_url("anthropic") + "/messages")
    dialog.body_edit.setPlainText(
        json.dumps(
            {
                "model": "demo",
                "max_tokens": 200,
                "stream": True,
                "messages": [{"role": "user", "content": "raw hello"}],
            }
        )
    )
    dialog.send()
    turn = wait_turn(window, aloop)
    assert turn.outcome is Outcome.COMPLETED
    assert turn.terminal_signal is not None and "message_stop" in turn.terminal_signal
    assert "You wrote: “raw hello”" in turn.text
    assert "raw hello" in window.controller.answer_card(-1).text()


def test_import_curl_moves_the_key_to_the_keyring(
    window: MainWindow, aloop: qasync.QEventLoop, ring: MemoryKeyring
) -> None:
    send(window, aloop, "demo")
    url = window.demo.base_url("openai") + "/chat/completions"
    command = (
        f"curl -sN '{url}' \\\n"
        f"  -H 'Authorization: Bearer {KEY}' \\\n"
        "  -H 'Content-Type: application/json' \\\n"
        """  -d '{"model": "demo", "stream": true, "messages": """
        """[{"role": "user", "content": "from curl, it'\\''s here"}]}'"""
    )
    tools = tools_of(window)
    importer = tools.import_curl()
    importer.command_edit.setPlainText(command)
    assert importer.import_button.isEnabled()
    importer.do_import()
    editor = tools.dialogs[-1]
    assert isinstance(editor, EditResendDialog)
    shown = [v for _, v in editor.headers()] + [
        editor.url_edit.text(),
        editor.body_edit.toPlainText(),
    ]
    assert KEY not in "\n".join(shown)
    assert ("Authorization", "Bearer ***") in editor.headers()
    account = secret_account(url, "authorization")
    assert ring.items[("StreamScope", account)] == f"Bearer {KEY}"
    editor.send()
    turn = wait_turn(window, aloop)
    assert turn.outcome is Outcome.COMPLETED
    assert "You wrote: “from curl, it's here”" in turn.text
    assert KEY not in "\n".join(window.inspector.request_panel.texts())
    # the key really went out (and the request shown masks it)
    assert tools.recorder.last is not None
    assert tools.recorder.last.start.spec.headers["Authorization"] == f"Bearer {KEY}"
    # Copy as curl of that turn round-trips and keeps the key out
    copied = tools.copy_as_curl()
    assert copied is not None and KEY not in copied and "$API_KEY" in copied
    again = parse_curl(copied)
    assert again.url == url
    assert json.loads(again.body or b"") == json.loads(parse_curl(command).body or b"")
    assert QGuiApplication.clipboard().text() == copied


@pytest.mark.parametrize("browser", ["chrome_cmd", "firefox_posix"])
def test_a_browser_copy_pasted_into_the_composer_imports_with_the_key_in_the_keyring(
    window: MainWindow,
    qtbot: QtBot,
    ring: MemoryKeyring,
    monkeypatch: pytest.MonkeyPatch,
    browser: str,
) -> None:
    fixture = Path(__file__).parents[1] / "core" / "fixtures" / "curl" / f"{browser}.txt"
    original = json.loads(fixture.with_suffix(".expected.json").read_text(encoding="utf-8"))
    key = next(v for k, v in original["headers"] if k.lower() == "authorization")
    refused: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: refused.append(str(a[2])))
    QGuiApplication.clipboard().setText(fixture.read_bytes().decode("utf-8"))
    editor = window.composer.editor
    editor.setFocus()
    qtbot.keyClick(editor, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert refused == []
    dialog = tools_of(window).dialogs[-1]
    assert isinstance(dialog, EditResendDialog)
    assert dialog.url_edit.text() == original["url"]
    assert json.loads(dialog.body_edit.toPlainText()) == json.loads(original["body"])
    shown = "\n".join([v for _, v in dialog.headers()] + [dialog.body_edit.toPlainText()])
    assert key.removeprefix("Bearer ") not in shown
    name = next(k for k, _ in original["headers"] if k.lower() == "authorization")
    assert (name, "Bearer ***") in dialog.headers()
    account = secret_account(original["url"], "authorization")
    assert ring.items[("StreamScope", account)] == key


def test_pasting_a_curl_command_into_the_composer_offers_import(
    window: MainWindow, qtbot: QtBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def question(*args: object, **kwargs: object) -> QMessageBox.StandardButton:
        asked.append(str(args[2]))
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    QGuiApplication.clipboard().setText(
        "curl https://example.invalid/v1/chat/completions -H 'x-api-key: "
        + KEY
        + """' -d '{"model": "m", "messages": []}'"""
    )
    editor = window.composer.editor
    editor.setFocus()
    qtbot.keyClick(editor, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert asked and "curl" in asked[0]
    assert editor.toPlainText() == ""  # not pasted: imported
    dialog = tools_of(window).dialogs[-1]
    assert isinstance(dialog, EditResendDialog)
    assert ("x-api-key", "***") in dialog.headers()
    # typing one and pressing Enter offers it too instead of sending it as a message
    editor.setPlainText("curl https://example.invalid/x -d '{}'")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert len(asked) == 2
    assert len(window.controller.history) == 0


def test_copy_as_python_compiles(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    send(window, aloop, "demo")
    code = tools_of(window).copy_as_python()
    assert code is not None
    compile(code, "copied.py", "exec")
    assert 'os.environ["API_KEY"]' in code


def test_compare_two_turns_of_the_session(window: MainWindow, aloop: qasync.QEventLoop) -> None:
    send(window, aloop, "demo", "same prompt")
    send(window, aloop, "demo-length", "same prompt")
    send(window, aloop, "demo-tools", "tools please")
    send(window, aloop, "demo-tools", "tools please")
    dialog = tools_of(window).compare()
    assert dialog.combo_a.count() == 4
    dialog.select(0, 1)
    task = dialog.compare()
    assert task is not None
    result = aloop.run_until_complete(task)
    assert "finish reason: stop → length" in result.differences()
    assert any(d.startswith("text: ") for d in result.differences())
    assert "finish reason: stop → length" in dialog.summary.toPlainText()
    assert "line-through" in dialog.text_view.toHtml()
    assert dialog.frames_table.rowCount() == max(len(result.a.frames), len(result.b.frames))
    dialog.select(2, 3)
    task = dialog.compare()
    assert task is not None
    result = aloop.run_until_complete(task)
    assert result.differences() == []
    assert len(result.tool_calls) == 2 and all(c.identical for c in result.tool_calls)
    assert "identical (JSON compared structurally)" in dialog.tools_view.toPlainText()
    dialog.align_combo.setCurrentIndex(1)  # by time
    assert dialog.frames_table.rowCount() >= len(result.a.frames)


def test_compare_two_capture_files(
    window: MainWindow, aloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    from streamscope.core.capture.format import write_capture

    send(window, aloop, "demo")
    tools = tools_of(window)
    assert tools.recorder.last is not None
    path = tmp_path / "a.sscap"
    write_capture(path, tools.recorder.last.capture)
    dialog = tools.compare()
    dialog.open_capture(path, dialog.combo_a)
    dialog.open_capture(path, dialog.combo_b)
    assert dialog.combo_a.currentText() == dialog.combo_b.currentText() == "a.sscap"
    task = dialog.compare()
    assert task is not None
    assert aloop.run_until_complete(task).differences() == []


def test_find_next_and_previous_select_the_matching_frames(
    window: MainWindow, aloop: qasync.QEventLoop, qtbot: QtBot
) -> None:
    send(window, aloop, "demo-tools", "weather?")
    tools = tools_of(window)
    model = window.inspector.frames_model
    panel = window.inspector.frames_panel
    bar = tools.find_in_frames()
    assert bar.isVisible() and window.inspector.currentIndex() == 0
    bar.set_query("get_", "text")
    qtbot.waitUntil(lambda: not bar.searching)
    rows = bar.rows
    assert len(rows) == 2  # the two frames that start the tool calls
    assert all(b"get_" in model.frame_bytes(r) for r in rows)
    assert bar.find_next() == rows[0] and panel.selected_row() == rows[0]
    assert bar.find_next() == rows[1] and panel.selected_row() == rows[1]
    assert bar.find_next() == rows[0]  # wraps
    assert bar.find_previous() == rows[1]
    assert bar.count_label.text() == "2 of 2"
    # a byte pattern: the UTF-8 of "ü" (c3 bc) only where it is raw, not \u00fc
    bar.set_query("c3 bc", "bytes")
    qtbot.waitUntil(lambda: not bar.searching)
    assert bar.rows == [r for r in range(model.rowCount()) if b"\xc3\xbc" in model.frame_bytes(r)]
    # an event name: [DONE] is the last frame
    bar.set_query("[DONE]", "any")
    qtbot.waitUntil(lambda: not bar.searching)
    assert bar.find_next() == model.rowCount() - 1
    # a hidden match clears the filter
    panel.filter_edit.setText("keep-alive-nothing")
    panel.apply_filter()
    bar.set_query("get_", "text")
    qtbot.waitUntil(lambda: not bar.searching)
    assert bar.find_next() == rows[0]
    assert panel.filter_edit.text() == ""


def test_export_frames_as_json_lines(
    window: MainWindow, aloop: qasync.QEventLoop, tmp_path: Path
) -> None:
    send(window, aloop, "demo")
    path = tmp_path / "frames.jsonl"
    n = tools_of(window).export_frames_to(path)
    model = window.inspector.frames_model
    assert n == model.rowCount() > 5
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert len(lines) == n
    assert lines[-1]["data"] == "[DONE]"
    assert all(set(o) >= {"i", "t", "event", "data"} for o in lines)
    assert [o["t"] for o in lines] == sorted(o["t"] for o in lines)


def test_the_highlight_delegate_is_only_installed_while_finding(
    window: MainWindow, aloop: qasync.QEventLoop
) -> None:
    """Scrolling big captures stays in C++: no Python delegate unless a find is active."""
    from streamscope.ui.inspector.frames_find import _MatchDelegate

    view = window.inspector.frames_panel.view
    assert not isinstance(view.itemDelegate(), _MatchDelegate)
    bar = window.power_tools.find_bar
    bar.open_bar()
    assert isinstance(view.itemDelegate(), _MatchDelegate)
    bar.close_bar()
    assert not isinstance(view.itemDelegate(), _MatchDelegate)
