"""How an endpoint's requests leave the machine: its proxy setting and its TLS options.

    client = connection_client(endpoint.tls(), timeout=httpx.Timeout(10))

``proxy.mode == "system"`` reads the environment's proxies (``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY`` ...) and, on macOS and Windows, the OS settings
(:func:`~streamscope.core.net.env_proxy.environment_client`); ``none`` goes direct; an
explicit proxy is used for every host but those of its no-proxy list. A client certificate
(mutual TLS) is loaded into the SSL context; a file that cannot be used is a
:class:`~streamscope.core.net.env_proxy.NetworkSettingError` naming it.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any
from urllib.request import getproxies, proxy_bypass

import httpx

from streamscope.core.net.env_proxy import (
    NetworkSettingError,
    environment_client,
    proxied_client,
)
from streamscope.core.net.options import TLSOptions

__all__ = [
    "client_certificate_alert",
    "connection_client",
    "load_client_certificate",
    "proxy_for",
    "ssl_context",
]


def connection_client(
    tls: TLSOptions, *, transport: httpx.AsyncBaseTransport | None = None, **options: Any
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with ``tls``'s proxy and TLS settings and ``options``
    (a custom ``transport`` ignores proxies); :class:`NetworkSettingError` when a setting
    cannot be used."""
    verify = ssl_context(tls)
    if tls.proxy.mode == "system" or transport is not None:
        return environment_client(verify=verify, transport=transport, **options)
    return proxied_client(tls.proxy, verify=verify, **options)


def proxy_for(client: httpx.AsyncClient, url: str | httpx.URL) -> str | None:
    """The proxy ``client`` sends a request for ``url`` through (``http://127.0.0.1:3128``;
    the environment's or the endpoint's, its no-proxy list applied), ``None`` when it goes
    direct — so that an error can name who refused. httpx keeps this in its transports: read
    defensively (a custom transport, or another httpx, is simply "direct")."""
    try:
        transport = client._transport_for_url(httpx.URL(url))
        proxy_url = transport._pool._proxy_url  # type: ignore[attr-defined]
        scheme, host, port = proxy_url.scheme, proxy_url.host, proxy_url.port
    except (AttributeError, TypeError, ValueError, httpx.InvalidURL):
        return None
    name = host.decode("ascii", "replace")
    name = f"[{name}]" if ":" in name else name
    return f"{scheme.decode('ascii', 'replace')}://{name}" + (f":{port}" if port else "")


CERTIFICATE_ALERTS = (
    "certificate required",
    "unknown ca",
    "bad certificate",
    "certificate unknown",
    "certificate expired",
    "certificate revoked",
    "unsupported certificate",
)
"""TLS alerts (as OpenSSL words them) by which a server refuses the client certificate."""


async def client_certificate_alert(url: httpx.URL, tls: TLSOptions, timeout: float) -> str | None:
    """The TLS alert of a server that demands a client certificate we did not send, or
    refuses the one we sent; ``None`` otherwise. For a request that broke with no reason:
    with TLS 1.3 the server's alert can arrive while the request is being written, and the
    HTTP stack then reports only a broken stream. One more direct handshake, reading nothing
    but the alert, tells (only when no proxy is involved)."""
    host, port = url.host, url.port or 443
    if url.scheme != "https" or tls.proxy.explicit:
        return None
    if tls.proxy.mode == "system":
        proxies = getproxies()
        if (proxies.get("https") or proxies.get("all")) and not proxy_bypass(host):
            return None
    try:
        context = ssl_context(tls)
    except NetworkSettingError:
        return None
    if not isinstance(context, ssl.SSLContext):
        context = ssl.create_default_context()
        if not tls.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE

    def probe() -> str | None:
        try:
            with (
                socket.create_connection((host, port), timeout) as raw,
                context.wrap_socket(raw, server_hostname=host) as sock,
            ):
                sock.settimeout(timeout)
                sock.recv(1)
        except ssl.SSLError as exc:
            text = str(exc)
            return text if any(a in text.lower() for a in CERTIFICATE_ALERTS) else None
        except OSError:
            return None
        return None

    return await asyncio.to_thread(probe)


def ssl_context(tls: TLSOptions) -> ssl.SSLContext | bool:
    """The SSL context (or ``False``: no verification) for ``tls``."""
    if not tls.verify:
        if not tls.client_cert:
            return False
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif tls.ca_bundle:
        context = ssl.create_default_context(cafile=tls.ca_bundle)
    else:
        try:
            import truststore
        except ImportError:  # pragma: no cover - truststore is a dependency
            context = ssl.create_default_context()
        else:
            context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if not tls.client_cert:
            return context
    if tls.client_cert:
        load_client_certificate(context, tls.client_cert, tls.client_key)
    return context


def load_client_certificate(context: ssl.SSLContext, cert: str, key: str | None) -> None:
    """Load the client certificate (and key) for mutual TLS into ``context``, or raise
    :class:`NetworkSettingError` saying which file is wrong and why."""
    encrypted = False

    def no_passphrase() -> str:
        nonlocal encrypted
        encrypted = True
        return ""

    try:
        context.load_cert_chain(cert, key or None, password=no_passphrase)
    except FileNotFoundError as exc:
        raise NetworkSettingError(
            f"client certificate: file not found: {exc.filename or cert}"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        if encrypted:
            problem = "the key is protected by a passphrase (use an unencrypted key file)"
        else:
            problem = f"the certificate or key cannot be used ({exc.__class__.__name__}: {exc})"
        where = f"{cert} + {key}" if key else cert
        raise NetworkSettingError(f"client certificate {where}: {problem}") from None
