"""The history every dialect sends is one its provider accepts: tool calls answered, partly
answered or left unanswered before the next message.

Each built body is checked twice: against the official SDK's request types (openai,
anthropic: their TypedDicts through a pydantic TypeAdapter, extra keys refused; google-genai:
its pydantic models, which refuse extra keys themselves) and against the providers' ordering
rules as the demo endpoint enforces them (:mod:`streamscope.demo.history`, written from the
providers' documentation and error messages). Ollama accepts any order; its documented shape
is checked by hand, and against the official ``ollama`` package's pydantic models (extra keys
refused) where that package is installed.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from google.genai import types as genai
from pydantic import ConfigDict, TypeAdapter
from typing_extensions import is_typeddict

from streamscope.core.store.history import ChatHistory, ToolResult
from streamscope.core.turn.model import ToolCallState, Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire import conversation as conversation_module
from streamscope.core.wire.conversation import (
    SKIPPED_RESULT,
    Conversation,
    Message,
    ToolCall,
    ToolDefinition,
    settle_tool_calls,
)
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.dialects import history_problem

DIALECTS = ("openai", "anthropic", "gemini", "responses", "ollama")
WEATHER = ToolDefinition(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolDefinition("get_time", "The time in a city", {"type": "object", "properties": {}})


def _calls(with_ids: bool = True) -> tuple[ToolCallState, ...]:
    return (
        ToolCallState(0, "call_w" if with_ids else None, "get_weather", '{"city": "Zürich"}'),
        ToolCallState(1, "call_t" if with_ids else None, "get_time", '{"city": "Bern"}'),
    )


def _history(
    answered: int, *, with_ids: bool = True, then: str | None = "thanks, and?"
) -> ChatHistory:
    """weather? → two tool calls → ``answered`` of them answered → ``then`` (a new message)."""
    h = ChatHistory()
    h.add_user("weather?")
    h.add_answer(
        Turn(text="Checking.", tool_calls=_calls(with_ids), outcome=Outcome.COMPLETED,
             finish_reason="tool_calls")
    )  # fmt: skip
    ids = ("call_w", "call_t") if with_ids else (None, None)
    results = [
        ToolResult(ids[0], "get_weather", '{"temp_c": 21}'),
        ToolResult(ids[1], "get_time", "09:41"),
    ]
    if answered:
        h.add_tool_results(results[2 - answered :])  # (a partial answer: the second call's)
    if then is not None:
        h.add_user(then)
    return h


def _conversation(h: ChatHistory) -> Conversation:
    return h.conversation(system="Be brief.", tools=[WEATHER, CLOCK], max_tokens=300)


def _body(dialect: str, conv: Conversation) -> dict[str, Any]:
    spec = get_dialect(dialect).build_request(
        conv, base_url="https://api.example.com/v1", model="m-1", api_key="sk-x"
    )
    return spec.json


CASES = {
    "answered": lambda: _history(2),
    "partly answered": lambda: _history(1),
    "unanswered": lambda: _history(0),
    "unanswered, calls without ids": lambda: _history(0, with_ids=False),
    "answered, calls without ids": lambda: _history(2, with_ids=False),
    "unanswered, nothing after": lambda: _history(0, then=None),
}


# -- the SDKs' request types ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_types() -> Iterator[dict[str, TypeAdapter[Any]]]:
    """TypeAdapters over the SDKs' request params, with every TypedDict refusing extra keys
    (pydantic ignores them by default; restored afterwards)."""
    from anthropic.types import message_create_params
    from openai.types.chat import completion_create_params
    from openai.types.responses import response_create_params

    patched: list[type] = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("openai.types", "anthropic.types")):
            continue
        for obj in list(vars(module).values()):
            if (
                isinstance(obj, type)
                and is_typeddict(obj)
                and "__pydantic_config__" not in obj.__dict__
            ):
                obj.__pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[attr-defined]
                patched.append(obj)
    try:
        yield {
            "openai": TypeAdapter(completion_create_params.CompletionCreateParamsStreaming),
            "anthropic": TypeAdapter(message_create_params.MessageCreateParamsStreaming),
            "responses": TypeAdapter(response_create_params.ResponseCreateParamsStreaming),
        }
    finally:
        for obj in patched:
            del obj.__pydantic_config__  # type: ignore[attr-defined]


def _force(value: Any) -> Any:
    """Walk what pydantic validated: ``Iterable`` fields validate lazily, as they are read."""
    if isinstance(value, Mapping):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, list | tuple | Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_force(v) for v in value]
    return value


def _validate_gemini(body: dict[str, Any]) -> None:
    """google-genai's models for the REST body's parts (they refuse unknown keys)."""
    assert set(body) <= {"contents", "systemInstruction", "tools", "generationConfig"}
    for content in body["contents"]:
        genai.Content.model_validate(content)
    genai.Content.model_validate(body["systemInstruction"])
    for tool in body.get("tools", []):
        genai.Tool.model_validate(tool)
    genai.GenerationConfig.model_validate(body.get("generationConfig", {}))


def _validate_ollama(body: dict[str, Any]) -> None:
    """Ollama's documented /api/chat shape: string contents, tool calls as objects with
    ``arguments`` objects, each answered by a ``tool`` message naming its function."""
    assert set(body) <= {"model", "messages", "stream", "tools", "options"}
    messages = body["messages"]
    for m in messages:
        assert set(m) <= {"role", "content", "tool_calls", "tool_name"}
        assert m["role"] in ("system", "user", "assistant", "tool")
        assert isinstance(m["content"], str)
    for i, m in enumerate(messages):
        names = [c["function"]["name"] for c in m.get("tool_calls", [])]
        for c in m.get("tool_calls", []):
            assert set(c) == {"function"} and isinstance(c["function"]["arguments"], dict)
        answers = messages[i + 1 : i + 1 + len(names)]
        assert [(a["role"], a.get("tool_name")) for a in answers] == [("tool", n) for n in names]


def _alternates(roles: list[str], first: str = "user") -> bool:
    return bool(roles) and roles[0] == first and all(a != b for a, b in itertools.pairwise(roles))


def _check(dialect: str, body: dict[str, Any], sdk: dict[str, TypeAdapter[Any]]) -> None:
    if dialect in sdk:
        _force(sdk[dialect].validate_python(body))
    elif dialect == "gemini":
        _validate_gemini(body)
    else:
        _validate_ollama(body)
    assert history_problem(dialect, body) is None  # type: ignore[arg-type]
    if dialect == "anthropic":
        assert _alternates([m["role"] for m in body["messages"]])
    if dialect == "gemini":
        assert _alternates([c["role"] for c in body["contents"]])


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_sends_a_valid_history(
    dialect: str, case: str, sdk_types: dict[str, TypeAdapter[Any]]
) -> None:
    _check(dialect, _body(dialect, _conversation(CASES[case]())), sdk_types)


# -- what exactly is sent ------------------------------------------------------------------


def test_openai_answers_unanswered_calls_with_skipped_results_in_call_order() -> None:
    body = _body("openai", _conversation(_history(1)))
    assert [(m["role"], m.get("tool_call_id"), m["content"]) for m in body["messages"]] == [
        ("system", None, "Be brief."),
        ("user", None, "weather?"),
        ("assistant", None, "Checking."),
        ("tool", "call_w", SKIPPED_RESULT),  # nobody answered it
        ("tool", "call_t", "09:41"),  # the user's answer, in its call's place
        ("user", None, "thanks, and?"),
    ]
    assert SKIPPED_RESULT == (
        "Not run: the user did not answer this tool call and went on with the conversation."
    )


def test_anthropic_puts_the_results_first_in_the_next_user_message() -> None:
    messages = _body("anthropic", _conversation(_history(0)))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][1:] == [
        {"type": "tool_use", "id": "call_w", "name": "get_weather", "input": {"city": "Zürich"}},
        {"type": "tool_use", "id": "call_t", "name": "get_time", "input": {"city": "Bern"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_w", "content": SKIPPED_RESULT},
        {"type": "tool_result", "tool_use_id": "call_t", "content": SKIPPED_RESULT},
        {"type": "text", "text": "thanks, and?"},
    ]


def test_gemini_answers_every_call_part_in_the_next_turn() -> None:
    contents = _body("gemini", _conversation(_history(1, with_ids=False)))["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"result": SKIPPED_RESULT}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "09:41"}}},
        {"text": "thanks, and?"},
    ]


def test_responses_and_ollama_pair_each_call_with_an_output() -> None:
    items = _body("responses", _conversation(_history(0, with_ids=False)))["input"]
    assert [(i.get("type", i.get("role")), i.get("call_id")) for i in items] == [
        ("user", None),
        ("assistant", None),
        ("function_call", "call_0"),  # ids given where the provider sent none
        ("function_call", "call_1"),
        ("function_call_output", "call_0"),
        ("function_call_output", "call_1"),
        ("user", None),
    ]
    messages = _body("ollama", _conversation(_history(2, with_ids=False)))["messages"]
    assert [(m["role"], m.get("tool_name"), m["content"]) for m in messages[2:]] == [
        ("assistant", None, "Checking."),
        ("tool", "get_weather", '{"temp_c": 21}'),  # answered in order
        ("tool", "get_time", "09:41"),
        ("user", None, "thanks, and?"),
    ]


def test_two_prompts_around_a_failed_answer_still_alternate() -> None:
    h = ChatHistory()
    h.add_user("one")
    h.add_answer(Turn(outcome=Outcome.ERROR, reason="HTTP 500"))  # nothing for the context
    h.add_user("two")
    anthropic = _body("anthropic", h.conversation())["messages"]
    assert anthropic == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
        }
    ]
    gemini = _body("gemini", h.conversation())["contents"]
    assert gemini == [{"role": "user", "parts": [{"text": "one"}, {"text": "two"}]}]


# -- settling, on its own ------------------------------------------------------------------


def test_settling_matches_by_id_then_in_order_and_drops_strays() -> None:
    calls = (ToolCall("a", "f", "{}"), ToolCall(None, "g", "{}"), ToolCall("a", "h", "{}"))
    messages = [
        Message("user", "go"),
        Message("tool", "stray"),  # answers nothing
        Message("assistant", tool_calls=calls),
        Message("tool", "for g", tool_call_id=None),
        Message("tool", "for a", tool_call_id="a", name="f"),
        Message("tool", "for a, again", tool_call_id="a"),  # the second call with that id
        Message("tool", "for a, thrice", tool_call_id="a"),  # a duplicate
        Message("assistant", tool_calls=(ToolCall(None, "f", "{}"), ToolCall(None, "g", "{}"))),
        Message("tool", "g's", name="g"),  # (by name, then in order)
        Message("user", "next"),
    ]
    settled = settle_tool_calls(messages)
    assert [(m.role, m.tool_call_id, m.name, m.text) for m in settled] == [
        ("user", None, None, "go"),
        ("assistant", None, None, ""),
        ("tool", "a", "f", "for a"),
        ("tool", "call_0", "g", "for g"),
        ("tool", "call_1", "h", "for a, again"),  # (that call got an id of its own)
        ("assistant", None, None, ""),
        ("tool", "call_2", "f", SKIPPED_RESULT),
        ("tool", "call_3", "g", "g's"),
        ("user", None, None, "next"),
    ]
    assert [c.id for c in settled[1].tool_calls] == ["a", "call_0", "call_1"]
    assert settle_tool_calls(settled) == settled


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "gemini", "responses"])
def test_without_settling_each_provider_refuses_the_unanswered_history(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(What the checks above catch: the history as it was sent before.)"""
    module = sys.modules[get_dialect(dialect).build_request.__module__]
    monkeypatch.setattr(module, "settle_tool_calls", list)
    problem = history_problem(dialect, _body(dialect, _conversation(_history(0))))  # type: ignore[arg-type]
    expected = {
        "openai": "An assistant message with 'tool_calls' must be followed by tool messages"
        " responding to each 'tool_call_id'. The following tool_call_ids did not have response"
        " messages: call_w, call_t",
        "anthropic": "messages.1: `tool_use` ids were found without `tool_result` blocks"
        " immediately after: call_w, call_t. Each `tool_use` block must have a corresponding"
        " `tool_result` block in the next message.",
        "gemini": "Please ensure that the number of function response parts is equal to the"
        " number of function call parts of the function call turn.",
        "responses": "No tool output found for function call call_w.",
    }[dialect]
    assert problem == expected
    assert conversation_module.settle_tool_calls is not list  # (only the dialect's name)


# -- Ollama against its official SDK's types (when the `ollama` package is installed) -------


@pytest.fixture(scope="module")
def ollama_types() -> Iterator[Any]:
    """``ollama._types`` with every request model refusing extra keys (pydantic ignores them
    by default; restored afterwards)."""
    types = pytest.importorskip("ollama._types")
    message, tool = types.Message, types.Tool
    models = [  # (inner models first: an outer one's schema embeds theirs when rebuilt)
        message.ToolCall.Function, message.ToolCall, message,
        tool.Function.Parameters.Property, tool.Function.Parameters, tool.Function, tool,
        types.Options, types.ChatRequest,
    ]  # fmt: skip
    saved = [(model, model.model_config) for model in models]
    for model in models:
        model.model_config = {**model.model_config, "extra": "forbid"}
        model.model_rebuild(force=True)
    try:
        yield types
    finally:
        for model, config in saved:
            model.model_config = config
            model.model_rebuild(force=True)


@pytest.mark.parametrize("case", list(CASES))
def test_ollama_bodies_match_the_ollama_sdk_types(case: str, ollama_types: Any) -> None:
    body = _body("ollama", _conversation(CASES[case]()))
    request = ollama_types.ChatRequest.model_validate(body)
    assert request.stream is True
    ollama_types.Options.model_validate(body["options"])
    messages = [ollama_types.Message.model_validate(m) for m in body["messages"]]
    calls = [c.function.name for m in messages for c in m.tool_calls or ()]
    assert calls == ["get_weather", "get_time"]
    answers = [(m.role, m.tool_name) for m in messages if m.role == "tool"]
    assert answers == [("tool", "get_weather"), ("tool", "get_time")]  # (given or "not run")
