"""Messages between this program's own processes (the stream worker, the tap's forwarder and
the window or CLI that started them): length-prefixed pickles over a private socket pair —
both ends are this program, so pickle is safe here and nowhere else — and the command line
that starts such a helper process."""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
import sys
from typing import Any

__all__ = ["helper_command", "pack", "receive", "receive_blocking"]

_HEADER = struct.Struct("!I")


def helper_command(flag: str, *args: object) -> list[str]:
    """The command that starts this program as a helper (``flag``: ``--stream-worker``,
    ``--tap-forwarder``): in a packaged app the executable is StreamScope itself."""
    if getattr(sys, "frozen", False):
        return [sys.executable, flag, *map(str, args)]
    return [sys.executable, "-m", "streamscope", flag, *map(str, args)]


def pack(message: tuple[Any, ...]) -> bytes:
    """``message`` framed for the other end."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def receive(reader: asyncio.StreamReader) -> tuple[Any, ...] | None:
    """The next message, or ``None`` once the other end has gone."""
    try:
        head = await reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(head)
        message: tuple[Any, ...] = pickle.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    return message


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        try:
            part = sock.recv(size - len(data))
        except OSError:
            return None
        if not part:
            return None
        data += part
    return bytes(data)


def receive_blocking(sock: socket.socket) -> tuple[Any, ...] | None:
    """The next message on a blocking socket, or ``None`` once the other end has gone."""
    head = _exactly(sock, _HEADER.size)
    if head is None:
        return None
    data = _exactly(sock, _HEADER.unpack(head)[0])
    if data is None:
        return None
    message: tuple[Any, ...] = pickle.loads(data)
    return message
