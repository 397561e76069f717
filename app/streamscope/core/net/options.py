"""Per-endpoint network options, light enough to import before any network code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import quote

__all__ = [
    "DEFAULT_LINE_CAP",
    "PROXY_MODES",
    "ProxyMode",
    "ProxyOptions",
    "StreamTimeouts",
    "TLSOptions",
]

ProxyMode = Literal["system", "none", "http", "https", "socks5"]
PROXY_MODES: tuple[ProxyMode, ...] = ("system", "none", "http", "https", "socks5")
"""``system``: the OS settings and ``HTTPS_PROXY``/``ALL_PROXY``/``NO_PROXY`` (the default);
``none``: always direct; the others: that proxy, except for the hosts of ``no_proxy``."""


DEFAULT_LINE_CAP = 1 << 20
"""The longest line (SSE or NDJSON) a stream may send, by default: 1 MiB."""


@dataclass(frozen=True, slots=True)
class StreamTimeouts:
    """Per-endpoint limits: timeouts in seconds (reasoning models think for minutes behind
    keep-alives, so the first-byte and idle defaults are generous) and the line cap in
    bytes (a longer line ends the turn as a protocol error rather than filling memory)."""

    connect: float = 10.0
    first_byte: float = 300.0
    idle: float = 300.0
    max_line_bytes: int = DEFAULT_LINE_CAP


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    """How an endpoint's requests reach the server (see :data:`PROXY_MODES`). ``password``
    is never saved with the endpoint: it comes from the secret store when a turn starts."""

    mode: ProxyMode = "system"
    host: str = ""
    port: int = 0
    username: str = ""
    password: str = field(default="", repr=False)
    no_proxy: tuple[str, ...] = ()
    """Hosts reached directly: ``example.com`` (and its subdomains), ``.example.com`` (only
    subdomains), an IP address, ``localhost``, optionally with ``:port``; ``*`` for all."""

    @property
    def explicit(self) -> bool:
        """Whether a proxy of this endpoint's own is set (not ``system`` or ``none``)."""
        return self.mode not in ("system", "none")

    def url(self, *, with_password: bool = False, with_username: bool = True) -> str:
        """``socks5://user@host:1080`` (the password only when asked for, quoted)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        auth = ""
        if self.username and with_username:
            auth = quote(self.username, safe="")
            if with_password and self.password:
                auth += ":" + quote(self.password, safe="")
            auth += "@"
        return f"{self.mode}://{auth}{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class TLSOptions:
    """How to connect to an endpoint: ``verify=False`` turns verification off (the UI
    marks it visibly); ``ca_bundle`` adds a CA file for self-signed local servers;
    ``client_cert`` (PEM, with its key inside or in ``client_key``) is presented to servers
    that ask for one (mutual TLS); ``proxy`` is the endpoint's proxy setting."""

    verify: bool = True
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    proxy: ProxyOptions = ProxyOptions()
