"""Tool definitions: parsing both shapes with precise errors, and the Tools panel."""

from __future__ import annotations

import json

import pytest
from pytestqt.qtbot import QtBot

from streamscope.core.wire.conversation import ToolDefinition
from streamscope.core.wire.tools import (
    EXAMPLE_TOOLS,
    EXAMPLE_TOOLS_JSON,
    ToolDefinitionError,
    parse_tool_definitions,
    tools_to_json,
)
from streamscope.ui.chat.tools_panel import ToolsPanel

# --- core: parse_tool_definitions ---------------------------------------------------------


def test_examples_parse() -> None:
    tools = parse_tool_definitions(EXAMPLE_TOOLS_JSON)
    assert [t.name for t in tools] == ["get_weather", "get_time"]
    weather = tools[0].parameters
    assert weather["properties"]["unit"]["enum"] == ["c", "f"]
    assert tools[1].parameters["required"] == ["timezone"]
    assert len(EXAMPLE_TOOLS) == 2


def test_both_shapes_and_anthropic_input_schema() -> None:
    text = json.dumps(
        [
            {"type": "function", "function": {"name": "a", "description": "A", "parameters": {}}},
            {"name": "b", "description": "B", "parameters": {"type": "object"}},
            {"type": "function", "name": "c", "parameters": {"type": "object"}},
            {"name": "d", "input_schema": {"type": "object", "properties": {"x": {}}}},
            {"name": "e"},
        ]
    )
    tools = parse_tool_definitions(text)
    assert [t.name for t in tools] == ["a", "b", "c", "d", "e"]
    assert tools[0].description == "A" and tools[1].description == "B"
    assert tools[3].parameters == {"type": "object", "properties": {"x": {}}}
    assert tools[4] == ToolDefinition("e")


def test_empty_text_is_no_tools() -> None:
    assert parse_tool_definitions("  \n") == []
    assert parse_tool_definitions("[]") == []


def test_json_syntax_error_has_line_and_column() -> None:
    text = '[\n  {"name": "a"}\n  {"name": "b"}\n]'
    with pytest.raises(ToolDefinitionError) as info:
        parse_tool_definitions(text)
    err = info.value
    assert (err.line, err.column) == (3, 3)
    assert str(err) == "line 3, column 3: Expecting ',' delimiter"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": "a"}, "expected a JSON list of tools: wrap the object in [ ... ]"),
        ("x", "expected a JSON list of tools, got a string"),
        ([{"name": "a"}, {"description": "no name"}], "tool 2: missing name"),
        ([{"name": "a"}, 3], "tool 2: expected an object, got a number"),
        ([{"name": "a b"}], "tool 1: name 'a b' must be 1-64 letters, digits, _ or -"),
        ([{"name": 5}], "tool 1: name must be a string, got a number"),
        ([{"type": "web_search"}], "tool 1: unsupported type 'web_search' (only function tools)"),
        ([{"type": "function", "function": "x"}], 'tool 1: "function" must be an object'),
        (
            [{"name": "f", "parameters": []}],
            "tool 1 (f): parameters must be a JSON Schema object, got a list",
        ),
        (
            [{"name": "f", "parameters": {"type": "string"}}],
            "tool 1 (f): parameters.type must be \"object\", got 'string'",
        ),
        (
            [{"name": "f", "parameters": {"properties": {}, "required": ["city"]}}],
            "tool 1 (f): required city not in parameters.properties",
        ),
        ([{"name": "f"}, {"name": "g"}, {"name": "f"}], "tool 3: duplicate name f (also tool 1)"),
        ([{"name": "f", "description": 1}], "tool 1 (f): description must be a string"),
    ],
)
def test_rejects_bad_definitions_precisely(doc: object, message: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        parse_tool_definitions(json.dumps(doc))
    assert str(info.value).startswith(message)


def test_tools_to_json_round_trips() -> None:
    tools = parse_tool_definitions(EXAMPLE_TOOLS_JSON)
    text = tools_to_json(tools)
    assert "\n  " in text  # pretty
    assert parse_tool_definitions(text) == tools


# --- the panel ------------------------------------------------------------------------------


def test_panel_starts_empty_and_disabled(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    assert panel.tools() == []
    assert not panel.is_enabled()
    assert panel.editor.font().fixedPitch() or panel.editor.font().family()


def test_insert_examples_enables_and_validates(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.toolsChanged):
        panel.examples_button.click()
    assert panel.is_enabled()
    assert [t.name for t in panel.tools()] == ["get_weather", "get_time"]
    assert panel.status.text() == "✓ 2 tools: get_weather, get_time"
    assert "116329" in panel.status.styleSheet()  # green


def test_invalid_json_shows_line_and_column_in_red(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    panel.set_enabled(True)
    panel.set_tools_json('[\n  {"name": "a",}\n]')
    assert panel.tools() == []
    assert panel.status.text().startswith("✗ line 2, column 16:")
    assert "c2161f" in panel.status.styleSheet()  # red
    panel.move_cursor_to_error()
    cursor = panel.editor.textCursor()
    assert (cursor.blockNumber(), cursor.positionInBlock()) == (1, 15)


def test_semantic_error_is_shown(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    panel.set_enabled(True)
    panel.set_tools_json('[{"name": "a"}, {"description": "?"}]')
    assert panel.status.text() == "✗ tool 2: missing name"
    assert panel.tools() == []


def test_disabled_sends_nothing_but_keeps_the_text(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    panel.set_tools_json(EXAMPLE_TOOLS_JSON)
    assert panel.tools() == []
    assert "not sent" in panel.status.text()
    changed: list[bool] = []
    panel.toolsChanged.connect(lambda: changed.append(True))
    panel.set_enabled(True)
    assert changed and len(panel.tools()) == 2
    assert panel.tools_json() == EXAMPLE_TOOLS_JSON


def test_set_tools_shows_pretty_json(qtbot: QtBot) -> None:
    panel = ToolsPanel()
    qtbot.addWidget(panel)
    tools = [ToolDefinition("lookup", "Look it up", {"type": "object", "properties": {}})]
    panel.set_tools(tools)
    assert panel.is_enabled() and panel.tools() == tools
