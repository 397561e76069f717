"""How the tap's forwarder passes bodies (core.tap.bodies), with a fake ASGI send/receive:
a read that finds the client idle is written at once and alone, reads that queue behind a
write leave as one; a request body past the recording's limit is cut for the recording
only, and streamed to the upstream whole."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamscope.core.tap import bodies
from streamscope.core.tap.bodies import ClientWriter, read_request


class Client:
    """A fake ASGI ``send`` for the body: records each write; the write numbered ``hold_at``
    waits until ``drained`` is set (a client whose socket is full)."""

    def __init__(self, hold_at: int | None = None) -> None:
        self.writes: list[bytes] = []
        self.hold_at = hold_at
        self.drained = asyncio.Event()
        self.calls = 0

    async def send(self, message: dict[str, Any]) -> None:
        assert message == {"type": "http.response.body", "body": message["body"], "more_body": True}
        self.calls += 1
        if self.calls - 1 == self.hold_at:
            await self.drained.wait()
        self.writes.append(message["body"])


def test_a_read_that_finds_the_client_idle_leaves_at_once_and_alone() -> None:
    async def run() -> list[list[bytes]]:
        client = Client()
        out = ClientWriter(client.send)
        seen = []
        for chunk in (b"one", b"two", b"three"):
            await out.put(chunk)
            seen.append(list(client.writes))  # (written before put returned)
            await asyncio.sleep(0)  # the next read comes in a later turn of the loop
        await out.close()
        return seen

    assert asyncio.run(run()) == [[b"one"], [b"one", b"two"], [b"one", b"two", b"three"]]


def test_reads_of_one_burst_leave_as_one_write_after_the_first() -> None:
    """Reads taken in the same turn of the loop (one network read's worth): the first goes
    at once, the rest together once the reader yields; each is put (recorded) on its own."""

    async def run() -> tuple[list[bytes], list[bytes], int]:
        client = Client()
        out = ClientWriter(client.send)
        for i in range(5):
            await out.put(b"r%d " % i)
        first = list(client.writes)
        await asyncio.sleep(0)
        await out.close()
        return first, client.writes, out.writes

    first, writes, count = asyncio.run(run())
    assert first == [b"r0 "]
    assert writes == [b"r0 ", b"r1 r2 r3 r4 "]
    assert count == 2


def test_reads_that_queue_behind_a_slow_write_leave_as_one() -> None:
    async def run() -> tuple[list[bytes], list[bytes]]:
        client = Client(hold_at=1)  # the second write finds the client's socket full
        out = ClientWriter(client.send)
        for chunk in (b"a", b"b", b"c"):  # one burst: "a" at once, "bc" queued
            await out.put(chunk)
        for chunk in (b"d", b"e", b"f"):  # later turns, while "bc" waits for the client
            await asyncio.sleep(0)
            await out.put(chunk)
        held = list(client.writes)
        client.drained.set()
        await out.close()
        return held, client.writes

    held, writes = asyncio.run(run())
    assert held == [b"a"]
    assert writes == [b"a", b"bc", b"def"]


def test_the_reader_waits_for_the_client_only_past_the_write_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bodies, "CLIENT_WRITE_AHEAD", 10)

    async def run() -> tuple[list[bytes], list[bytes]]:
        client = Client()
        out = ClientWriter(client.send)
        await out.put(b"x" * 4)  # written at once
        await out.put(b"y" * 4)
        await out.put(b"y" * 4)  # 8 bytes queued: within the 10 allowed ahead
        await out.room()  # (returns at once: the writer has not had its turn)
        within = list(client.writes)
        await out.put(b"y" * 4)  # 12: past it
        await out.room()  # waits for the writer to take the queue
        past = list(client.writes)
        await out.close()
        return within, past

    within, past = asyncio.run(run())
    assert within == [b"xxxx"]
    assert past == [b"xxxx", b"y" * 12]


# -- request bodies ---------------------------------------------------------------------------


def _receiver(pieces: list[bytes]) -> Any:
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.Future()  # (the client stays connected)
        raise AssertionError

    return receive


async def _whole(body: bodies.RequestBody) -> bytes:
    return b"".join([piece async for piece in body.upstream()])


def test_a_body_within_the_limit_is_kept_whole_for_the_recording() -> None:
    async def run() -> tuple[bytes, bool, bytes]:
        body = await read_request(_receiver([b"abc", b"def", b"gh"]), limit=8)
        assert body is not None
        try:
            return body.head, body.truncated, await _whole(body)
        finally:
            body.close()

    assert asyncio.run(run()) == (b"abcdefgh", False, b"abcdefgh")


def test_a_longer_body_is_cut_for_the_recording_and_streamed_whole() -> None:
    async def run() -> tuple[bytes, bool, bytes, int]:
        pieces = [b"0123", b"4567", b"89ab", b"cdef"]
        received = 0
        receive = _receiver(pieces)

        async def counting() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            received += 1
            return message  # type: ignore[no-any-return]

        body = await read_request(counting, limit=6)
        assert body is not None
        before = received  # (what was read before the exchange starts)
        try:
            return body.head, body.truncated, await _whole(body), before
        finally:
            body.close()

    assert asyncio.run(run()) == (b"012345", True, b"0123456789abcdef", 2)


def test_a_body_of_exactly_the_limit_is_not_cut() -> None:
    async def run() -> tuple[bytes, bool]:
        body = await read_request(_receiver([b"0123", b"45", b""]), limit=6)
        assert body is not None
        body.close()
        return body.head, body.truncated

    assert asyncio.run(run()) == (b"012345", False)


def test_a_client_hanging_up_while_sending_is_no_exchange() -> None:
    async def run() -> object:
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": b"part", "more_body": True},
            {"type": "http.disconnect"},
        ]

        async def receive() -> dict[str, Any]:
            return messages.pop(0)

        return await read_request(receive)

    assert asyncio.run(run()) is None
