"""Structural differences between two JSON values, path by path (``$.days[2]``).

    json_diff({"city": "Bern", "days": [1, 2]}, {"city": "Bern", "days": [1, 3]})
    # [ValueChange("$.days[1]", "changed", 2, 3)]

Objects are compared by key (order does not matter), arrays by index; ``1`` and ``1.0``
differ (the wire sent different text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

__all__ = ["ValueChange", "json_diff"]


@dataclass(frozen=True, slots=True)
class ValueChange:
    """A difference at a JSON path (``$.city``, ``$.days[2]``); ``kind`` is ``changed``,
    ``added`` (only in B) or ``removed`` (only in A)."""

    path: str
    kind: Literal["changed", "added", "removed"]
    a: Any = None
    b: Any = None

    def describe(self) -> str:
        if self.kind == "added":
            return f"{self.path}: added {_json(self.b)}"
        if self.kind == "removed":
            return f"{self.path}: removed {_json(self.a)}"
        return f"{self.path}: {_json(self.a)} → {_json(self.b)}"


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def json_diff(a: Any, b: Any, path: str = "$") -> list[ValueChange]:
    """Structural differences between two JSON values (objects by key, arrays by index)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[ValueChange] = []
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}"
            if key not in b:
                out.append(ValueChange(sub, "removed", a[key], None))
            elif key not in a:
                out.append(ValueChange(sub, "added", None, b[key]))
            else:
                out.extend(json_diff(a[key], b[key], sub))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(b):
                out.append(ValueChange(sub, "removed", a[i], None))
            elif i >= len(a):
                out.append(ValueChange(sub, "added", None, b[i]))
            else:
                out.extend(json_diff(a[i], b[i], sub))
        return out
    if type(a) is not type(b) or a != b:
        return [ValueChange(path, "changed", a, b)]
    return []
