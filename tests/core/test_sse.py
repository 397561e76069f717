"""Tests for streamscope.core.wire.sse: the WHATWG rules one by one, then properties."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamscope.core.wire.sse import RawFrame, SSEDecoder, SSEEvent, SSEProtocolError

BOM = b"\xef\xbb\xbf"


def events_of(stream: bytes, chunks: list[int] | None = None, cap: int = 1 << 20) -> list[SSEEvent]:
    """Feed ``stream`` cut at the given sizes (whole when None) and close."""
    dec = SSEDecoder(max_line_bytes=cap)
    out: list[SSEEvent] = []
    for piece in cut(stream, chunks):
        out += dec.feed(piece)
    return out + dec.close()


def frames_of(stream: bytes, chunks: list[int] | None = None, cap: int = 1 << 20) -> list[RawFrame]:
    dec = SSEDecoder(max_line_bytes=cap)
    out: list[RawFrame] = []
    for piece in cut(stream, chunks):
        out += dec.feed_frames(piece)
    return out + dec.close_frames()


def cut(stream: bytes, sizes: list[int] | None) -> list[bytes]:
    if sizes is None:
        return [stream]
    pieces = []
    pos = 0
    for size in sizes:
        pieces.append(stream[pos : pos + size])
        pos += size
    pieces.append(stream[pos:])
    return pieces


def bytewise(stream: bytes) -> list[int]:
    return [1] * len(stream)


def ev(
    data: str, event: str = "message", id: str | None = None, retry: int | None = None
) -> SSEEvent:
    return SSEEvent(event=event, data=data, id=id, retry=retry)


def reference(stream: bytes) -> list[SSEEvent]:
    """A deliberately naive transcription of the WHATWG algorithm, for comparison."""
    if stream.startswith(BOM):
        stream = stream[3:]
    parts = re.split(rb"(\r\n|\r|\n)", stream)
    lines = parts[0:-1:2]  # the last part is the unterminated line: dropped
    data, event, last_id, retry = "", "", None, None
    out = []
    for raw in lines:
        line = raw.decode("utf-8", "replace")
        if line == "":
            if data:
                out.append(SSEEvent(event or "message", data[:-1], last_id, retry))
            data, event, retry = "", "", None
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            value = value.removeprefix(" ")
        else:
            name, value = line, ""
        if name == "data":
            data += value + "\n"
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value)
    return out


Frame = tuple[int, bytes, SSEEvent | None, bool]  # offset, raw, event, complete


def frames_reference(stream: bytes) -> list[Frame]:
    """A naive transcription of the block rules, for comparison: a block is every line up to and
    including a blank line; blank lines where a block would start, however many in a row, are one
    block; what is left is the unterminated tail.  A block's event is the one ``reference`` gives
    for the stream up to the block's end, if it gives one more."""
    bom = BOM if stream.startswith(BOM) else b""
    parts = re.split(rb"(\r\n|\r|\n)", stream[len(bom) :])
    lines = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)]
    blocks: list[bytes] = []
    block: list[bytes] = []
    run = False  # the block is a run of blank lines
    for line in lines:
        blank = line in (b"\n", b"\r", b"\r\n")
        if run and not blank:
            blocks.append(b"".join(block))
            block, run = [], False
        if blank and not block:
            run = True
        block.append(line)
        if blank and not run:
            blocks.append(b"".join(block))
            block = []
    if run:
        blocks.append(b"".join(block))
        block = []
    tail = b"".join(block) + parts[-1]
    raws = blocks + ([tail] if tail else [])
    if bom:
        raws = [bom + raws[0], *raws[1:]] if raws else [bom]
    out: list[Frame] = []
    offset = dispatched = 0
    for i, raw in enumerate(raws):
        event = None
        if i < len(blocks):
            events = reference(stream[: offset + len(raw)])
            if len(events) > dispatched:
                event, dispatched = events[-1], len(events)
        out.append((offset, raw, event, i < len(blocks)))
        offset += len(raw)
    return out


def as_tuples(frames: list[RawFrame]) -> list[Frame]:
    return [(f.offset, f.raw, f.event, f.complete) for f in frames]


def every_chunking(stream: bytes) -> Iterator[list[int]]:
    """Whole, cut at every place, cut at every two places, and byte by byte."""
    n = len(stream)
    yield []
    for i in range(n + 1):
        yield [i]
        for j in range(n + 1 - i):
            yield [i, j]
    yield bytewise(stream)


# -- the spec's examples ------------------------------------------------------------------------


def test_stock_ticker_example() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert events_of(stream) == [ev("YHOO\n+2\n10")]


def test_four_blocks_example() -> None:
    stream = (
        b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\n"
        b"data:  third event\n\n"
    )
    assert events_of(stream) == [
        ev("first event", id="1"),
        ev("second event", id=""),
        ev(" third event", id=""),
    ]


def test_two_events_example() -> None:
    assert events_of(b"data\n\ndata\ndata\n\ndata:") == [ev(""), ev("\n")]


def test_space_after_colon_example() -> None:
    assert events_of(b"data:test\n\ndata: test\n\n") == [ev("test"), ev("test")]


def test_named_events_example() -> None:
    stream = (
        b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
    )
    assert events_of(stream) == [
        ev("73857293", event="add"),
        ev("2153", event="remove"),
        ev("113411", event="add"),
    ]


# -- line ends ----------------------------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_each_line_end(end: bytes) -> None:
    stream = b"data: a" + end + b"data: b" + end + end + b"data: c" + end + end
    assert events_of(stream) == [ev("a\nb"), ev("c")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    stream = b"data: a\r\n\r\ndata: b\r\n\r\n"
    for split in range(len(stream) + 1):
        assert events_of(stream, [split]) == [ev("a"), ev("b")], split
        assert [f.raw for f in frames_of(stream, [split])] == [
            b"data: a\r\n\r\n",
            b"data: b\r\n\r\n",
        ], split


def test_cr_then_lf_in_next_chunk_is_one_line_end_not_a_blank_line() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r") == []
    assert dec.feed(b"\ndata: b\r") == []
    assert dec.feed(b"\n\r") == [ev("a\nb")]


def test_lone_cr_dispatches_without_waiting_for_the_next_read() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\r\r") == [ev("a")]
    assert dec.feed(b"") == []
    assert dec.feed(b"\ndata: b\n\n") == [ev("b")]


def test_lf_cr_is_two_line_ends() -> None:
    assert events_of(b"data: a\n\rdata: b\n\n") == [ev("a"), ev("b")]


# -- BOM ----------------------------------------------------------------------------------------


def test_one_bom_dropped() -> None:
    assert events_of(BOM + b"data: a\n\n") == [ev("a")]


def test_bom_split_across_reads() -> None:
    stream = BOM + b"data: a\n\n"
    for sizes in ([1, 1, 1], [2], [1], [1, 3], [4]):
        assert events_of(stream, sizes) == [ev("a")], sizes
        assert events_of(stream, bytewise(stream)) == [ev("a")]


def test_second_bom_is_part_of_the_field_name() -> None:
    # After the first BOM is dropped the second makes "\ufeffdata" an unknown field.
    assert events_of(BOM + BOM + b"data: a\n\n") == []
    assert events_of(BOM + b"\n" + BOM + b"data: a\n\ndata: b\n\n") == [ev("b")]


def test_bom_not_at_stream_start_is_kept() -> None:
    assert events_of(b"data: " + BOM + b"a\n\n") == [ev("\ufeffa")]


def test_partial_bom_is_an_ordinary_first_line() -> None:
    assert events_of(b"\xef\xbb\ndata: a\n\n") == [ev("a")]
    assert events_of(b"\xef\xbb\ndata: a\n\n", [1, 1]) == [ev("a")]


# -- fields -------------------------------------------------------------------------------------


def test_comment_lines_are_ignored() -> None:
    assert events_of(b": ping\ndata: a\n:\n: OPENROUTER PROCESSING\n\n") == [ev("a")]


def test_field_without_colon_has_empty_value() -> None:
    assert events_of(b"data\ndata\n\n") == [ev("\n")]
    assert events_of(b"event\ndata: x\n\n") == [ev("x")]


def test_only_one_leading_space_removed() -> None:
    assert events_of(b"data:  two\n\ndata:\tx\n\n") == [ev(" two"), ev("\tx")]


def test_colon_in_value_kept() -> None:
    assert events_of(b'data: {"a": "b:c"}\n\n') == [ev('{"a": "b:c"}')]


def test_unknown_fields_ignored() -> None:
    assert events_of(b"foo: bar\nData: x\ndata: a\n\n") == [ev("a")]


def test_event_with_empty_data_buffer_not_dispatched() -> None:
    assert events_of(b"event: x\n\nid: 1\n\nretry: 5\n\n: c\n\n") == []


def test_empty_data_line_does_dispatch() -> None:
    assert events_of(b"data:\n\n") == [ev("")]


def test_event_name_resets_after_each_dispatch_attempt() -> None:
    stream = b"event: a\n\ndata: 1\n\nevent: b\ndata: 2\n\ndata: 3\n\nevent:\ndata: 4\n\n"
    assert [(e.event, e.data) for e in events_of(stream)] == [
        ("message", "1"),
        ("b", "2"),
        ("message", "3"),
        ("message", "4"),
    ]


def test_id_persists_and_empty_id_sets_empty_string() -> None:
    stream = b"data: a\n\nid: 7\ndata: b\n\ndata: c\n\nid\ndata: d\n\nid: 9\n\ndata: e\n\n"
    assert [e.id for e in events_of(stream)] == [None, "7", "7", "", "9"]
    assert events_of(b"id:\ndata: x\n\n") == [ev("x", id="")]


def test_id_with_nul_is_ignored() -> None:
    stream = b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"
    assert [e.id for e in events_of(stream)] == ["1", "1"]


def test_retry_only_when_all_ascii_digits_and_only_for_its_event() -> None:
    stream = (
        b"retry: 1000\ndata: a\n\ndata: b\n\nretry: 12a\ndata: c\n\nretry: -1\ndata: d\n\n"
        b"retry:\ndata: e\n\nretry: \xd9\xa3\ndata: f\n\nretry: 007\ndata: g\n\n"
    )
    assert [e.retry for e in events_of(stream)] == [1000, None, None, None, None, None, 7]


def test_unterminated_event_at_close_dropped() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\n\ndata: b\n") == [ev("a")]
    assert dec.close() == []


# -- UTF-8 --------------------------------------------------------------------------------------


def test_multibyte_split_at_every_byte_boundary() -> None:
    stream = "data: café 東京 🙂\n\n".encode()
    for split in range(len(stream) + 1):
        assert events_of(stream, [split]) == [ev("café 東京 🙂")], split
        frames = frames_of(stream, [split])
        assert [f.event for f in frames] == [ev("café 東京 🙂")]
        assert not frames[0].invalid_utf8
    assert events_of(stream, bytewise(stream)) == [ev("café 東京 🙂")]


def test_invalid_utf8_replaced_and_flagged() -> None:
    stream = b"data: a\xffb\n\ndata: ok\n\nevent: \xc3\ndata: x\n\n"
    assert events_of(stream) == [ev("a\ufffdb"), ev("ok"), ev("x", event="\ufffd")]
    frames = frames_of(stream)
    assert [f.invalid_utf8 for f in frames] == [True, False, True]
    assert frames[0].event == ev("a\ufffdb")


def test_invalid_utf8_in_tail_flagged() -> None:
    (tail,) = frames_of(b"data: \xe2\x82")
    assert tail.invalid_utf8 and not tail.complete


# -- line cap -----------------------------------------------------------------------------------


def test_line_at_cap_is_fine_over_cap_raises() -> None:
    assert events_of(b"data: " + b"x" * 94 + b"\n\n", cap=100) == [ev("x" * 94)]
    with pytest.raises(SSEProtocolError):
        events_of(b"data: " + b"x" * 95 + b"\n\n", cap=100)


@pytest.mark.parametrize("frames", [False, True])
def test_long_line_raises_as_soon_as_it_passes_the_cap(frames: bool) -> None:
    cap = 1 << 20
    block = b"x" * (64 * 1024)
    dec = SSEDecoder(max_line_bytes=cap)
    feed = dec.feed_frames if frames else dec.feed
    first = b"data: a\n\n" + b"data: "
    fed = len(b"data: ")  # bytes of the endless line so far
    got = feed(first)
    assert len(got) == 1
    tracemalloc.start()
    try:
        reads = 0
        with pytest.raises(SSEProtocolError) as info:
            while reads < 10 * 16:  # up to 10 MiB
                reads += 1
                feed(block)
                fed += len(block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fed <= cap < fed + len(block)  # the first read that passed the cap raised
    assert reads == 16
    assert peak < 3 * cap
    assert info.value.events == []
    with pytest.raises(SSEProtocolError):
        feed(b"data: more\n\n")
    assert (dec.close_frames() if frames else dec.close()) == []


@pytest.mark.parametrize("frames", [False, True])
def test_protocol_error_carries_events_completed_earlier_in_the_call(frames: bool) -> None:
    dec = SSEDecoder(max_line_bytes=100)
    stream = b"data: a\n\n: c\n\n" + b"data: " + b"y" * 200 + b"\n\ndata: b\n\n"
    with pytest.raises(SSEProtocolError) as info:
        (dec.feed_frames if frames else dec.feed)(stream)
    assert info.value.events == [ev("a")]
    if frames:
        assert [f.raw for f in info.value.frames] == [b"data: a\n\n", b": c\n\n"]


@pytest.mark.parametrize("frames", [False, True])
def test_unfinished_long_line_after_events_in_same_call(frames: bool) -> None:
    dec = SSEDecoder(max_line_bytes=100)
    with pytest.raises(SSEProtocolError) as info:
        (dec.feed_frames if frames else dec.feed)(b"data: a\r\n\r\n" + b"z" * 101)
    assert info.value.events == [ev("a")]


def test_long_crlf_line_raises_in_frames_mode() -> None:
    with pytest.raises(SSEProtocolError):
        frames_of(b"data: a\r\n\r\ndata: " + b"q" * 120 + b"\r\n\r\n", cap=100)


def test_many_short_lines_are_not_capped() -> None:
    stream = b"".join(b"data: %d\n" % i for i in range(20_000)) + b"\n"
    expected = [ev("\n".join(str(i) for i in range(20_000)))]
    assert events_of(stream, [997] * 200, cap=64) == expected
    assert [f.event for f in frames_of(stream, [997] * 200, cap=64)] == expected


# -- runs of blank lines -----------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 7])
def test_a_run_of_blank_lines_is_one_frame_with_every_chunking(count: int) -> None:
    run = b"\n" * count
    stream = b"data: a\n\n" + run + b"data: b\n\n"
    expected = [
        (0, b"data: a\n\n", ev("a"), True),
        (9, run, None, True),  # (the blank line ending the block before is not in the run)
        (9 + count, b"data: b\n\n", ev("b"), True),
    ]
    assert frames_reference(stream) == expected
    for sizes in every_chunking(stream):
        assert as_tuples(frames_of(stream, sizes)) == expected
        assert events_of(stream, sizes) == [ev("a"), ev("b")]


def test_a_run_mixing_cr_lf_and_crlf_is_one_frame() -> None:
    run = b"\r\n\r\r\n\n\r\n\r"  # CRLF, CR, CRLF, LF, CRLF, CR: six blank lines
    stream = b"data: a\r\n\r\n" + run + b"data: b\r\rid: 1\n\n"
    expected = [
        (0, b"data: a\r\n\r\n", ev("a"), True),
        (11, run, None, True),
        (20, b"data: b\r\r", ev("b"), True),
        (29, b"id: 1\n\n", None, True),
    ]
    assert frames_reference(stream) == expected
    for sizes in every_chunking(stream):
        assert as_tuples(frames_of(stream, sizes)) == expected


def test_a_run_between_two_events_changes_no_event() -> None:
    events = [ev("a", event="x", id="1"), ev("b\nc", id="1")]
    plain = b"event: x\ndata: a\nid: 1\n\ndata: b\ndata: c\n\n"
    runs = b"event: x\ndata: a\nid: 1\n\n\r\n\n\r\rdata: b\ndata: c\n\n\n\n\n"
    assert events_of(plain) == events_of(runs) == events
    frames = frames_of(runs, [5] * 20)
    assert [(f.raw, f.event) for f in frames] == [
        (b"event: x\ndata: a\nid: 1\n\n", events[0]),
        (b"\r\n\n\r\r", None),
        (b"data: b\ndata: c\n\n", events[1]),
        (b"\n\n\n", None),
    ]
    # inside a block, blank lines are not a run: the first one ends the block
    assert [f.raw for f in frames_of(b"data: a\n\n\ndata: b\n\n")] == [
        b"data: a\n\n",
        b"\n",
        b"data: b\n\n",
    ]


@pytest.mark.parametrize("bom", [BOM, b""])
def test_a_run_at_the_stream_start(bom: bytes) -> None:
    stream = bom + b"\r\n\n\r" + b"data: a\n\n"
    start = len(bom) + 4
    expected = [(0, bom + b"\r\n\n\r", None, True), (start, b"data: a\n\n", ev("a"), True)]
    assert frames_reference(stream) == expected
    for sizes in every_chunking(stream):
        assert as_tuples(frames_of(stream, sizes)) == expected
        assert events_of(stream, sizes) == [ev("a")]


def test_a_run_at_the_stream_end_is_complete() -> None:
    stream = b"data: a\n\n" + b"\r\n" * 3 + b"\r"  # (the last CR is held until the close)
    expected = [(0, b"data: a\n\n", ev("a"), True), (9, b"\r\n" * 3 + b"\r", None, True)]
    for sizes in every_chunking(stream):
        assert as_tuples(frames_of(stream, sizes)) == expected
    # and a run before an unterminated line
    stream = b"data: a\n\n\n\rdata: b"
    expected = [
        (0, b"data: a\n\n", ev("a"), True),
        (9, b"\n\r", None, True),
        (11, b"data: b", None, False),
    ]
    for sizes in every_chunking(stream):
        assert as_tuples(frames_of(stream, sizes)) == expected


def test_a_held_run_is_released_by_the_next_line() -> None:
    dec = SSEDecoder()
    assert [f.event for f in dec.feed_frames(b"data: a\n\n")] == [ev("a")]
    for end in (b"\r", b"\n", b"\r\n") * 300:
        assert dec.feed_frames(end) == []
    run, frame = dec.feed_frames(b"data: b\n\n")
    assert (run.offset, run.raw, run.event) == (9, b"\r\n\r\n" * 300, None)
    assert (frame.offset, frame.event) == (9 + 1200, ev("b"))
    assert dec.close_frames() == []


def test_the_line_cap_does_not_apply_to_a_run() -> None:
    stream = b"data: a\n\n" + b"\n" * 100 + b"\r" * 100 + b"\r\n" * 100 + b"data: b\n\n"
    assert events_of(stream, cap=8) == [ev("a"), ev("b")]
    for sizes in (None, [3] * 200, [50] * 10):
        frames = frames_of(stream, sizes, cap=8)
        assert [len(f.raw) for f in frames] == [9, 400, 9]
    # a line over the cap after a run: the run came before it, whole
    dec = SSEDecoder(max_line_bytes=8)
    with pytest.raises(SSEProtocolError) as info:
        dec.feed_frames(b"\n\r\n\r" + b"x" * 9 + b"\n\n")
    assert [f.raw for f in info.value.frames] == [b"\n\r\n\r"]


@pytest.mark.parametrize("read", [1 << 16, None], ids=["64KiB-reads", "one-read"])
@pytest.mark.parametrize(
    "data", [b"\n" * 4_000_000, b"\r" * 20_000_000], ids=["4MB-of-LF", "20MB-of-CR"]
)
def test_megabytes_of_blank_lines_are_one_frame_in_little_memory(
    data: bytes, read: int | None
) -> None:
    reads = cut(data, None if read is None else [read] * (len(data) // read))
    tracemalloc.start()
    try:
        dec = SSEDecoder()
        events = [e for piece in reads for e in dec.feed(piece)] + dec.close()
        _, events_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        dec = SSEDecoder()
        frames = [f for piece in reads for f in dec.feed_frames(piece)] + dec.close_frames()
        _, frames_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(f.offset, f.event, f.complete) for f in frames] == [(0, None, True)]
    assert frames[0].raw == data
    assert events == []
    assert frames_peak < 3 * len(data)  # (the frame's bytes: one copy)
    assert events_peak < len(data) // 4  # (nothing kept; a transient copy of one read at most)


def test_a_long_block_of_cr_lines_in_reads_that_end_in_cr() -> None:
    # (such reads used to be joined with all that was held and searched again: quadratic)
    stream = b"data: x\r" * 25_000 + b"\r"
    expected = [ev("\n".join(["x"] * 25_000))]
    frames = frames_of(stream, [1024] * (len(stream) // 1024))
    assert [(f.raw, f.event) for f in frames] == [(stream, expected[0])]
    assert events_of(stream, [1024] * (len(stream) // 1024)) == expected


# -- modes --------------------------------------------------------------------------------------


def test_modes_cannot_be_mixed() -> None:
    dec = SSEDecoder()
    dec.feed(b"data: a\n")
    with pytest.raises(RuntimeError):
        dec.feed_frames(b"\n")
    with pytest.raises(RuntimeError):
        dec.close_frames()
    dec = SSEDecoder()
    dec.feed_frames(b"data: a\n")
    with pytest.raises(RuntimeError):
        dec.feed(b"\n")


def test_feed_after_close_raises() -> None:
    dec = SSEDecoder()
    dec.close()
    with pytest.raises(RuntimeError):
        dec.feed(b"data: a\n\n")


def test_max_line_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_line_bytes=0)


def test_event_is_frozen() -> None:
    event = events_of(b"data: a\n\n")[0]
    with pytest.raises(AttributeError):
        event.data = "b"  # type: ignore[misc]
    assert event == ev("a") and hash(event) == hash(ev("a"))


# -- frames -------------------------------------------------------------------------------------


def test_frames_cover_every_block() -> None:
    stream = BOM + b": ping\n\ndata: a\nid: 1\n\nevent: x\n\n\n\r\ndata: b\r\n\r\ndata: tail"
    frames = frames_of(stream)
    assert [(f.offset, f.raw) for f in frames] == [
        (0, BOM + b": ping\n\n"),
        (11, b"data: a\nid: 1\n\n"),
        (26, b"event: x\n\n"),
        (36, b"\n\r\n"),  # two stray blank lines: one run, one frame
        (39, b"data: b\r\n\r\n"),
        (50, b"data: tail"),
    ]
    assert [f.event for f in frames] == [None, ev("a", id="1"), None, None, ev("b", id="1"), None]
    assert [f.comments for f in frames] == [(" ping",), (), (), (), (), ()]
    assert [f.complete for f in frames] == [True] * 5 + [False]
    assert b"".join(f.raw for f in frames) == stream


def test_frame_comments_without_leading_colon() -> None:
    (frame,) = frames_of(b": ping\n:\ndata: a\n:x\n\n")
    assert frame.comments == (" ping", "", "x")
    assert frame.event == ev("a")


def test_block_ending_in_lone_cr_is_held_until_next_byte() -> None:
    dec = SSEDecoder()
    assert dec.feed_frames(b"data: a\r\r") == []
    (frame,) = dec.feed_frames(b"\n")
    assert frame.raw == b"data: a\r\r\n" and frame.event == ev("a")
    dec = SSEDecoder()
    assert dec.feed_frames(b"data: a\n\r") == []
    (frame,) = dec.close_frames()
    assert frame.complete and frame.raw == b"data: a\n\r" and frame.event == ev("a")


def test_one_line_data_blocks_after_the_first_read() -> None:
    # Blocks after the stream start without CR take a fast path in frames mode.
    stream = b"data: a\n\n" + b"id: 3\n\n" + b"data:  b\n\ndata: \xc3\xa9\xff\n\n\ndata: c\n\n"
    expected = [ev("a"), ev(" b", id="3"), ev("é\ufffd", id="3"), ev("c", id="3")]
    assert events_of(stream) == expected
    for sizes in ([9], [9, 7], [10], [len(stream) - 1]):
        frames = frames_of(stream, sizes)
        assert [f.event for f in frames if f.event] == expected
        assert [f.invalid_utf8 for f in frames] == [False, False, False, True, False, False]
        assert [f.offset for f in frames] == [0, 9, 16, 26, 37, 38]


def test_close_frames_with_nothing_pending() -> None:
    dec = SSEDecoder()
    assert dec.feed_frames(b"data: a\n\n")[0].event == ev("a")
    assert dec.close_frames() == []


# -- properties ---------------------------------------------------------------------------------

TOKENS = [
    b"data", b"data:", b"data: ", b"event:", b"id:", b"id", b"retry:", b"retry: 12", b":", b" ",
    b"x", b"1", b"\x00", b"\n", b"\n", b"\r", b"\r\n", b"\n\n", BOM, "é🙂".encode(), b"\xff",
    b"\xe2\x82", b"foo", b"data: x\n\n", b"data: \xc3\xa9\xff\n\n", b"\r\r\r", b"\n\n\n",
    b"\r\n\r\n",
]  # fmt: skip
streams = st.lists(st.sampled_from(TOKENS), max_size=40).map(b"".join)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def stream_and_cuts(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    stream = draw(streams)
    sizes = draw(st.lists(st.integers(0, max(1, len(stream))), max_size=8))
    return stream, sizes


@FAST
@given(stream_and_cuts())
def test_any_chunking_gives_the_same_events(case: tuple[bytes, list[int]]) -> None:
    stream, sizes = case
    whole = events_of(stream)
    assert whole == reference(stream)
    assert events_of(stream, sizes) == whole
    assert events_of(stream, bytewise(stream)) == whole


@FAST
@given(stream_and_cuts())
def test_any_chunking_gives_the_same_frames(case: tuple[bytes, list[int]]) -> None:
    stream, sizes = case
    whole = frames_of(stream)
    assert frames_of(stream, sizes) == whole
    assert frames_of(stream, bytewise(stream)) == whole
    assert b"".join(f.raw for f in whole) == stream
    offset = 0
    for frame in whole:
        assert frame.offset == offset
        offset += len(frame.raw)
    assert all(f.complete for f in whole[:-1])
    assert [f.event for f in whole if f.event is not None] == events_of(stream)
    assert as_tuples(whole) == frames_reference(stream)


RUN_TOKENS = [b"\n", b"\r", b"\r\n", b"\n\n\n", b"\r\r", b"data: x", b"data", b":c", b" ", BOM]
run_streams = st.lists(st.sampled_from(RUN_TOKENS), max_size=30).map(b"".join)


@FAST
@given(run_streams, st.lists(st.integers(0, 40), max_size=8))
def test_runs_of_blank_lines_match_the_reference_with_any_chunking(
    stream: bytes, sizes: list[int]
) -> None:
    expected = frames_reference(stream)
    assert as_tuples(frames_of(stream, sizes)) == expected
    assert as_tuples(frames_of(stream, bytewise(stream))) == expected
    assert events_of(stream, sizes) == reference(stream)


@FAST
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6), st.booleans())
def test_random_bytes_raise_nothing_but_protocol_errors(
    stream: bytes, sizes: list[int], frames: bool
) -> None:
    try:
        if frames:
            frames_of(stream, sizes, cap=40)
        else:
            events_of(stream, sizes, cap=40)
    except SSEProtocolError:
        pass


# -- the events fast path (one-line data blocks cut from the bytes) -------------------------------

BLOCK_TOKENS = [
    b"data: x\n\n", b"data: \n\n", b"data: \n\n\n", b"data: a\ndata: b\n\n", b"id: 7\n",
    b"event: e\n", b"retry: 5\n", b": c\n", b"data: \xc3\xa9\xff\n\n", b"\n", b"data: y\n",
    b"data:z\n\n", b"\r\n", "data: 東京🙂\n\n".encode(), b"data: x\r\n\r\n",
]  # fmt: skip
block_streams = st.lists(st.sampled_from(BLOCK_TOKENS), max_size=40).map(b"".join)


@FAST
@given(block_streams, st.lists(st.integers(0, 60), max_size=8))
def test_blocks_of_one_data_line_among_others_match_the_reference(
    stream: bytes, sizes: list[int]
) -> None:
    expected = reference(stream)
    assert events_of(stream) == expected
    assert events_of(stream, sizes) == expected
    assert [f.event for f in frames_of(stream, sizes) if f.event is not None] == expected


def test_an_empty_data_line_then_two_blank_lines_between_data_blocks() -> None:
    stream = b"data: a\n\ndata: \n\n\ndata: b\n\n"
    assert events_of(stream) == [ev("a"), ev(""), ev("b")] == reference(stream)


def test_events_built_fast_are_plain_frozen_events() -> None:
    (event,) = events_of(b"id: 1\n\ndata: x\n\n")
    assert type(event) is SSEEvent and event == ev("x", id="1")
    with pytest.raises(AttributeError):
        event.data = "y"  # type: ignore[misc]
