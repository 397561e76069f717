"""Proxies from the environment, checked before an httpx client is built.

httpx (``trust_env=True``) reads ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``ALL_PROXY`` (either case,
lower case winning; ``NO_PROXY`` exempts hosts, and loopback is *not* exempt by default) and
speaks ``http``, ``https``, ``socks5`` and ``socks5h`` proxies (SOCKS through ``socksio``).
Any other scheme, or a URL it cannot use, used to surface as a traceback from the client's
constructor. :func:`environment_client` checks first and raises :class:`ProxySettingError`,
whose one-line message names the variable, its value (password masked) and what is wrong::

    client = environment_client(verify=ctx, timeout=httpx.Timeout(10))
    # ProxySettingError: ALL_PROXY=socks4://127.0.0.1:1080: proxy scheme 'socks4' is not
    # supported (use http, https, socks5 or socks5h)
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import ssl
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies

import httpx

from streamscope.core.net.options import ProxyOptions
from streamscope.core.redact import redact_url

__all__ = [
    "SUPPORTED_SCHEMES",
    "NetworkSettingError",
    "ProxySettingError",
    "check_environment",
    "environment_client",
    "no_proxy_mounts",
    "proxied_client",
]

SUPPORTED_SCHEMES = ("http", "https", "socks5", "socks5h")
"""The proxy URL schemes httpx speaks."""


class NetworkSettingError(ValueError):
    """An endpoint's network setting (proxy, client certificate) cannot be used; the message
    is one line for people. Nothing was sent."""


class ProxySettingError(NetworkSettingError):
    """A proxy setting (in the environment, or the endpoint's own) names a proxy httpx
    cannot use; the message is one line for people (variable or setting, value with its
    password masked, the problem)."""


def environment_client(**options: Any) -> httpx.AsyncClient:
    """``httpx.AsyncClient(trust_env=True, **options)``, or :class:`ProxySettingError` when
    the environment's proxies cannot be used (a custom ``transport`` ignores them)."""
    if options.get("transport") is None:
        check_environment()
    try:
        return httpx.AsyncClient(trust_env=True, **options)
    except (ValueError, ImportError, httpx.InvalidURL) as exc:  # what the check cannot foresee
        raise ProxySettingError(f"proxy settings from the environment: {exc}") from None


def proxied_client(proxy: ProxyOptions, **options: Any) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for the endpoint's own proxy setting (``none`` or an
    explicit proxy; the environment is not read), or :class:`ProxySettingError`."""
    if proxy.mode == "none":
        return httpx.AsyncClient(trust_env=False, **options)
    shown = proxy.url()
    if not proxy.host.strip():
        raise ProxySettingError(f"proxy {shown}: no proxy host set")
    if not 0 < proxy.port < 65536:
        raise ProxySettingError(f"proxy {shown}: the port must be 1 to 65535")
    problem = proxy_problem(proxy.url())
    if problem is not None:
        raise ProxySettingError(f"proxy {shown}: {problem}")
    mounts = no_proxy_mounts(proxy.no_proxy)
    if mounts is None:  # "*": every host direct
        return httpx.AsyncClient(trust_env=False, **options)
    auth = (proxy.username, proxy.password) if proxy.username else None
    target = httpx.Proxy(
        proxy.url(with_username=False),
        auth=auth,
        ssl_context=_proxy_tls(options.get("verify")) if proxy.mode == "https" else None,
    )
    try:
        return httpx.AsyncClient(trust_env=False, proxy=target, mounts=mounts, **options)
    except (ValueError, ImportError, httpx.InvalidURL) as exc:
        raise ProxySettingError(f"proxy {shown}: {exc}") from None


def _proxy_tls(verify: object) -> ssl.SSLContext | None:
    """The TLS context for an HTTPS proxy: the endpoint's (its CA file, its client
    certificate), or one that does not verify when the endpoint turned verification off."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return None


def no_proxy_mounts(hosts: Iterable[str]) -> dict[str, None] | None:
    """httpx mount patterns sending ``hosts`` direct (the rules of ``NO_PROXY``, as httpx
    reads it: ``example.com`` and its subdomains, ``.example.com`` only subdomains, IP
    addresses, ``host:port``), or ``None`` for ``*`` (everything direct).
    :class:`ProxySettingError` for an entry that is not a host."""
    mounts: dict[str, None] = {}
    for entry in hosts:
        host = entry.strip()
        if not host:
            continue
        if host == "*":
            return None
        if "/" in host:
            raise ProxySettingError(
                f"no-proxy entry {host!r}: use host names or addresses (no ranges or paths)"
            )
        name, port = _split_port(host)
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            address = None
        if address is not None:
            name = f"[{name}]" if address.version == 6 else name
        elif name.startswith("."):
            name = "*" + name  # subdomains only
        elif name.lower() != "localhost":
            name = "*" + name  # the domain and its subdomains
        try:
            pattern = f"all://{name}{port}"
            httpx.URL(pattern.replace("*", "x", 1))
        except httpx.InvalidURL:
            raise ProxySettingError(f"no-proxy entry {host!r} is not a host name") from None
        mounts[pattern] = None
    return mounts


def _split_port(host: str) -> tuple[str, str]:
    """``("example.com", ":8080")`` from ``example.com:8080``; bare IPv6 keeps its colons."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest if rest.startswith(":") and rest[1:].isdigit() else ""
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name, ":" + port
    return host, ""


def check_environment() -> None:
    """Raise :class:`ProxySettingError` for the first proxy httpx would use but cannot."""
    proxies = getproxies()  # what httpx reads: the variables, else the OS settings
    if "*" in (host.strip() for host in proxies.get("no", "").split(",")):
        return  # NO_PROXY=*: httpx uses no proxy at all
    for scheme in ("all", "http", "https"):
        url = proxies.get(scheme)
        problem = proxy_problem(url) if url else None
        if problem is not None:
            raise ProxySettingError(f"{_variable(scheme)}={_shown(url or '')}: {problem}")


def proxy_problem(url: str) -> str | None:
    """Why httpx cannot use ``url`` as a proxy (``None``: it can)."""
    if "://" not in url:
        url = "http://" + url  # as httpx reads a bare host:port
    scheme = url.partition("://")[0].lower()
    if scheme not in SUPPORTED_SCHEMES:
        return f"proxy scheme {scheme!r} is not supported (use {', '.join(SUPPORTED_SCHEMES)})"
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsing the port is the check
        httpx.Proxy(url)
    except (ValueError, httpx.InvalidURL) as exc:
        return f"not a valid {scheme} proxy URL ({exc})"
    if not parts.hostname:
        return f"not a valid {scheme} proxy URL (no host)"
    if scheme.startswith("socks") and importlib.util.find_spec("socksio") is None:
        return "SOCKS proxies need the socksio package, which is not installed"
    return None


def _variable(scheme: str) -> str:
    """The environment variable that set the ``scheme`` proxy (lower case wins, as in
    :func:`urllib.request.getproxies`), or where else it came from."""
    name = f"{scheme}_proxy"
    if os.environ.get(name):
        return name
    found = next((k for k, v in os.environ.items() if k.lower() == name and v), None)
    return found or f"the system's {scheme} proxy setting"


def _shown(url: str) -> str:
    """``url`` with any password masked (a URL too broken to parse shows only its scheme)."""
    bare = "://" not in url  # host:port, or user:password@host:port
    try:
        shown = redact_url("http://" + url if bare else url)
    except ValueError:
        return url.partition("://")[0] + "://…" if not bare else "…"
    return shown.removeprefix("http://") if bare else shown
