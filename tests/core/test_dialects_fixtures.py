"""Every recorded fixture, fed whole and one byte at a time, gives its expected turn.

A fixture is ``fixtures/<dialect>/NAME.sse`` (or ``.ndjson``) with ``NAME.expected.json``:
``end`` is the StreamEnd kind the body ended with, ``reason_contains`` and
``warnings_contains`` are substring checks, every other key must equal the CLI JSON value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamscope.core.turn.model import turn_to_json
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.turn.pipeline import StreamPipeline

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in {".sse", ".ndjson"})
CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson"}


def _expected(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        path.with_name(path.stem + ".expected.json").read_text("utf-8")
    )
    return data


def _run(path: Path, dialect: str, step: int | None, *, keep_frames: bool = True) -> dict[str, Any]:
    body = path.read_bytes()
    pipe = StreamPipeline(dialect, keep_frames=keep_frames, content_type=CONTENT_TYPES[path.suffix])
    size = step or len(body) or 1
    t = 0.0
    for i in range(0, len(body), size):
        t += 0.001
        pipe.feed(body[i : i + size], t)
    end = StreamEnd(_expected(path)["end"], elapsed=t)
    return turn_to_json(pipe.close(end, t))


def _check(result: dict[str, Any], expected: dict[str, Any]) -> None:
    for key, want in expected.items():
        if key == "end":
            continue
        if key == "reason_contains":
            assert want in result["reason"], result["reason"]
        elif key == "warnings_contains":
            assert any(want in w for w in result["warnings"]), result["warnings"]
        else:
            assert result[key] == want, f"{key}: {result[key]!r} != {want!r}"


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_there_are_fixtures_for_every_dialect() -> None:
    dialects = {p.parent.name for p in CASES}
    assert dialects == {"openai", "anthropic", "gemini", "responses", "ollama"}
    assert len(CASES) >= 40


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_fixture_whole(path: Path) -> None:
    _check(_run(path, path.parent.name, None), _expected(path))


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_fixture_one_byte_at_a_time(path: Path) -> None:
    whole = _run(path, path.parent.name, None)
    split = _run(path, path.parent.name, 1)
    assert split == whole
    _check(split, _expected(path))


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_fixture_without_frame_capture(path: Path) -> None:
    fast = _run(path, path.parent.name, 7, keep_frames=False)
    full = _run(path, path.parent.name, None)
    # only frames carry the invalid-UTF-8 flag
    full["warnings"] = [w for w in full["warnings"] if "UTF-8" not in w]
    assert fast == full


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_fixture_auto_detects_the_dialect(path: Path) -> None:
    result = _run(path, "auto", 5)
    want = _run(path, path.parent.name, None)
    # auto may add a warning when the very first frame cannot tell the dialect
    assert {k: v for k, v in result.items() if k != "warnings"} == {
        k: v for k, v in want.items() if k != "warnings"
    }
