"""The upstream body read straight from its connection (core/tap/upstream_body.py): the
framing decoded from whole network reads, byte for byte, wherever the reads split it."""

from __future__ import annotations

import asyncio

import h11
import httpcore
import httpx
import pytest

from streamscope.core.tap.upstream_body import RawBody, raw_body

CHUNKED = (
    b"5;name=value\r\nhello\r\n"  # (an extension: dropped)
    b"1A \r\n" + b"x" * 26 + b"\r\n"  # (upper-case hex, space before the CRLF)
    b"3\r\n\r\n\r\r\n"  # (chunk data that looks like framing)
    b"0\r\nx-trailer: 1\r\nx-other: 2\r\n\r\n"  # (trailers: dropped)
)
CHUNKED_BODY = b"hello" + b"x" * 26 + b"\r\n\r"


class Network(httpcore.AsyncNetworkStream):
    """A network stream that gives ``reads`` one per read, then the close."""

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = list(reads)
        self.asked = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.asked += 1
        return self.reads.pop(0) if self.reads else b""


def _all(body: RawBody) -> list[bytes]:
    async def run() -> list[bytes]:
        out = []
        while (data := await body.read()) is not None:
            out.append(data)
        return out

    return asyncio.run(run())


def test_a_chunked_body_with_extensions_and_trailers_comes_out_exact() -> None:
    body = RawBody(Network([CHUNKED]), b"", False, chunked=True)
    assert _all(body) == [CHUNKED_BODY]
    assert body.received == len(CHUNKED_BODY)


def test_every_split_of_a_chunked_body_across_reads_gives_the_same_bytes() -> None:
    for at in range(len(CHUNKED) + 1):
        for buffered in (b"", CHUNKED[:at]):  # (h11's bytes past the head, or a first read)
            reads = [CHUNKED[at:]] if buffered else [CHUNKED[:at], CHUNKED[at:]]
            reads = [read for read in reads if read]  # (an empty read is the close)
            body = RawBody(Network(reads), buffered, False, chunked=True)
            assert b"".join(_all(body)) == CHUNKED_BODY, at


def test_one_read_of_many_chunks_is_one_read_and_a_split_chunk_comes_as_it_arrives() -> None:
    one = b"3\r\nabc\r\n3\r\ndef\r\n6\r\nghi"
    two = b"jkl\r\n0\r\n\r\n"
    network = Network([one, two, b"never read"])
    assert _all(RawBody(network, b"", False, chunked=True)) == [b"abcdefghi", b"jkl"]
    assert network.reads == [b"never read"]  # (the body's end is its last chunk, not a close)


def test_a_chunked_body_cut_mid_chunk_gives_what_came_then_says_so() -> None:
    network = Network([b"a\r\n01234", b"56"])
    body = RawBody(network, b"", False, chunked=True)

    async def run() -> list[bytes]:
        out = []
        with pytest.raises(httpcore.RemoteProtocolError) as caught:
            while (data := await body.read()) is not None:
                out.append(data)
        assert str(caught.value) == (
            "peer closed connection without sending complete message body (incomplete chunked read)"
        )
        return out

    assert asyncio.run(run()) == [b"01234", b"56"]
    assert body.received == 7


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (b"zz\r\n", "illegal chunk header: b'zz'"),
        (b"0x5\r\nhello\r\n", "illegal chunk header: b'0x5'"),
        (b"+5\r\nhello\r\n", "illegal chunk header: b'+5'"),
        (b"2\r\nabXY", "malformed chunk footer: b'XY' (expected b'\\r\\n')"),
    ],
)
def test_malformed_chunk_framing_is_a_protocol_error(wire: bytes, message: str) -> None:
    with pytest.raises(httpcore.RemoteProtocolError) as caught:
        _all(RawBody(Network([wire]), b"", False, chunked=True))
    assert str(caught.value) == message


def test_a_content_length_body_ends_at_its_length() -> None:
    network = Network([b"6789", b"abcdef", b"next response"])
    body = RawBody(network, b"012345", False, length=12)
    assert _all(body) == [b"012345", b"6789", b"ab"]
    assert network.reads == [b"next response"]
    assert _all(RawBody(Network([b"x"]), b"", False, length=0)) == []


def test_a_content_length_body_cut_short_says_how_much_came() -> None:
    body = RawBody(Network([b"6789"]), b"012345", False, length=12)
    with pytest.raises(httpcore.RemoteProtocolError) as caught:
        _all(body)
    assert str(caught.value) == (
        "peer closed connection without sending complete message body "
        "(received 10 bytes, expected 12)"
    )


def test_a_close_delimited_body_is_every_read_up_to_the_close() -> None:
    assert _all(RawBody(Network([b"b", b"c"]), b"a", False)) == [b"a", b"b", b"c"]
    network = Network([b"not read"])  # (h11 had seen the close already)
    assert _all(RawBody(network, b"all", True)) == [b"all"]
    assert network.asked == 0


def test_a_response_not_on_an_http11_connection_is_left_to_httpx() -> None:
    async def run() -> tuple[object, object]:
        transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"x"))
        async with httpx.AsyncClient(transport=transport) as client:
            request = client.build_request("GET", "http://upstream.test/")
            streamed = await client.send(request, stream=True)
            try:
                return raw_body(streamed), await streamed.aread()
            finally:
                await streamed.aclose()

    assert asyncio.run(run()) == (None, b"x")


HEAD = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"


def _h11_after_head(first_read: bytes) -> tuple[h11.Connection, bytes]:
    """A client-side h11 connection that has read a response head from ``first_read`` (as
    httpcore leaves it), and the body bytes it holds past the head."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("host", "t")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(first_read)
    assert isinstance(conn.next_event(), h11.Response)
    return conn, conn.trailing_data[0]


@pytest.mark.parametrize(
    ("with_head", "later"),
    [
        (b"", [CHUNKED]),  # the body after the head, in reads of its own
        (CHUNKED, []),  # the whole body came with the head (h11 still holds it)
        (CHUNKED[:21], [CHUNKED[21:]]),  # with the head: a chunk and its footer, no more
        (CHUNKED[:19], [CHUNKED[19:]]),  # with the head: a chunk without its footer
    ],
)
def test_a_clean_chunked_end_leaves_h11_done_so_the_connection_is_pooled(
    with_head: bytes, later: list[bytes]
) -> None:
    conn, buffered = _h11_after_head(HEAD + with_head)
    body = RawBody(Network(later), buffered, False, chunked=True, h11_state=conn)
    assert b"".join(_all(body)) == CHUNKED_BODY
    assert (conn.our_state, conn.their_state) == (h11.DONE, h11.DONE)


@pytest.mark.parametrize(
    ("with_head", "later"),
    [
        (CHUNKED[:17], [CHUNKED[17:]]),  # with the head: half a chunk (h11 would need the rest)
        (CHUNKED[:23], [CHUNKED[23:]]),  # with the head: half a chunk-size line
        (b"", [CHUNKED + b"HTTP/1.1 200 OK\r\n"]),  # bytes after the body's end
    ],
)
def test_otherwise_h11_is_left_unfinished_and_the_connection_closes(
    with_head: bytes, later: list[bytes]
) -> None:
    conn, buffered = _h11_after_head(HEAD + with_head)
    body = RawBody(Network(later), buffered, False, chunked=True, h11_state=conn)
    assert b"".join(_all(body)) == CHUNKED_BODY
    assert conn.their_state is not h11.DONE
