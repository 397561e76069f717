"""Tool (function) definitions as the user edits them: JSON text <-> ToolDefinition.

``parse_tool_definitions`` accepts a JSON list whose items are either OpenAI chat style
``{"type": "function", "function": {"name", "description", "parameters"}}``, flat
(Responses style, or bare) ``{"name", "description", "parameters"}``, or Anthropic style
with ``input_schema`` instead of ``parameters``. Errors are precise:
``line 3, column 7: Expecting ',' delimiter`` or ``tool 2: missing name``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from streamscope.core.wire.conversation import ToolDefinition

__all__ = [
    "EXAMPLE_TOOLS",
    "EXAMPLE_TOOLS_JSON",
    "ToolDefinitionError",
    "parse_tool_definitions",
    "tools_to_json",
]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""OpenAI's rule for function names (the strictest of the providers)."""

EXAMPLE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Zürich"},
                    "unit": {
                        "type": "string",
                        "enum": ["c", "f"],
                        "description": "Temperature unit: c (Celsius) or f (Fahrenheit)",
                    },
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current local time in a time zone.",
            "parameters": {
                "type": "object",
                "properties": {
                    "timezone": {
                        "type": "string",
                        "description": "IANA time zone, e.g. Europe/Zurich",
                    }
                },
                "required": ["timezone"],
            },
        },
    },
]
"""The two ready examples (OpenAI chat function shape); the demo's ``demo-tools`` calls them."""

EXAMPLE_TOOLS_JSON = json.dumps(EXAMPLE_TOOLS, indent=2, ensure_ascii=False)


class ToolDefinitionError(ValueError):
    """The tools JSON is invalid. ``line``/``column`` are set for JSON syntax errors
    (1-based), ``index`` (1-based) for a problem with one tool."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.index = index


def parse_tool_definitions(text: str) -> list[ToolDefinition]:
    """Parse the editor's text; empty (or whitespace) text is no tools."""
    if not text.strip():
        return []
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolDefinitionError(
            f"line {exc.lineno}, column {exc.colno}: {exc.msg}", line=exc.lineno, column=exc.colno
        ) from None
    if isinstance(doc, dict):
        raise ToolDefinitionError("expected a JSON list of tools: wrap the object in [ ... ]")
    if not isinstance(doc, list):
        raise ToolDefinitionError(f"expected a JSON list of tools, got {_kind(doc)}")
    tools: list[ToolDefinition] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(doc, 1):
        tool = _parse_one(item, i)
        if tool.name in seen:
            raise ToolDefinitionError(
                f"tool {i}: duplicate name {tool.name} (also tool {seen[tool.name]})", index=i
            )
        seen[tool.name] = i
        tools.append(tool)
    return tools


def _parse_one(item: Any, i: int) -> ToolDefinition:
    def fail(message: str) -> ToolDefinitionError:
        return ToolDefinitionError(f"tool {i}: {message}", index=i)

    if not isinstance(item, dict):
        raise fail(f"expected an object, got {_kind(item)}")
    kind = item.get("type")
    body: dict[str, Any] = item
    if "function" in item:
        if kind not in (None, "function"):
            raise fail(f'type must be "function", got {kind!r}')
        if not isinstance(item["function"], dict):
            raise fail(f'"function" must be an object, got {_kind(item["function"])}')
        body = item["function"]
    elif kind is not None and kind != "function":
        raise fail(f"unsupported type {kind!r} (only function tools)")

    name = body.get("name")
    if name is None:
        raise fail("missing name")
    if not isinstance(name, str):
        raise fail(f"name must be a string, got {_kind(name)}")
    if not NAME_PATTERN.match(name):
        raise fail(f"name {name!r} must be 1-64 letters, digits, _ or -")
    where = f"{i} ({name})"
    description = body.get("description", "")
    if not isinstance(description, str):
        raise ToolDefinitionError(f"tool {where}: description must be a string", index=i)
    params = body.get("parameters", body.get("input_schema"))
    if params is None:
        return ToolDefinition(name=name, description=description)
    if not isinstance(params, dict):
        raise ToolDefinitionError(
            f"tool {where}: parameters must be a JSON Schema object, got {_kind(params)}", index=i
        )
    if params.get("type", "object") != "object":
        raise ToolDefinitionError(
            f'tool {where}: parameters.type must be "object", got {params.get("type")!r}',
            index=i,
        )
    props = params.get("properties")
    if props is not None and not isinstance(props, dict):
        raise ToolDefinitionError(f"tool {where}: parameters.properties must be an object", index=i)
    required = params.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise ToolDefinitionError(
                f"tool {where}: parameters.required must be a list of names", index=i
            )
        missing = [r for r in required if isinstance(props, dict) and r not in props]
        if missing:
            raise ToolDefinitionError(
                f"tool {where}: required {', '.join(missing)} not in parameters.properties",
                index=i,
            )
    return ToolDefinition(name=name, description=description, parameters=params)


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def tools_to_json(tools: Sequence[ToolDefinition]) -> str:
    """Pretty JSON (OpenAI chat function shape) that :func:`parse_tool_definitions` reads back."""
    doc = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in tools
    ]
    return json.dumps(doc, indent=2, ensure_ascii=False)
