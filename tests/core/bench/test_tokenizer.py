"""A user's tokenizer for output tokens: loading it (a module or a file, written here in
tmp_path; nothing downloaded), what N and k become with it on hand-made timelines, and
``streamscope bench --tokenizer`` end to end against the demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.bench.metrics import measure
from streamscope.core.bench.tokenizer import OFFLINE_ENV, TokenizerError, load_tokenizer
from streamscope.core.capture.format import CaptureEnd
from streamscope.demo.server import DemoServer
from support.bench_captures import role_first, timeline
from support.verdict_streams import DONE, oa, tc

TOKENIZERS = """
def chars(text):
    return len(text)

def words(text):
    return len(text.split())

class Tok:
    def count(self, text):
        return 2 * len(text)

tok = Tok()

def broken(text):
    raise RuntimeError("no vocabulary")

def floaty(text):
    return 1.5

def yes(text):
    return True

def negative(text):
    return -1

not_callable = 3

def picky(text):
    if "lorem" in text:
        raise ValueError("unknown word")
    return len(text)
"""


@pytest.fixture
def tokenizers(tmp_path: Path) -> Path:
    path = tmp_path / "mytok.py"
    path.write_text(TOKENIZERS, encoding="utf-8")
    return path


def chars(text: str) -> int:
    return len(text)


def words(text: str) -> int:
    return len(text.split())


# -- loading ---------------------------------------------------------------------------------


def test_a_file_and_a_dotted_function(tokenizers: Path) -> None:
    count = load_tokenizer(f"{tokenizers}:chars")
    assert count("Привет, мир") == 11  # (characters, not bytes: the user's function decides)
    assert load_tokenizer(f"{tokenizers}:tok.count")("abc") == 6


def test_a_module_from_the_current_directory_without_leaving_it_on_the_path(
    tokenizers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tokenizers.parent)
    monkeypatch.delitem(sys.modules, "mytok", raising=False)
    path_before = list(sys.path)
    try:
        count = load_tokenizer("mytok:words")
        assert count("one two  three") == 3
        assert sys.path == path_before
    finally:
        sys.modules.pop("mytok", None)


def test_loading_sets_the_hugging_face_libraries_offline(
    tokenizers: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in OFFLINE_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")  # (the user's own setting stays)
    load_tokenizer(f"{tokenizers}:chars")
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "0"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("broken", "failed: RuntimeError('no vocabulary')"),
        ("floaty", "returned 1.5, not a count (int >= 0)"),
        ("yes", "returned True, not a count (int >= 0)"),
        ("negative", "returned -1, not a count (int >= 0)"),
        ("not_callable", "not_callable is not callable"),
        ("nothing", "has no 'nothing'"),
    ],
)
def test_a_tokenizer_that_is_no_counter_is_refused_when_loaded(
    tokenizers: Path, name: str, message: str
) -> None:
    with pytest.raises(TokenizerError) as caught:
        load_tokenizer(f"{tokenizers}:{name}")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mytok", "expected MODULE:FUNC or FILE.py:FUNC"),
        (":count", "expected MODULE:FUNC or FILE.py:FUNC"),
        ("mytok:", "expected MODULE:FUNC or FILE.py:FUNC"),
        ("/nonexistent/t.py:count", "no such file: /nonexistent/t.py"),
        ("streamscope_no_such_module_x:count", "cannot import streamscope_no_such_module_x"),
    ],
)
def test_a_bad_spec_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(TokenizerError) as caught:
        load_tokenizer(spec)
    assert message in str(caught.value)


def test_an_import_error_inside_the_module_is_a_tokenizer_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text("import streamscope_no_such_dependency\n", encoding="utf-8")
    with pytest.raises(TokenizerError) as caught:
        load_tokenizer(f"{path}:count")
    assert "cannot import" in str(caught.value)
    assert "streamscope_no_such_dependency" in str(caught.value)


# -- N and k with a tokenizer ----------------------------------------------------------------


def test_the_tokenizer_counts_the_whole_text_over_the_usage() -> None:
    """role_first: content "Hel" (1/4 s), "lo" (1/2 s), " world" (5/8 s), usage 4."""
    m = measure(role_first(), tokenizer=chars)
    assert (m.output_tokens, m.token_source) == (11, "tokenizer")  # len("Hello world")
    assert m.first_frame_tokens == 3  # len("Hel")
    assert m.itl == 0.046875  # (0.625 - 0.25) / (11 - 3)
    assert m.llmperf_itl == 0.625 / 11
    assert (m.ttft, m.ttft_frame, m.token_frames) == (0.25, 1, 3)  # (timing: unchanged)
    assert measure(role_first()).token_source == "usage"  # (without one: the usage)


def test_the_text_is_counted_whole_not_frame_by_frame() -> None:
    m = measure(role_first(), tokenizer=words)
    assert m.output_tokens == 2  # "Hello world"; frame by frame "Hel", "lo", " world": 3
    assert m.first_frame_tokens == 1
    assert m.itl == 0.375  # (0.625 - 0.25) / (2 - 1)


def test_reasoning_and_answer_are_counted_apart_and_summed() -> None:
    capture = timeline(
        "openai",
        [
            (0.125, oa({"reasoning_content": "think hard"})),  # 0: the first token frame
            (0.25, oa({"reasoning_content": " now"})),  # 1
            (0.375, oa({"content": "An answer"})),  # 2
            (0.5, [oa({}, "stop"), DONE]),  # 3, 4
        ],
    )
    m = measure(capture, tokenizer=words)
    assert (m.output_tokens, m.token_source) == (5, "tokenizer")  # 3 reasoning + 2 answer
    assert m.first_frame_tokens == 2  # "think hard"
    assert m.itl == 0.25 / 3  # (0.375 - 0.125) / (5 - 2)


def test_a_tool_call_counts_its_name_and_arguments() -> None:
    capture = timeline(
        "openai",
        [
            (0.125, oa({"role": "assistant", "content": None})),  # 0
            (0.25, tc(0, "", first=True)),  # 1: the name, get_weather
            (0.375, tc(0, '{"city": ')),  # 2
            (0.5, tc(0, '"Bern"}')),  # 3
            (0.625, [oa({}, "tool_calls"), DONE]),  # 4, 5
        ],
    )
    m = measure(capture, tokenizer=chars)
    assert (m.ttft_frame, m.first_frame_tokens) == (1, len("get_weather"))
    assert m.output_tokens == len("get_weather") + len('{"city": "Bern"}')
    assert m.token_source == "tokenizer"


def test_a_truncated_stream_counts_what_arrived() -> None:
    capture = timeline(
        "openai",
        [(0.25, oa({"content": "partial answ"})), (0.375, oa({"content": "er here"}))],
        end=CaptureEnd("broken", elapsed=0.5),
    )
    m = measure(capture, tokenizer=words)
    assert (m.outcome, m.output_tokens, m.token_source) == ("truncated", 3, "tokenizer")


def test_no_token_frame_no_count() -> None:
    body = b'{"error":{"message":"slow down","type":"rate_limit_exceeded"}}'
    capture = timeline(
        "openai", [], status=429, end=CaptureEnd("http_error", body=body, elapsed=0.125)
    )
    seen: list[str] = []

    def spy(text: str) -> int:
        seen.append(text)
        return len(text)

    m = measure(capture, tokenizer=spy)
    assert (m.output_tokens, m.token_source, m.first_frame_tokens) == (0, None, 0)
    assert seen == []  # (the error body is no generated text)


# -- the CLI ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with DemoServer() as srv:
        yield srv


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamscope", "bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_counts_with_the_tokenizer(server: DemoServer, tokenizers: Path) -> None:
    """demo-bench's 6 tokens are " lorem ipsum dolor sit amet consectetur": 39 characters;
    the first frame " lorem" is 6."""
    spec = f"{tokenizers}:chars"
    result = bench("--base-url", server.base_url("openai"), "--model",
                   "demo-bench?ttft=5&itl=2&tokens=6", "--requests", "3", "--tokenizer", spec,
                   "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["tokenizer"] == spec
    step = report["steps"][0]
    assert [(r["output_tokens"], r["token_source"]) for r in step["requests"]] == [
        (39, "tokenizer")
    ] * 3
    assert [r["first_frame_tokens"] for r in step["requests"]] == [6] * 3
    assert step["summary"]["token_sources"] == {"tokenizer": 3}
    assert step["summary"]["output_sequence_length"]["avg"] == 39.0
    assert "tokenizer" in report["definitions"]["output_tokens"]


def test_the_cli_refuses_a_tokenizer_it_cannot_load(tokenizers: Path) -> None:
    result = bench("--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                   "--tokenizer", f"{tokenizers}:floaty")  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"streamscope bench: error: the tokenizer {tokenizers}:floaty returned 1.5, "
        "not a count (int >= 0)\n"
    )


def test_a_tokenizer_failing_during_the_run_ends_it_with_a_usage_error(
    server: DemoServer, tokenizers: Path
) -> None:
    spec = f"{tokenizers}:picky"  # (counts the probe, fails on demo-bench's first word)
    result = bench("--base-url", server.base_url("openai"), "--model",
                   "demo-bench?ttft=5&itl=2&tokens=6", "--requests", "2",
                   "--tokenizer", spec)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.endswith(
        f"streamscope bench: error: the tokenizer {spec} failed: ValueError('unknown word')\n"
    )
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
