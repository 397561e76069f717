"""The demo server's HTTP protocol: uvicorn's h11 one, with a transport that fills
``demo-bench``'s send stamps as it writes (:mod:`streamscope.demo.bench_playback`).

A frame's ``demo_sent`` is the oracle a bench client's delivery lag is scored against, so it
is taken as late as the server can: in ``transport.write``, once the chunk has been through
Starlette, uvicorn and the HTTP framing, just before the socket's ``send`` — the time those
layers take (tens of microseconds on a busy machine, milliseconds when the server process is
preempted between them) is the server's pacing, not the client's lag. Every other write
passes through unchanged: the placeholders are searched for, never found.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

from streamscope.demo.bench_playback import SLOT_MARK, fill_slots

__all__ = ["StampingH11Protocol"]


class _StampingTransport:
    """An asyncio transport whose ``write`` fills the stamps' slots with the time of the
    write; everything else is the transport's own."""

    __slots__ = ("_transport",)

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if isinstance(data, bytes) and SLOT_MARK in data:
            data = fill_slots(data, time.monotonic())
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class StampingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol (``uvicorn.Config(http=StampingH11Protocol)``) writing
    through a :class:`_StampingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(cast(asyncio.Transport, _StampingTransport(transport)))
