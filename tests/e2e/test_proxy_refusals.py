"""Issue 28 (N3, N6): a network error says who failed. Through a proxy that refuses, the
server behind it may well be up: "Test connection", a chat turn and the tap name the proxy
("Connection refused by the proxy 127.0.0.1:PORT — is the proxy running?"), not the server.
Only loopback: the proxy is a port nobody listens on, the server the built-in demo."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator

import httpx
import pytest

from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.net.connect_errors import describe_connect_error
from streamscope.core.net.connection import proxy_for
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.options import ProxyOptions, TLSOptions
from streamscope.core.tap.server import TapServer
from streamscope.core.turn.model import Turn
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer
from streamscope.ui.endpoint.endpoint_probe import EndpointProbe
from support.tap_upstream import Collector

PROXY_VARIABLES = ("all_proxy", "http_proxy", "https_proxy", "no_proxy")


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=500) as server:
        yield server


@pytest.fixture
def only(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No proxy variable in this process but those the test sets."""
    for name in os.environ:
        if name.lower() in PROXY_VARIABLES:
            monkeypatch.delenv(name)
    yield monkeypatch


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (a proxy that is not running)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return int(sock.getsockname()[1])


def refused(port: int) -> str:
    return f"Connection refused by the proxy 127.0.0.1:{port} — is the proxy running?"


def test_test_connection_names_the_proxy_that_refused(
    demo: DemoServer, only: pytest.MonkeyPatch, closed_port: int
) -> None:
    ep = Endpoint(
        id="lab",
        name="Lab",
        base_url=demo.base_url("openai"),  # (up: the proxy is what refuses)
        proxy_mode="http",
        proxy_host="127.0.0.1",
        proxy_port=closed_port,
    )
    ok, said = asyncio.run(EndpointProbe(None, None).test(ep, None))
    assert (ok, said) == (False, refused(closed_port))
    direct = Endpoint(id="d", name="Direct", base_url="http://127.0.0.1:9/v1", proxy_mode="none")
    ok, said = asyncio.run(EndpointProbe(None, None).test(direct, None))
    assert (ok, said) == (False, "Connection refused by 127.0.0.1:9 — is the server running?")


def test_a_chat_turn_names_the_proxy_that_refused(
    demo: DemoServer, only: pytest.MonkeyPatch, closed_port: int
) -> None:
    explicit = turn_to(demo.base_url("openai"), proxied("http", closed_port))
    assert explicit.reason == refused(closed_port)
    only.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port}")  # (the system's proxy)
    system = turn_to(demo.base_url("openai"), TLSOptions())
    assert system.reason == refused(closed_port)
    socks = turn_to(demo.base_url("openai"), proxied("socks5", closed_port))
    assert socks.reason == refused(closed_port)


def test_the_tap_names_the_proxy_between_it_and_upstream(
    demo: DemoServer, only: pytest.MonkeyPatch, closed_port: int
) -> None:
    collector = Collector()
    tls = proxied("http", closed_port)
    with TapServer(demo.base_url("openai"), port=0, tls=tls, listener=collector) as tap:
        response = httpx.post(tap.root_url + "/chat/completions", json={"model": "demo"})
        [result] = collector.wait()
    assert response.status_code == 502
    assert response.text == f"streamscope tap: {refused(closed_port)}\n"
    assert (result.outcome, result.reason) == ("error", refused(closed_port))


def test_which_proxy_a_request_goes_through() -> None:
    client = httpx.AsyncClient(
        proxy="http://user:pw@127.0.0.1:3128", mounts={"all://localhost": None}, trust_env=False
    )
    assert proxy_for(client, "https://api.example.com/v1") == "http://127.0.0.1:3128"
    assert proxy_for(client, "http://localhost:8000/v1") is None  # (its no-proxy list)
    assert proxy_for(httpx.AsyncClient(trust_env=False), "https://api.example.com") is None


def test_the_other_proxy_failures_name_the_proxy_too() -> None:
    url, proxy = "https://api.example.com/v1/chat/completions", "http://proxy.corp:3128"
    unknown = httpx.ConnectError("[Errno -2] Name or service not known")
    assert describe_connect_error(unknown, url, proxy=proxy) == (
        "Could not resolve the proxy host 'proxy.corp' — check the proxy setting"
    )
    late = httpx.ConnectTimeout("timed out")
    assert describe_connect_error(late, url, connect_timeout=10, proxy=proxy) == (
        "Timed out after 10 s connecting to api.example.com:443 through the proxy proxy.corp:3128"
    )
    # a proxy that cannot reach the server says so itself: that is the server's failure
    upstream = httpx.ProxyError("502 Bad Gateway")
    assert describe_connect_error(upstream, url, proxy=proxy) == (
        "Could not connect to api.example.com:443 through the proxy proxy.corp:3128: "
        "ProxyError: 502 Bad Gateway"
    )


def turn_to(url: str, tls: TLSOptions) -> Turn:
    spec = get_dialect("openai").build_request(
        Conversation(messages=[Message("user", "Hi")]), base_url=url, model="demo", api_key=None
    )

    async def main() -> Turn:
        client = StreamClient()
        try:
            timeouts = StreamTimeouts(connect=10, first_byte=10, idle=10)
            return await client.run_turn(spec, timeouts=timeouts, tls=tls)
        finally:
            await client.aclose()

    return asyncio.run(main())


def proxied(mode: str, port: int) -> TLSOptions:
    return TLSOptions(proxy=ProxyOptions(mode=mode, host="127.0.0.1", port=port))  # type: ignore[arg-type]
