"""The collector on the Qt thread keeps each collection small: soon after one that collected,
the next check comes; a full collection only once a quarter of what lives has been promoted."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streamscope.ui.shell.gc_guard import BUSY_MS, IDLE_MS, MainThreadCollector


@pytest.fixture
def collector(qapp: object) -> Iterator[MainThreadCollector]:
    threshold = gc.get_threshold()
    gc.collect()
    made = MainThreadCollector()
    try:
        yield made
    finally:
        made.stop()
        gc.set_threshold(*threshold)


def cycles(n: int) -> list[list[object]]:
    out: list[list[object]] = []
    for _ in range(n):
        cycle: list[object] = []
        cycle.append(cycle)
        out.append(cycle)
    return out


def test_checks_come_soon_after_one_that_collected(collector: MainThreadCollector) -> None:
    timer = collector._timer
    assert timer.isSingleShot() and timer.interval() == IDLE_MS
    cycles(gc.get_threshold()[0] + 10)
    collector._on_timer_timeout()
    assert timer.isActive() and timer.interval() == BUSY_MS == 40
    collector._on_timer_timeout()  # nothing over the threshold now
    assert timer.interval() == IDLE_MS == 500


def test_a_full_collection_waits_for_a_quarter_promoted(collector: MainThreadCollector) -> None:
    gc.set_threshold(10, 1, 1)
    collector._long_lived = 1_000_000  # (a big heap: little promoted is not worth a full one)
    collector._pending = 0
    kept = []
    for _ in range(9):  # every collection of gen 1 promotes what survives
        kept.append(cycles(50))
        assert collector.check() in (0, 1)
    assert gc.get_count()[2] > 1  # (the threshold alone would have collected everything)
    assert 0 < collector._pending < 1_000_000 // 4
    collector._long_lived = collector._pending * 4 - 1  # now a quarter has been promoted
    for _ in range(3):
        kept.append(cycles(50))
        if collector.check() == 2:
            break
    else:
        pytest.fail("no full collection once a quarter was promoted")
    assert collector._pending == 0
    # what survived it, counted right after it (a thread another test left may allocate a
    # few objects in between: the count is the heap's, not the old estimate's)
    assert abs(collector._long_lived - len(gc.get_objects(generation=2))) <= 64
