"""The client's reaction, from hand-made observations: retries and their intervals, a
Retry-After honoured or not, a client that hung up, one still reading, one that took a body
without its terminal for a whole answer."""

from __future__ import annotations

from typing import Any

from streamscope.core.faults import ObservedExchange, client_reactions


def _fault(kind: str, label: str, at: float | None, **extra: Any) -> dict[str, Any]:
    return {"fault": label, "kind": kind, "when": "always", "applied": True, "at": at} | extra


RATE_LIMITED = _fault("http", "http=429:retry-after=1", 0.002, status=429, retry_after=1)


def test_three_attempts_after_a_429_honour_retry_after() -> None:
    seen = [
        ObservedExchange("a", 10.0, "h1", (RATE_LIMITED,), server_ended=10.002),
        ObservedExchange("other", 10.5, "h2"),
        ObservedExchange("b", 11.0, "h1", server_ended=11.3, client_closed=11.3),
        ObservedExchange("c", 13.1, "h1", server_ended=13.4, client_closed=13.4),
    ]
    report = client_reactions(seen, now=20.0)
    assert report["exchanges"] == [
        {
            "exchange": "a",
            "attempt_ids": ["a", "b", "c"],
            "fault": "http=429:retry-after=1",
            "kinds": ["http"],
            "fault_at": 10.002,
            "closed_after": None,
            "still_open_after": None,
            "read_to_end": True,
            "retries": 2,
            "attempts": [0.0, 1.0, 3.1],
            "intervals": [1.0, 2.1],
            "retry_after": 1.0,
            "retry_after_honoured": True,
            "finished_as_if_whole": None,
        }
    ]
    assert report["summary"] == {
        "faulted": 1,
        "by_kind": {"http": 1},
        "closed": 0,
        "still_open": 0,
        "read_to_end": 1,
        "retried": 1,
        "retries": 2,
        "retry_after_honoured": 1,
        "retry_after_ignored": 0,
        "finished_as_if_whole": 0,
    }


def test_a_retry_sooner_than_retry_after_is_not_honoured_and_chains_through_faults() -> None:
    seen = [  # every attempt rate-limited: the second retry came 0.4 s after a Retry-After of 1
        ObservedExchange("a", 0.0, "h", (RATE_LIMITED,), server_ended=0.01),
        ObservedExchange("b", 1.2, "h", (RATE_LIMITED,), server_ended=1.21),
        ObservedExchange("c", 1.6, "h", (RATE_LIMITED,), server_ended=1.61),
    ]
    report = client_reactions(seen, now=5.0)
    (chain,) = report["exchanges"]  # b and c belong to a's chain, not reports of their own
    assert (chain["attempt_ids"], chain["intervals"]) == (["a", "b", "c"], [1.2, 0.4])
    assert chain["retry_after_honoured"] is False
    assert report["summary"]["retry_after_ignored"] == 1


def test_the_window_ends_a_chain() -> None:
    seen = [
        ObservedExchange("a", 0.0, "h", (RATE_LIMITED,), server_ended=0.01),
        ObservedExchange("later", 61.0, "h"),
    ]
    (chain,) = client_reactions(seen, now=70.0)["exchanges"]
    assert (chain["retries"], chain["attempts"], chain["retry_after_honoured"]) == (0, [0.0], None)
    (short,) = client_reactions(seen, now=70.0, window=100.0)["exchanges"]
    assert short["retries"] == 1
    # the window runs from the attempt before, not from the first: back-off may grow
    spaced = [
        ObservedExchange("a", 0.0, "h", (RATE_LIMITED,), server_ended=0.01),
        ObservedExchange("b", 40.0, "h"),
        ObservedExchange("c", 80.0, "h"),
    ]
    (chain,) = client_reactions(spaced, now=90.0)["exchanges"]
    assert chain["intervals"] == [40.0, 40.0]


def test_a_client_that_hangs_up_and_one_still_reading_under_a_stall() -> None:
    stall = _fault("stall", "stall@frame:3=40", 0.3, frame=3, byte=400, seconds=40.0)
    seen = [
        ObservedExchange("timeout", 5.0, "h1", (stall,), client_closed=15.3),
        ObservedExchange("patient", 6.0, "h2", (stall,)),
    ]
    report = client_reactions(seen, now=20.0)
    timeout, patient = report["exchanges"]
    assert (timeout["closed_after"], timeout["still_open_after"], timeout["read_to_end"]) == (
        10.0,
        None,
        False,
    )
    assert (patient["closed_after"], patient["still_open_after"], patient["read_to_end"]) == (
        None,
        13.7,
        False,
    )
    assert report["summary"] | {"by_kind": None} == {
        "faulted": 2,
        "by_kind": None,
        "closed": 1,
        "still_open": 1,
        "read_to_end": 0,
        "retried": 0,
        "retries": 0,
        "retry_after_honoured": 0,
        "retry_after_ignored": 0,
        "finished_as_if_whole": 0,
    }
    assert report["summary"]["by_kind"] == {"stall": 2}


def test_drop_terminal_finished_as_if_whole_or_noticed() -> None:
    dropped = _fault("drop-terminal", "drop-terminal", 1.5, frame=9, byte=900, signal="[DONE]")
    seen = [
        # read to the server's clean close, never asked again: took it for a whole answer
        ObservedExchange("fooled", 0.0, "h1", (dropped,), server_ended=1.5, client_closed=1.5),
        # read to the close, then retried: it noticed
        ObservedExchange("noticed", 2.0, "h2", (dropped,), server_ended=3.5, client_closed=3.5),
        ObservedExchange("again", 4.0, "h2"),
        # hung up before the server's close
        ObservedExchange("early", 10.0, "h3", (dropped,), server_ended=11.5, client_closed=11.0),
    ]
    report = client_reactions(seen, now=30.0)
    whole = {r["exchange"]: r["finished_as_if_whole"] for r in report["exchanges"]}
    assert whole == {"fooled": True, "noticed": False, "early": False}
    closed = {r["exchange"]: r["closed_after"] for r in report["exchanges"]}
    assert closed == {"fooled": 0.0, "noticed": 0.0, "early": -0.5}
    assert report["summary"]["finished_as_if_whole"] == 1


def test_unfaulted_and_unapplied_exchanges_make_no_report() -> None:
    skipped = {"fault": "cut@frame:30", "kind": "cut", "applied": False, "why": "12 frames"}
    seen = [ObservedExchange("a", 0.0, "h"), ObservedExchange("b", 1.0, "h", (skipped,))]
    report = client_reactions(seen, now=2.0)
    assert report["exchanges"] == []
    assert report["summary"]["faulted"] == 0


def test_slow_is_timed_from_the_arrival_and_the_input_order_does_not_matter() -> None:
    slow = _fault("slow", "slow=40", None, ms=40)
    seen = [
        ObservedExchange("b", 3.0, "h"),
        ObservedExchange("a", 1.0, "h", (slow,), server_ended=2.0, client_closed=2.0),
    ]
    (chain,) = client_reactions(seen, now=4.0)["exchanges"]
    assert (chain["fault_at"], chain["closed_after"], chain["attempts"]) == (1.0, 1.0, [0.0, 2.0])
