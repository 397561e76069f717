"""The SSE decoder's lean lane (``feed_usual``) against its frames mode (``feed_frames``), for
any bytes and any chunking: where it hands out usual blocks without frames, the frames mode
makes of the same chunk exactly such frames (one ``data: <value>`` line and LF LF each, valid
UTF-8, the value not starting with a space) with the same events and bytes; otherwise it gives
the same frames. The linter skips every framing rule for usual blocks, so a wrong "usual"
would hide a finding."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.wire.sse import RawFrame, SSEDecoder, SSEProtocolError, UsualBlocks


def usual(frame: RawFrame) -> bool:
    """The linter's per-frame test of a usual frame (engine.Linter._frames), and valid UTF-8."""
    raw = frame.raw
    return (
        raw[:6] == b"data: "
        and raw.find(b"\n") == len(raw) - 2
        and raw[6:7] != b" "
        and raw[-1:] == b"\n"
        and b"\r" not in raw
        and not frame.invalid_utf8
        and frame.complete
    )


PIECES = st.sampled_from(
    [b"data: {}\n\n", b"data: a\n\n", b"data:  a\n\n", b"data: a\ndata: b\n\n", b"\n", b"\n\n",
     b": ping\n\n", b"data: a\r\n\r\n", b"event: x\ndata: y\n\n", b"data: \n\n", b"x\n\n",
     b"data: ", b"\n\ndata: ", b"data", b"\r", b"a", b"data: \xff\n\n", b"data: \xc3", b"\xa9\n\n",
     b"\xef\xbb\xbf", b"id: 7\n", b"data: [DONE]\n\n", "data: ключ 🙂\n\n".encode()]
)  # fmt: skip


def points(body: bytes, cuts: list[int]) -> list[tuple[int, int]]:
    return list(pairwise(sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=14), st.lists(st.integers(0, 400), max_size=7), st.integers(4, 64))
def test_the_lean_lane_agrees_with_the_frames_mode(
    pieces: list[bytes], cuts: list[int], cap: int
) -> None:
    body = b"".join(pieces)
    lean, full = SSEDecoder(cap), SSEDecoder(cap)
    offset = 0
    for a, b in points(body, cuts):
        try:
            want = full.feed_frames(body[a:b])
        except SSEProtocolError as exc:
            try:
                lean.feed_usual(body[a:b])
            except SSEProtocolError as got:
                assert got.frames == exc.frames and got.oversized == exc.oversized
                return
            raise AssertionError("the lean lane let an over-long line pass") from None
        got = lean.feed_usual(body[a:b])
        if type(got) is UsualBlocks:
            assert want and all(usual(f) for f in want), want
            assert got.offset == want[0].offset == offset
            assert got.size == sum(len(f.raw) for f in want)
            assert got.events == [f.event for f in want]
        else:
            assert got == want
        offset += sum(len(f.raw) for f in want)
    assert lean.close_frames() == full.close_frames()


def test_usual_blocks_come_without_frames_after_the_first_block() -> None:
    dec = SSEDecoder()
    first = dec.feed_usual(b"data: a\n\n")  # (the stream start: a BOM may lead it)
    assert first == [RawFrame(0, b"data: a\n\n", first[0].event, (), False)]  # type: ignore[index]
    got = dec.feed_usual('data: b\n\ndata: ключ\n\ndata: \n\ndata: {"x"'.encode())
    assert type(got) is UsualBlocks
    assert (got.offset, got.size) == (9, 9 + 16 + 8)
    assert [ev.data for ev in got.events] == ["b", "ключ", ""]
    got = dec.feed_usual(b": 1}\n\n")  # the held line, completed
    assert type(got) is UsualBlocks and [ev.data for ev in got.events] == ['{"x": 1}']
    assert dec.feed_usual(b"data: c\n") == []  # nothing complete: nothing cut


def test_each_unusual_shape_gets_frames() -> None:
    for body in (
        b"data: a\n\n\ndata: b\n\n",  # a run of blank lines between them
        b"data: a\n\ndata:  b\n\n",  # the value starts with a space
        b"data: a\ndata: b\n\ndata: c\n\n",  # a block of two lines
        b"data: a\n\n: ping\n\n",  # a comment
        b"data: a\n\nevent: x\ndata: b\n\n",  # an event name
        b"data: a\n\ndata: \xff\n\n",  # invalid UTF-8
        b"data: a\r\n\r\n",  # CR line ends
        b"data: a\n\n\xef\xbb\xbfdata: b\n\n",  # a BOM inside
    ):
        dec = SSEDecoder()
        dec.feed_usual(b"data: 0\n\n")
        got = dec.feed_usual(body)
        assert type(got) is list and [f.raw for f in got] == [
            f.raw for f in SSEDecoder().feed_frames(body)
        ], body


def test_a_line_over_the_cap_after_usual_blocks_still_fails_the_decoder() -> None:
    dec = SSEDecoder(64)
    dec.feed_usual(b"data: 0\n\n")
    try:
        dec.feed_usual(b"data: a\n\ndata: " + b"x" * 100)
    except SSEProtocolError as exc:
        assert [f.raw for f in exc.frames or []] == [b"data: a\n\n"]
        assert exc.oversized is not None and exc.oversized.raw == b"data: " + b"x" * 100
    else:
        raise AssertionError("no SSEProtocolError")
