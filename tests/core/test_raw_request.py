"""Raw-mode requests: secrets move out of the request and come back at send time; curl
commands import and round-trip through Copy as curl."""

from __future__ import annotations

import pytest

from streamscope.core.net.curl import parse_curl, to_curl
from streamscope.core.net.raw_request import (
    MissingSecretError,
    MovedSecret,
    RawRequest,
    RawRequestError,
    is_masked,
    mask_secrets,
    raw_from_curl,
    raw_from_spec,
    secret_account,
    user_text,
)
from streamscope.core.wire.dialects.base import RequestSpec

KEY = "sk-test-1234567890abcdef"

COMMANDS = [
    # one line, bearer key, single-quoted JSON
    f"curl https://api.openai.com/v1/chat/completions -H 'Authorization: Bearer {KEY}' "
    "-H 'Content-Type: application/json' "
    """-d '{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Hi"}]}'""",
    # multi-line with backslash continuations, x-api-key, --data-raw, an apostrophe
    "curl -sN https://api.anthropic.com/v1/messages \\\n"
    f"  -H 'x-api-key: {KEY}' \\\n"
    "  -H 'anthropic-version: 2023-06-01' \\\n"
    '  --data-raw \'{"model": "claude", "max_tokens": 64, "stream": true,'
    ' "messages": [{"role": "user", "content": "it\'\\\'\'s café — “quoted”"}]}\'',
    # double quotes with escapes, -X, --json, CRLF continuation
    'curl -X POST "http://127.0.0.1:8080/v1/chat/completions" \\\r\n'
    f'  -H "Authorization: Bearer {KEY}" \\\r\n'
    '  --json "{\\"model\\": \\"m\\", \\"messages\\": [], \\"note\\": \\"a $ sign\\"}"',
    # Gemini: key in the query and in x-goog-api-key
    "curl 'https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent"
    f"?alt=sse&key={KEY}' -H 'x-goog-api-key: {KEY}' "
    """-d '{"contents":[{"role":"user","parts":[{"text":"Hello"}]}]}'""",
    # no key, PUT, header value with colons
    "curl -X PUT https://example.com/v1/x -H 'X-Trace: a:b:c' -d '{\"a\": [1, 2.5, null]}'",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_import_moves_the_key_out_and_round_trips_copy_as_curl(command: str) -> None:
    raw, moved = raw_from_curl(parse_curl(command), environ={})
    # the key is nowhere in the request, only in what was moved out
    assert KEY not in repr(raw)
    assert KEY not in raw.curl()
    assert all(KEY in s.value for s in moved)
    assert sorted(raw.secret_slots()) == sorted(s.slot for s in moved)
    # Copy as curl writes $API_KEY; importing that (API_KEY set) gives the same request
    again, moved_again = raw_from_curl(parse_curl(raw.curl()), environ={"API_KEY": KEY})
    assert again.method == raw.method
    assert again.url == raw.url
    assert again.body == raw.body
    assert [(k.lower(), v) for k, v in again.headers if k.lower() != "content-type"] == [
        (k.lower(), v) for k, v in raw.headers if k.lower() != "content-type"
    ]
    assert {s.slot for s in moved_again} == {s.slot for s in moved}
    # and the key comes back at send time
    spec = raw.to_spec({s.slot: s.value for s in moved})
    assert spec.json == raw.body
    if moved:
        assert KEY in repr(spec.headers) + spec.url


def test_bearer_key_is_masked_and_put_back_with_its_scheme() -> None:
    raw, moved = raw_from_curl(parse_curl(COMMANDS[0]), environ={})
    assert moved == [MovedSecret("authorization", f"Bearer {KEY}")]
    assert ("Authorization", "Bearer ***") in raw.headers
    assert raw.to_spec({"authorization": f"Bearer {KEY}"}).headers["Authorization"] == (
        f"Bearer {KEY}"
    )
    # a key stored without its scheme gets the scheme back
    assert raw.to_spec({"authorization": KEY}).headers["Authorization"] == f"Bearer {KEY}"
    assert raw.to_spec({"authorization": KEY}).headers["content-type"] == "application/json"


def test_query_key_is_moved_too() -> None:
    raw, moved = raw_from_curl(parse_curl(COMMANDS[3]), environ={})
    assert "key=%2A%2A%2A" in raw.url or "key=***" in raw.url
    assert MovedSecret("?key", KEY) in moved
    spec = raw.to_spec({s.slot: s.value for s in moved})
    assert f"key={KEY}" in spec.url and "alt=sse" in spec.url


def test_shell_variable_key_comes_from_the_environment_or_is_asked_for() -> None:
    command = "curl https://h/v1/chat -H 'Authorization: Bearer $OPENAI_API_KEY' -d '{}'"
    raw, moved = raw_from_curl(parse_curl(command), environ={"OPENAI_API_KEY": KEY})
    assert moved == [MovedSecret("authorization", f"Bearer {KEY}")]
    raw, moved = raw_from_curl(parse_curl(command), environ={})
    assert moved == []
    assert raw.secret_slots() == ["authorization"]
    with pytest.raises(MissingSecretError, match="authorization"):
        raw.to_spec({})


def test_body_must_be_a_json_object() -> None:
    with pytest.raises(RawRequestError, match="not JSON"):
        raw_from_curl(parse_curl("curl https://h -d 'a=b'"))
    with pytest.raises(RawRequestError, match="JSON object"):
        raw_from_curl(parse_curl("curl https://h -d '[1, 2]'"))
    raw, _ = raw_from_curl(parse_curl("curl https://h"))
    assert raw.method == "GET" and raw.body == {}


def test_from_a_sent_spec_and_typed_keys_are_masked() -> None:
    spec = RequestSpec(
        "POST", "http://h/v1/messages", {"x-api-key": KEY, "anthropic-version": "1"}, {"a": 1}
    )
    raw, moved = raw_from_spec(spec, dialect="anthropic")
    assert raw.dialect == "anthropic"
    assert dict(raw.headers)["x-api-key"] == "***"
    assert moved == [MovedSecret("x-api-key", KEY)]
    assert raw.to_spec({m.slot: m.value for m in moved}) == RequestSpec(
        "POST", "http://h/v1/messages", {"x-api-key": KEY, "anthropic-version": "1"}, {"a": 1}
    )
    typed = RawRequest("POST", "http://h", (("Authorization", "Bearer other-key-123"),))
    masked, moved = mask_secrets(typed)
    assert masked.headers == (("Authorization", "Bearer ***"),)
    assert moved == [MovedSecret("authorization", "Bearer other-key-123")]


def test_is_masked_and_secret_account() -> None:
    assert is_masked("Authorization", "Bearer ***")
    assert is_masked("x-api-key", "***")
    assert not is_masked("x-api-key", "sk-1")
    assert not is_masked("X-Other", "***")
    assert secret_account("https://api.x.com:8443/v1/a?b=1", "x-api-key") == (
        "raw/https://api.x.com:8443/x-api-key"
    )


def test_user_text_of_every_dialect_shape() -> None:
    assert user_text({"messages": [{"role": "user", "content": "a"}]}) == "a"
    assert (
        user_text(
            {
                "messages": [
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "x"},
                    {"role": "user", "content": [{"type": "text", "text": "second"}]},
                ]
            }
        )
        == "second"
    )
    assert user_text({"contents": [{"role": "user", "parts": [{"text": "g"}]}]}) == "g"
    assert user_text({"input": "r"}) == "r"
    assert (
        user_text({"input": [{"role": "user", "content": [{"type": "input_text", "text": "r2"}]}]})
        == "r2"
    )
    assert user_text({"prompt": "x"}) is None


def test_copy_as_curl_of_a_redacted_request_uses_the_variable() -> None:
    raw, _ = raw_from_curl(parse_curl(COMMANDS[1]), environ={})
    text = to_curl(raw.method, raw.url, raw.headers, raw.body_bytes())
    assert '"x-api-key: $API_KEY"' in text
    assert raw.python().count('os.environ["API_KEY"]') == 1
