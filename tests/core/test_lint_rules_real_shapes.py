"""The linter on real-shaped streams: the harmless shapes gateways and Azure send stay quiet
(or an info), a repeated finding is one finding with a count, and the breaks the official
SDKs choke on are named at their frame (exact rule, severity, frame and message)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamscope.cli import main
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict import Finding, Linter, Verdict
from support.verdict_streams import (
    CONTENT_TYPES,
    DONE,
    Frame,
    anthropic_text,
    body,
    gemini_text,
    gm,
    oa,
    openai_text,
    openai_tools,
    renumber,
    responses_call,
    responses_text,
    tc,
)


def lint(dialect: str, data: list[Frame] | bytes, request: dict[str, Any] | None = None) -> Verdict:
    """The stream in one read, as a capture with its headers would be linted."""
    raw = data if isinstance(data, bytes) else body(data, dialect)
    headers = [("content-type", CONTENT_TYPES[dialect])]
    linter = Linter(dialect, headers=headers, status=200, request=request, headers_at=0.05)
    linter.feed(raw, 0.1)
    return linter.finish(StreamEnd("eof"), 0.1)


def only(v: Verdict) -> tuple[str, str, int | None, str]:
    """The verdict's one finding as (rule, severity, frame, message)."""
    (f,) = v.findings
    return (f.rule, f.severity, f.frame, f.message)


def found(v: Verdict) -> list[tuple[str, str, int | None, str]]:
    return [(f.rule, f.severity, f.frame, f.message) for f in v.findings]


# -- False alarms ------------------------------------------------------------------------------


def test_done_after_a_responses_stream_is_an_info_and_the_cli_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdict = lint("responses", [*responses_text(), DONE])
    assert only(verdict) == (
        "stream.done-sentinel",
        "info",
        8,
        "a [DONE] sentinel the dialect does not define, after the terminal event: "
        "terminal at frame 7",
    )
    assert verdict.outcome == "completed"
    path = tmp_path / "litellm responses.sse"
    path.write_bytes(body([*responses_text(), DONE], "responses"))
    code = main(["lint", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["dialect"] == "responses"
    assert doc["summary"] == {"error": 0, "warning": 0, "info": 1}


def test_done_after_anthropic_message_stop_is_an_info_but_gemini_chokes_on_it() -> None:
    """The Anthropic SDK skips an event without a name; google-genai parses it as JSON."""
    assert only(lint("anthropic", [*anthropic_text(), DONE])) == (
        "stream.done-sentinel",
        "info",
        12,
        "a [DONE] sentinel the dialect does not define, after the terminal event: "
        "terminal at frame 11",
    )
    gemini = lint("gemini", [*gemini_text(), DONE])
    assert [(f.rule, f.severity, f.frame) for f in gemini.findings] == [
        ("stream.malformed-frame", "error", 3)
    ]


def test_data_after_a_responses_terminal_that_is_not_a_bare_done_is_still_an_error() -> None:
    late = ("response.output_text.delta", {**responses_text()[4][1], "sequence_number": 9})
    verdict = lint("responses", [*responses_text(), late])
    assert [(f.rule, f.frame) for f in verdict.findings][:1] == [("stream.data-after-terminal", 8)]


def test_a_repeated_finding_is_one_finding_with_a_count_and_its_frames() -> None:
    """OpenRouter-like: a keep-alive comment between chunks, the role on every chunk."""
    frames: list[Frame] = []
    for k in range(15):
        frames += [b": OPENROUTER PROCESSING\n\n", oa({"role": "assistant", "content": f"w{k}"})]
    verdict = lint("openai", [*frames, oa({}, "stop"), DONE])
    assert verdict.findings == (
        Finding(
            "openai.role-first",
            "warning",
            3,
            "delta.role appears after a choice's first chunk: choice 0",
            verdict.findings[0].hint,
            14,
            tuple(range(3, 31, 2)),
        ),
    )
    assert verdict.findings[0].to_json()["count"] == 14
    assert verdict.summary == {"error": 0, "warning": 1, "info": 0}


def _azure(frames: list[Frame]) -> list[Frame]:
    """Azure OpenAI's shape: a prompt-filter chunk first, filter results on every choice."""
    out: list[Frame] = [{
        "choices": [], "created": 0, "id": "", "model": "", "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
            "hate": {"filtered": False, "severity": "safe"}}}],
    }]  # fmt: skip
    for f in frames:
        if isinstance(f, dict):
            f = {**f, "system_fingerprint": "fp_1", "choices": [
                {**c, "content_filter_results": {}} for c in f["choices"]]}  # fmt: skip
        out.append(f)
    return out


def test_azure_content_filter_chunks_are_documented_behaviour_not_a_fault() -> None:
    text = openai_text()
    async_filter = {
        "choices": [{"index": 0, "finish_reason": None,
                     "content_filter_offsets": {"check_offset": 0, "start_offset": 0,
                                                "end_offset": 12},
                     "content_filter_results": {"hate": {"filtered": False,
                                                         "severity": "safe"}}}],
        "created": 0, "id": "", "model": "", "object": "",
    }  # fmt: skip
    frames = _azure(text[:-1])
    assert lint("openai", [*frames, DONE]).findings == ()
    assert lint("openai", [*frames[:3], async_filter, *frames[3:], DONE]).findings == ()
    # a real change of id is still one (and its hint blames no load balancer)
    mixed = _azure([*text[:2], oa({"content": "a"}, id="chatcmpl-2"), *text[2:-1]])
    verdict = lint("openai", [*mixed, DONE])
    assert [(f.rule, f.frame) for f in verdict.findings] == [
        ("openai.consistent-ids", 3),
        ("openai.consistent-ids", 4),
    ]
    assert "load balancer" not in verdict.findings[0].hint
    assert "Azure" in verdict.findings[0].hint


# -- Breaks the SDKs choke on ------------------------------------------------------------------


def test_a_tool_call_index_that_skips_is_an_error_and_the_openai_sdk_agrees() -> None:
    chunks: list[Frame] = [*openai_tools()[:4], tc(2, "{}", first=True), *openai_tools()[4:]]
    assert only(lint("openai", chunks)) == (
        "openai.tool-call-index-gap",
        "error",
        4,
        "a tool call's index skips a number (0, then 2): index 2 after 1 call(s)",
    )
    # the openai SDK's accumulator: fine on the clean stream, IndexError on this one
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    def accumulate(frames: list[Frame]) -> None:
        state: Any = ChatCompletionStreamState()
        for f in frames:
            if isinstance(f, dict):
                list(state.handle_chunk(ChatCompletionChunk.model_validate(f)))

    accumulate(openai_tools())
    with pytest.raises(IndexError):
        accumulate(chunks)
    parallel = [*openai_tools()[:4], tc(1, "{}", first=True), *openai_tools()[4:]]
    accumulate(parallel)
    assert lint("openai", parallel).findings == ()


def test_a_choice_index_other_than_0_for_one_choice() -> None:
    one = {"model": "gpt-x", "stream": True}
    second = {**oa({}), "choices": [{"index": 1, "delta": {"content": "a"}, "finish_reason": None}]}
    frames = [*openai_text()[:2], second, *openai_text()[2:]]
    assert only(lint("openai", frames, request=one)) == (
        "openai.choice-index-range",
        "error",
        2,
        "a choice index the request did not ask for (n), or one that skips a number: "
        "index 1, the request asked 1 choice",
    )
    # n=2 asked: two choices are fine; no request known: only a skipped index is one
    assert lint("openai", frames, request={**one, "n": 2}).findings == ()
    assert lint("openai", frames).findings == ()
    delta = {"role": "assistant", "content": ""}
    first = {**oa(delta), "choices": [{"index": 1, "delta": delta, "finish_reason": None}]}
    assert found(lint("openai", [first, *openai_text()[1:]])) == [
        ("openai.choice-index-range", "error", 0,
         "a choice index the request did not ask for (n), or one that skips a number: "
         "index 1, before index 0"),
    ]  # fmt: skip


def test_tool_calls_finish_without_a_call_and_usage_shapes() -> None:
    assert only(lint("openai", [*openai_text()[:-2], oa({}, "tool_calls"), DONE])) == (
        "openai.tool-calls-finish",
        "error",
        4,
        "finish_reason is tool_calls but the choice made no tool call: choice 0",
    )
    asked = {"stream_options": {"include_usage": True}}
    usage = oa({}, "stop", usage={"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9})
    assert only(lint("openai", [*openai_text()[:-2], usage, DONE], request=asked)) == (
        "openai.usage-with-choices",
        "info",
        4,
        "a chunk carries usage while its choices are not empty: 1 choice(s)",
    )
    # vLLM's continuous_usage_stats asks for it on every chunk
    every = {"stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    assert lint("openai", [*openai_text()[:-2], usage, DONE], request=every).findings == ()
    # the usage chunk (empty choices) before the content
    alone = {**oa({}), "choices": [], "usage": {"total_tokens": 9}}
    early = [openai_text()[0], alone, *openai_text()[1:]]
    assert only(lint("openai", early, request=asked)) == (
        "openai.usage-chunk",
        "warning",
        1,
        "a usage chunk (empty choices) that was not asked for, or before the finish: "
        "before the finish_reason chunk",
    )


def test_done_with_two_spaces_is_an_error() -> None:
    verdict = lint("openai", [*openai_text()[:-1], b"data:  [DONE]\n\n"])
    assert found(verdict) == [
        ("sse.extra-space-after-colon", "warning", 5,
         "a field has more than one space after the colon: data"),
        ("openai.done-exact", "error", 5,
         "the [DONE] line's data is not exactly [DONE]: data ' [DONE]'"),
    ]  # fmt: skip
    # a space after it is fine (the SDK checks startswith("[DONE]"))
    assert lint("openai", [*openai_text()[:-1], b"data: [DONE] \n\n"]).findings == ()


def test_a_byte_order_mark_inside_the_stream_loses_its_chunk() -> None:
    text = openai_text()
    verdict = lint("openai", [*text[:2], b"\xef\xbb\xbf" + body([oa({"content": "a"})], "openai"),
                              *text[2:]])  # fmt: skip
    assert only(verdict) == (
        "sse.bom-inside",
        "error",
        2,
        "a byte order mark inside the stream: its line is read as an unknown field and the "
        "event is lost: the 'data' line after U+FEFF",
    )
    assert verdict.turn.text == "word " * 3  # (the "a" is gone)
    # a line of an unknown field alone in its block is no longer silent either
    odd = lint("openai", [*text[:2], b"dta: {}\n\n", *text[2:]])
    assert found(odd) == [
        ("sse.unknown-field", "warning", 2, "a line names a field SSE does not know: 'dta'")
    ]


def test_anthropic_stop_reason_null_and_a_missing_event_line() -> None:
    frames = anthropic_text()
    name, delta = frames[10]
    null = [*frames[:10], (name, {**delta, "delta": {"stop_reason": None}}), *frames[11:]]
    assert only(lint("anthropic", null)) == (
        "anthropic.stop-reason-missing",
        "error",
        10,
        "message_delta has no stop_reason (null)",
    )
    bare = [*frames[:3], frames[3][1], *frames[4:]]
    assert only(lint("anthropic", bare)) == (
        "anthropic.event-line-missing",
        "error",
        3,
        "an event has no 'event:' line",
    )


def test_responses_delta_after_done_done_mismatch_and_event_name() -> None:
    text = responses_text()
    bang = ("response.output_text.delta", {**text[4][1], "delta": "!"})
    assert only(lint("responses", renumber([*text[:6], bang, *text[6:]]))) == (
        "responses.delta-after-done",
        "error",
        6,
        "a delta arrived after its part's or item's .done event: "
        "response.output_text.delta, done at frame 5",
    )
    call = responses_call(['{"city":', ' "Bern"}'])
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1",
            "output_index": 0, "arguments": '{"city": "Basel"}'}  # fmt: skip
    frames = renumber([*call[:4], (done["type"], done), *call[4:]])
    assert only(lint("responses", frames)) == (
        "responses.done-mismatch",
        "error",
        4,
        "a .done event's full value differs from its joined deltas: "
        "response.function_call_arguments.done.arguments: 17 chars, the 2 deltas join to 16 "
        "chars",
    )
    same = renumber([*call[:4], (done["type"], {**done, "arguments": '{"city": "Bern"}'}),
                     *call[4:]])  # fmt: skip
    assert lint("responses", same).findings == ()
    renamed = [*text[:3], ("response.output_text.done", text[3][1]), *text[4:]]
    assert only(lint("responses", renamed)) == (
        "responses.event-name",
        "warning",
        3,
        "the SSE event name does not match the data's type: "
        "event: response.output_text.done, type: response.output_text.delta",
    )


def test_gemini_candidate_index_and_lines_google_genai_cannot_read() -> None:
    text = gemini_text()
    other = {**gm(" is blue."), "candidates": [{**gm(" is blue.")["candidates"][0], "index": 1}]}
    asked = {"contents": [{"parts": [{"text": "sky?"}]}]}
    assert only(lint("gemini", [text[0], other, text[2]], request=asked)) == (
        "gemini.candidate-index",
        "error",
        1,
        "a candidate index the request did not ask for (candidateCount), or one that skips: "
        "index 1, the request asked 1 candidate",
    )
    two = {**asked, "generationConfig": {"candidateCount": 2}}
    assert lint("gemini", [text[0], other, text[2]], request=two).findings == ()
    pinged = [text[0], b": keep-alive\n\n", text[1], b": keep-alive\n\n", text[2]]
    verdict = lint("gemini", pinged)
    assert [(f.rule, f.severity, f.frame, f.count, f.frames) for f in verdict.findings] == [
        ("gemini.data-lines-only", "error", 1, 2, (1, 3))
    ]
    assert verdict.findings[0].message.endswith(": a comment (keep-alive)")
    named = lint("gemini", body(text, "gemini").replace(b"data: ", b"event: message\ndata: ", 1))
    assert found(named) == [
        ("gemini.data-lines-only", "error", 0,
         "a line other than 'data: <json>' (a comment, event:, id:, retry:, or data: without "
         "its space): an event: line"),
    ]  # fmt: skip
    crlf = lint("gemini", body(text, "gemini").replace(b"\n", b"\r\n"))
    assert crlf.findings == ()


def _responses_sdk(frames: list[Frame]) -> None:
    """The frames through the openai SDK's Responses stream accumulator."""
    from openai import omit
    from openai._models import construct_type
    from openai.lib.streaming.responses._responses import ResponseStreamState
    from openai.types.responses import ResponseStreamEvent

    state: Any = ResponseStreamState(input_tools=omit, text_format=omit)
    for f in frames:
        if isinstance(f, tuple):
            state.handle_event(construct_type(type_=ResponseStreamEvent, value=f[1]))


def test_responses_identity_changes_are_errors_and_the_openai_sdk_agrees() -> None:
    text = responses_text()
    _responses_sdk(text)
    assert lint("responses", text).findings == ()
    name, completed = text[7]
    other = [*text[:7], (name, {**completed, "response": {**completed["response"], "id": "r2"}})]
    assert only(lint("responses", other)) == (
        "responses.response-id",
        "error",
        7,
        "the lifecycle events name different responses (response.id changes): "
        "response.completed: 'resp_1' -> 'r2'",
    )
    with pytest.raises(RuntimeError, match="Lifecycle response identity changed"):
        _responses_sdk(other)
    name, done = text[6]
    moved = [*text[:6], (name, {**done, "item": {**done["item"], "id": "msg_2"}}), text[7]]
    assert only(lint("responses", moved)) == (
        "responses.item-identity",
        "error",
        6,
        "an output_item.done closes another item than the one added at its output_index: "
        "output_index 0: added ('message', 'msg_1'), done ('message', 'msg_2')",
    )
    with pytest.raises(RuntimeError, match="Completed output item identity changed"):
        _responses_sdk(moved)


def test_a_repeated_finding_is_reported_live_once_and_counted_at_the_end() -> None:
    roles = [oa({"role": "assistant", "content": f"w{k}"}) for k in range(4)]
    raw = body([*roles, oa({}, "stop"), DONE], "openai")
    linter = Linter("openai", headers=[("content-type", "text/event-stream")], status=200)
    live: list[tuple[str, int | None, int]] = []
    for i in range(0, len(raw), 50):
        live += [(f.rule, f.frame, f.count) for f in linter.feed(raw[i : i + 50], 0.1)]
    assert live == [("openai.role-first", 1, 1)]
    verdict = linter.finish(StreamEnd("eof"), 0.2)
    assert [(f.rule, f.frame, f.count, f.frames) for f in verdict.findings] == [
        ("openai.role-first", 1, 3, (1, 2, 3))
    ]
    assert linter.take_new() == []
