"""The linter reads usual blocks through the pipeline's lean lane (events, no frames made);
what it says must not change for it: the same findings (rule, frame, message, count, frames)
and the same turn as with every frame made, for every recorded fixture, every mutant of them
the recordings test makes, and streams of real and broken pieces in any chunking."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.turn.model import turn_to_json
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict.engine import Linter

FIXTURES = Path(__file__).parent / "fixtures"
SSE = sorted(FIXTURES.glob("*/*.sse"))


def lint(body: bytes, dialect: str, cuts: list[int], *, lean: bool) -> tuple[object, ...]:
    linter = Linter(
        dialect,
        headers=[("content-type", "text/event-stream")],
        status=200,
        request={"model": "m", "stream": True},
    )
    linter.pipeline._lean = lean
    edges = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    for k, (a, b) in enumerate(pairwise(edges)):
        linter.feed(body[a:b], 0.1 + k * 0.01)
    verdict = linter.finish(StreamEnd("eof"), 1.0)
    turn = verdict.turn
    calls = [(c.id, c.arguments, [f.frame for f in c.fragments]) for c in turn.tool_calls]
    return verdict.findings, turn_to_json(turn), calls, linter._n, verdict.outcome


def same(body: bytes, dialect: str, cuts: list[int]) -> None:
    assert lint(body, dialect, cuts, lean=True) == lint(body, dialect, cuts, lean=False)


@pytest.mark.parametrize("path", SSE, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_fixture_says_the_same(path: Path) -> None:
    body = path.read_bytes()
    for step in (len(body), 64, 7):
        same(body, path.parent.name, list(range(0, len(body), step)))


FRAME = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"w"},"finish_reason":null}]}\n\n'  # noqa: E501
PIECES = st.sampled_from(
    [FRAME] * 6 + [
        FRAME.replace(b'"content":"w"', b'"role":"assistant","content":""'),
        FRAME.replace(b'"content":"w"', b'"content":"\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87"'),
        FRAME.replace(b'"created":1', b'"created":2'),
        FRAME.replace(b'"index":0', b'"index":1'),
        FRAME.replace(b'"content":"w"},"finish_reason":null', b'},"finish_reason":"stop"'),
        FRAME.replace(b'{"content":"w"}', b'{"tool_calls":[{"index":0,"id":"t","function":'
                      b'{"name":"f","arguments":"{\\"a\\""}}]}'),
        FRAME.replace(b'{"content":"w"}', b'{"tool_calls":[{"index":0,"function":'
                      b'{"arguments":":1}"}}]}'),
        b"data: [DONE]\n\n", b"data:  [DONE]\n\n", b": keep-alive\n\n", b"\n", b"data: x\n\n",
        b"data: {\n\n", b"data: \xff\n\n", b"data: a\r\n\r\n", b"\xef\xbb\xbfdata: {}\n\n",
        b"event: e\ndata: {}\n\n", b"data: {}\ndata: {}\n\n", b"retry: 5\n\n",
        b'data: {"error":{"message":"boom"}}\n\n',
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=24), st.lists(st.integers(0, 4000), max_size=8))
def test_any_stream_in_any_chunking_says_the_same(pieces: list[bytes], cuts: list[int]) -> None:
    same(b"".join(pieces), "openai", cuts)
    same(b"".join(pieces), "auto", cuts)


def test_the_lean_lane_is_taken() -> None:
    """(Else the figures of bench_lint are the frames mode's.)"""
    linter = Linter("openai", headers=[("content-type", "text/event-stream")], status=200)
    linter.feed(FRAME, 0.1)
    update = linter.pipeline.feed(FRAME * 3, 0.2)
    assert update.usual is not None and len(update.usual) == 3 and update.frames == []


def test_usual_blocks_after_crlf_ones_are_mixed_line_endings() -> None:
    """The first read's blocks end lines with CRLF, the next read's are usual (LF)."""
    first = FRAME.replace(b"\n", b"\r\n")
    for lean in (True, False):
        findings = lint(first + FRAME * 2 + b"data: [DONE]\n\n", "openai", [len(first)], lean=lean)[
            0
        ]
        assert [(f.rule, f.frame, f.message) for f in findings if f.rule.startswith("sse.")] == [
            ("sse.mixed-line-endings", 1, "line endings change within the stream: crlf before, "
             "lf here")
        ]  # fmt: skip
