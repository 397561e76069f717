"""Proxy settings from the environment, checked as httpx would read them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from streamscope.core.net.env_proxy import (
    ProxySettingError,
    check_environment,
    environment_client,
    proxy_problem,
)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in os.environ:
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    yield monkeypatch


@pytest.mark.parametrize(
    "url",
    ["http://p:3128", "https://p", "socks5://u:p@127.0.0.1:1080", "socks5h://h:1", "p:3128"],
)
def test_what_httpx_speaks_is_accepted(url: str) -> None:
    assert proxy_problem(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("socks4://h:1080", "proxy scheme 'socks4' is not supported"),
        ("SOCKS://h:1080", "proxy scheme 'socks' is not supported"),
        ("socks5://", "not a valid socks5 proxy URL (no host)"),
        ("socks5://h:99999", "not a valid socks5 proxy URL (Port out of range"),
        ("http://[::1", "not a valid http proxy URL (Invalid IPv6 URL)"),
    ],
)
def test_what_it_cannot_use_says_why(url: str, problem: str) -> None:
    assert (proxy_problem(url) or "").startswith(problem)


def test_the_lower_case_variable_wins_as_in_httpx(env: pytest.MonkeyPatch) -> None:
    env.setenv("ALL_PROXY", "socks4://h:1")
    env.setenv("all_proxy", "socks5://h:1")
    check_environment()
    env.setenv("all_proxy", "ftp://h:1")
    with pytest.raises(ProxySettingError, match=r"^all_proxy=ftp://h:1: proxy scheme 'ftp'"):
        check_environment()


def test_no_proxy_star_turns_every_proxy_off(env: pytest.MonkeyPatch) -> None:
    env.setenv("HTTPS_PROXY", "socks4://h:1")
    env.setenv("NO_PROXY", "localhost, *")
    assert isinstance(environment_client(), httpx.AsyncClient)
    env.delenv("NO_PROXY")
    with pytest.raises(ProxySettingError, match=r"^HTTPS_PROXY=socks4://h:1: "):
        environment_client()


def test_a_custom_transport_ignores_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("ALL_PROXY", "socks4://h:1")
    client = environment_client(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    assert isinstance(client, httpx.AsyncClient)


def test_passwords_never_show(env: pytest.MonkeyPatch) -> None:
    env.setenv("http_proxy", "me:hunter2@proxy:port")  # bare host:port, as httpx reads it
    with pytest.raises(ProxySettingError) as caught:
        check_environment()
    assert str(caught.value).startswith("http_proxy=me:***@proxy:port: not a valid http")
    env.setenv("http_proxy", "socks5://me:hunter2@[::1")
    with pytest.raises(ProxySettingError, match=r"^http_proxy=socks5://…: ") as caught:
        check_environment()
    assert "hunter2" not in str(caught.value)
