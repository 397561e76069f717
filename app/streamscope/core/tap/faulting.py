"""Faults on cue through the tap (``streamscope tap --fault SPEC``): an exchange whose request
number the spec's cadence takes is forwarded through :class:`~streamscope.core.faults.live.
LiveFaults` — the client gets the failure the spec names, the recording hears what the client
was sent (so its capture replays what the client met), and a ``("faults", id, [...])``
message, before the exchange's ``end``, says what each fault did.

Only faulted exchanges take this path; the others keep the forwarder's own (reads joined while
the client is written). Here every :class:`~streamscope.core.faults.live.Send` is one write to
the client, never joined (``split-reads`` is one byte per write), a
:class:`~streamscope.core.faults.live.Wait` is silence, a
:class:`~streamscope.core.faults.live.Stop` ends the response — a clean end of the body or a
dropped connection — and upstream's body is read no further.

An ``http=`` fault answers without asking upstream (a provider's 429 means the request was not
run). A body upstream sent compressed (``Content-Encoding``) has no frames the tap can count:
the faults that name a frame are reported not applied, saying so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx

from streamscope.core.faults import FaultSpec
from streamscope.core.faults.live import LiveFaults, Send, Step, Stop, Wait
from streamscope.core.wire.dialects import AUTO, dialect_for_path

__all__ = ["FRAME_KINDS", "FaultCut", "faults_for", "relay_faulted", "replace_response"]

FRAME_KINDS = frozenset({"stall", "error", "garble", "drop-terminal", "slow"})
"""Kinds that find frames in the body (``cut`` too, when it names a frame)."""

Emit = Callable[[tuple[Any, ...]], None]
SendFn = Callable[[dict[str, Any]], Any]


class FaultCut(Exception):
    """A fault dropped the connection: the response is left unfinished."""


def faults_for(spec: FaultSpec | None, request_number: int, path: str) -> LiveFaults | None:
    """The live faults of request ``request_number`` (from 1), ``None`` when none applies."""
    if spec is None:
        return None
    chosen = spec.for_request(request_number)
    return LiveFaults(chosen, dialect_for_path(path) or AUTO) if chosen else None


async def replace_response(
    live: LiveFaults, xid: int, path: str, t0: float, send: SendFn, emit: Emit, stopping: bool
) -> bool:
    """Answer with an ``http=`` fault's response instead of asking upstream; whether it did."""
    replaced = live.replacement(dialect_for_path(path) or AUTO, time.monotonic() - t0)
    if replaced is None:
        return False
    status, headers, body = replaced
    emit(("head", xid, status, list(headers), time.monotonic()))
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    emit(("read", xid, body, time.monotonic()))
    emit(("faults", xid, live.describe()))
    emit(("end", xid, "eof", "", time.monotonic(), stopping))
    return True


def _encoded(response: httpx.Response) -> str | None:
    value = response.headers.get("content-encoding", "").strip().lower()
    return value if value and value != "identity" else None


def _frameless(live: LiveFaults, encoding: str) -> None:
    """A compressed body: the faults that name frames cannot strike (they say why)."""
    for fault in live.faults:
        if fault.kind in FRAME_KINDS or (fault.kind == "cut" and fault.frame is not None):
            live.refuse(fault, f"the body is {encoding}-encoded: its frames cannot be counted")


async def relay_faulted(
    live: LiveFaults,
    xid: int,
    response: httpx.Response,
    send: SendFn,
    emit: Emit,
    *,
    t0: float,
    headers: list[tuple[bytes, bytes]],
    stopping: Callable[[], bool],
) -> None:
    """Relay upstream's response through ``live`` (see the module docstring); raises
    :class:`FaultCut` when the client's connection must be dropped."""
    clock = time.monotonic
    emit(("head", xid, response.status_code, response.headers.multi_items(), clock()))
    delay = live.head_delay(clock() - t0)
    if delay:
        await asyncio.sleep(delay)
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    encoding = _encoded(response)
    if encoding is not None:
        _frameless(live, encoding)
    live.start(response.headers.get("content-type"))

    async def carry(steps: list[Step]) -> Stop | None:
        for step in steps:
            if isinstance(step, Send):
                if step.data:
                    await send({"type": "http.response.body", "body": step.data, "more_body": True})
                    emit(("read", xid, step.data, clock()))
            elif isinstance(step, Wait):
                await asyncio.sleep(step.seconds)
            else:
                return step
        return None

    def ended(kind: str, detail: str = "") -> None:
        emit(("faults", xid, live.describe()))
        emit(("end", xid, kind, detail, clock(), stopping()))

    stop: Stop | None = None
    try:
        async for chunk in response.stream:  # type: ignore[union-attr]
            if chunk and (stop := await carry(live.feed(chunk, clock() - t0))) is not None:
                break
        if stop is None:
            stop = await carry(live.finish(clock() - t0))
    except asyncio.CancelledError:
        live.finish(clock() - t0)
        ended("cancelled")
        raise
    except httpx.HTTPError as exc:
        detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
        await carry([s for s in live.finish(clock() - t0) if isinstance(s, Send)])
        ended("broken", detail)
        raise FaultCut(detail) from None
    live.finish(clock() - t0)
    if stop is not None and stop.how == "cut":
        fault = next((f for f in live.describe() if f.get("kind") == "cut"), {})
        detail = f"cut by the fault {fault.get('fault', 'cut')} (injected by StreamScope)"
        ended("broken", detail)
        raise FaultCut(detail)
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    ended("eof")
