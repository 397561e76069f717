"""The demo endpoint refuses what real providers refuse in a history: a tool call left without
its result before the next message, or a result answering no call — with HTTP 400, the
provider's error shape and its words. Bodies are written by hand (no `streamscope.core`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from demo_wire_reading import request_for
from test_demo_server import check_error_body

from streamscope.demo.server import DemoServer

USER = "weather?"
NEXT = "never mind"


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as client:
        yield client


def _post(http: httpx.Client, srv: DemoServer, dialect: str, **body: Any) -> httpx.Response:
    path, base = request_for(dialect, "demo", stream=False)
    return http.post(srv.base_url(dialect) + path, json={**base, **body})


def _openai(results: list[str], then: bool = True) -> list[dict[str, Any]]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for i in ("call_a", "call_b")
    ]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": None, "tool_calls": calls},
    ]
    messages += [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in results]
    return [*messages, {"role": "user", "content": NEXT}] if then else messages


def test_openai_wants_every_call_answered_right_after_it(
    demo_server: DemoServer, http: httpx.Client
) -> None:
    answered = _post(http, demo_server, "openai", messages=_openai(["call_b", "call_a"]))
    assert answered.status_code == 200
    for messages, unanswered in (
        (_openai([]), "call_a, call_b"),
        (_openai(["call_a"]), "call_b"),
        (_openai(["call_a"], then=False), "call_b"),
    ):
        refused = _post(http, demo_server, "openai", messages=messages)
        assert refused.status_code == 400
        assert check_error_body("openai", refused.json(), 400) == (
            "An assistant message with 'tool_calls' must be followed by tool messages"
            " responding to each 'tool_call_id'. The following tool_call_ids did not have"
            f" response messages: {unanswered}"
        )
    stray = [*_openai(["call_a", "call_b"]), {"role": "tool", "tool_call_id": "x", "content": ""}]
    refused = _post(http, demo_server, "openai", messages=stray)
    assert refused.status_code == 400
    assert check_error_body("openai", refused.json(), 400) == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding"
        " message with 'tool_calls'."
    )


def _anthropic(results: list[str], text_first: bool = False) -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ("tu_a", "tu_b")]
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in results
    ]
    text = {"type": "text", "text": NEXT}
    return [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": [text, *blocks] if text_first else [*blocks, text]},
    ]


def test_anthropic_wants_the_results_first_in_the_next_message(
    demo_server: DemoServer, http: httpx.Client
) -> None:
    answered = _post(http, demo_server, "anthropic", messages=_anthropic(["tu_a", "tu_b"]))
    assert answered.status_code == 200
    refused = _post(http, demo_server, "anthropic", messages=_anthropic(["tu_b"]))
    assert refused.status_code == 400
    assert check_error_body("anthropic", refused.json(), 400) == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately"
        " after: tu_a. Each `tool_use` block must have a corresponding `tool_result` block in"
        " the next message."
    )
    late = _post(http, demo_server, "anthropic", messages=_anthropic(["tu_a", "tu_b"], True))
    assert late.status_code == 400
    assert check_error_body("anthropic", late.json(), 400) == (
        "messages.2: `tool_result` blocks must come first in the content, before any other block."
    )
    stray = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_x"}]}]
    refused = _post(http, demo_server, "anthropic", messages=stray)
    assert check_error_body("anthropic", refused.json(), 400) == (
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: tu_x."
        " Each `tool_result` block must have a corresponding `tool_use` block in the previous"
        " message."
    )


def test_responses_wants_an_output_for_every_call(
    demo_server: DemoServer, http: httpx.Client
) -> None:
    call = {"type": "function_call", "call_id": "fc_1", "name": "f", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "fc_1", "output": "ok"}
    user = {"role": "user", "content": NEXT}
    assert _post(http, demo_server, "responses", input=[call, output, user]).status_code == 200
    refused = _post(http, demo_server, "responses", input=[call, user])
    assert refused.status_code == 400
    assert check_error_body("responses", refused.json(), 400) == (
        "No tool output found for function call fc_1."
    )
    refused = _post(http, demo_server, "responses", input=[output, user])
    assert check_error_body("responses", refused.json(), 400) == (
        "No tool call found for function call output with call_id fc_1."
    )


def test_gemini_wants_one_response_part_per_call_in_the_next_turn(
    demo_server: DemoServer, http: httpx.Client
) -> None:
    calls = {"role": "model", "parts": [{"functionCall": {"name": n, "args": {}}} for n in "fg"]}

    def responses(*names: str) -> dict[str, Any]:
        parts = [{"functionResponse": {"name": n, "response": {"r": 1}}} for n in names]
        return {"role": "user", "parts": [*parts, {"text": NEXT}]}

    user = {"role": "user", "parts": [{"text": USER}]}
    ok = _post(http, demo_server, "gemini", contents=[user, calls, responses("f", "g")])
    assert ok.status_code == 200
    for contents, message in (
        (
            [user, calls, responses("f")],
            "Please ensure that the number of function response parts is equal to the number"
            " of function call parts of the function call turn.",
        ),
        (
            [user, calls, user],
            "Please ensure that the number of function response parts is equal to the number"
            " of function call parts of the function call turn.",
        ),
        (
            [user, responses("f")],
            "Please ensure that function response turn comes immediately after a function call"
            " turn.",
        ),
        (
            [user, {"role": "model", "parts": [{"text": "hm"}]}, calls],
            "Please ensure that function call turn comes immediately after a user turn or after"
            " a function response turn.",
        ),
    ):
        refused = _post(http, demo_server, "gemini", contents=contents)
        assert refused.status_code == 400
        assert check_error_body("gemini", refused.json(), 400) == message


def test_ollama_takes_any_order_as_ollama_does(demo_server: DemoServer, http: httpx.Client) -> None:
    messages = [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]},
        {"role": "user", "content": NEXT},
    ]
    assert _post(http, demo_server, "ollama", messages=messages).status_code == 200
