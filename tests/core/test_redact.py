"""The one scrubber: every form of a secret, in bytes, text, values, headers, and in reads
as they arrive (a secret split anywhere across them)."""

from __future__ import annotations

import base64
import logging
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamscope.core.redact import (
    MASK,
    MIN_SECRET,
    SECRET_HEADERS,
    SECRET_QUERY_KEYS,
    Scrubber,
    ScrubLogFilter,
    encodings,
    mask_value,
    redact_headers,
    redact_url,
    scrub,
    secret_values,
)

KEY = "sk-live-Zq8Rt5Wm3Kp1"


def _stars(n: int) -> str:
    return "*" * n


@pytest.mark.parametrize(
    "echo",
    [
        KEY,
        quote(KEY, safe=""),
        quote_plus(KEY, safe=""),
        KEY.encode().hex(),
        KEY.encode().hex().upper(),
        *(base64.b64encode(b"?" * s + KEY.encode()).decode() for s in range(3)),
        *(base64.urlsafe_b64encode(b"\xff" * s + KEY.encode()).decode() for s in range(3)),
    ],
)
def test_every_form_of_the_secret_is_masked(echo: str) -> None:
    scrubber = Scrubber([KEY])
    text = f"before {echo} after"
    masked = scrubber.text(text)
    assert len(masked) == len(text)  # masked in place: lengths (and offsets) are kept
    assert masked.startswith("before ") and masked.endswith(" after")
    # left of a base64 form: at most the 3 characters mixed with what precedes it and the 3
    # mixed with what follows (padding included)
    assert masked.count("*") >= len(echo) - 6
    assert scrubber.bytes(text.encode()) == masked.encode()


def test_base64_cores_are_exactly_the_characters_made_of_the_secret() -> None:
    secret = b"ABCDEFGHIJKL"
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret)
        assert any(core in encoded for core in encodings(secret))


def test_a_secret_with_a_slash_is_found_json_escaped() -> None:
    scrubber = Scrubber(["ab/cd/efgh/ij"])
    assert scrubber.text('{"k":"ab\\/cd\\/efgh\\/ij"}') == '{"k":"' + _stars(16) + '"}'


def test_short_values_are_not_secrets() -> None:
    assert not Scrubber(["x" * (MIN_SECRET - 1)])
    assert Scrubber(["x" * MIN_SECRET])
    assert Scrubber().text("anything") == "anything"
    assert Scrubber().bytes(b"anything") == b"anything"


def test_values_are_scrubbed_recursively_keys_included() -> None:
    scrubber = Scrubber([KEY])
    value = {KEY: [KEY, ("x", KEY.encode())], "n": 3, "none": None}
    assert scrubber.value(value) == {
        _stars(len(KEY)): [_stars(len(KEY)), ("x", _stars(len(KEY)).encode())],
        "n": 3,
        "none": None,
    }


def test_headers_are_masked_by_name_and_by_value() -> None:
    scrubber = Scrubber([KEY])
    pairs = [
        ("Authorization", f"Bearer {KEY}"),
        ("x-echo-authorization", f"Bearer {KEY}"),
        ("set-cookie", "session=abcdefghijk"),
        ("content-type", "text/event-stream"),
    ]
    assert scrubber.headers(pairs) == (
        ("Authorization", "Bearer ***"),
        ("x-echo-authorization", f"Bearer {_stars(len(KEY))}"),
        ("set-cookie", MASK),
        ("content-type", "text/event-stream"),
    )


def test_the_secrets_of_a_request() -> None:
    headers = {
        "Authorization": "Bearer sk-aaaaaaaaaa",
        "Proxy-Authorization": "Basic dXNlcjpwYXNz",
        "x-api-key": "anthropic-key-1234",
        "x-goog-api-key": "gemini-key-5678",
        "api-key": "azure-key-9012",
        "Cookie": "session=cookievalue1",
        "X-Other": "not-a-secret-at-all",
    }
    url = "https://user:hunter2hunter2@host/v1?key=querykey123&token=tok-456789&x=plainvalue"
    assert set(secret_values(headers, url)) == {
        b"sk-aaaaaaaaaa",
        b"dXNlcjpwYXNz",
        b"anthropic-key-1234",
        b"gemini-key-5678",
        b"azure-key-9012",
        b"session=cookievalue1",
        b"querykey123",
        b"tok-456789",
        b"hunter2hunter2",
    }
    scrubber = Scrubber.for_request(headers, url, extra=["extra-secret-1"])
    assert b"extra-secret-1" in scrubber.secrets and b"plainvalue" not in scrubber.secrets
    for name in ("authorization", "proxy-authorization", "x-api-key", "x-goog-api-key",
                 "api-key", "cookie", "set-cookie"):  # fmt: skip
        assert name in SECRET_HEADERS
    for key in ("key", "api_key", "api-key", "apikey", "token", "access_token"):
        assert key in SECRET_QUERY_KEYS


def test_masking_of_shown_headers_and_urls() -> None:
    assert mask_value("Authorization", "Bearer abc") == "Bearer ***"
    assert mask_value("authorization", "Basic abc") == "Basic ***"
    assert mask_value("Authorization", "Token abc") == "Token ***"
    assert mask_value("x-api-key", "abc def") == MASK
    assert mask_value("X-Other", "abc") == "abc"
    assert redact_headers([("Cookie", "a=b"), ("Accept", "x")]) == {"Cookie": MASK, "Accept": "x"}
    assert redact_url("https://u:pw@h/p?key=k&api_key=a&apikey=b&token=t&access_token=c&q=1") == (
        "https://u:***@h/p?key=***&api_key=***&apikey=***&token=***&access_token=***&q=1"
    )
    assert redact_url("https://u@h/p") == "https://u@h/p"
    assert redact_url("https://h/p?q=1") == "https://h/p?q=1"


def test_scrub_masks_with_the_same_length() -> None:
    assert scrub(b"x sk-aaaaaaaaaa y", [b"sk-aaaaaaaaaa"]) == b"x " + b"*" * 13 + b" y"
    assert scrub(b"overlapping sk-aaaaaaaaaaaa", [b"sk-aaaaaaaaaa", b"aaaaaaaaaaaa"]) == (
        b"overlapping " + b"*" * 15
    )


# -- reads as they arrive ----------------------------------------------------------------------


def _stream(
    reads: list[bytes], scrubber: Scrubber, *, release_after: int | None = None
) -> list[tuple[float, bytes]]:
    stream = scrubber.stream()
    out: list[tuple[float, bytes]] = []
    for i, data in enumerate(reads):
        out += stream.feed(float(i), data)
        if release_after is not None and i == release_after:
            out += stream.release()
    return out + stream.close()


@given(st.data())
@settings(max_examples=200, deadline=None)
def test_a_secret_split_anywhere_across_reads_is_masked(data: st.DataObject) -> None:
    b64 = base64.b64encode(KEY.encode()).decode()
    body = f'data: {{"text":"the key {KEY} again {b64}"}}\n\n'.encode()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=8)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    release = data.draw(st.none() | st.integers(0, len(reads) - 1))
    out = _stream(reads, Scrubber([KEY]), release_after=release)
    joined = b"".join(d for _t, d in out)
    assert joined == Scrubber([KEY]).bytes(body)  # masked as a whole, nothing lost
    assert KEY.encode() not in joined
    assert [t for t, _d in out] == sorted(t for t, _d in out)  # in order, times kept
    if release is None:  # nothing released early: every read whole, same boundaries
        assert [len(d) for _t, d in out] == [len(r) for r in reads]


def test_a_read_that_may_begin_a_secret_is_held_until_the_next_says() -> None:
    stream = Scrubber([KEY]).stream()
    assert stream.feed(0.0, b"hello ") == [(0.0, b"hello ")]
    assert stream.feed(1.0, b"then sk-li") == []  # "sk-li" may begin the key
    assert stream.held
    out = stream.feed(2.0, KEY[5:].encode() + b" end")
    assert out == [(1.0, b"then " + b"*" * 5), (2.0, b"*" * (len(KEY) - 5) + b" end")]
    assert not stream.held


def test_release_writes_all_but_what_may_begin_a_secret() -> None:
    stream = Scrubber([KEY]).stream()
    assert stream.feed(0.0, b"quiet now, sk-li") == []
    assert stream.release() == [(0.0, b"quiet now, ")]
    assert stream.held  # "sk-li" waits for the next read, or the end
    assert stream.close() == [(0.0, b"sk-li")]
    assert stream.release() == []


def test_without_secrets_reads_pass_at_once() -> None:
    stream = Scrubber().stream()
    assert stream.feed(0.5, b"sk-li") == [(0.5, b"sk-li")]
    assert stream.close() == []


# -- log lines ---------------------------------------------------------------------------------


def test_the_log_filter_masks_what_it_learned(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("streamscope.test-redact")
    flt = ScrubLogFilter()
    log.addFilter(flt)
    try:
        with caplog.at_level(logging.INFO, logger="streamscope.test-redact"):
            log.info("before %s", KEY)
            flt.learn([KEY])
            log.info("turn finished: %s", f"in-stream error: Bearer {KEY}")
            try:
                raise ValueError(f"echoed {KEY}")
            except ValueError:
                log.exception("failed")
    finally:
        log.removeFilter(flt)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == f"before {KEY}"  # (not learned yet)
    assert messages[1] == f"turn finished: in-stream error: Bearer {_stars(len(KEY))}"
    assert KEY not in (caplog.records[2].exc_text or "")
    assert _stars(len(KEY)) in (caplog.records[2].exc_text or "")


# -- edges (each pins a choice a mutant once got away with) --------------------------------------


def test_edges_of_masking_shown_values() -> None:
    assert mask_value("Authorization", "Bearer two words") == "Bearer ***"
    assert redact_headers({"Authorization": "Bearer x", "Accept": "y"}) == {
        "Authorization": "Bearer ***",
        "Accept": "y",
    }
    assert redact_url("https://user:pa:ss@h/p") == "https://user:***@h/p"
    assert redact_url("https://user:p@ss@h/p") == "https://user:***@h/p"
    assert redact_url("https://h/p?key=abc&empty=") == "https://h/p?key=***&empty="


def test_edges_of_the_secrets_of_a_request() -> None:
    assert secret_values({"Authorization": "Token abcdefgh ijkl"}) == (b"abcdefgh ijkl",)
    assert secret_values({"x-api-key": "abcdefgh ijklmnop"}) == (b"abcdefgh ijklmnop",)
    assert secret_values({"x-api-key": "12345678"}) == (b"12345678",)  # MIN_SECRET is enough
    assert secret_values({"x-api-key": "1234567"}) == ()
    scrubber = Scrubber.for_request({}, "https://h/v1/models?key=querykey-1234")
    assert scrubber.secrets == (b"querykey-1234",)


def test_edges_of_the_forms() -> None:
    slashed = "ab/cd/efgh"
    assert Scrubber([slashed]).text(quote(slashed, safe="")) == "*" * 14  # ab%2Fcd%2Fefgh
    spaced = "ab cd/efgh"  # %20 and %2F: neither quote's default nor quote_plus writes it
    assert Scrubber([spaced]).text(quote(spaced, safe="")) == "*" * 14
    weird = "sk-~~~~>>>>????"  # its base64 has "+" and "/" at every alignment
    for shift in range(3):
        echo = base64.urlsafe_b64encode(b"\0" * shift + weird.encode()).decode()
        assert "-" in echo or "_" in echo
        assert Scrubber([weird]).text(echo).count("*") >= len(echo) - 6
    assert Scrubber(["12345678"]).text("a 12345678 b") == "a ******** b"  # 8 is a form too
    assert Scrubber(["aaaaaaaa"]).text("aaaaaaaaa") == "*********"  # overlapping occurrences


def test_the_longest_form_split_one_byte_before_its_end_is_caught() -> None:
    scrubber = Scrubber([KEY])
    hexed = KEY.encode().hex().encode()
    assert len(hexed) == max(len(p) for p in scrubber.patterns)
    stream = scrubber.stream()
    out = stream.feed(0.0, b"x " + hexed[:-1]) + stream.feed(1.0, hexed[-1:] + b" y")
    assert b"".join(d for _t, d in out) == b"x " + b"*" * len(hexed) + b" y"


def test_a_held_read_that_is_all_a_possible_beginning_stays_whole() -> None:
    stream = Scrubber([KEY]).stream()
    assert stream.feed(0.0, b"hello ") == [(0.0, b"hello ")]
    assert stream.feed(1.0, b"sk-li") == []
    assert stream.release() == []  # nothing but the possible beginning: no empty read
    assert stream.close() == [(1.0, b"sk-li")]
