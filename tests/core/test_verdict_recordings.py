"""The recorded fixtures give the verdicts in the table (the clean ones: no findings at all);
programmatic mutations of valid recordings in every dialect get an error or a diagnosis
pointing at the mutated frame (or the whole stream); a capture with times lints as it ran."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from streamscope.core.capture.format import Capture, CaptureEnd, CaptureResponse, ReadLog
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict import Linter, Verdict
from streamscope.core.wire.sse import SSEDecoder
from streamscope.lint import lint_body, lint_capture

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("*/*") if p.suffix in {".sse", ".ndjson"})
CONTENT_TYPES = {".sse": "text/event-stream", ".ndjson": "application/x-ndjson"}

# (rule, frame) of every finding, in order; a fixture not listed has none.
EXPECTED: dict[str, list[tuple[str, int | None]]] = {
    "anthropic/cut_before_message_stop": [("stream.terminal-missing", None)],
    "anthropic/no_event_lines": [  # (the Anthropic SDK skips events without a name)
        ("anthropic.event-line-missing", 0),
        ("anthropic.event-order", 3),  # no content_block_stop
    ],
    "anthropic/overloaded_error": [("stream.server-error", 3)],
    "gemini/finish_then_broken": [("stream.terminal-missing", None)],
    "gemini/multibyte_crlf": [  # (google-genai reads only "data: " lines)
        ("gemini.data-lines-only", 0),
        ("sse.no-space-after-colon", 0),
    ],
    "gemini/no_finish_reason": [("stream.terminal-missing", None)],
    "gemini/stream_error": [("stream.server-error", 1)],
    "ollama/cut": [("stream.terminal-missing", None)],
    "ollama/error_line": [("stream.server-error", 1)],
    "ollama/malformed_line": [("ollama.one-object-per-line", 2)],
    "openai/cut_after_finish": [("stream.terminal-missing", None)],
    "openai/annotation_after_finish": [("openai.usage-with-choices", 4)],  # (an info)
    "openai/cut_mid_frame": [("sse.truncated-frame", 2), ("stream.terminal-missing", None)],
    "openai/index_reused": [("openai.tool-call-id-once", 2)],
    "openai/invalid_arguments": [("openai.tool-call-json", 1)],
    "openai/invalid_utf8": [  # frame 2 is hand-written: no id, object, model or index
        ("sse.invalid-utf8", 2),
        ("openai.object", 2),
        ("openai.consistent-ids", 2),
        ("openai.choice-index", 2),
        ("openai.consistent-ids", 3),
    ],
    "openai/keepalive_crlf_nospace": [("sse.no-space-after-colon", 1)],
    "openai/malformed_frame": [("stream.malformed-frame", 2)],
    "openai/missing_index": [("openai.tool-call-index", 0)],  # (both calls: count 2)
    "openai/stream_error": [("stream.server-error", 3)],
    "responses/cut_before_completed": [("stream.terminal-missing", None)],
    "responses/error_event": [("responses.output-index", 1), ("stream.server-error", 2)],
    "responses/failed": [("responses.output-index", 1), ("stream.server-error", 2)],
    "responses/function_calls": [("responses.item-not-done", 12)],  # fc_1 never done
    "responses/no_event_lines_trailing_done": [("stream.done-sentinel", 8)],  # (an info)
    "responses/reasoning_summary": [("responses.output-index", 6)],  # output_index 0 twice
}


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _end(path: Path) -> str:
    import json

    data = json.loads(path.with_name(path.stem + ".expected.json").read_text("utf-8"))
    return str(data["end"])


def lint_fixture(path: Path, step: int | None = None) -> Verdict:
    raw = path.read_bytes()
    ctype = CONTENT_TYPES[path.suffix]
    linter = Linter(path.parent.name, headers=[("content-type", ctype)], status=200, timed=False)
    size = step or len(raw)
    for i in range(0, len(raw), size):
        linter.feed(raw[i : i + size], 0.0)
    return linter.finish(StreamEnd(_end(path)), 0.0)


def test_the_table_names_only_fixtures_that_exist() -> None:
    assert set(EXPECTED) <= {_id(p) for p in CASES}
    assert len(CASES) - len(EXPECTED) >= 20  # the clean ones


@pytest.mark.parametrize("path", CASES, ids=[_id(p) for p in CASES])
def test_every_fixture_gets_its_verdict(path: Path) -> None:
    want = EXPECTED.get(_id(path), [])
    for step in (None, 7):
        verdict = lint_fixture(path, step)
        assert [(f.rule, f.frame) for f in verdict.findings] == want
    if _id(path) not in EXPECTED:
        assert verdict.summary["error"] == 0


# -- mutations --------------------------------------------------------------------------


def frames_of(path: Path) -> list[bytes]:
    """The fixture's frames, as the Frames tab shows them (the decoder cuts them)."""
    raw = path.read_bytes()
    if path.suffix == ".ndjson":
        return raw.splitlines(keepends=True)
    dec = SSEDecoder()
    return [f.raw for f in dec.feed_frames(raw) + dec.close_frames()]


def _where(frames: list[bytes], needle: bytes, last: bool = False) -> int:
    hits = [i for i, f in enumerate(frames) if needle in f]
    assert hits, needle
    return hits[-1] if last else hits[0]


def drop(needle: bytes, *, last: bool = False) -> Callable[[list[bytes]], tuple[list[bytes], int]]:
    def mutate(frames: list[bytes]) -> tuple[list[bytes], int]:
        i = _where(frames, needle, last)
        return frames[:i] + frames[i + 1 :], i

    return mutate


def duplicate(needle: bytes) -> Callable[[list[bytes]], tuple[list[bytes], int]]:
    def mutate(frames: list[bytes]) -> tuple[list[bytes], int]:
        i = _where(frames, needle)
        return [*frames[: i + 1], frames[i], *frames[i + 1 :]], i + 1

    return mutate


def swap_next(needle: bytes) -> Callable[[list[bytes]], tuple[list[bytes], int]]:
    def mutate(frames: list[bytes]) -> tuple[list[bytes], int]:
        i = _where(frames, needle)
        out = list(frames)
        out[i], out[i + 1] = out[i + 1], out[i]
        return out, i

    return mutate


def replace_in(needle: bytes, old: bytes, new: bytes) -> Callable[..., tuple[list[bytes], int]]:
    def mutate(frames: list[bytes]) -> tuple[list[bytes], int]:
        i = _where(frames, needle)
        out = list(frames)
        assert old in out[i]
        out[i] = out[i].replace(old, new, 1)
        return out, i

    return mutate


NONE = -1  # the mutant's finding is about the whole stream

MUTATIONS = [
    # drop the terminal signal
    ("openai/plain_text", drop(b"[DONE]"), "stream.terminal-missing", NONE),
    ("anthropic/plain_text", drop(b"message_stop", last=True), "stream.terminal-missing", NONE),
    ("gemini/plain_text", drop(b"finishReason"), "stream.terminal-missing", NONE),
    ("responses/plain_text", drop(b"response.completed", last=True), "stream.terminal-missing",
     NONE),
    ("ollama/plain_text", drop(b'"done":true'), "stream.terminal-missing", NONE),
    # duplicate the finish
    ("openai/plain_text", duplicate(b'"finish_reason":"stop"'), "openai.finish-reason-once", 0),
    ("openai/parallel_tools", duplicate(b'"finish_reason":"tool_calls"'),
     "openai.finish-reason-once", 0),
    ("gemini/plain_text", duplicate(b"finishReason"), "gemini.finish-reason-once", 0),
    ("anthropic/plain_text", duplicate(b"message_delta"), "anthropic.event-order", 0),
    ("ollama/plain_text", duplicate(b'"done":true'), "stream.data-after-terminal", 0),
    ("responses/plain_text", duplicate(b"response.completed"), "stream.data-after-terminal", 0),
    # reorder Anthropic events
    ("anthropic/plain_text", swap_next(b"content_block_start"), "anthropic.event-order", 0),
    ("anthropic/tool_use", swap_next(b"content_block_stop"), "anthropic.event-order", 0),
    ("anthropic/thinking", swap_next(b"message_delta"), "anthropic.event-order", 0),
    # break tool-call JSON
    ("openai/parallel_tools", drop(b'ty\\": \\"Z'), "openai.tool-call-json", NONE),
    ("anthropic/tool_use", drop(b'"partial_json":"}"'), "anthropic.input-json", NONE),
    ("responses/function_calls", drop(b'"sequence_number":6'), "responses.function-call-json",
     NONE),
    # data after the terminal
    ("openai/plain_text", lambda f: ([*f, f[1]], len(f)), "stream.data-after-terminal", 0),
    # skip a sequence_number
    ("responses/plain_text", drop(b'"sequence_number":5'), "responses.sequence-number", 0),
    ("responses/reasoning_summary", drop(b'"sequence_number":4'), "responses.sequence-number", 0),
    # Gemini content after the finish
    ("gemini/plain_text", lambda f: ([*f, f[0]], len(f)), "gemini.finish-reason-last", 0),
    # content-only chunks (the compact layout the checks read fast) still checked
    ("openai/plain_text", replace_in(b'"content":"Hello"', b"chatcmpl-abc123", b"chatcmpl-X"),
     "openai.consistent-ids-warning", 0),
    ("openai/plain_text",
     replace_in(b'"content":"Hello"', b'{"content"', b'{"role":"assistant","content"'),
     "openai.role-first-warning", 0),
    # a malformed frame in each framing
    ("ollama/thinking", replace_in(b'"done":false', b"{", b"[", ), "ollama.one-object-per-line",
     0),
    ("gemini/thought", replace_in(b"candidates", b"{", b"{,"), "stream.malformed-frame", 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fixture", "mutate", "rule", "where"),
    MUTATIONS,
    ids=[f"{m[0]}:{m[2]}:{n}" for n, m in enumerate(MUTATIONS)],
)
def test_every_mutant_is_caught_at_the_mutated_frame(
    fixture: str, mutate: Callable[[list[bytes]], tuple[list[bytes], int]], rule: str, where: int
) -> None:
    path = FIXTURES / f"{fixture}{'.ndjson' if fixture.startswith('ollama') else '.sse'}"
    assert rule not in {f.rule for f in lint_fixture(path).findings}
    frames, at = mutate(frames_of(path))
    verdict = lint_body(b"".join(frames), path.parent.name)
    expected = None if where == NONE else at
    if rule.endswith("-json"):  # at the last fragment of the broken call
        expected = next(f.frame for f in verdict.findings if f.rule == rule)
        assert expected is not None and expected > 0
    if rule.endswith("-warning"):  # (a warning rule: the mutation is in the spec's grey zone)
        rule = rule.removesuffix("-warning")
        found = [(f.rule, f.frame) for f in verdict.findings]
    else:
        found = [(f.rule, f.frame) for f in verdict.findings if f.severity == "error"]
    assert (rule, expected) in found, verdict.findings


@pytest.mark.parametrize("path", [p for p in CASES if _id(p) not in EXPECTED], ids=_id)
def test_a_gzipped_body_is_named_as_such(path: Path) -> None:
    verdict = lint_body(gzip.compress(path.read_bytes()), path.parent.name)
    found = [(f.rule, f.frame) for f in verdict.findings]
    assert found[0] == ("transport.content-encoding", None)
    assert verdict.findings[0].message.endswith(": the body is gzip data (1f 8b)")
    assert verdict.summary["error"] >= 1  # (and it is no stream the dialect knows)


def _capture(body: bytes, reads: list[tuple[float, bytes]], **headers: str) -> Capture:
    head = {"content-type": "text/event-stream", **headers}
    return Capture(
        dialect="openai",
        response=CaptureResponse(200, tuple(head.items()), t=0.05),
        reads=ReadLog(reads),
        end=CaptureEnd("eof", elapsed=reads[-1][0] if reads else 0.1),
    )


def _paced(path: Path) -> list[tuple[float, bytes]]:
    return [(0.3 + 0.1 * i, f) for i, f in enumerate(frames_of(path))]


def test_a_paced_capture_is_clean_and_its_mutants_are_diagnosed() -> None:
    path = FIXTURES / "openai/parallel_tools.sse"
    reads = _paced(path)
    assert lint_capture(_capture(b"", reads)).findings == ()
    # merge all frames into one late read: buffered, at the first frame
    merged = lint_capture(_capture(b"", [(reads[-1][0], b"".join(f for _, f in reads))]))
    assert [(f.rule, f.frame) for f in merged.findings] == [("timing.buffered", 0)]
    assert merged.findings[0].message.endswith(
        f"{reads[-1][0] - 0.05:.1f} s of silence, then {len(reads)} of {len(reads)} frames at once"
    )
    # gzip on the stream (the capture holds the decompressed bytes, as the client read them)
    zipped = lint_capture(_capture(b"", reads, **{"content-encoding": "gzip"}))
    assert [(f.rule, f.frame) for f in zipped.findings] == [("transport.content-encoding", None)]
    assert gzip.decompress(gzip.compress(reads[0][1])) == reads[0][1]
    # a 15 s stall after frame 3
    stalled = [(t + (15.0 if i > 3 else 0.0), f) for i, (t, f) in enumerate(reads)]
    found = lint_capture(_capture(b"", stalled)).findings
    assert [(f.rule, f.frame) for f in found] == [("timing.stall", 4)]
    assert found[0].message.endswith(": 15.1 s without a byte")


def test_hostile_bodies_never_crash_the_rules_and_frames_stay_in_range() -> None:
    """Byte flips, cuts, swapped values and odd JSON types in every fixture: the linter says
    what it says, never raises, and every frame it names exists."""
    import random

    rng = random.Random(17)
    odd = [b"null", b"[]", b"{}", b'"x"', b"-1", b"1e999", b"true", b'{"a":[]}']
    for path in CASES:
        raw = path.read_bytes()
        for _ in range(12):
            data = bytearray(raw)
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(data))
                match rng.randrange(4):
                    case 0:
                        data[i] = rng.randrange(256)
                    case 1:
                        del data[i : i + rng.randint(1, 40)]
                    case 2:
                        j = data.find(b":", i)
                        ends = [x for x in (data.find(b",", j), data.find(b"}", j)) if x > 0]
                        if j > 0 and ends:
                            data[j + 1 : min(ends)] = rng.choice(odd)
                    case _:
                        data[i:i] = rng.choice([b"\n", b"\r", b"\n\n", b":", b"data: ", b"\xef"])
            for dialect in (path.parent.name, "auto"):
                verdict = lint_body(bytes(data), dialect)
                frames = len(frames_of_bytes(bytes(data), path.suffix))
                for f in verdict.findings:
                    assert f.frame is None or 0 <= f.frame <= frames, (f, frames)


def frames_of_bytes(raw: bytes, suffix: str) -> list[bytes]:
    if suffix == ".ndjson":
        return raw.splitlines(keepends=True)
    dec = SSEDecoder()
    return [f.raw for f in dec.feed_frames(raw) + dec.close_frames()]


ODD_FIELDS = [
    f'"{name}":'.encode()
    for name in ("index", "output_index", "content_index", "sequence_number", "choices",
                 "candidates", "delta", "content_block", "tool_calls", "function", "done",
                 "model", "id")
]  # fmt: skip


@pytest.mark.parametrize("value", [None, [], {}, "0", -1, 1.5, True, [0]])
def test_odd_json_types_in_every_indexed_field_are_findings_not_crashes(value: object) -> None:
    import json

    odd = json.dumps(value)
    for path in CASES:
        raw = path.read_bytes()
        for field in ODD_FIELDS:
            data = raw.replace(field + b"0", field + odd.encode()).replace(
                field + b"1", field + odd.encode()
            )
            lint_body(data, path.parent.name)  # (no exception)
