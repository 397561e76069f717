"""Every bench figure's definition as one short text: the window shows it as a tooltip, the
export carries it beside the value. Times are seconds since the request was sent (the
capture's clock), unless a line says otherwise.

A *token frame* is a frame whose events carry generated output in any channel: answer text
(``content``, a refusal), reasoning, a tool call's name or argument bytes. Not a token frame:
the OpenAI role-only chunk, Anthropic ``message_start`` / a ``content_block_start`` without
text, Responses ``response.created`` / ``in_progress``, keep-alives and comments, usage-only
chunks, finish reasons and terminal signals.
"""

from __future__ import annotations

TOKEN_FRAME = (
    "Token frame: a frame carrying generated output in any channel (content, refusal, "
    "reasoning, tool-call name or arguments); role chunks, message_start, response.created, "
    "keep-alives, usage and terminal frames are not."
)
TTFB = "TTFB = t(response headers) - t(request sent)."
TTFT = "TTFT = t(first token frame) - t(request sent); reasoning and tool calls count."
TTFO = (
    "TTFO = t(first content or tool-call frame) - t(request sent); reasoning is excluded "
    "(time to first output)."
)
OUTPUT_TOKENS = (
    "N = the stream's final usage (completion/output tokens; Gemini: candidates + thoughts) "
    "when it arrived at or after the last token frame (source 'usage'); else the number of "
    "token frames (source 'chunks', one token per frame assumed). With a user's tokenizer "
    "(--tokenizer; source 'tokenizer'), N = its count of the reasoning, the answer text and "
    "each tool call's name and arguments, each counted whole, whatever the usage says."
)
FIRST_FRAME_TOKENS = (
    "k = the usage count carried by the first token frame itself (continuous usage: vLLM's "
    "continuous_usage_stats, Gemini's usageMetadata), else 1. With a user's tokenizer: its "
    "count of the first token frame's generated text (at least 1)."
)
ITL = (
    "ITL = (t(last token frame) - t(first token frame)) / (N - k); undefined with fewer than "
    "two token frames or N - k <= 0."
)
GAPS = (
    "Gaps = t(token frame i+1) - t(token frame i), every consecutive pair (frames of one "
    "network read: gap 0). A gap is a gap, not an inter-token latency."
)
GAP_P99 = "Gap p99 = the 99th percentile of the request's gaps (hidden below 100 gaps)."
MAX_GAP = "Max gap = the largest gap; its frame is the token frame that ended it."
E2E_TERMINAL = (
    "E2E (terminal) = t(the dialect's terminal signal) - t(request sent): [DONE], "
    "message_stop, response.completed/incomplete, done:true, Gemini finishReason + end."
)
E2E_LAST_TOKEN = "E2E (last token) = t(last token frame) - t(request sent)."
DURATION = "Duration = t(stream ended: terminal, error, cut or cancel) - t(request sent)."
DISPATCH_LAG = (
    "Dispatch lag = t(request sent) - t(scheduled), on the runner's clock. Open loop: the "
    "time the schedule gave it; closed loop: the moment its worker was ready (its previous "
    "request's end, or the worker's staggered start). The client's own delay."
)
TTFT_FROM_SCHEDULE = (
    "TTFT from schedule = dispatch lag + TTFT = t(first token frame) - t(scheduled): the "
    "latency a user arriving on the schedule sees (open loop: coordinated omission shown, "
    "not hidden)."
)
VLLM_TTFT = (
    "vLLM TTFT = t(first data event whose JSON has a non-empty 'choices') - t(sent): the "
    "role chunk counts (vllm bench serve, openai-chat). OpenAI chat dialect only; None "
    "for the others (vLLM's client reads no other wire format)."
)
GENAI_PERF_TTFT = (
    "genai-perf TTFT = t(first frame with non-empty answer content) - t(sent): reasoning and "
    "tool calls do not count."
)
VLLM_ITL = (
    "vLLM ITL = every gap between a non-empty-'choices' event (after the first) and the data "
    "event before it (a usage-only chunk counts as 'before'), pooled over all requests. "
    "OpenAI chat dialect only."
)
LLMPERF_ITL = (
    "llmperf ITL = (t(last content frame) - t(sent)) / N: llmperf sums TTFT and the gaps "
    "between content chunks, then divides by the output tokens (llmperf counts them with "
    "a client tokenizer; here N as above). Includes TTFT, so it is not an ITL in our sense."
)
OUTCOME = (
    "Outcome: completed (terminal signal), length (completed at the token limit), truncated "
    "(body ended or broke before the terminal), timeout (idle or first-byte limit), "
    "cancelled, http_error (status >= 400, counted per status), stream_error (an in-stream "
    "error event), error (no response, not a stream, protocol error)."
)
PERCENTILES = (
    "Percentiles: linear interpolation between the two nearest ranks (numpy's default "
    "'linear': h = (n - 1) * q; x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h])). "
    "A percentile q is shown only when n >= 1 / (1 - q): p50 n >= 2, p90 n >= 10, p95 n >= 20, "
    "p99 n >= 100, p99.9 n >= 1000 (at least one value expected beyond it); max always."
)
LATENCY_SET = (
    "Latency statistics are over completed + length requests unless chosen otherwise; "
    "other outcomes are counted, never mixed in."
)
WINDOW = (
    "Window: from the later of (the last warm-up request's end, the first measured "
    "request's send) to the time the first worker finished its last request (closed loop; "
    "open loop without workers: the last measured request's send). Warm-up and the drain "
    "at the end are outside it."
)
OUTPUT_THROUGHPUT = (
    "Output tokens/s = the included requests' tokens generated inside the window (each "
    "request's N spread evenly between its first and last token frame) / window length."
)
REQUEST_THROUGHPUT = "Requests/s = included requests that ended inside the window / window."
EFFECTIVE_CONCURRENCY = (
    "Effective concurrency (Little's law) = sum over all requests of the time each was in "
    "flight inside the window / window length; below the configured concurrency when the "
    "client starves the server."
)
BENCHMARK_DURATION = (
    "Benchmark duration (AIPerf) = last included request's last token - first included "
    "request's send; output_token_throughput = sum N / duration, request_throughput = "
    "included requests / duration (no trimming, as AIPerf)."
)

DEFINITIONS: dict[str, str] = {
    "token_frame": TOKEN_FRAME,
    "ttfb": TTFB,
    "ttft": TTFT,
    "ttfo": TTFO,
    "output_tokens": OUTPUT_TOKENS,
    "first_frame_tokens": FIRST_FRAME_TOKENS,
    "itl": ITL,
    "gaps": GAPS,
    "gap_p99": GAP_P99,
    "max_gap": MAX_GAP,
    "e2e_terminal": E2E_TERMINAL,
    "e2e_last_token": E2E_LAST_TOKEN,
    "duration": DURATION,
    "dispatch_lag": DISPATCH_LAG,
    "ttft_from_schedule": TTFT_FROM_SCHEDULE,
    "vllm_ttft": VLLM_TTFT,
    "genai_perf_ttft": GENAI_PERF_TTFT,
    "vllm_itl": VLLM_ITL,
    "llmperf_itl": LLMPERF_ITL,
    "outcome": OUTCOME,
    "percentiles": PERCENTILES,
    "latency_set": LATENCY_SET,
    "window": WINDOW,
    "output_token_throughput": OUTPUT_THROUGHPUT,
    "request_throughput": REQUEST_THROUGHPUT,
    "effective_concurrency": EFFECTIVE_CONCURRENCY,
    "benchmark_duration": BENCHMARK_DURATION,
}
"""Every definition by the name the metrics, the report and the CSV use."""
