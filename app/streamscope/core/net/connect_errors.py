"""Why a request got no response, in one sentence for people — the same words for a chat
turn (the reason of its ``connect_error`` outcome) and for the endpoint dialog's "Test
connection"::

    Connection refused by 127.0.0.1:9 — is the server running?
    Could not resolve host 'api.exampel.com' — check the base URL
    TLS error talking to llm.local:8443: [SSL: CERTIFICATE_VERIFY_FAILED] … — set a CA …
    The server at llm.local:8443 requires a client certificate — set one (and its key) …
    Timed out after 10 s connecting to 10.0.0.7:8000
    Could not connect to 127.0.0.1:8000: ProxyError: …
    Connection refused by the proxy 127.0.0.1:3128 — is the proxy running?
    Could not resolve the proxy host 'proxy.corp' — check the proxy setting
    Timed out after 10 s connecting to api.openai.com:443 through the proxy 127.0.0.1:3128
    No response from 127.0.0.1:8000: RemoteProtocolError: Server disconnected …
    The server at 127.0.0.1:5432 answered something that is not HTTP (illegal status line: …)
      — is that the right port?

``host:port`` is the URL's (the port the scheme implies when the URL has none). When the
request went through a proxy (``proxy``: its URL), a refused connection or an unknown host is
the proxy's — the request never got further — and the sentence names the proxy, not the
server behind it (which may well be up).
"""

from __future__ import annotations

import errno

import httpx

__all__ = ["describe_connect_error", "host_port"]


def host_port(url: str | httpx.URL) -> str:
    """``127.0.0.1:9``, ``api.openai.com:443``, ``[::1]:8000``: where the request went."""
    u = httpx.URL(url)
    host = u.host or "?"
    if ":" in host:
        host = f"[{host}]"
    port = u.port or {"https": 443, "http": 80}.get(u.scheme)
    return f"{host}:{port}" if port else host


_REFUSALS = (
    "unknown ca",
    "bad certificate",
    "certificate unknown",
    "certificate expired",
    "certificate revoked",
    "unsupported certificate",
)
"""TLS alerts by which a server refuses a client certificate (OpenSSL's words)."""


def _chain_text(exc: BaseException) -> str:
    """The messages of ``exc`` and its causes (anyio hides "refused" behind a summary)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        if isinstance(current, OSError) and current.errno == errno.ECONNREFUSED:
            parts.append("connection refused")
        current = current.__cause__ or current.__context__
    return " | ".join(parts)


def describe_connect_error(
    exc: BaseException,
    url: str | httpx.URL,
    *,
    connect_timeout: float | None = None,
    proxy: str | httpx.URL | None = None,
) -> str:
    """One sentence (see the module docstring) for ``exc``, raised while connecting to
    ``url`` (through ``proxy``, when one was used); ``connect_timeout``: the limit, named
    when the connection timed out."""
    where = host_port(url)
    via = host_port(proxy) if proxy is not None else None
    through = f" through the proxy {via}" if via is not None else ""
    text = " ".join(str(exc).split())
    if isinstance(exc, httpx.ConnectTimeout | TimeoutError):
        limit = f" after {connect_timeout:g} s" if connect_timeout is not None else ""
        return f"Timed out{limit} connecting to {where}{through}"
    low = _chain_text(exc).lower()
    if "certificate required" in low or "peer did not return a certificate" in low:
        return (
            f"The server at {where} requires a client certificate (TLS alert: certificate "
            "required) — set one (and its key) in the endpoint's Network settings"
        )
    alert = next((a for a in _REFUSALS if f"alert {a}" in low), None)
    if alert is not None:
        return (
            f"The server at {where} refused the client certificate (TLS alert: {alert}) — "
            "check the certificate and key in the endpoint's Network settings"
        )
    if not isinstance(exc, httpx.ProxyError):
        if "certificate" in low or "ssl" in low or "tls" in low:
            return (
                f"TLS error talking to {where}: {text} — set a CA bundle for a self-signed "
                "server, or turn verification off"
            )
        if "refused" in low or "errno 111" in low or "10061" in low:
            if proxy is not None:  # (a proxy that cannot reach the server says so: ProxyError)
                return f"Connection refused by the proxy {via} — is the proxy running?"
            return f"Connection refused by {where} — is the server running?"
        if (
            "name or service not known" in low
            or "nodename nor servname" in low
            or "getaddrinfo" in low
            or "name resolution" in low
            or "no address associated" in low
        ):
            if proxy is not None:
                host = httpx.URL(proxy).host
                return f"Could not resolve the proxy host {host!r} — check the proxy setting"
            return f"Could not resolve host {httpx.URL(url).host!r} — check the base URL"
    if isinstance(exc, httpx.RemoteProtocolError) and text and "disconnected" not in low:
        # (h11 could not read the answer's head: a database, SSH, a TLS port …)
        return (
            f"The server at {where} answered something that is not HTTP ({text}) — is that "
            "the right port?"
        )
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, httpx.ConnectError | httpx.ProxyError | OSError):
        return f"Could not connect to {where}{through}: {what}"
    return f"No response from {where}{through}: {what}"  # (connected, then the connection failed)
