"""An endpoint's own network settings against real servers on loopback: an HTTP forward
proxy (tests/support/http_proxy.py: CONNECT and absolute-form, Basic proxy auth, optionally
behind TLS), the SOCKS5 proxy (tests/support/socks5.py), and an HTTPS server that requires a
client certificate (tests/support/tls_server.py, throwaway certificates made per test).

Each test clears every proxy variable and sets only what it means, and each success asserts
which proxy relayed the connection (or that none did).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from streamscope.core.capture.recorder import CaptureRecorder
from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.net.endpoints import DEMO_ID, PRESETS, new_endpoint
from streamscope.core.net.models_api import fetch_models, make_http_client
from streamscope.core.net.options import ProxyOptions, TLSOptions
from streamscope.core.net.secrets import SecretStore, proxy_account, resolve_tls
from streamscope.core.turn.model import Turn
from streamscope.core.turn.observer import TurnObserver
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer
from support.http_proxy import HttpProxy
from support.memory_keyring import MemoryKeyring
from support.socks5 import Socks5Proxy
from support.tls_server import (
    ANSWER,
    CLIENT_NAME,
    Certs,
    TlsStreamServer,
    make_certs,
    server_context,
)

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
def certs(tmp_path: Path) -> Certs:
    return make_certs(tmp_path)


def turn_to(url: str, tls: TLSOptions, observer: TurnObserver | None = None) -> Turn:
    spec = get_dialect("openai").build_request(
        Conversation(messages=[Message("user", "Hi")]), base_url=url, model="demo", api_key=None
    )

    async def main() -> Turn:
        client = StreamClient()
        try:
            timeouts = StreamTimeouts(connect=10, first_byte=10, idle=10)
            return await client.run_turn(spec, timeouts=timeouts, tls=tls, observer=observer)
        finally:
            await client.aclose()

    return asyncio.run(main())


def proxied(mode: str, port: int, **fields: object) -> TLSOptions:
    return TLSOptions(proxy=ProxyOptions(mode=mode, host="127.0.0.1", port=port, **fields))  # type: ignore[arg-type]


# -- an explicit HTTP proxy ---------------------------------------------------------------------


def test_an_http_proxy_with_a_password_forwards_the_turn(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    with Socks5Proxy() as env_proxy, HttpProxy(username="scope", password="s3cret:pw") as proxy:
        only.setenv("ALL_PROXY", f"socks5://127.0.0.1:{env_proxy.port}")  # must be ignored
        tls = proxied("http", proxy.port, username="scope", password="s3cret:pw")
        turn = turn_to(demo.base_url("openai"), tls)
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    url = demo.base_url("openai") + "/chat/completions"
    assert [(r.method, r.target, r.username) for r in proxy.relayed] == [("POST", url, "scope")]
    assert env_proxy.connections == []


def test_an_https_target_goes_through_the_http_proxy_by_connect(
    certs: Certs, only: pytest.MonkeyPatch
) -> None:
    with TlsStreamServer(certs) as server, HttpProxy() as proxy:
        tls = replace(
            proxied("http", proxy.port),
            ca_bundle=str(certs.ca),
            client_cert=str(certs.client),
            client_key=str(certs.client_key),
        )
        turn = turn_to(server.base_url, tls)
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert turn.text == ANSWER
    assert [(r.method, r.target) for r in proxy.relayed] == [
        ("CONNECT", f"127.0.0.1:{server.port}")
    ]
    assert server.client_subjects == [CLIENT_NAME]


def test_a_proxy_behind_tls_is_verified_with_the_endpoint_ca(
    demo: DemoServer, certs: Certs, only: pytest.MonkeyPatch
) -> None:
    proxy_tls = server_context(certs, require_client_cert=False)
    with HttpProxy(tls=proxy_tls) as proxy:
        turn = turn_to(
            demo.base_url("openai"), replace(proxied("https", proxy.port), ca_bundle=str(certs.ca))
        )
        untrusted = turn_to(demo.base_url("openai"), proxied("https", proxy.port))
        unverified = turn_to(
            demo.base_url("openai"), replace(proxied("https", proxy.port), verify=False)
        )
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert unverified.outcome is Outcome.COMPLETED, unverified.reason  # verification off
    assert len(proxy.relayed) == 2
    assert untrusted.outcome is Outcome.ERROR
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.reason


def test_a_wrong_proxy_password_is_masked_in_the_capture(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    password = "wrong-Pa55word-123"
    with HttpProxy(username="scope", password="right") as proxy:
        tls = proxied("http", proxy.port, username="scope", password=password)
        recorder = CaptureRecorder("openai", secrets=(password,))
        turn = turn_to(demo.base_url("openai"), tls, recorder)
    assert turn.outcome is Outcome.ERROR
    assert [(r.username, r.relayed) for r in proxy.requests] == [("scope", False)]
    capture = recorder.done.result(timeout=10)
    assert capture.response is not None and capture.response.status == 407
    assert capture.end is not None and capture.end.kind == "http_error"
    masked = b"Proxy authentication failed for scope:" + b"*" * len(password) + b"\n"
    assert capture.end.body == masked
    assert password not in turn.reason


def test_the_no_proxy_list_sends_those_hosts_direct(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    with HttpProxy() as proxy:
        direct = turn_to(
            demo.base_url("openai"), proxied("http", proxy.port, no_proxy=("127.0.0.1",))
        )
        other = turn_to(
            demo.base_url("openai"), proxied("http", proxy.port, no_proxy=("example.com",))
        )
    assert direct.outcome is Outcome.COMPLETED, direct.reason
    assert other.outcome is Outcome.COMPLETED, other.reason
    assert len(proxy.requests) == 1  # only the second turn: 127.0.0.1 was on the first's list


def test_no_proxy_ignores_the_environment(demo: DemoServer, only: pytest.MonkeyPatch) -> None:
    with Socks5Proxy() as env_proxy:
        only.setenv("ALL_PROXY", f"socks5://127.0.0.1:{env_proxy.port}")
        direct = turn_to(demo.base_url("openai"), TLSOptions(proxy=ProxyOptions(mode="none")))
        system = turn_to(demo.base_url("openai"), TLSOptions())
    assert (direct.outcome, system.outcome) == (Outcome.COMPLETED, Outcome.COMPLETED)
    assert [c.port for c in env_proxy.connections] == [demo.port]  # the "system" turn only


def test_system_honours_https_proxy_and_no_proxy(certs: Certs, only: pytest.MonkeyPatch) -> None:
    tls = TLSOptions(ca_bundle=str(certs.ca), client_cert=str(certs.client_combined))
    with TlsStreamServer(certs) as server, HttpProxy() as proxy:
        only.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
        via = turn_to(server.base_url, tls)
        only.setenv("NO_PROXY", "localhost,127.0.0.1")
        direct = turn_to(server.base_url, tls)
    assert (via.outcome, direct.outcome) == (Outcome.COMPLETED, Outcome.COMPLETED)
    assert [r.target for r in proxy.requests] == [f"127.0.0.1:{server.port}"]
    assert server.client_subjects == [CLIENT_NAME, CLIENT_NAME]


# -- SOCKS5 --------------------------------------------------------------------------------------


def test_a_socks5_proxy_with_username_and_password(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    with Socks5Proxy(username="scope", password="p@ss:word") as proxy:
        turn = turn_to(
            demo.base_url("openai"),
            proxied("socks5", proxy.port, username="scope", password="p@ss:word"),
        )
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert [(c.port, c.username) for c in proxy.connections] == [(demo.port, "scope")]


def test_unusable_proxy_settings_end_the_turn_with_one_line(only: pytest.MonkeyPatch) -> None:
    no_host = turn_to(
        "http://127.0.0.1:9/v1", TLSOptions(proxy=ProxyOptions(mode="http", port=8080))
    )
    assert no_host.reason == "could not connect: proxy http://:8080: no proxy host set"
    ranged = turn_to("http://127.0.0.1:9/v1", proxied("http", 3128, no_proxy=("10.0.0.0/8",)))
    assert ranged.reason == (
        "could not connect: no-proxy entry '10.0.0.0/8': use host names or addresses "
        "(no ranges or paths)"
    )


# -- the endpoint, its keyring password, the demo -------------------------------------------


def test_an_endpoint_proxy_password_comes_from_the_keyring(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    store = SecretStore(MemoryKeyring())
    with HttpProxy(username="scope", password="kr-secret") as proxy:
        ep = replace(
            new_endpoint("custom"),
            base_url=demo.base_url("openai"),
            proxy_mode="http",
            proxy_host="127.0.0.1",
            proxy_port=proxy.port,
            proxy_username="scope",
        )
        store.set(proxy_account(ep.id), "kr-secret")
        tls = resolve_tls(ep, store)
        turn = turn_to(ep.base_url, tls)

        async def models() -> list[str]:
            async with make_http_client(ep, tls=tls) as client:
                return await fetch_models(ep, None, client)

        names = asyncio.run(models())
    assert tls.proxy.password == "kr-secret" and "kr-secret" not in repr(tls)
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert "demo" in names
    assert [(r.method, r.username) for r in proxy.relayed] == [("POST", "scope"), ("GET", "scope")]


def test_the_builtin_demo_always_goes_direct(demo: DemoServer, only: pytest.MonkeyPatch) -> None:
    ep = replace(PRESETS["demo"].endpoint(id=DEMO_ID), proxy_mode="socks5", proxy_host="x")
    assert ep.tls().proxy == ProxyOptions(mode="none")
    with Socks5Proxy() as env_proxy:
        only.setenv("ALL_PROXY", f"socks5://127.0.0.1:{env_proxy.port}")  # and no NO_PROXY
        turn = turn_to(demo.base_url("openai"), ep.tls())
    assert turn.outcome is Outcome.COMPLETED, turn.reason
    assert env_proxy.connections == []


# -- mutual TLS ------------------------------------------------------------------------------------


def test_mutual_tls_succeeds_with_the_client_certificate(
    certs: Certs, only: pytest.MonkeyPatch
) -> None:
    ca = str(certs.ca)
    with TlsStreamServer(certs) as server:
        separate = turn_to(
            server.base_url,
            TLSOptions(
                ca_bundle=ca, client_cert=str(certs.client), client_key=str(certs.client_key)
            ),
        )
        combined = turn_to(
            server.base_url, TLSOptions(ca_bundle=ca, client_cert=str(certs.client_combined))
        )
    assert (separate.outcome, combined.outcome) == (Outcome.COMPLETED, Outcome.COMPLETED)
    assert (separate.text, combined.text) == (ANSWER, ANSWER)
    assert server.client_subjects == [CLIENT_NAME, CLIENT_NAME]


def test_without_the_client_certificate_the_turn_says_so(
    certs: Certs, only: pytest.MonkeyPatch
) -> None:
    with TlsStreamServer(certs) as server:
        turn = turn_to(server.base_url, TLSOptions(ca_bundle=str(certs.ca)))
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == (
        f"The server at 127.0.0.1:{server.port} requires a client certificate (TLS alert: "
        "certificate required) — set one (and its key) in the endpoint's Network settings"
    )
    assert server.client_subjects == []


def test_a_client_certificate_from_another_ca_is_refused_with_a_clear_message(
    certs: Certs, only: pytest.MonkeyPatch
) -> None:
    with TlsStreamServer(certs) as server:
        turn = turn_to(
            server.base_url, TLSOptions(ca_bundle=str(certs.ca), client_cert=str(certs.stranger))
        )
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == (
        f"The server at 127.0.0.1:{server.port} refused the client certificate (TLS alert: "
        "unknown ca) — check the certificate and key in the endpoint's Network settings"
    )
    assert server.client_subjects == []


def test_client_certificate_files_that_cannot_be_used(
    certs: Certs, only: pytest.MonkeyPatch
) -> None:
    ca = str(certs.ca)
    missing = turn_to(
        "https://127.0.0.1:9/v1", TLSOptions(ca_bundle=ca, client_cert="/nonexistent/c.pem")
    )
    assert (
        missing.reason
        == "could not connect: client certificate: file not found: /nonexistent/c.pem"
    )
    encrypted = turn_to(
        "https://127.0.0.1:9/v1",
        TLSOptions(
            ca_bundle=ca, client_cert=str(certs.client), client_key=str(certs.client_key_encrypted)
        ),
    )
    assert encrypted.reason == (
        f"could not connect: client certificate {certs.client} + {certs.client_key_encrypted}: "
        "the key is protected by a passphrase (use an unencrypted key file)"
    )
    no_key = turn_to(
        "https://127.0.0.1:9/v1", TLSOptions(ca_bundle=ca, client_cert=str(certs.client))
    )
    assert no_key.reason.startswith(f"could not connect: client certificate {certs.client}: ")
    assert "cannot be used" in no_key.reason
