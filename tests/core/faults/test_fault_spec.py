"""Fault specs: every kind and cadence parses to the values it names, and every kind of
garbage is refused with the offending part and what was expected there."""

from __future__ import annotations

import pytest

from streamscope.core.faults import Cadence, Fault, FaultSpecError, parse_fault_spec


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("cut@frame:3", Fault("cut", frame=3)),
        ("cut@byte:0", Fault("cut", byte=0)),
        ("cut@byte:812", Fault("cut", byte=812)),
        ("stall@frame:2=40", Fault("stall", frame=2, seconds=40.0)),
        ("stall@frame:0=0.25", Fault("stall", frame=0, seconds=0.25)),
        ("drop-terminal", Fault("drop-terminal")),
        ("error@frame:5", Fault("error", frame=5)),
        ("garble@frame:1", Fault("garble", frame=1, garble="json")),
        ("garble@frame:1=json", Fault("garble", frame=1, garble="json")),
        ("garble@frame:1=utf8", Fault("garble", frame=1, garble="utf8")),
        ("http=429", Fault("http", status=429)),
        ("http=429:retry-after=1", Fault("http", status=429, retry_after=1)),
        ("http=429:retry-after=0", Fault("http", status=429, retry_after=0)),
        ("http=500", Fault("http", status=500)),
        ("http=503:retry-after=20", Fault("http", status=503, retry_after=20)),
        ("slow=40", Fault("slow", ms=40)),
        ("split-reads", Fault("split-reads")),
        ("merge-reads", Fault("merge-reads")),
        ("delay-headers=1.5", Fault("delay-headers", seconds=1.5)),
    ],
)
def test_each_kind_parses_to_its_values(text: str, fault: Fault) -> None:
    spec = parse_fault_spec(text)
    assert spec.faults == (fault,)
    assert spec.faults[0].cadence == Cadence("always")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("stall@frame:2=40", "stall@frame:2=40"),
        ("stall@frame:2=0.25", "stall@frame:2=0.25"),
        ("garble@frame:1", "garble@frame:1=json"),
        ("http=429:retry-after=1", "http=429:retry-after=1"),
        ("delay-headers=2.0", "delay-headers=2"),
        ("cut@byte:9", "cut@byte:9"),
    ],
)
def test_labels_are_canonical(text: str, label: str) -> None:
    assert parse_fault_spec(text).faults[0].label == label


def test_cadences_pick_the_requests() -> None:
    spec = parse_fault_spec("slow=10, cut@frame:3/every=2,http=429/next, merge-reads/always")
    assert [f.cadence for f in spec.faults] == [
        Cadence("always"),
        Cadence("every", 2),
        Cadence("next"),
        Cadence("always"),
    ]
    kinds = {n: [f.kind for f in spec.for_request(n)] for n in range(1, 5)}
    assert kinds == {
        1: ["slow", "http", "merge-reads"],
        2: ["slow", "cut", "merge-reads"],
        3: ["slow", "merge-reads"],
        4: ["slow", "cut", "merge-reads"],
    }
    assert str(spec) == "slow=10,cut@frame:3/every=2,http=429/next,merge-reads"
    every3 = parse_fault_spec("error@frame:1/every=3")
    assert [n for n in range(1, 10) if every3.for_request(n)] == [3, 6, 9]
    with pytest.raises(ValueError, match="counts from 1"):
        spec.for_request(0)


@pytest.mark.parametrize(
    ("text", "token", "expected"),
    [
        ("", "", "one of cut@frame:N"),
        ("   ", "   ", "one of cut@frame:N"),
        ("explode", "explode", "one of cut@frame:N"),
        ("cut@frme:3", "frme:3", "frame:N or byte:N after cut@"),
        ("cut@frame", "frame", "frame:N or byte:N after cut@"),
        ("cut@frame:x", "x", "frame:N with N a whole number >= 0"),
        ("cut@frame:-1", "-1", "frame:N with N a whole number >= 0"),
        ("cut@frame:3=2", "frame:3=2", "cut@frame:N with no value"),
        ("stall@frame:2", "frame:2", "stall@frame:N=S"),
        ("stall@frame:2=0", "0", "seconds: a number > 0"),
        ("stall@frame:2=1e3", "1e3", "seconds: a number > 0"),
        ("stall@frame:2=inf", "inf", "seconds: a number > 0"),
        ("stall@frame:2=86401", "86401", "at most 86400"),
        ("stall@byte:2=1", "byte:2", "frame:N after stall@"),
        ("boom@frame:1", "boom@", "cut@, stall@, error@ or garble@"),
        ("error@frame:1=x", "frame:1=x", "error@frame:N with no value"),
        ("garble@frame:1=latin1", "latin1", "json or utf8"),
        ("garble@frame:1=", "", "json or utf8"),
        ("http=200", "200", "CODE from 400 to 599"),
        ("http=600", "600", "CODE from 400 to 599"),
        ("http", "http", "http=… with a value"),
        ("http=429:retry=1", "retry=1", "retry-after=R after http=CODE:"),
        ("http=429:retry-after=1.5", "1.5", "retry-after=R in whole seconds"),
        ("http=429:retry-after=", "", "retry-after=R in whole seconds"),
        ("slow=0", "0", "slow=MS: a whole number of milliseconds >= 1"),
        ("slow=fast", "fast", "slow=MS"),
        ("slow", "slow", "slow=… with a value"),
        ("split-reads=1", "split-reads=1", "split-reads takes no value"),
        ("delay-headers=-1", "-1", "seconds: a number > 0"),
        ("cut@frame:3/sometimes", "sometimes", "always, next or every=K after /"),
        ("cut@frame:3/every=0", "0", "every=K with K a whole number >= 1"),
        ("cut@frame:3/every=2/next", "every=2/next", "always, next or every=K after /"),
        ("slow=10,,cut@frame:1", "", "a fault between the commas"),
        ("slow=10,", "", "a fault between the commas"),
        ("cut@frame:1,cut@byte:9", "cut@byte:9", "one cut fault per spec (cut@frame:1 is there)"),
        ("slow=1,slow=2", "slow=2", "one slow fault per spec"),
        ("cut@frame:1,drop-terminal", "drop-terminal", "one of cut, error, drop-terminal"),
        ("error@frame:1/next,cut@byte:2/every=2", "cut@byte:2/every=2", "one of cut, error"),
        ("split-reads,merge-reads", "merge-reads", "split-reads or merge-reads, not both"),
        ("cut@frame:99999999999999", "99999999999999", "frame:N with N a whole number"),
    ],
)
def test_garbage_names_the_bad_part(text: str, token: str, expected: str) -> None:
    with pytest.raises(FaultSpecError) as info:
        parse_fault_spec(text)
    err = info.value
    assert err.token == token
    assert expected in err.expected
    assert err.spec == text
    assert str(err) == f"bad fault spec {text!r}: at {token!r}, expected {err.expected}"


def test_a_huge_spec_is_refused_without_echoing_it() -> None:
    with pytest.raises(FaultSpecError) as info:
        parse_fault_spec("slow=1," * 1000)
    assert info.value.expected == "at most 4096 characters"
    assert len(str(info.value)) < 200


def test_http_replaces_and_other_faults_may_join_it() -> None:
    spec = parse_fault_spec("http=503:retry-after=2/next,stall@frame:1=3,delay-headers=0.5")
    assert [f.label for f in spec.faults] == [
        "http=503:retry-after=2",
        "stall@frame:1=3",
        "delay-headers=0.5",
    ]
