"""Endpoint configuration: presets, JSON round trip, no secret in the file, models listing."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from streamscope.core import paths
from streamscope.core.net import models_api
from streamscope.core.net.client import StreamTimeouts, TLSOptions
from streamscope.core.net.endpoint_store import EndpointSettings, EndpointStore
from streamscope.core.net.endpoints import DEMO_ID, PRESETS, Endpoint, new_endpoint
from streamscope.core.net.models_api import ModelListError, models_url, parse_models
from streamscope.core.wire.context import ContextPolicy


def test_paths_follow_streamscope_home_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMSCOPE_HOME", str(tmp_path / "a"))
    assert paths.home() == tmp_path / "a"
    assert not (tmp_path / "a").exists()  # nothing created until a folder is asked for
    assert paths.config_dir() == tmp_path / "a" / "config"
    assert paths.config_dir().is_dir()
    monkeypatch.setenv("STREAMSCOPE_HOME", str(tmp_path / "b"))
    for fn in (paths.data_dir, paths.log_dir, paths.capture_dir):
        assert fn().parent == tmp_path / "b" and fn().is_dir()


def test_presets_have_the_right_urls_and_dialects() -> None:
    expected = {
        "demo": ("", "openai"),
        "openai": ("https://api.openai.com/v1", "openai"),
        "anthropic": ("https://api.anthropic.com/v1", "anthropic"),
        "gemini": ("https://generativelanguage.googleapis.com/v1beta", "gemini"),
        "openrouter": ("https://openrouter.ai/api/v1", "openai"),
        "ollama": ("http://localhost:11434", "ollama"),
        "lmstudio": ("http://localhost:1234/v1", "openai"),
        "vllm": ("http://localhost:8000/v1", "openai"),
        "litellm": ("http://localhost:4000/v1", "openai"),
        "aggregator": ("https://api.luv13.ai/v1", "openai"),
        "custom": ("", "openai"),
    }
    assert list(PRESETS) == list(expected)
    for key, (url, dialect) in expected.items():
        assert (PRESETS[key].base_url, PRESETS[key].dialect) == (url, dialect), key
    assert PRESETS["aggregator"].model == "luv13/glm-5.3-flash"
    assert PRESETS["demo"].model == "demo" and PRESETS["demo"].key_source == "none"
    assert PRESETS["ollama"].key_source == "none"
    assert PRESETS["openai"].api_key_env == "OPENAI_API_KEY"
    assert PRESETS["anthropic"].api_key_env == "ANTHROPIC_API_KEY"
    assert PRESETS["gemini"].api_key_env == "GEMINI_API_KEY"


def test_endpoint_timeouts_and_tls() -> None:
    ep = Endpoint(id="x", name="x")
    assert ep.timeouts() == StreamTimeouts(10.0, 300.0, 300.0)
    assert ep.tls() == TLSOptions(True, None)
    ep = replace(ep, connect_timeout=3, idle_timeout=7.5, tls_verify=False, ca_bundle="/ca.pem")
    assert ep.timeouts() == StreamTimeouts(3, 300.0, 7.5)
    assert ep.tls() == TLSOptions(False, "/ca.pem")


def test_first_run_gives_the_demo_selected() -> None:
    store = EndpointStore()
    settings = store.load()
    assert [e.id for e in settings.endpoints] == [DEMO_ID]
    assert settings.selected.is_demo and settings.selected.model == "demo"
    assert not store.path.exists()  # loading writes nothing


def test_json_round_trip() -> None:
    full = replace(
        new_endpoint("openai", name="Work"),
        model="gpt-4.1",
        extra_headers={"X-Team": "café"},
        connect_timeout=5.0,
        first_byte_timeout=60.0,
        idle_timeout=30.0,
        tls_verify=False,
        ca_bundle="/etc/ca.pem",
        system_prompt="Be brief.\nVery.",
        temperature=0.2,
        max_tokens=512,
        include_usage=False,
        extra_body={"top_p": 0.9, "drop": None, "nested": {"a": [1, 2]}},
        context_policy=ContextPolicy("exchanges", 100),
    )
    settings = EndpointSettings.default().with_endpoint(full).select(full.id)
    store = EndpointStore()
    store.save(settings)
    assert store.path == paths.config_dir() / "endpoints.json"
    again = store.load()
    assert again == settings
    assert again.selected == full
    assert store.load_error is None
    assert [p.name for p in store.path.parent.iterdir()] == ["endpoints.json"]  # no tmp left


def test_secret_headers_are_blanked_in_the_file() -> None:
    ep = replace(
        new_endpoint("custom"),
        base_url="http://h/v1",
        extra_headers={"Authorization": "Bearer sk-PLANTED-123", "X-Plain": "ok"},
    )
    store = EndpointStore()
    store.save(EndpointSettings.default().with_endpoint(ep))
    text = store.path.read_text()
    assert "sk-PLANTED-123" not in text
    assert store.load().get(ep.id).extra_headers == {"Authorization": "", "X-Plain": "ok"}


def test_the_context_policy_is_saved_and_checked() -> None:
    store = EndpointStore()
    ep = replace(new_endpoint("custom"), context_policy=ContextPolicy("budget", 200 * 1024))
    store.save(EndpointSettings.default().with_endpoint(ep))
    assert json.loads(store.path.read_text())["endpoints"][1]["context_policy"] == {
        "kind": "budget",
        "limit": 204800,
    }
    assert store.load().get(ep.id).context_policy == ContextPolicy("budget", 204800)
    # a file from before the setting existed: the whole conversation
    assert Endpoint(id="a", name="a").context_policy == ContextPolicy("all", 0)
    bad = {"endpoints": [{"id": "a", "name": "a", "context_policy": {"kind": "exchanges"}}]}
    store.path.write_text(json.dumps(bad))
    store.load()
    assert store.load_error is not None
    assert "context_policy: the 'exchanges' policy needs a limit of at least 1" in store.load_error


def test_corrupt_file_is_moved_aside_and_defaults_returned() -> None:
    store = EndpointStore()
    store.path.write_text("{not json")
    settings = store.load()
    assert settings == EndpointSettings.default()
    assert store.load_error and "moved aside" in store.load_error
    assert store.path.with_name("endpoints.json.bad").read_text() == "{not json"


def test_bad_field_is_named() -> None:
    doc = {"endpoints": [{"id": "a", "name": "a", "dialect": "klingon"}]}
    store = EndpointStore()
    store.path.write_text(json.dumps(doc))
    store.load()
    assert store.load_error is not None and "endpoint 1: dialect" in store.load_error


def test_settings_selection_and_removal() -> None:
    a, b = new_endpoint("openai"), new_endpoint("ollama")
    s = EndpointSettings((a, b), b.id)
    assert s.selected == b
    s = s.without(b.id)
    assert s.selected == a  # falls back to the first
    assert s.without(a.id).endpoints == (a,)  # the last one stays
    assert EndpointSettings((a,), "missing").selected_id == a.id


def test_models_url_per_dialect() -> None:
    ep = Endpoint(id="x", name="x", base_url="https://h/v1/")
    assert models_url(ep) == "https://h/v1/models"
    assert models_url(replace(ep, dialect="responses")) == "https://h/v1/models"
    assert models_url(replace(ep, dialect="anthropic")).startswith("https://h/v1/models")
    assert models_url(replace(ep, dialect="gemini")).startswith("https://h/v1/models")
    assert models_url(replace(ep, dialect="ollama", base_url="http://l:11434")) == (
        "http://l:11434/api/tags"
    )
    assert models_url(ep, base_url="http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1/models"


def test_parse_models_shapes() -> None:
    assert parse_models("openai", {"data": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}) == ["a", "b"]
    assert parse_models("anthropic", {"data": [{"id": "claude-x", "type": "model"}]}) == [
        "claude-x"
    ]
    gemini = {
        "models": [
            {"name": "models/gemini-2.5-flash", "supportedGenerationMethods": ["generateContent"]},
            {"name": "models/embedding-001", "supportedGenerationMethods": ["embedContent"]},
        ]
    }
    assert parse_models("gemini", gemini) == ["gemini-2.5-flash"]
    assert parse_models("ollama", {"models": [{"name": "llama3.2:latest"}]}) == ["llama3.2:latest"]
    assert parse_models("openai", ["not", "an", "object"]) == []


def _run_with(handler, coro_fn):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await coro_fn(client)

    return asyncio.run(main())


def test_fetch_models_sends_the_dialect_auth_header() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"data": [{"id": "claude-a"}, {"id": "claude-b"}]})

    ep = replace(new_endpoint("anthropic"), extra_headers={"X-Extra": "1", "x-empty": ""})
    models = _run_with(handler, lambda c: models_api.fetch_models(ep, "sk-ant", c))
    assert models == ["claude-a", "claude-b"]
    req = seen[0]
    assert req.headers["x-api-key"] == "sk-ant"
    assert req.headers["anthropic-version"]
    assert req.headers["x-extra"] == "1" and "x-empty" not in req.headers
    assert "authorization" not in req.headers


@pytest.mark.parametrize(
    ("status", "body", "needle"),
    [
        (401, {"error": {"message": "Incorrect API key provided"}}, "401 Unauthorized"),
        (404, {"error": "no route"}, "check the base URL"),
        (429, {}, "429 Too Many Requests · retry after 7 s"),
        (500, {"message": "boom"}, "HTTP 500"),
    ],
)
def test_test_connection_explains_http_errors(status: int, body: object, needle: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=body, headers={"Retry-After": "7"})

    ep = new_endpoint("openai")
    ok, message = _run_with(handler, lambda c: models_api.test_connection(ep, "k", c))
    assert not ok
    assert needle in message
    if status == 401:
        assert "Incorrect API key provided" in message


def test_test_connection_ok_counts_models() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": [{"id": "gpt-4.1-mini"}, {"id": "o3"}]})

    ep = new_endpoint("openai")
    ok, message = _run_with(handler, lambda c: models_api.test_connection(ep, "k", c))
    assert ok and message.startswith("Connected · 2 models")


def test_test_connection_refused_and_timeout() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    def connect_slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    ep = replace(new_endpoint("vllm"), connect_timeout=2)
    ok, message = _run_with(refused, lambda c: models_api.test_connection(ep, None, c))
    assert not ok and "Connection refused by localhost:8000" in message
    ok, message = _run_with(slow, lambda c: models_api.test_connection(ep, None, c))
    assert not ok and "sent no answer" in message
    ok, message = _run_with(connect_slow, lambda c: models_api.test_connection(ep, None, c))
    assert not ok and "Timed out after 2 s connecting to localhost:8000" in message


def test_real_refused_connection_on_loopback() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    ep = replace(new_endpoint("custom"), base_url=f"http://127.0.0.1:{port}/v1")

    async def main() -> tuple[bool, str]:
        async with models_api.make_http_client(ep) as client:
            return await models_api.test_connection(ep, None, client)

    ok, message = asyncio.run(main())
    assert not ok and "refused" in message.lower()


def test_fetch_models_without_base_url_or_with_html() -> None:
    def html(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy</html>", headers={"content-type": "text/html"})

    with pytest.raises(ModelListError, match="No base URL"):
        _run_with(html, lambda c: models_api.fetch_models(new_endpoint("custom"), None, c))
    with pytest.raises(ModelListError, match="not JSON"):
        _run_with(html, lambda c: models_api.fetch_models(new_endpoint("openai"), None, c))


def test_nothing_is_written_at_import(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    code = (
        "import streamscope.core.paths, streamscope.core.net.endpoints, "
        "streamscope.core.net.secrets, "
        "streamscope.core.wire.tools"
    )
    env = {**os.environ, "STREAMSCOPE_HOME": str(home)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not home.exists()


def test_a_key_in_the_base_url_is_not_saved(tmp_path: Path) -> None:
    from streamscope.core.net.endpoint_store import endpoint_to_dict, strip_url_secrets

    url = "https://generativelanguage.googleapis.com/v1beta?key=sk-URLKEY-123&alt=sse"
    assert strip_url_secrets(url) == "https://generativelanguage.googleapis.com/v1beta?alt=sse"
    assert strip_url_secrets("http://h/v1") == "http://h/v1"
    ep = replace(new_endpoint("gemini"), base_url=url)
    assert "sk-URLKEY-123" not in json.dumps(endpoint_to_dict(ep))
