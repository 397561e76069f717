"""ProgressEncoder: pipeline updates in, compact batches out (what crosses to the window)."""

from __future__ import annotations

import json
import pickle

from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import (
    FLAG_DETACHED,
    FLAG_INCOMPLETE,
    FrameKind,
    Progress,
    ProgressEncoder,
)
from streamscope.core.wire.events import ToolCallDelta, Usage


def chat(delta: dict[str, object], **extra: object) -> bytes:
    obj = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}], **extra}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def encode(reads: list[bytes], per_batch: int = 1) -> tuple[list[Progress], bytes]:
    pipe = StreamPipeline("openai", keep_frames=True, request_sent=0.0)
    encoder = ProgressEncoder()
    batches = []
    for i, data in enumerate(reads):
        t = 0.1 * (i + 1)
        encoder.read(data, t)
        encoder.progressed(pipe.feed(data, t), t)
        if (i + 1) % per_batch == 0:
            batches.append(encoder.take())
    encoder.progressed(pipe.flush(9.0), 9.0)
    batches.append(encoder.take())
    return batches, b"".join(reads)


TOOL = chat(
    {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}]}
)


def test_rows_index_the_reads_and_carry_kind_time_and_flags() -> None:
    stream = b": ping\n\n" + chat({"content": "hi"}) + TOOL + b'data: [DONE]\n\ndata: {"x'
    # cut the stream at odd places: frames span reads
    reads = [stream[i : i + 7] for i in range(0, len(stream), 7)]
    batches, body = encode(reads, per_batch=5)
    merged = Progress()
    for batch in batches:
        merged.merge(batch)
    rows = merged.rows
    assert list(rows.kinds) == [
        FrameKind.COMMENT,
        FrameKind.TEXT,
        FrameKind.TOOL,
        FrameKind.TERMINAL,
        FrameKind.DATA,
    ]
    pieces = [body[o : o + n] for o, n in zip(rows.offsets, rows.lengths, strict=True)]
    assert b"".join(pieces) == body  # frames tile the stream: no bytes of their own
    assert len(rows.detached) == 0
    assert list(rows.flags) == [0, 0, 0, 0, FLAG_INCOMPLETE]
    assert list(rows.times) == sorted(rows.times) and rows.times[-1] == 9.0
    assert b"".join(d for d, _t in merged.reads) == body


def test_the_delta_carries_text_and_counters_other_frames_their_events() -> None:
    reads = [chat({"content": f"w{i} "}) for i in range(10)]
    reads.append(TOOL)
    reads.append(chat({}, usage={"prompt_tokens": 1, "completion_tokens": 10}))
    batches, _body = encode(reads, per_batch=4)
    merged = Progress()
    for batch in batches:
        merged.merge(batch)
    delta = merged.delta
    assert delta is not None
    assert delta.text == "".join(f"w{i} " for i in range(10))
    assert (delta.text_deltas, delta.progress, delta.events) == (10, 11, 12)
    assert (delta.timings.first_answer, delta.timings.last_token) == (0.1, 1.1)
    assert [(c.position, c.id, c.arguments, c.parses) for c in delta.tool_calls] == [
        (0, "c1", "{}", True)
    ]
    rows = merged.rows
    # text frames are spans of the turn's text; the others carry their events
    assert sorted(rows.events) == [0, 10, 11]  # (the first also starts the message)
    assert [type(e) for e in rows.events[10]] == [ToolCallDelta]
    assert [type(e) for e in rows.events[11]] == [Usage]
    assert list(rows.text_ends) == [3 * (i + 1) for i in range(10)] + [30, 30]
    assert list(rows.kinds[:10]) == [FrameKind.TEXT] * 10


def test_a_frame_in_another_reasoning_channel_carries_its_event() -> None:
    reads = [
        chat({"reasoning_content": "a"}),
        chat({"reasoning_content": "bc"}),
        chat({"reasoning": "d"}),
        chat({"content": "x"}),
    ]
    batches, _ = encode(reads, per_batch=10)
    rows = batches[0].rows
    assert list(rows.kinds) == [FrameKind.REASONING] * 3 + [FrameKind.TEXT]
    assert list(rows.reasoning_ends) == [1, 3, 4, 4]
    assert list(rows.text_ends) == [0, 0, 0, 1]
    assert sorted(rows.events) == [0, 2]  # 0 starts the message; 2 changed channel
    assert batches[0].delta is not None and batches[0].delta.reasoning == "abcd"


def test_a_frame_whose_bytes_were_not_read_keeps_them() -> None:
    pipe = StreamPipeline("openai", keep_frames=True, request_sent=0.0)
    encoder = ProgressEncoder()
    encoder.progressed(pipe.feed(chat({"content": "x"}), 0.1), 0.1)  # no read() first
    rows = encoder.take().rows
    assert list(rows.flags) == [FLAG_DETACHED]
    assert bytes(rows.detached) == chat({"content": "x"}) and rows.offsets[0] == 0


def test_a_batch_pickles_small_without_per_frame_objects() -> None:
    reads = [
        b"".join(chat({"content": f"t{i} "}) for i in range(j, j + 50)) for j in range(0, 5000, 50)
    ]
    batches, body = encode(reads, per_batch=len(reads))
    batch = batches[0]
    assert len(batch.rows) == 5000
    data = pickle.dumps(batch, protocol=5)
    # the bytes once, ~26 bytes of numbers per frame, the text: not an object per frame
    assert batch.delta is not None
    assert len(data) < len(body) + 5000 * 40 + len(batch.delta.text) * 2
    again = pickle.loads(data)
    assert list(again.rows.offsets) == list(batch.rows.offsets)
    assert again.delta == batch.delta


def test_merged_batches_keep_their_detached_bytes_addressable() -> None:
    pipe = StreamPipeline("openai", keep_frames=True, request_sent=0.0)
    encoder = ProgressEncoder()
    first = chat({"content": "a"})
    second = chat({"content": "bb"})
    encoder.progressed(pipe.feed(first, 0.1), 0.1)  # (no reads: both frames are detached)
    a = encoder.take()
    encoder.progressed(pipe.feed(second, 0.2), 0.2)
    merged = Progress()
    merged.merge(a)
    merged.merge(encoder.take())
    rows = merged.rows
    assert list(rows.flags) == [FLAG_DETACHED, FLAG_DETACHED]
    pieces = [
        bytes(rows.detached[o : o + n]) for o, n in zip(rows.offsets, rows.lengths, strict=True)
    ]
    assert pieces == [first, second]


def test_frame_kind_is_the_kind_the_encoder_stores() -> None:
    """``frame_kind`` (what the arrival board classifies reads with) and the encoder's
    inlined loop give every frame of every recorded fixture the same kind."""
    from pathlib import Path

    from streamscope.core.turn.progress import frame_kind

    fixtures = Path(__file__).parent / "fixtures"
    seen: set[int] = set()
    files = sorted(fixtures.glob("*/*.sse")) + sorted(fixtures.glob("*/*.ndjson"))
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        pipe = StreamPipeline(path.parent.name, keep_frames=True, request_sent=0.0)
        encoder = ProgressEncoder()
        kinds: list[int] = []
        for i in range(0, len(data), 37):  # (reads split anywhere)
            piece = data[i : i + 37]
            encoder.read(piece, 1.0)
            update = pipe.feed(piece, 1.0)
            kinds += [frame_kind(frame, events) for frame, events in update.frames]
            encoder.progressed(update, 1.0)
        update = pipe.flush(2.0)
        kinds += [frame_kind(frame, events) for frame, events in update.frames]
        encoder.progressed(update, 2.0)
        assert list(encoder.take().rows.kinds) == kinds, path.name
        seen.update(kinds)
    assert {FrameKind.TEXT, FrameKind.COMMENT, FrameKind.META, FrameKind.TOOL} <= seen
    assert {FrameKind.REASONING, FrameKind.MALFORMED, FrameKind.TERMINAL} <= seen


def test_joined_is_the_batches_merged_in_turn_and_leaves_them_untouched() -> None:
    stream = b": ping\n\n" + b"".join(chat({"content": f"w{i} "}) for i in range(9)) + TOOL
    reads = [stream[i : i + 11] for i in range(0, len(stream), 11)] + [b"data: [DONE]\n\n"]
    batches, _body = encode(reads, per_batch=3)
    before = [(len(b.reads), len(b.rows), b.delta) for b in batches]
    merged = Progress()
    for batch in batches:
        merged.merge(batch)
    for b in batches:
        b.total_bytes, b.total_frames, b.elapsed = 7, 8, 9.5
    whole = Progress.joined(batches)
    assert whole.delta == merged.delta
    assert whole.reads == merged.reads
    assert list(whole.rows.offsets) == list(merged.rows.offsets)
    assert list(whole.rows.kinds) == list(merged.rows.kinds)
    assert (whole.total_bytes, whole.total_frames, whole.elapsed) == (7, 8, 9.5)
    assert [(len(b.reads), len(b.rows), b.delta) for b in batches] == before
    assert Progress.joined([]).is_empty()
