"""The linter's test of a whole update for usual frames (engine._all_usual) says what the
per-frame test says of every frame, for frames as the SSE decoder cuts them from any bytes
and any chunking: a usual frame skips the framing checks, so a wrong "yes" hides a finding."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.turn.pipeline import ParsedFrame
from streamscope.core.verdict.engine import _all_usual
from streamscope.core.wire.sse import RawFrame, SSEDecoder


def usual(raw: bytes) -> bool:
    """The per-frame test (Linter._frames)."""
    return (
        raw[:6] == b"data: "
        and raw.find(b"\n") == len(raw) - 2
        and raw[6:7] != b" "
        and raw[-1:] == b"\n"
        and b"\r" not in raw
    )


PIECES = st.sampled_from(
    [b"data: {}\n\n", b"data: a\n\n", b"data:  a\n\n", b"data: a\ndata: b\n\n", b"\n", b"\n\n",
     b": ping\n\n", b"data: a\r\n\r\n", b"event: x\ndata: y\n\n", b"data: \n\n", b"x\n\n",
     b"data: ", b"\n\ndata: ", b"data", b"\r", b"a"]
)  # fmt: skip


def frames_of(body: bytes, cuts: list[int]) -> list[list[RawFrame]]:
    decoder = SSEDecoder()
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    updates = [decoder.feed_frames(body[a:b]) for a, b in pairwise(points)]
    return [*updates, decoder.close_frames()]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=12), st.lists(st.integers(0, 400), max_size=6))
def test_the_update_test_agrees_with_the_frame_test(pieces: list[bytes], cuts: list[int]) -> None:
    for frames in frames_of(b"".join(pieces), cuts):
        if frames:
            parsed = [ParsedFrame(f, []) for f in frames]
            assert _all_usual(parsed) == all(usual(f.raw) for f in frames), frames


def test_examples() -> None:
    def check(body: bytes) -> bool:
        frames = [f for update in frames_of(body, []) for f in update]
        return _all_usual([ParsedFrame(f, []) for f in frames])

    assert check(b"data: a\n\ndata: b\n\n")
    assert not check(b"data: a\n\n\ndata: b\n\n")  # a run of blank lines between them
    assert not check(b"data: a\n\ndata:  b\n\n")  # the value starts with a space
    assert not check(b"data: a\ndata: b\n\ndata: c\n\n")  # a block of two lines
    assert not check(b"data: a\n\ndata: b")  # an unterminated tail


def test_hand_made_updates() -> None:
    """Shapes the decoder gives rarely or never in one update, each a frame that is not usual."""

    def check(*raws: bytes) -> bool:
        return _all_usual([ParsedFrame(RawFrame(0, raw, None, (), False), []) for raw in raws])

    assert check(b"data: a\n\n", b"data: b\n\n")
    assert not check(b"data: a\rb\n\n")  # a CR line end inside
    assert not check(b"data: a\ndata: b\n\n", b"data: c\n")  # a tail after a two-line block
