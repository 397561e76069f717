"""Proxies from the environment: `send`, the models listing and the endpoint probe through a
real SOCKS5 proxy on loopback (tests/support/socks5.py), and one-line errors for proxy
settings httpx cannot use.

httpx exempts no host from ``ALL_PROXY`` by itself (not even 127.0.0.1): only ``NO_PROXY``
does. Each test sets the proxy variables it means and clears every other one, so a
``NO_PROXY=127.0.0.1`` on the machine cannot make a test pass without the proxy; each success
asserts the proxy relayed the connection.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamscope.core.net.client import StreamClient, StreamTimeouts
from streamscope.core.net.endpoints import Endpoint
from streamscope.core.net.models_api import fetch_models, make_http_client
from streamscope.core.turn.model import Turn
from streamscope.core.turn.outcome import Outcome
from streamscope.core.wire.conversation import Conversation, Message
from streamscope.core.wire.dialects import get_dialect
from streamscope.demo.server import DemoServer
from streamscope.ui.endpoint.endpoint_probe import EndpointProbe
from support.socks5 import DOMAIN, IPV4, Socks5Proxy

APP = Path(__file__).resolve().parents[2] / "app"
PROXY_VARIABLES = ("all_proxy", "http_proxy", "https_proxy", "no_proxy")


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(speed=500) as server:
        yield server


def proxy_env(**variables: str) -> dict[str, str]:
    """os.environ without any proxy variable (either case), plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    return {**env, **variables}


@pytest.fixture
def only(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Clear every proxy variable of this process (the test sets what it means)."""
    for name in os.environ:
        if name.lower() in PROXY_VARIABLES:
            monkeypatch.delenv(name)
    yield monkeypatch


def send(demo: DemoServer, env: dict[str, str]) -> tuple[int, dict[str, object], str]:
    """`streamscope send --json` in a child process with exactly ``env``'s proxies."""
    args = ["--json", "--model", "demo", "--base-url", demo.base_url("openai")]
    done = subprocess.run(
        [sys.executable, "-m", "streamscope", "send", *args, "--idle-timeout", "10", "Via SOCKS"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "PYTHONPATH": str(APP)},
        check=False,
    )
    return done.returncode, json.loads(done.stdout or "{}"), done.stderr


def run_turn(demo: DemoServer) -> Turn:
    spec = get_dialect("openai").build_request(
        Conversation(messages=[Message("user", "Hi")]),
        base_url=demo.base_url("openai"),
        model="demo",
        api_key=None,
    )

    async def main() -> Turn:
        client = StreamClient()
        try:
            return await client.run_turn(spec, timeouts=StreamTimeouts(first_byte=10, idle=10))
        finally:
            await client.aclose()

    return asyncio.run(main())


# -- through the proxy -------------------------------------------------------------------------


def test_send_goes_through_a_socks5_proxy(demo: DemoServer) -> None:
    with Socks5Proxy() as proxy:
        code, result, err = send(demo, proxy_env(ALL_PROXY=f"socks5://127.0.0.1:{proxy.port}"))
    assert (code, result.get("outcome")) == (0, "completed"), err
    assert "Via SOCKS" in str(result["text"])
    assert [(c.host, c.port, c.address_type) for c in proxy.connections] == [
        ("127.0.0.1", demo.port, IPV4)
    ]


def test_send_through_socks5h_with_a_username_and_password(demo: DemoServer) -> None:
    with Socks5Proxy(username="scope", password="p@ss:word") as proxy:
        url = f"socks5h://scope:p%40ss%3Aword@127.0.0.1:{proxy.port}"
        code, result, err = send(demo, proxy_env(all_proxy=url))
    assert (code, result.get("outcome")) == (0, "completed"), err
    assert [(c.port, c.username) for c in proxy.connections] == [(demo.port, "scope")]
    assert proxy.rejected == 0


# httpcore 1.0.9 does not close the socket of a SOCKS handshake that failed: it is collected
# (and its ResourceWarning ignored) inside this test rather than in whichever test runs next.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_wrong_proxy_password_ends_the_turn_as_an_error(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    with Socks5Proxy(username="scope", password="right") as proxy:
        only.setenv("ALL_PROXY", f"socks5://scope:wrong@127.0.0.1:{proxy.port}")
        turn = run_turn(demo)
    gc.collect()
    assert turn.outcome is Outcome.ERROR
    assert turn.reason == (
        f"Could not connect to 127.0.0.1:{demo.port} through the proxy 127.0.0.1:{proxy.port}:"
        " ProxyError: Invalid username/password"
    )  # (the proxy refused: it is named)
    assert (proxy.connections, proxy.rejected) == ([], 1)


def test_no_proxy_still_exempts_loopback(demo: DemoServer, only: pytest.MonkeyPatch) -> None:
    with Socks5Proxy() as proxy:
        only.setenv("ALL_PROXY", f"socks5://127.0.0.1:{proxy.port}")
        only.setenv("NO_PROXY", "127.0.0.1")
        turn = run_turn(demo)
    assert turn.outcome is Outcome.COMPLETED
    assert proxy.connections == []  # NO_PROXY is what exempts 127.0.0.1, nothing else


def test_models_listing_and_probe_go_through_the_proxy(
    demo: DemoServer, only: pytest.MonkeyPatch
) -> None:
    endpoint = Endpoint(id="socks", name="demo via SOCKS", base_url=demo.base_url("openai"))

    async def main() -> tuple[list[str], tuple[bool, str]]:
        async with make_http_client(endpoint) as client:
            models = await fetch_models(endpoint, None, client)
        return models, await EndpointProbe(None, None).test(endpoint, None)

    with Socks5Proxy() as proxy:
        only.setenv("ALL_PROXY", f"socks5h://127.0.0.1:{proxy.port}")
        models, (ok, message) = asyncio.run(main())
    assert "demo" in models
    assert ok, message
    assert len(proxy.connections) == 2 and {c.address_type for c in proxy.connections} <= {
        IPV4,
        DOMAIN,
    }


# -- settings httpx cannot use -----------------------------------------------------------------

BAD_SETTINGS = [
    ("ALL_PROXY", "socks4://127.0.0.1:1080", "ALL_PROXY=socks4://127.0.0.1:1080", "'socks4'"),
    ("https_proxy", "socks5://me:hunter2@[::1", "https_proxy=socks5://…", "socks5 proxy URL"),
    ("HTTP_PROXY", "http://proxy:port", "HTTP_PROXY=http://proxy:port", "http proxy URL"),
]


@pytest.mark.parametrize(("variable", "value", "names", "says"), BAD_SETTINGS)
def test_an_unusable_proxy_setting_is_a_one_line_error_outcome(
    demo: DemoServer, variable: str, value: str, names: str, says: str
) -> None:
    code, result, err = send(demo, proxy_env(**{variable: value}))
    assert code == 4 and result["outcome"] == "error", err
    reason = str(result["reason"])
    assert reason.startswith(f"could not connect: {names}") and says in reason
    assert "\n" not in reason and "hunter2" not in reason
    assert "Traceback" not in err


def test_the_probe_says_which_setting_is_wrong(only: pytest.MonkeyPatch) -> None:
    only.setenv("all_proxy", "socks4a://127.0.0.1:1080")
    endpoint = Endpoint(id="x", name="x", base_url="http://127.0.0.1:9/v1")
    ok, message = asyncio.run(EndpointProbe(None, None).test(endpoint, None))
    assert not ok
    assert message.startswith("all_proxy=socks4a://127.0.0.1:1080: proxy scheme 'socks4a'")
