"""Bench figures per request, on hand-made frame timelines replayed through the real
pipeline: every expected value is written out (times are multiples of 1/8 s: exact)."""

from __future__ import annotations

import asyncio

import pytest

from streamscope.core.bench.metrics import measure, measure_async
from streamscope.core.capture.format import CaptureEnd
from support.bench_captures import Read, role_first, timeline, usage_chunk
from support.verdict_streams import DONE, Frame, gm, oa, tc


def test_role_chunk_first_is_no_token_and_usage_gives_n() -> None:
    m = measure(role_first(), capture_ref="cap-1")
    assert (m.dialect, m.outcome, m.status, m.finish_reason) == ("openai", "completed", 200, "stop")
    assert m.ttfb == 0.0625
    assert (m.ttft, m.ttft_frame) == (0.25, 1)  # not the role chunk (frame 0, 0.125 s)
    assert (m.ttfo, m.ttfo_frame) == (0.25, 1)
    assert (m.output_tokens, m.token_source, m.first_frame_tokens) == (4, "usage", 1)
    assert m.token_frames == 3
    assert m.itl == 0.125  # (0.625 - 0.25) / (4 - 1)
    assert m.gaps == (0.25, 0.125)
    assert (m.max_gap, m.max_gap_frame, m.gap_p99) == (0.25, 2, None)  # p99 needs 100 gaps
    assert (m.e2e_terminal, m.terminal_frame) == (0.875, 6)
    assert (m.e2e_last_token, m.last_token_frame) == (0.625, 3)
    assert m.duration == 1.0
    assert m.capture == "cap-1"
    assert m.frames == 7  # frames 0-6, the finish and usage chunks of one read counted apart


def test_compatibility_columns_on_one_timeline() -> None:
    m = measure(role_first())
    assert m.vllm_ttft == 0.125  # the role chunk has non-empty choices: vLLM stamps it
    # each choices event after the first, minus the data event before it; the usage-only
    # chunk (frame 5) has empty choices: no gap of its own
    assert m.vllm_itl_gaps == (0.125, 0.25, 0.125, 0.125)
    assert m.genai_perf_ttft == 0.25  # first content
    assert m.llmperf_itl == 0.15625  # (last content 0.625 - sent 0) / N 4: TTFT included


def test_reasoning_before_content_counts_for_ttft_not_ttfo() -> None:
    m = measure(
        timeline(
            "openai",
            [
                (0.125, oa({"role": "assistant", "content": ""})),  # 0
                (0.25, oa({"reasoning_content": "Let me"})),  # 1
                (0.375, oa({"reasoning_content": " think"})),  # 2
                (0.5, oa({"content": "Answer"})),  # 3
                (0.625, oa({"content": "."})),  # 4
                (0.75, [oa({}, "stop"), DONE]),  # 5, 6
            ],
        )
    )
    assert (m.ttft, m.ttft_frame) == (0.25, 1)
    assert (m.ttfo, m.ttfo_frame) == (0.5, 3)
    assert m.genai_perf_ttft == 0.5
    # no usage in the stream: one token per token frame, marked
    assert (m.output_tokens, m.token_source) == (4, "chunks")
    assert m.itl == 0.125  # (0.625 - 0.25) / (4 - 1)
    assert m.gaps == (0.125, 0.125, 0.125)
    assert m.max_gap_frame == 2  # the first of equal gaps
    assert m.llmperf_itl == 0.15625  # 0.625 / 4
    assert m.e2e_terminal == 0.75


def test_multi_token_first_chunk_with_continuous_usage() -> None:
    """vLLM's continuous_usage_stats: every chunk carries the running count, so the first
    token frame says it held 3 tokens; ITL divides by N - 3, not N - 1."""

    def chunk(delta: dict[str, str], n: int, finish: str | None = None) -> Frame:
        return oa(delta, finish, usage={"prompt_tokens": 7, "completion_tokens": n})

    m = measure(
        timeline(
            "openai",
            [
                (0.125, chunk({"role": "assistant", "content": ""}, 0)),  # 0
                (0.25, chunk({"content": "Hello wor"}, 3)),  # 1
                (0.375, chunk({"content": "ld"}, 4)),  # 2
                (0.5, chunk({"content": "!"}, 5)),  # 3
                (0.625, [chunk({}, 5, "stop"), DONE]),  # 4, 5
            ],
        )
    )
    assert (m.output_tokens, m.token_source, m.first_frame_tokens) == (5, "usage", 3)
    assert m.itl == 0.125  # (0.5 - 0.25) / (5 - 3)
    assert m.ttft == 0.25


def test_truncated_stream_has_no_terminal_and_counts_chunks() -> None:
    m = measure(
        timeline(
            "openai",
            [
                (0.125, oa({"role": "assistant", "content": ""})),
                (0.25, oa({"content": "Par"})),
                (0.5, oa({"content": "tial"})),
            ],
            end=CaptureEnd("broken", elapsed=0.75, detail="connection reset"),
        )
    )
    assert m.outcome == "truncated"
    assert "no [DONE]" in m.reason
    assert (m.e2e_terminal, m.terminal_frame) == (None, None)
    assert m.e2e_last_token == 0.5
    assert (m.output_tokens, m.token_source) == (2, "chunks")
    assert m.itl == 0.25  # (0.5 - 0.25) / (2 - 1)
    assert m.duration == 0.75


def test_idle_timeout_is_a_timeout_not_a_truncation() -> None:
    m = measure(
        timeline(
            "openai",
            [(0.25, oa({"content": "x"}))],
            end=CaptureEnd("idle_timeout", elapsed=5.25, timeout=5.0),
        )
    )
    assert (m.outcome, m.outcome_key, m.duration) == ("timeout", "timeout", 5.25)


def test_http_429_is_an_http_error_with_its_status() -> None:
    body = b'{"error":{"message":"Rate limit reached","type":"rate_limit_exceeded"}}'
    capture = timeline(
        "openai",
        [],
        status=429,
        content_type="application/json",
        end=CaptureEnd("http_error", elapsed=0.125, body=body),
    )
    m = measure(capture)
    assert (m.outcome, m.status, m.outcome_key) == ("http_error", 429, "http_429")
    assert "Rate limit reached" in m.reason
    assert (m.ttfb, m.ttft, m.ttfo, m.itl) == (0.0625, None, None, None)
    assert (m.output_tokens, m.token_source, m.token_frames, m.gaps) == (0, None, 0, ())
    assert m.duration == 0.125
    assert m.frames == 1  # (the error body: one frame, as the Frames tab shows it)


def test_in_stream_error_is_a_stream_error() -> None:
    err = {"error": {"message": "overloaded", "type": "server_error"}}
    m = measure(timeline("openai", [(0.25, oa({"content": "a"})), (0.375, err)]))
    assert (m.outcome, m.outcome_key, m.ttft) == ("stream_error", "stream_error", 0.25)


def test_length_stop_is_its_own_outcome() -> None:
    m = measure(
        timeline("openai", [(0.25, oa({"content": "a"})), (0.375, [oa({}, "length"), DONE])])
    )
    assert (m.outcome, m.finish_reason) == ("length", "length")


def test_tool_call_name_is_the_first_token() -> None:
    m = measure(
        timeline(
            "openai",
            [
                (0.125, oa({"role": "assistant", "content": None})),  # 0
                (0.25, tc(0, "", first=True)),  # 1: the name only
                (0.375, tc(0, '{"city": ')),  # 2
                (0.5, tc(0, '"Bern"}')),  # 3
                (0.625, [oa({}, "tool_calls"), DONE]),  # 4, 5
            ],
        )
    )
    assert (m.ttft, m.ttft_frame, m.ttfo, m.ttfo_frame) == (0.25, 1, 0.25, 1)
    assert (m.genai_perf_ttft, m.llmperf_itl) == (None, None)  # no content at all
    assert (m.output_tokens, m.token_source) == (3, "chunks")


# -- the other four dialects ---------------------------------------------------------------


def _ev(kind: str, **fields: object) -> tuple[str, dict[str, object]]:
    """An SSE event named ``kind`` whose JSON has ``"type": kind`` (Anthropic, Responses)."""
    return (kind, {"type": kind, **fields})


def _anthropic(until: int | None = None) -> list[Read]:
    def delta(index: int, kind: str, **fields: str) -> Frame:
        return _ev("content_block_delta", index=index, delta={"type": kind, **fields})

    usage = {"input_tokens": 5, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x"}
    tool = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    text_start = _ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
    final = _ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9})
    reads: list[Read] = [
        (0.125, [_ev("message_start", message={**message, "usage": usage}), text_start]),  # 0 1
        (0.25, _ev("ping")),  # 2
        (0.375, delta(0, "text_delta", text="Hello")),  # 3
        (0.5, [delta(0, "text_delta", text=" there"), _ev("content_block_stop", index=0)]),  # 4 5
        (0.625, _ev("content_block_start", index=1, content_block=tool)),  # 6: the name
        (0.75, delta(1, "input_json_delta", partial_json='{"city":')),  # 7
        (0.875, delta(1, "input_json_delta", partial_json=' "Bern"}')),  # 8
        (1.0, [final, _ev("message_stop")]),  # 9 10
    ]
    return reads[:until]


def test_anthropic() -> None:
    m = measure(timeline("anthropic", _anthropic()))
    assert (m.dialect, m.outcome, m.finish_reason) == ("anthropic", "completed", "tool_use")
    # not message_start, not the empty content_block_start, not the ping
    assert (m.ttft, m.ttft_frame, m.ttfo_frame) == (0.375, 3, 3)
    assert (m.output_tokens, m.token_source, m.first_frame_tokens) == (9, "usage", 1)
    assert m.itl == 0.0625  # (0.875 - 0.375) / (9 - 1)
    assert m.gaps == (0.125, 0.125, 0.125, 0.125)  # the tool_use start (name) is frame 6
    assert (m.e2e_terminal, m.terminal_frame, m.e2e_last_token) == (1.0, 10, 0.875)
    assert (m.vllm_ttft, m.vllm_itl_gaps) == (None, ())  # OpenAI chat only
    assert m.genai_perf_ttft == 0.375
    assert m.llmperf_itl == pytest.approx(0.5 / 9, abs=1e-15)


def test_anthropic_cut_short_ignores_the_placeholder_usage_of_message_start() -> None:
    """message_start's output_tokens (1) came before the tokens: not a final count."""
    m = measure(timeline("anthropic", _anthropic(until=4)))
    assert m.outcome == "truncated"
    assert (m.output_tokens, m.token_source) == (2, "chunks")
    assert m.itl == 0.125  # (0.5 - 0.375) / (2 - 1)


def test_responses() -> None:
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-x"}
    done = {**resp, "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 3}}
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    at = {"item_id": "msg_1", "output_index": 1, "content_index": 0}
    summary = {"item_id": "rs_1", "output_index": 0, "summary_index": 0}
    reads: list[Read] = [
        (0.125, [_ev("response.created", response=resp), _ev("response.in_progress")]),  # 0 1
        (0.25, _ev("response.reasoning_summary_text.delta", delta="Plan", **summary)),  # 2
        (0.375, _ev("response.output_item.added", output_index=1, item=msg)),  # 3
        (0.5, _ev("response.output_text.delta", delta="Hi", **at)),  # 4
        (0.75, _ev("response.output_text.delta", delta=" there", **at)),  # 5
        (0.875, _ev("response.completed", response=done)),  # 6
    ]
    m = measure(timeline("responses", reads))
    assert (m.dialect, m.outcome) == ("responses", "completed")
    assert (m.ttft, m.ttft_frame) == (0.25, 2)  # the reasoning summary
    assert (m.ttfo, m.ttfo_frame) == (0.5, 4)
    assert (m.output_tokens, m.token_source) == (3, "usage")
    assert m.itl == 0.25  # (0.75 - 0.25) / (3 - 1)
    assert m.gaps == (0.25, 0.25)
    assert (m.max_gap_frame, m.e2e_terminal, m.terminal_frame) == (4, 0.875, 6)


def test_gemini_counts_thoughts_and_reads_the_first_frames_usage() -> None:
    def chunk(part: dict[str, object], finish: str | None = None, **usage: int) -> Frame:
        c = gm("", finish, usageMetadata={"promptTokenCount": 4, **usage})
        c["candidates"][0]["content"]["parts"] = [part]
        return c

    reads: list[Read] = [
        (0.125, chunk({"text": "Considering", "thought": True}, thoughtsTokenCount=2)),
        (0.375, chunk({"text": "The sky"}, candidatesTokenCount=2, thoughtsTokenCount=2)),
        (0.625, chunk({"text": " is"}, "STOP", candidatesTokenCount=5, thoughtsTokenCount=2)),
    ]
    m = measure(timeline("gemini", reads, end=CaptureEnd("eof", elapsed=0.75)))
    assert (m.dialect, m.outcome, m.finish_reason) == ("gemini", "completed", "STOP")
    assert (m.ttft, m.ttfo, m.ttfo_frame) == (0.125, 0.375, 1)
    assert (m.output_tokens, m.token_source, m.first_frame_tokens) == (7, "usage", 2)
    assert m.itl == pytest.approx(0.1, abs=1e-15)  # (0.625 - 0.125) / (7 - 2)
    # the terminal is finishReason + a clean end of body: at the end, in no frame
    assert (m.e2e_terminal, m.terminal_frame, m.e2e_last_token) == (0.75, None, 0.625)


def test_ollama() -> None:
    def line(done: bool = False, **message: str) -> dict[str, object]:
        base = {"model": "llama-x", "created_at": "2026-01-01T00:00:00Z", "done": done}
        return {**base, "message": {"role": "assistant", "content": "", **message}}

    last = line(True) | {"done_reason": "stop", "prompt_eval_count": 5, "eval_count": 4}
    reads: list[Read] = [
        (0.125, line(thinking="hm")),  # 0
        (0.25, line(content="Hi")),  # 1
        (0.5, line(content=" there")),  # 2
        (0.625, last),  # 3
    ]
    m = measure(timeline("ollama", reads))
    assert (m.dialect, m.outcome, m.finish_reason) == ("ollama", "completed", "stop")
    assert (m.ttft, m.ttft_frame, m.ttfo, m.ttfo_frame) == (0.125, 0, 0.25, 1)
    assert (m.output_tokens, m.token_source) == (4, "usage")
    assert m.itl == 0.125  # (0.5 - 0.125) / (4 - 1)
    assert (m.gaps, m.max_gap_frame) == ((0.125, 0.25), 2)
    assert (m.e2e_terminal, m.terminal_frame) == (0.625, 3)


def test_measure_async_on_a_running_loop_gives_the_same_figures() -> None:
    assert asyncio.run(measure_async(role_first())) == measure(role_first())


def test_usage_chunk_helper_is_a_usage_only_chunk() -> None:
    assert usage_chunk(4)["choices"] == []


def test_vllm_ttft_skips_a_chunk_with_empty_choices() -> None:
    """Azure OpenAI opens with ``choices: []`` and its prompt filter results: vLLM's client
    does not stamp that chunk; the role chunk after it is vLLM's first token."""
    azure = {"id": "", "object": "", "choices": [], "prompt_filter_results": []}
    m = measure(
        timeline(
            "openai",
            [
                (0.125, azure),  # 0
                (0.25, oa({"role": "assistant", "content": ""})),  # 1
                (0.375, oa({"content": "Hi"})),  # 2
                (0.5, [oa({}, "stop"), DONE]),  # 3 4
            ],
        )
    )
    assert (m.vllm_ttft, m.vllm_itl_gaps) == (0.25, (0.125, 0.125))
    assert (m.ttft, m.ttft_frame) == (0.375, 2)
