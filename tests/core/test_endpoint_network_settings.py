"""An endpoint's proxy and client-certificate settings: saved without the proxy password,
read back exactly, old files (without these fields) still open; the password lives in the
secret store; no-proxy entries become the right httpx patterns."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from streamscope.core.net.endpoint_store import (
    EndpointConfigError,
    EndpointStore,
    endpoint_from_dict,
    endpoint_to_dict,
)
from streamscope.core.net.endpoints import new_endpoint
from streamscope.core.net.env_proxy import ProxySettingError, no_proxy_mounts
from streamscope.core.net.options import ProxyOptions, TLSOptions
from streamscope.core.net.secrets import SecretStore, proxy_account, resolve_tls
from support.memory_keyring import MemoryKeyring

# An endpoints.json as the previous release wrote it: none of the network fields.
OLD_FILE = {
    "version": 1,
    "selected": "e1",
    "endpoints": [
        {
            "id": "builtin-demo",
            "name": "Built-in demo",
            "preset": "demo",
            "base_url": "",
            "dialect": "openai",
            "model": "demo",
            "key_source": "none",
            "api_key_env": "",
            "extra_headers": {},
            "connect_timeout": 10.0,
            "first_byte_timeout": 300.0,
            "idle_timeout": 300.0,
            "max_line_bytes": 1048576,
            "tls_verify": True,
            "ca_bundle": None,
            "system_prompt": "",
            "temperature": None,
            "max_tokens": None,
            "include_usage": True,
            "extra_body": {},
        },
        {
            "id": "e1",
            "name": "Work vLLM",
            "preset": "vllm",
            "base_url": "https://llm.internal:8443/v1",
            "dialect": "openai",
            "model": "qwen",
            "key_source": "keyring",
            "tls_verify": True,
            "ca_bundle": "/etc/ssl/internal-ca.pem",
        },
    ],
}


def test_an_old_endpoints_file_opens_with_the_default_network_settings(tmp_path: Path) -> None:
    path = tmp_path / "endpoints.json"
    path.write_text(json.dumps(OLD_FILE))
    store = EndpointStore(path)
    settings = store.load()
    assert store.load_error is None
    assert settings.selected_id == "e1"
    work = settings.selected
    assert work.tls() == TLSOptions(ca_bundle="/etc/ssl/internal-ca.pem", proxy=ProxyOptions())
    assert (work.proxy_mode, work.proxy_host, work.proxy_port, work.no_proxy) == (
        "system",
        "",
        0,
        (),
    )
    assert (work.client_cert, work.client_key, work.proxy_username) == (None, None, "")
    store.save(settings)  # and it is written back with the new fields
    again = json.loads(path.read_text())["endpoints"][1]
    assert (again["proxy_mode"], again["no_proxy"], again["client_cert"]) == ("system", [], None)


def test_network_settings_round_trip_and_the_password_is_never_saved(tmp_path: Path) -> None:
    ep = replace(
        new_endpoint("custom", name="Corp"),
        base_url="https://api.example.com/v1",
        client_cert="/home/me/client.pem",
        client_key="/home/me/client.key",
        proxy_mode="socks5",
        proxy_host="proxy.corp",
        proxy_port=1080,
        proxy_username="me",
        no_proxy=("localhost", ".corp"),
    )
    d = endpoint_to_dict(ep)
    assert {k: d[k] for k in d if k.startswith(("proxy", "no_proxy", "client"))} == {
        "client_cert": "/home/me/client.pem",
        "client_key": "/home/me/client.key",
        "proxy_mode": "socks5",
        "proxy_host": "proxy.corp",
        "proxy_port": 1080,
        "proxy_username": "me",
        "no_proxy": ["localhost", ".corp"],
    }
    assert endpoint_from_dict(json.loads(json.dumps(d))) == ep

    secrets = SecretStore(MemoryKeyring())
    secrets.set(proxy_account(ep.id), "Proxy-Pa55")
    store = EndpointStore(tmp_path / "endpoints.json")
    settings = store.load().with_endpoint(ep)
    store.save(settings)
    assert "Proxy-Pa55" not in store.path.read_text()
    tls = resolve_tls(ep, secrets)
    assert tls.proxy == ProxyOptions(
        "socks5", "proxy.corp", 1080, "me", "Proxy-Pa55", ("localhost", ".corp")
    )
    assert "Proxy-Pa55" not in repr(tls)
    assert tls.proxy.url() == "socks5://me@proxy.corp:1080"
    secrets.delete_endpoint(ep)
    assert secrets.get(proxy_account(ep.id)) is None


def test_the_password_is_only_filled_in_for_an_explicit_proxy_with_a_username() -> None:
    secrets = SecretStore(MemoryKeyring())
    ep = replace(new_endpoint("custom"), proxy_mode="system", proxy_username="me")
    secrets.set(proxy_account(ep.id), "pw")
    assert resolve_tls(ep, secrets).proxy.password == ""
    assert resolve_tls(replace(ep, proxy_mode="http"), secrets).proxy.password == "pw"
    assert (
        resolve_tls(replace(ep, proxy_mode="http", proxy_username=""), secrets).proxy.password == ""
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("proxy_mode", "socks4", "proxy_mode: expected one of"),
        ("proxy_port", 70000, "proxy_port: expected 0 to 65535, got 70000"),
        ("no_proxy", "localhost", "no_proxy: expected list, got 'localhost'"),
        ("no_proxy", [1], "no_proxy: expected a list of host names"),
        ("client_cert", 5, "client_cert: expected str, got 5"),
    ],
)
def test_bad_network_fields_name_themselves(field: str, value: object, message: str) -> None:
    with pytest.raises(EndpointConfigError) as raised:
        endpoint_from_dict({"id": "x", field: value})
    assert str(raised.value).startswith(message)


def test_no_proxy_entries_become_httpx_patterns() -> None:
    mounts = no_proxy_mounts(["example.com", ".corp", "10.1.2.3", "::1", "localhost", "h:8080", ""])
    assert mounts == {
        "all://*example.com": None,
        "all://*.corp": None,
        "all://10.1.2.3": None,
        "all://[::1]": None,
        "all://localhost": None,
        "all://*h:8080": None,
    }
    assert no_proxy_mounts(["a.com", "*"]) is None
    with pytest.raises(ProxySettingError, match=r"no-proxy entry '10\.0\.0\.0/8'"):
        no_proxy_mounts(["10.0.0.0/8"])


def test_the_patterns_match_the_hosts_they_name() -> None:
    """Checked with httpx's own matcher, as the client uses them."""
    from httpx._utils import URLPattern

    patterns = [URLPattern(p) for p in no_proxy_mounts(["example.com", ".corp", "h:8080"]) or {}]

    def direct(url: str) -> bool:
        return any(p.matches(httpx.URL(url)) for p in patterns)

    assert direct("https://example.com/v1") and direct("https://api.example.com/v1")
    assert not direct("https://notexample.com/v1")
    assert direct("https://a.corp/") and not direct("https://corp/")
    assert direct("http://h:8080/") and not direct("http://h:8081/")
