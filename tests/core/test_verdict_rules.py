"""Every rule: a minimal stream that triggers it (exact frames) and the clean streams that
don't. Frame numbers are the Frames tab's (0-based, blank-line runs and comments count)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict import RULES, Linter, Verdict
from streamscope.core.verdict.engine import MAX_FRAMES, MAX_PER_RULE, diagnosis
from support.verdict_streams import (
    CLEAN,
    CONTENT_TYPES,
    DONE,
    Frame,
    anthropic_text,
    body,
    frame_bytes,
    gemini_text,
    gm,
    oa,
    ol,
    ollama_text,
    openai_text,
    openai_tools,
    renumber,
    responses_call,
    responses_text,
    tc,
)


def lint(
    dialect: str,
    data: list[Frame] | bytes,
    *,
    reads: list[tuple[bytes, float]] | None = None,
    headers: list[tuple[str, str]] | None = None,
    status: int = 200,
    request: dict[str, Any] | None = None,
    end: str = "eof",
    end_t: float | None = None,
    lint_as: str | None = None,
) -> Verdict:
    raw = data if isinstance(data, bytes) else body(data, dialect)
    if reads is None:
        reads = [(raw, 0.1)]
    if headers is None:
        headers = [("content-type", CONTENT_TYPES[dialect])]
    linter = Linter(
        lint_as or dialect, headers=headers, status=status, request=request, headers_at=0.05
    )
    for chunk, t in reads:
        linter.feed(chunk, t)
    last = reads[-1][1] if reads else 0.1
    return linter.finish(StreamEnd(end), end_t if end_t is not None else last)


def spread(frames: list[Frame], dialect: str, times: list[float]) -> list[tuple[bytes, float]]:
    """One read a frame, at the given times."""
    assert len(frames) == len(times)
    return [(frame_bytes(f, dialect), t) for f, t in zip(frames, times, strict=True)]


def hits(v: Verdict, rule_id: str) -> list[int | None]:
    return [f.frame for f in v.findings if f.rule == rule_id]


@dataclass
class Case:
    rule: str
    run: Callable[[], Verdict]
    frames: list[int | None]
    also: set[str] = field(default_factory=set)  # other rules that may fire with it


def _swap(frames: list[Frame], i: int, j: int) -> list[Frame]:
    out = list(frames)
    out[i], out[j] = out[j], out[i]
    return out


def _with(frames: list[Frame], i: int, frame: Frame) -> list[Frame]:
    out = list(frames)
    out[i] = frame
    return out


def _openai_spaced(n: int, first: float, step: float) -> list[tuple[bytes, float]]:
    frames = openai_text(n)
    return spread(frames, "openai", [first + step * k for k in range(len(frames))])


def _anth(i: int, change: Callable[[dict[str, Any]], None]) -> list[Frame]:
    frames = anthropic_text()
    name, data = frames[i]  # type: ignore[misc]
    data = copy.deepcopy(data)
    change(data)
    frames[i] = (name, data)
    return frames


def _resp(i: int, change: Callable[[dict[str, Any]], None]) -> list[Frame]:
    frames = responses_text()
    name, data = frames[i]  # type: ignore[misc]
    data = copy.deepcopy(data)
    change(data)
    frames[i] = (name, data)
    return frames


BIG = "x" * 300
LONG_LINE = b"data: " + b"a" * (1 << 20) + b"\n\n"

CASES = [
    # transport
    Case("transport.http-status",
         lambda: lint("openai", b'{"error": {"message": "bad key"}}', status=401,
                      headers=[("content-type", "application/json")], end="http_error"),
         [None]),
    Case("transport.content-type",
         lambda: lint("openai", openai_text(), headers=[("content-type", "text/plain")]),
         [None]),
    Case("transport.content-encoding",
         lambda: lint("openai", openai_text(),
                      headers=[("content-type", "text/event-stream"),
                               ("content-encoding", "gzip")]),
         [None]),
    Case("transport.not-a-stream",
         lambda: lint("openai", b"<html><body>502 Bad Gateway</body></html>",
                      headers=[("content-type", "text/html")]),
         [None], {"transport.content-type", "sse.unknown-field"}),
    # SSE
    Case("sse.bom", lambda: lint("openai", b"\xef\xbb\xbf" + body(openai_text(), "openai")), [0]),
    Case("sse.bom-inside",  # (the chunk's "a" is lost: its line is the field "\ufeffdata")
         lambda: lint("openai", _with(openai_text(), 2, b"\xef\xbb\xbf" + body(
             [oa({"content": "a"})], "openai"))),
         [2]),
    Case("sse.mixed-line-endings",
         lambda: lint("openai", body(openai_text()[:2], "openai")
                      + body(openai_text()[2:], "openai").replace(b"\n", b"\r\n", 2)),
         [2]),
    Case("sse.no-space-after-colon",
         lambda: lint("openai", _with(openai_text(), 2, body([oa({"content": "a"})], "openai")
                                      .replace(b"data: ", b"data:"))),
         [2]),
    Case("sse.extra-space-after-colon",
         lambda: lint("openai", _with(openai_text(), 3, body([oa({"content": "a"})], "openai")
                                      .replace(b"data: ", b"data:  "))),
         [3]),
    Case("sse.unknown-field",
         lambda: lint("openai", _with(openai_text(), 1, b"foo: bar\n" + body(
             [oa({"content": "a"})], "openai"))),
         [1]),
    Case("sse.retry",
         lambda: lint("openai", _with(openai_text(), 1, b"retry: soon\n" + body(
             [oa({"content": "a"})], "openai"))),
         [1]),
    Case("sse.invalid-utf8",
         lambda: lint("openai", _with(openai_text(), 2, body([oa({"content": "a"})], "openai")
                                      .replace(b'"a"', b'"\xff"'))),
         [2]),
    Case("sse.truncated-frame",
         lambda: lint("openai", body(openai_text()[:3], "openai") + b'data: {"id":'),
         [3], {"stream.terminal-missing"}),
    Case("sse.line-too-long",
         lambda: lint("openai", body(openai_text()[:2], "openai") + LONG_LINE),
         [2], {"stream.terminal-missing"}),
    Case("sse.keepalive-cadence",
         lambda: lint("openai", [], reads=[
             (b": keep-alive\n\n", 0.1),
             *spread(openai_text(), "openai", [40.0, 40.1, 40.2, 40.3, 40.4, 40.5])],
             end_t=40.6),
         [1], {"timing.slow-first-byte", "timing.slow-first-token"}),
    # stream
    Case("stream.terminal-missing", lambda: lint("openai", openai_text()[:-1]), [None]),
    Case("stream.data-after-terminal",
         lambda: lint("openai", [*openai_text(), oa({"content": "late"})]), [6]),
    Case("stream.done-sentinel",
         lambda: lint("responses", [*responses_text(), DONE]), [8]),
    Case("stream.malformed-frame",
         lambda: lint("openai", _with(openai_text(), 2, b"data: {not json\n\n")), [2]),
    Case("stream.server-error",
         lambda: lint("openai", [*openai_text()[:2], {"error": {"message": "overloaded"}}]),
         [2], {"stream.terminal-missing"}),
    Case("stream.dialect-mismatch",
         lambda: lint("anthropic", anthropic_text(), lint_as="openai"),
         [None], {"openai.object", "openai.consistent-ids", "stream.terminal-missing",
                  "openai.finish-reason-missing"}),
    Case("stream.empty", lambda: lint("openai", b"\n\n\n"), [None], {"stream.terminal-missing"}),
    # timing
    Case("timing.buffered",
         lambda: lint("openai", openai_text(20), reads=[(body(openai_text(20), "openai"), 3.0)]),
         [0]),
    Case("timing.fake-streaming",
         lambda: lint("openai", [], reads=spread(
             [oa({"role": "assistant", "content": ""}), oa({"content": BIG}), oa({}, "stop"),
              DONE], "openai", [0.1, 4.0, 4.1, 4.2])),
         [1]),
    Case("timing.stall",
         lambda: lint("openai", [], reads=_openai_spaced(6, 0.1, 0.1)[:4]
                      + [(d, t + 12.0) for d, t in _openai_spaced(6, 0.1, 0.1)[4:]]),
         [4]),
    Case("timing.keepalives-only",
         lambda: lint("openai", [], reads=[(b": ping\n\n", 0.1 * k) for k in range(1, 6)]),
         [None], {"stream.terminal-missing"}),
    Case("timing.slow-first-byte", lambda: lint("openai", [], reads=_openai_spaced(3, 6.0, 0.1)),
         [None]),
    Case("timing.slow-first-token",
         lambda: lint("openai", [], reads=[(body(openai_text()[:1], "openai"), 0.1),
                                           *_openai_spaced(3, 7.0, 0.1)[1:]]),
         [None]),
    # OpenAI
    Case("openai.object",
         lambda: lint("openai", [{**f, "object": "chat.completion"} if isinstance(f, dict) else f
                                 for f in openai_text()]),
         [0]),
    Case("openai.consistent-ids",
         lambda: lint("openai", _with(openai_text(), 2, oa({"content": "a"}, id="chatcmpl-2"))),
         [2, 3]),
    Case("openai.role-first",
         lambda: lint("openai", _with(openai_text(), 2, oa({"role": "assistant", "content": "a"}))),
         [2]),
    Case("openai.choice-index",
         lambda: lint("openai", _with(openai_text(), 1, {
             **oa({}), "choices": [{"delta": {"content": "a"}, "finish_reason": None}]})),
         [1]),
    Case("openai.choice-index-range",
         lambda: lint("openai", _with(openai_text(), 2, {
             **oa({}), "choices": [{"index": 1, "delta": {"content": "a"},
                                    "finish_reason": None}]}),
             request={"model": "gpt-x", "stream": True}),
         [2]),
    Case("openai.tool-call-index",
         lambda: lint("openai", _with(openai_tools(), 2, tc(None, '{"city": '))),
         [2], {"openai.tool-call-json"}),
    Case("openai.tool-call-index-gap",
         lambda: lint("openai", [*openai_tools()[:4], tc(2, "{}", first=True),
                                 *openai_tools()[4:]]),
         [4]),
    Case("openai.tool-call-function",  # (the openai SDK asserts tool_call_delta.function)
         lambda: lint("openai", _with(openai_tools(), 1, oa({"tool_calls": [
             {"index": 0, "id": "call_0", "type": "function"}]}))),
         [1]),
    Case("openai.tool-call-id-once",
         lambda: lint("openai", _with(openai_tools(), 3, tc(0, '"Bern"}', first=True))),
         [3], {"openai.tool-call-json"}),
    Case("openai.tool-call-json",
         lambda: lint("openai", _with(openai_tools(), 3, tc(0, '"Bern"'))), [3]),
    Case("openai.finish-reason-once",
         lambda: lint("openai", [*openai_text()[:-1], oa({}, "stop"), DONE]), [5]),
    Case("openai.tool-calls-finish",
         lambda: lint("openai", [*openai_text()[:-2], oa({}, "tool_calls"), DONE]), [4]),
    Case("openai.finish-reason-missing",
         lambda: lint("openai", [*openai_text()[:-2], DONE]), [None]),
    Case("openai.usage-chunk",
         lambda: lint("openai", [*openai_text()[:-1], {**oa({}), "choices": [],
                                                        "usage": {"total_tokens": 9}}, DONE],
                      request={"model": "gpt-x", "stream": True}),
         [5]),
    Case("openai.usage-with-choices",
         lambda: lint("openai", _with(openai_text(), 4, oa({}, "stop", usage={"total_tokens": 9})),
                      request={"stream_options": {"include_usage": True}}),
         [4]),
    Case("openai.done-exact",
         lambda: lint("openai", _with(openai_text(), 5, b"data:  [DONE]\n\n")),
         [5], {"sse.extra-space-after-colon"}),
    Case("openai.event-without-data",  # (the openai SDK: json.loads("") fails)
         lambda: lint("openai", [*openai_text()[:2], b"event: ping\n\n", *openai_text()[2:]]),
         [2]),
    # Anthropic
    Case("anthropic.event-order", lambda: lint("anthropic", _swap(anthropic_text(), 1, 3)),
         [1], {"anthropic.block-index"}),
    Case("anthropic.block-index",
         lambda: lint("anthropic", _anth(5, lambda d: d.update(index=1))), [5]),
    Case("anthropic.delta-type",
         lambda: lint("anthropic", _anth(3, lambda d: d.update(
             delta={"type": "input_json_delta", "partial_json": "{}"}))),
         [3]),
    Case("anthropic.input-json",
         lambda: lint("anthropic", _anth(8, lambda d: d["delta"].update(partial_json=' "Bern"'))),
         [8]),
    Case("anthropic.stop-reason-missing",
         lambda: lint("anthropic", _anth(10, lambda d: d["delta"].update(stop_reason=None))),
         [10]),
    Case("anthropic.delta-usage",  # (the SDK reads event.usage.output_tokens)
         lambda: lint("anthropic", _anth(10, lambda d: d.pop("usage"))), [10]),
    Case("anthropic.event-line-missing",  # (the Anthropic SDK skips it: the "Hello" is lost)
         lambda: lint("anthropic", _with(anthropic_text(), 3,
                                         anthropic_text()[3][1])),
         [3]),
    Case("anthropic.event-name",
         lambda: lint("anthropic", _with(anthropic_text(), 4, (
             "content_block_stop", anthropic_text()[4][1]))),  # type: ignore[index]
         [4]),
    # Gemini
    Case("gemini.finish-reason-once",
         lambda: lint("gemini", [*gemini_text(), {**gm("", "STOP"), "candidates": [
             {"index": 0, "finishReason": "STOP"}]}]),
         [3]),
    Case("gemini.finish-reason-last",
         lambda: lint("gemini", [*gemini_text(), gm(" More.")]), [3]),
    Case("gemini.consistent-ids",
         lambda: lint("gemini", _with(gemini_text(), 1, gm(" is blue.", responseId="r2"))),
         [1, 2]),
    Case("gemini.candidate-index",
         lambda: lint("gemini", _with(gemini_text(), 1, {**gm(" is blue."), "candidates": [
             {**gm(" is blue.")["candidates"][0], "index": 1}]}),
             request={"contents": [{"parts": [{"text": "sky?"}]}]}),
         [1]),
    Case("gemini.data-lines-only",
         lambda: lint("gemini", [*gemini_text()[:1], b": keep-alive\n\n", *gemini_text()[1:]]),
         [1]),
    # Responses
    Case("responses.sequence-number",
         lambda: lint("responses", responses_text()[:4] + renumber(responses_text()[4:], 6)),
         [4]),
    Case("responses.created-first",
         lambda: lint("responses", renumber(responses_text()[1:])), [0]),
    Case("responses.output-index",
         lambda: lint("responses", _resp(4, lambda d: d.update(output_index=1))), [4]),
    Case("responses.function-call-json",
         lambda: lint("responses", responses_call(['{"city":', ' "Bern"'])), [3]),
    Case("responses.response-id",  # (the openai SDK: "Lifecycle response identity changed")
         lambda: lint("responses", _resp(7, lambda d: d["response"].update(id="resp_2"))), [7]),
    Case("responses.item-identity",  # ("Completed output item identity changed")
         lambda: lint("responses", _resp(6, lambda d: d["item"].update(id="msg_2"))), [6]),
    Case("responses.delta-after-done",
         lambda: lint("responses", renumber([*responses_text()[:6], ("response.output_text.delta", {
             **responses_text()[4][1], "delta": "!"}), *responses_text()[6:]])),
         [6]),
    Case("responses.done-mismatch",
         lambda: lint("responses", _resp(5, lambda d: d.update(text="Hi there!"))), [5]),
    Case("responses.event-name",
         lambda: lint("responses", _with(responses_text(), 3, (
             "response.output_text.done", responses_text()[3][1]))),
         [3]),
    Case("responses.event-without-data",
         lambda: lint("responses", [*responses_text()[:3], b"retry: 3000\n\n",
                                    *responses_text()[3:]]),
         [3]),
    Case("responses.item-not-done",
         lambda: lint("responses", renumber(_drop(responses_text(), 6))), [6]),
    # Ollama
    Case("ollama.done-reason",
         lambda: lint("ollama", [*ollama_text()[:-1], {**ol("", True), "done_reason": None}]),
         [3]),
    Case("ollama.consistent-model",
         lambda: lint("ollama", _with(ollama_text(), 2, ol(" is", model="qwen3"))), [2, 3]),
    Case("ollama.one-object-per-line",
         lambda: lint("ollama", _with(ollama_text(), 1, body([ol("a")], "ollama").strip()
                                      + body([ol("b")], "ollama"))),
         [1]),
]  # fmt: skip


def _drop(frames: list[Frame], i: int) -> list[Frame]:
    return frames[:i] + frames[i + 1 :]


def test_every_rule_has_a_case() -> None:
    assert sorted(c.rule for c in CASES) == sorted(RULES)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_the_rule_fires_where_it_should(case: Case) -> None:
    verdict = case.run()
    assert hits(verdict, case.rule) == case.frames, verdict.findings
    others = {f.rule for f in verdict.findings} - {case.rule} - case.also
    assert others == set(), verdict.findings
    finding = next(f for f in verdict.findings if f.rule == case.rule)
    rule = RULES[case.rule]
    assert finding.severity == rule.severity
    assert finding.hint == rule.hint
    assert finding.message.startswith(rule.message)


@pytest.mark.parametrize("dialect", sorted(CLEAN))
def test_clean_streams_have_no_findings(dialect: str) -> None:
    verdict = lint(dialect, CLEAN[dialect])
    assert verdict.findings == ()
    assert verdict.outcome == "completed"
    assert verdict.summary == {"error": 0, "warning": 0, "info": 0}


def test_clean_streams_paced_like_a_real_model_have_no_findings() -> None:
    for dialect, frames in CLEAN.items():
        times = [0.5 + 0.2 * k for k in range(len(frames))]
        assert lint(dialect, frames, reads=spread(frames, dialect, times)).findings == ()
    # a long answer streamed in 0.1 s steps: neither buffered nor fake
    assert lint("openai", [], reads=_openai_spaced(40, 0.3, 0.1)).findings == ()
    tools = openai_tools()
    assert lint("openai", tools, request={"stream_options": {"include_usage": True}}).findings == ()


def test_the_clean_variants_of_the_rules_stay_quiet() -> None:
    """What the rules must not confuse with a fault."""
    # a valid retry, keep-alive comments, CRLF throughout, a usage chunk that was asked for
    text = openai_text()
    retry = lint("openai", _with(text, 1, b"retry: 3000\n: ping\n" + body([text[1]], "openai")))
    assert retry.findings == ()
    crlf = lint("openai", body(text, "openai").replace(b"\n", b"\r\n"))
    assert crlf.findings == ()
    usage = [*text[:-1], {**oa({}), "choices": [], "usage": {"total_tokens": 9}}, DONE]
    asked = lint("openai", usage, request={"stream_options": {"include_usage": True}})
    assert asked.findings == ()
    # text that looks like fields ("data:", two spaces after a colon) is only text
    tricky = [*text[:2], oa({"content": "data:x and key:  value\nretry: no"}), *text[2:]]
    assert lint("openai", tricky).findings == ()
    # a raw body (no request known): a usage chunk after the finish is fine
    assert lint("openai", usage).findings == ()
    # keep-alives every 10 s for 35 s, then the answer: cadence fine, first token slow (info)
    reads = [(b": ping\n\n", 10.0 * k) for k in range(4)]
    reads += spread(text, "openai", [35.0 + 0.1 * k for k in range(len(text))])
    slow = lint("openai", [], reads=reads)
    assert [f.rule for f in slow.findings] == ["timing.slow-first-token"]
    assert slow.summary == {"error": 0, "warning": 0, "info": 1}


def test_a_rule_that_fires_on_every_frame_is_capped() -> None:
    # a different message each time (created changes on every chunk): MAX_PER_RULE
    # findings, then one counting the rest
    t0 = 1764449000
    frames: list[Frame] = [oa({"role": "assistant", "content": ""})]
    frames += [oa({"content": "a"}, created=t0 + k) for k in range(1, MAX_PER_RULE + 9)]
    verdict = lint("openai", [*frames, oa({}, "stop", created=t0 + MAX_PER_RULE + 8), DONE])
    ids = [f for f in verdict.findings if f.rule == "openai.consistent-ids"]
    assert len(ids) == MAX_PER_RULE + 1
    assert ids[0].frame == 1
    assert ids[0].message.endswith(f"created {t0} -> {t0 + 1}")
    assert ids[-1].frame is None
    assert ids[-1].message.endswith(": 8 more like this")
    # the same message on every frame is one finding with a count and its frames
    roles = [oa({"role": "assistant", "content": "a"}) for _ in range(MAX_PER_RULE + 8)]
    verdict = lint("openai", [*roles, oa({}, "stop"), DONE])
    (role,) = verdict.findings
    assert (role.rule, role.frame, role.count) == ("openai.role-first", 1, MAX_PER_RULE + 7)
    assert role.frames == tuple(range(1, MAX_FRAMES + 1))


def test_live_feeding_reports_findings_as_frames_arrive() -> None:
    raw = body([*openai_text()[:-1], oa({}, "stop"), DONE], "openai")
    linter = Linter("openai", headers=[("content-type", "text/event-stream")], status=200)
    seen: list[tuple[str, int | None]] = []
    for i in range(0, len(raw), 7):  # any chunking: same findings
        seen += [(f.rule, f.frame) for f in linter.feed(raw[i : i + 7], 0.1 + i / 1000)]
        if seen:
            break
    assert seen == [("openai.finish-reason-once", 5)]
    for j in range(i + 7, len(raw), 7):
        linter.feed(raw[j : j + 7], 0.1 + j / 1000)
    verdict = linter.finish(StreamEnd("eof"), 1.0)
    assert [(f.rule, f.frame) for f in verdict.findings] == [("openai.finish-reason-once", 5)]
    assert linter.take_new() == []


def test_the_diagnosis_line() -> None:
    verdict = lint("openai", openai_text(20), reads=[(body(openai_text(20), "openai"), 3.0)])
    assert diagnosis(verdict.findings) == "buffered by a proxy"
    two = lint("openai", [*openai_text()[:-1], oa({}, "stop"), oa({}, "length"), DONE])
    assert diagnosis(two.findings) == "2 spec errors"
    assert diagnosis(lint("openai", openai_text()).findings) == ""
    warn = lint("ollama", _with(ollama_text(), 2, ol(" is", model="qwen3")))
    assert diagnosis(warn.findings) == "2 warnings"


def test_keep_text_false_keeps_no_copy_of_the_answer_and_the_same_findings() -> None:
    frames = [*openai_text(300)[:-1], oa({}, "stop"), DONE]
    kept, dropped = (
        Linter("openai", headers=[("content-type", "text/event-stream")], keep_text=keep)
        for keep in (True, False)
    )
    raw = body(frames, "openai")
    for linter in (kept, dropped):
        linter.feed(raw, 0.1)
    a, b = (linter.finish(StreamEnd("eof"), 0.2) for linter in (kept, dropped))
    assert a.turn.text == "word " * 300
    assert b.turn.text == ""
    assert a.findings == b.findings
    assert [(f.rule, f.frame) for f in a.findings] == [("openai.finish-reason-once", 302)]


def test_a_lean_linter_keeps_the_same_few_kilobytes_whatever_the_stream_length() -> None:
    """What the Verdict tab's linter retains does not grow with a fast (or replayed) stream:
    no text, a 1 KB head, one timing entry a burst of reads."""
    import gc
    import tracemalloc

    def retained(n: int) -> int:
        frames = [frame_bytes(oa({"content": f"w{i} "}), "openai") for i in range(n)]
        reads = [b"".join(frames[i : i + 32]) for i in range(0, n, 32)]
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        linter = Linter("openai", headers=[("content-type", "text/event-stream")], keep_text=False)
        for k, data in enumerate(reads):
            linter.feed(data, 0.01 + k * 1e-5)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        assert linter.findings == []
        return sum(s.size_diff for s in after.compare_to(before, "filename"))

    small, big = retained(2_000), retained(40_000)
    assert small < 16 * 1024, small
    assert big - small < 2 * 1024, (small, big)
