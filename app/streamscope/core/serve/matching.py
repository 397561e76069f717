"""Which recorded exchange answers a request, and what a request that has none is told.

``order`` (the default): the recordings of each method and path are served in turn, in the
order they were loaded; the body is not looked at. ``request``: the recording whose request
body equals this one — as JSON, key order and white space aside, without the top-level fields
in :data:`VOLATILE_FIELDS` — VCR-style; recordings with the same body are served in turn. A
body that is not JSON must equal the recorded bytes. The query string and the headers are
never compared (keys in them are redacted in a capture).

Each recording is served once; ``loop`` starts again from the first when all of a path's (or
a body's) recordings have been served. A request with no recording left gets a
:class:`NoMatch`: HTTP 404 with a JSON error naming what was expected and the nearest
recorded request (see :meth:`NoMatch.body`). 404, not 409: the official SDKs retry a 409
(twice, with back-off) but never a 404, so a test fails at once with the message.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamscope.core.capture.json_diff import json_diff
from streamscope.core.serve.library import Recorded

__all__ = ["NO_MATCH_STATUS", "VOLATILE_FIELDS", "MatchMode", "Matcher", "NoMatch"]

MatchMode = Literal["order", "request"]

VOLATILE_FIELDS = frozenset(
    {"stream_options", "user", "metadata", "safety_identifier", "prompt_cache_key"}
)
"""Top-level request body fields ``--match request`` ignores: they carry who is asking or
tracing ids (``user``, ``metadata`` — Anthropic's ``metadata.user_id`` too,
``safety_identifier``, ``prompt_cache_key``) or how usage is reported (``stream_options``),
not what is asked. ``seed``, ``model``, the messages and the sampling parameters count."""

NO_MATCH_STATUS = 404
_SHOWN_DIFFERENCES = 5


@dataclass(frozen=True, slots=True)
class NoMatch:
    """Why a request has no recording to answer it; :meth:`body` is what the client gets."""

    method: str
    path: str
    message: str
    expected: tuple[str, ...] = ()
    nearest: Recorded | None = None
    differences: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        """The JSON error: OpenAI's and Anthropic's error shapes at once (``error.message``
        is what their SDKs show)."""
        nearest: dict[str, Any] | None = None
        if self.nearest is not None:
            nearest = {
                "served_from": self.nearest.source,
                "method": self.nearest.method,
                "path": self.nearest.path,
                "differences": list(self.differences),
            }
        return {
            "type": "error",
            "error": {
                "type": "streamscope_no_match",
                "code": "no_recorded_exchange",
                "message": self.message,
                "request": f"{self.method} {self.path}",
                "expected": list(self.expected),
                "nearest": nearest,
            },
        }


@dataclass(slots=True)
class _Line:
    """The recordings one key (a path, or a path and a body) is answered from, in turn."""

    items: list[Recorded] = field(default_factory=list)
    next: int = 0


def request_key(body: bytes, ignore: frozenset[str] = VOLATILE_FIELDS) -> Any:
    """What ``--match request`` compares of a body: its JSON without the ignored top-level
    fields, else its bytes."""
    try:
        value = orjson.loads(body) if body.strip() else None
    except orjson.JSONDecodeError:
        return body
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in ignore}
    return value


class Matcher:
    """Picks the recording for each request (see the module docstring). Not thread-safe:
    one event loop calls it."""

    def __init__(
        self,
        recordings: Sequence[Recorded],
        mode: MatchMode = "order",
        *,
        loop: bool = False,
        ignore: frozenset[str] = VOLATILE_FIELDS,
    ) -> None:
        if mode not in ("order", "request"):
            raise ValueError(f"match must be 'order' or 'request', not {mode!r}")
        self.mode = mode
        self.loop = loop
        self.ignore = ignore
        self._paths: dict[tuple[str, str], _Line] = defaultdict(_Line)
        self._keys: list[Any] = []
        for rec in recordings:
            self._paths[(rec.method, rec.path)].items.append(rec)
            self._keys.append(request_key(rec.body, ignore))
        self._recordings = list(recordings)
        self._served: set[int] = set()  # (request mode) positions served since the last loop

    def pick(self, method: str, path: str, body: bytes) -> Recorded | NoMatch:
        method = method.upper()
        line = self._paths.get((method, path))
        if line is None:
            return self._unknown_path(method, path)
        if self.mode == "order":
            return self._in_turn(method, path, line)
        return self._by_body(method, path, body)

    # -- order -------------------------------------------------------------------------------

    def _in_turn(self, method: str, path: str, line: _Line) -> Recorded | NoMatch:
        if line.next >= len(line.items):
            if not self.loop:
                return NoMatch(
                    method,
                    path,
                    f"{_all_served(len(line.items))} for {method} {path} "
                    f"{'was' if len(line.items) == 1 else 'were'} served{_AGAIN}",
                    nearest=line.items[-1],
                )
            line.next = 0
        line.next += 1
        return line.items[line.next - 1]

    # -- request -----------------------------------------------------------------------------

    def _by_body(self, method: str, path: str, body: bytes) -> Recorded | NoMatch:
        key = request_key(body, self.ignore)
        same = [
            i
            for i, rec in enumerate(self._recordings)
            if rec.method == method and rec.path == path and self._keys[i] == key
        ]
        if same:
            left = [i for i in same if i not in self._served]
            if not left and self.loop:
                self._served.difference_update(same)
                left = same
            if left:
                self._served.add(left[0])
                return self._recordings[left[0]]
            return NoMatch(
                method,
                path,
                f"{_all_served(len(same))} with this request body for {method} {path} "
                f"{'was' if len(same) == 1 else 'were'} served{_AGAIN}",
                nearest=self._recordings[same[-1]],
            )
        return self._nearest_body(method, path, key)

    def _nearest_body(self, method: str, path: str, key: Any) -> NoMatch:
        candidates = [
            i for i, rec in enumerate(self._recordings) if rec.method == method and rec.path == path
        ]
        expected = tuple(self._recordings[i].source for i in candidates if i not in self._served)
        scored = [(self._distance(self._keys[i], key), i) for i in candidates]
        _, best = min(scored)
        differences = _differences(self._keys[best], key)
        ignored = ", ".join(sorted(self.ignore)) or "nothing"
        return NoMatch(
            method,
            path,
            f"no recorded {method} {path} request has this body (compared as JSON, ignoring "
            f"top-level {ignored}); nearest: {self._recordings[best].source}: "
            + ("; ".join(differences) or "differs"),
            expected=expected,
            nearest=self._recordings[best],
            differences=tuple(differences),
        )

    @staticmethod
    def _distance(recorded: Any, given: Any) -> int:
        if isinstance(recorded, bytes) or isinstance(given, bytes):
            return 0 if recorded == given else 1 << 30
        return len(json_diff(recorded, given))

    # -- no such path --------------------------------------------------------------------------

    def _unknown_path(self, method: str, path: str) -> NoMatch:
        known = sorted(self._paths)
        expected = tuple(f"{m} {p} ({len(self._paths[(m, p)].items)} recorded)" for m, p in known)
        asked = f"{method} {path}"
        if not known:
            return NoMatch(method, path, f"no recorded exchange for {asked}: nothing is recorded")
        best = max(
            known, key=lambda mp: difflib.SequenceMatcher(None, asked, f"{mp[0]} {mp[1]}").ratio()
        )
        nearest = self._paths[best].items[0]
        return NoMatch(
            method,
            path,
            f"no recorded exchange for {asked}; recorded: " + ", ".join(expected),
            expected=expected,
            nearest=nearest,
        )


_AGAIN = " (serve them again with --loop / loop=True)"


def _all_served(n: int) -> str:
    return "the one recorded exchange" if n == 1 else f"all {n} recorded exchanges"


def _differences(recorded: Any, given: Any) -> list[str]:
    """The first few differences, recorded → this request (JSON paths)."""
    if isinstance(recorded, bytes) or isinstance(given, bytes):
        return ["the body is not the recorded one (compared as bytes: not JSON)"]
    changes = json_diff(recorded, given)
    shown = [c.describe() for c in changes[:_SHOWN_DIFFERENCES]]
    for i, text in enumerate(shown):
        if len(text) > 200:
            shown[i] = text[:199] + "…"
    if len(changes) > _SHOWN_DIFFERENCES:
        shown.append(f"… {len(changes) - _SHOWN_DIFFERENCES} more")
    return shown
