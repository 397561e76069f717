"""Benchmark: our SSE decoder against the decoders inside openai and httpx-sse.

Run: ``.venv/bin/python tests/benchmarks/bench_sse.py`` (not collected by pytest).

Builds a ~20 MB OpenAI chat-completions stream, cuts it into reads of random 1-16 KiB (fixed
seed) and times, in this process, each decoder driven the way its library drives it, with and
without decoding every data payload as JSON (``[DONE]`` skipped).  Best of 3 runs each.
"""

from __future__ import annotations

import codecs
import gc
import json
import random
import sys
import time
from collections.abc import Callable

import orjson
from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
from httpx_sse._decoders import SSELineDecoder as HttpxSSELineDecoder
from openai._streaming import SSEDecoder as OpenAISSEDecoder

from streamscope.core.wire.sse import SSEDecoder

TARGET_BYTES = 20 * 1024 * 1024
RUNS = 3
WORDS = [
    " the", " stream", " of", " tokens", " arrives", " quickly", ",", ".", " and", " we",
    " decode", " it", " byte", " by", " byte", "\n", " café", " naïve", " über", " 東京",
    " データ", " 🙂", " résumé", " —", " “quoted”", " x", " 42", " `code`", "**", " é",
]  # fmt: skip


def build_stream(target: int = TARGET_BYTES, seed: int = 1) -> bytes:
    """A realistic chat.completion.chunk stream of about ``target`` bytes."""
    rng = random.Random(seed)
    head = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741569952,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_eb9dce56a8",
    }
    parts: list[bytes] = []
    size = 0

    def chunk(choices: list[object], **extra: object) -> None:
        nonlocal size
        body = json.dumps({**head, "choices": choices, **extra}, ensure_ascii=False)
        block = f"data: {body}\n\n".encode()
        parts.append(block)
        size += len(block)

    first_delta = {"role": "assistant", "content": "", "refusal": None}
    chunk([{"index": 0, "delta": first_delta, "logprobs": None, "finish_reason": None}])
    while size < target:
        text = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        delta = {"content": text}
        chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}])
        if rng.random() < 0.002:
            parts.append(b": keep-alive\n\n")
            size += 14
    chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}])
    usage = {"prompt_tokens": 1234, "completion_tokens": 98765, "total_tokens": 99999}
    chunk([], usage=usage)
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def split_reads(stream: bytes, seed: int = 2) -> list[bytes]:
    rng = random.Random(seed)
    reads = []
    pos = 0
    while pos < len(stream):
        step = rng.randint(1024, 16 * 1024)
        reads.append(stream[pos : pos + step])
        pos += step
    return reads


def ours_events(reads: list[bytes], parse: bool) -> int:
    dec = SSEDecoder()
    count = 0
    loads = orjson.loads
    for read in reads:
        events = dec.feed(read)
        if parse:
            for ev in events:
                if ev.data != "[DONE]":
                    loads(ev.data)
        count += len(events)
    return count + len(dec.close())


def ours_frames(reads: list[bytes], parse: bool) -> int:
    dec = SSEDecoder()
    count = 0
    loads = orjson.loads
    for read in reads:
        frames = dec.feed_frames(read)
        if parse:
            for frame in frames:
                ev = frame.event
                if ev is not None and ev.data != "[DONE]":
                    loads(ev.data)
        count += sum(frame.event is not None for frame in frames)
    return count + len(dec.close_frames())


def openai_sdk(reads: list[bytes], parse: bool) -> int:
    # openai.Stream._iter_events: decoder.iter_bytes(response.iter_bytes()); then sse.json().
    count = 0
    for sse in OpenAISSEDecoder().iter_bytes(iter(reads)):
        if sse.data.startswith("[DONE]"):
            count += 1
            continue
        if parse:
            sse.json()
        count += 1
    return count


def httpx_sse(reads: list[bytes], parse: bool) -> int:
    # EventSource.iter_sse: response.iter_text() -> SSELineDecoder -> rstrip -> decode(line).
    text_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines = HttpxSSELineDecoder()
    decoder = HttpxSSEDecoder()
    count = 0

    def handle(line: str) -> None:
        nonlocal count
        sse = decoder.decode(line.rstrip("\n"))
        if sse is not None:
            count += 1
            if parse and sse.data != "[DONE]":
                sse.json()

    for read in reads:
        text = text_decoder.decode(read)
        if text:
            for line in lines.decode(text):
                handle(line)
    for line in lines.flush():
        handle(line)
    return count


def best_of(func: Callable[[list[bytes], bool], int], reads: list[bytes], parse: bool) -> float:
    best = float("inf")
    for _ in range(RUNS):
        gc.collect()
        start = time.perf_counter()
        func(reads, parse)
        best = min(best, time.perf_counter() - start)
    return best


def measure() -> dict[str, float]:
    """MB/s of each decoder, framing only and with JSON (for ``run_all.py``)."""
    reads = split_reads(build_stream())
    megabytes = sum(map(len, reads)) / 1e6
    contenders = {"feed": ours_events, "feed_frames": ours_frames,
                  "openai SDK": openai_sdk, "httpx-sse": httpx_sse}  # fmt: skip
    return {
        f"{name}{' +JSON' if parse else ''}": megabytes / best_of(func, reads, parse)
        for name, func in contenders.items()
        for parse in (False, True)
    }


def main() -> int:
    stream = build_stream()
    reads = split_reads(stream)
    megabytes = len(stream) / 1e6
    print(f"stream: {megabytes:.1f} MB, {len(reads)} reads of 1-16 KiB, best of {RUNS}")
    print(f"python {sys.version.split()[0]}")
    contenders = {
        "streamscope feed": ours_events,
        "streamscope feed_frames": ours_frames,
        "openai SDK": openai_sdk,
        "httpx-sse": httpx_sse,
    }
    counts = {name: func(reads, False) for name, func in contenders.items()}
    if len(set(counts.values())) != 1:
        print(f"event counts differ: {counts}")
        return 1
    rates: dict[tuple[str, bool], float] = {}
    print(f"\n{'decoder':<26}{'framing MB/s':>14}{'+JSON MB/s':>14}")
    for name, func in contenders.items():
        for parse in (False, True):
            rates[name, parse] = megabytes / best_of(func, reads, parse)
        print(f"{name:<26}{rates[name, False]:>14.1f}{rates[name, True]:>14.1f}")
    print(f"\n{'ratio':<26}{'framing':>14}{'+JSON':>14}")
    for ours in ("streamscope feed", "streamscope feed_frames"):
        for other in ("openai SDK", "httpx-sse"):
            label = f"{ours.split()[1]} / {other}"
            framing = rates[ours, False] / rates[other, False]
            with_json = rates[ours, True] / rates[other, True]
            print(f"{label:<26}{framing:>13.2f}x{with_json:>13.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
