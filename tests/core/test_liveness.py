"""LivenessWatch: silences, the recent rate and the client's timer, on a made-up clock."""

from __future__ import annotations

from array import array
from dataclasses import replace

import pytest

from streamscope.core.turn.liveness import (
    GAP_SAMPLES,
    Arrivals,
    LivenessWatch,
    Quiet,
    Silence,
    format_span,
)
from streamscope.core.turn.model import Timings, TurnDelta
from streamscope.core.turn.pipeline import StreamPipeline
from streamscope.core.turn.progress import FrameKind, FrameRows, Progress, ProgressEncoder

K = FrameKind


def batch(
    t: float,
    kinds: tuple[int, ...] = (),
    *,
    progress: int | None = None,
    first_byte: float | None = None,
    read: bool = True,
) -> Progress:
    """What arrived in one read at ``t``: frames of ``kinds``; the reducer's counters."""
    rows = FrameRows()
    rows.times.extend(array("d", [t] * len(kinds)))
    rows.kinds.extend(array("B", kinds))
    delta = None
    if progress is not None or first_byte is not None:
        delta = TurnDelta(
            progress=progress or 0,
            timings=Timings(
                request_sent=0.0, first_byte=first_byte, last_token=t if progress else None
            ),
        )
    return Progress(reads=[(b"x", t)] if read else [], rows=rows, delta=delta)


def stalled_after_four() -> LivenessWatch:
    """A delta every 0.25 s from 0.25 to 1.0, then nothing (like ``demo-stall``)."""
    watch = LivenessWatch(0.0, first_byte_timeout=300.0, idle_timeout=300.0)
    watch.add(batch(0.25, (K.META, K.TEXT), progress=1, first_byte=0.25))
    for i in (2, 3, 4):
        watch.add(batch(0.25 * i, (K.TEXT,), progress=i, first_byte=0.25))
    return watch


def test_a_stall_is_no_data_from_the_last_frame_counting_up() -> None:
    watch = stalled_after_four()
    assert watch.threshold() == 2.0  # 4 x 0.25 s median gap is under the 2 s floor
    assert watch.at(2.999).silence is None
    assert watch.at(2.999).words() == []
    live = watch.at(3.0)
    assert live.silence == Silence(Quiet.NO_DATA, 1.0, 2.0)
    assert live.words() == ["no data for 2 s", "idle timeout in 4 min 58 s"]
    assert watch.at(13.5).words() == ["no data for 12 s", "idle timeout in 4 min 48 s"]
    assert watch.at(13.5).elapsed == 13.5
    assert watch.at(300.5).words() == ["no data for 4 min 59 s", "idle timeout in 1 s"]
    assert watch.at(302.0).timeout_in == 0.0


def test_the_rate_counts_the_last_two_seconds_and_falls_to_zero() -> None:
    watch = stalled_after_four()
    assert watch.at(1.0).rate == 4.0  # 4 deltas in the first second (the window starts at t0)
    assert watch.at(2.0).rate == 2.0  # 4 in (0, 2]
    assert watch.at(2.5).rate == 1.0  # 2 in (0.5, 2.5]
    assert watch.at(2.75).rate == 0.5
    assert watch.at(3.0).rate == 0.0
    assert watch.at(60.0).rate == 0.0


def test_keepalives_only_after_the_opening_frame() -> None:
    """``demo-keepalive``: the role chunk, then a comment a second: bytes, no progress."""
    watch = LivenessWatch(0.0, first_byte_timeout=300.0, idle_timeout=300.0)
    watch.add(batch(0.25, (K.META,), first_byte=0.25))
    for t in (1.0, 2.0):
        watch.add(batch(t, (K.COMMENT,)))
    assert watch.at(2.125).silence is None  # 1.875 s since the role chunk
    watch.add(batch(3.0, (K.COMMENT,)))
    live = watch.at(4.5)
    assert live.silence == Silence(Quiet.KEEPALIVES, 0.25, 4.25)
    # the idle timer runs from the first byte: keep-alives do not reset it
    assert live.words() == ["keep-alives only for 4 s", "idle timeout in 4 min 56 s"]
    assert live.rate == 0.0
    # the answer starts: moving again
    watch.add(batch(4.75, (K.TEXT,), progress=1, first_byte=0.25))
    assert watch.at(5.0).silence is None
    assert watch.at(5.0).rate == 0.5  # 1 delta in (3, 5]
    # silence after it has no keep-alives in it: no data
    assert watch.at(7.0).words() == ["no data for 2 s", "idle timeout in 4 min 58 s"]


def test_before_the_first_byte_the_first_byte_timer_runs() -> None:
    watch = LivenessWatch(10.0, first_byte_timeout=60.0, idle_timeout=300.0)
    assert watch.at(11.5).silence is None
    live = watch.at(12.5)
    assert live.silence == Silence(Quiet.NO_DATA, 10.0, 2.5)
    assert live.words() == ["no data for 2 s", "first-byte timeout in 58 s"]
    assert (live.timeout, live.timeout_in) == ("first-byte", 57.5)


def test_without_timeouts_there_is_no_countdown() -> None:
    watch = LivenessWatch(0.0)
    assert watch.at(5.0).words() == ["no data for 5 s"]


def test_a_slow_stream_sets_a_longer_threshold() -> None:
    """A delta every 1.5 s: silence only after 4 x 1.5 s."""
    watch = LivenessWatch(0.0)
    for i in range(1, 6):
        watch.add(batch(1.5 * i, (K.TEXT,), progress=i, first_byte=1.5))
    assert watch.threshold() == 6.0
    assert watch.at(7.5 + 5.75).silence is None
    assert watch.at(7.5 + 6.0).silence == Silence(Quiet.NO_DATA, 7.5, 6.0)


def test_keepalives_between_slow_deltas_never_reset_the_silence() -> None:
    """``demo-slow``: a delta every 0.5 s, comments at 0.2 s: the median is of deltas."""
    watch = LivenessWatch(0.0)
    for i in range(1, 6):
        t = 0.5 * i
        watch.add(batch(t, (K.TEXT,), progress=i, first_byte=0.5))
        watch.add(batch(t + 0.25, (K.COMMENT,)))
    assert list(watch.gaps) == [0.5] * 4
    assert watch.threshold() == 2.0
    for k in range(2, 12):  # the stream goes on with comments only
        watch.add(batch(2.5 + 0.25 * k, (K.COMMENT,)))
    assert watch.at(4.5).silence == Silence(Quiet.KEEPALIVES, 2.5, 2.0)


def test_data_without_progress_is_no_progress() -> None:
    """Heartbeat chunks that carry no text: data keeps coming, progress does not."""
    watch = LivenessWatch(0.0, idle_timeout=30.0)
    watch.add(batch(0.25, (K.TEXT,), progress=1, first_byte=0.25))
    for i in range(1, 9):
        watch.add(batch(0.25 + 0.5 * i, (K.META,), progress=1, first_byte=0.25))
    live = watch.at(4.5)  # 0.25 s after the last heartbeat, 4.25 s after the last delta
    assert live.silence == Silence(Quiet.NO_PROGRESS, 0.25, 4.25)
    assert live.words() == ["no progress for 4 s", "idle timeout in 26 s"]


def test_bytes_of_a_frame_still_arriving_are_data() -> None:
    watch = LivenessWatch(0.0)
    watch.add(batch(0.5, (K.TEXT,), progress=1, first_byte=0.5))
    watch.add(batch(1.5, (K.COMMENT,)))
    watch.add(batch(2.0, ()))  # a read that completes no frame (a long line coming in)
    assert watch.last_data == 2.0
    # bytes keep coming, no progress: not "no data"
    assert watch.at(3.5).silence == Silence(Quiet.NO_PROGRESS, 0.5, 3.0)
    assert watch.at(4.0).silence == Silence(Quiet.NO_DATA, 2.0, 2.0)


def test_the_median_is_of_the_recent_gaps() -> None:
    watch = LivenessWatch(0.0)
    t = 0.0
    for n, gap in enumerate([10.0] * 10 + [0.5] * GAP_SAMPLES, start=1):
        t += gap
        watch.add(batch(t, (K.TEXT,), progress=n, first_byte=10.0))
    assert len(watch.gaps) == GAP_SAMPLES
    assert watch.threshold() == 2.0  # 4 x 0.5, not 4 x the old 10 s gaps


def test_the_threshold_uses_the_floor_until_three_gaps_are_known() -> None:
    watch = LivenessWatch(0.0)
    for i, t in enumerate((5.0, 10.0, 15.0), start=1):
        watch.add(batch(t, (K.TEXT,), progress=i, first_byte=5.0))
    assert watch.threshold() == 2.0  # two gaps
    watch.add(batch(20.0, (K.TEXT,), progress=4, first_byte=5.0))
    assert watch.threshold() == 20.0


def test_fed_by_the_real_encoder() -> None:
    """Batches as the pipeline and the encoder make them: the OpenAI role chunk, two deltas,
    comments."""
    pipe = StreamPipeline("openai", request_sent=0.0)
    encoder = ProgressEncoder()
    watch = LivenessWatch(0.0, first_byte_timeout=300.0, idle_timeout=300.0)

    def chunk(delta: str) -> bytes:
        return b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":' + (
            delta.encode() + b"}]}\n\n"
        )

    reads = [
        (chunk('{"role":"assistant"}'), 0.25),
        (chunk('{"content":"Hel"}'), 0.5),
        (chunk('{"content":"lo"}') + b": keep-alive\n\n", 0.75),
        (b": keep-alive\n\n", 1.5),
        (b": keep-alive\n\n", 2.5),
    ]
    for data, t in reads:
        encoder.read(data, t)
        encoder.progressed(pipe.feed(data, t), t)
        watch.add(encoder.take())
    assert (watch.first_byte, watch.last_progress, watch.last_data) == (0.25, 0.75, 0.75)
    assert watch.last_keepalive == 2.5
    assert watch.progress == 2
    assert watch.at(2.5).silence is None
    assert watch.at(3.0).words() == ["keep-alives only for 2 s", "idle timeout in 4 min 58 s"]


# -- what arrived, not what was shown (issue 23) ------------------------------------------


def streamed_until_one() -> LivenessWatch:
    """The views got a delta every 0.25 s until 1.0; the reader has had more since."""
    watch = LivenessWatch(0.0, first_byte_timeout=60.0, idle_timeout=300.0)
    for i in range(1, 5):
        shown = batch(0.25 * i, (K.TEXT,), progress=i, first_byte=0.25)
        shown.total_bytes = 100 * i
        watch.add(shown)
    return watch


def test_silence_is_measured_from_the_last_arrival_not_from_what_was_shown() -> None:
    watch = streamed_until_one()
    assert watch.shown_bytes == 400
    assert watch.at(8.0).words()[0] == "no data for 7 s"  # (the batches alone)
    # the reader had data 0.5 s ago: the stream moves, however far behind the views are
    watch.arrived(Arrivals(first=0.25, read=7.5, data=7.5, progress=7.5, count=30, bytes=3000))
    live = watch.at(8.0)
    assert live.silence is None
    assert watch.at(9.499).silence is None
    # then the stream stops: a silence from the last arrival, and the idle timer with it
    live = watch.at(9.5)
    assert live.silence == Silence(Quiet.NO_DATA, 7.5, 2.0)
    assert live.words()[:2] == ["no data for 2 s", "idle timeout in 4 min 58 s"]
    assert (live.timeout, live.timeout_in) == ("idle", 298.0)
    # a reader that is not known this tick leaves the last known
    watch.arrived(None)
    assert watch.arrivals.data == 7.5


def test_keepalives_only_are_told_from_what_arrived() -> None:
    watch = streamed_until_one()
    watch.arrived(Arrivals(first=0.25, read=7.9, data=1.0, keepalive=7.9, progress=1.0, count=4))
    live = watch.at(8.0)
    assert live.silence == Silence(Quiet.KEEPALIVES, 1.0, 7.0)
    assert live.words()[:2] == ["keep-alives only for 7 s", "idle timeout in 4 min 53 s"]
    # frames without progress keep arriving: no progress (since the last delta)
    watch.arrived(Arrivals(first=0.25, read=7.9, data=7.9, keepalive=7.0, progress=1.0, count=4))
    assert watch.at(8.0).silence == Silence(Quiet.NO_PROGRESS, 1.0, 7.0)


def test_before_any_batch_the_first_arrival_stops_the_first_byte_timer() -> None:
    watch = LivenessWatch(0.0, first_byte_timeout=60.0, idle_timeout=300.0)
    assert watch.at(3.0).words() == ["no data for 3 s", "first-byte timeout in 57 s"]
    watch.arrived(Arrivals(first=2.5, read=2.5, data=2.5, bytes=10))
    live = watch.at(3.0)
    assert live.silence is None and (live.timeout, live.timeout_in) == ("idle", 299.5)


def test_the_display_lag_is_the_age_of_the_oldest_data_not_shown() -> None:
    watch = streamed_until_one()
    came = Arrivals(first=0.25, read=12.0, data=12.0, progress=12.0, count=99, bytes=9000)
    watch.arrived(replace(came, unshown_since=5.0))
    assert watch.at(5.999).behind is None
    assert watch.at(5.999).words() == []
    live = watch.at(6.0)
    assert live.behind == 1.0 and live.silence is None
    assert live.words() == ["showing 1 s behind the stream"]
    assert watch.at(12.0).words() == ["showing 7 s behind the stream"]
    # catching up: said until the lag is under half a second (no blinking about 1 s) …
    watch.arrived(replace(came, unshown_since=11.8))
    assert watch.at(12.4).behind == pytest.approx(0.6)
    assert watch.at(12.4).words() == ["showing 1 s behind the stream"]
    watch.arrived(replace(came, unshown_since=12.0))
    assert watch.at(12.49).behind is None  # (0.49 s)
    # … and then only from a second again
    assert watch.at(12.9).behind is None  # (0.9 s)
    assert watch.at(13.0).behind == pytest.approx(1.0)
    # every byte shown: no lag, however old the newest shown data is
    watch.arrived(replace(came, unshown_since=None))
    assert watch.at(13.1).behind is None


def test_a_slow_drip_never_shows_a_lag() -> None:
    """A delta every 5 s: the newest the views got is 5 s old when the next one arrives; it
    arrived 4 ms ago, and that is the lag (nothing)."""
    watch = LivenessWatch(0.0, idle_timeout=300.0)
    for i in range(1, 4):
        shown = batch(5.0 * i, (K.TEXT,), progress=i, first_byte=5.0)
        shown.total_bytes = 10 * i
        watch.add(shown)
    came = Arrivals(first=5.0, read=19.996, data=19.996, progress=19.996, count=4, bytes=40)
    watch.arrived(replace(came, unshown_since=19.996))
    live = watch.at(20.0)
    assert live.behind is None and live.silence is None and live.words() == []


def test_once_the_stream_ended_nothing_is_silent_while_the_display_catches_up() -> None:
    watch = streamed_until_one()
    came = Arrivals(first=0.25, read=3.0, data=3.0, progress=3.0, count=12, bytes=1200)
    watch.arrived(replace(came, ended=True, unshown_since=1.5))
    live = watch.at(9.0)
    assert live.silence is None and live.timeout is None
    assert live.words() == ["showing 7 s behind the stream"]


def test_the_rate_is_the_pace_of_what_arrives() -> None:
    """The views got 4 deltas by 1.0; the reader counts 200 more by 2.0: 102 a second over the
    last two seconds (the display's pace would be 2)."""
    watch = streamed_until_one()
    watch.arrived(Arrivals(first=0.25, read=2.0, data=2.0, progress=2.0, count=204))
    assert watch.at(2.0).rate == 102.0
    # older batches reaching the views later change nothing
    late = batch(1.5, (K.TEXT,), progress=50, first_byte=0.25)
    watch.add(late)
    assert watch.at(2.0).rate == 102.0
    assert watch.progress == 50 and watch.last_progress == 1.5  # (the shown gaps go on)
    assert watch.at(4.5).rate == 0.0


@pytest.mark.parametrize(
    ("seconds", "up", "text"),
    [
        (0.0, False, "0 s"),
        (0.2, True, "1 s"),
        (12.99, False, "12 s"),
        (59.999, False, "59 s"),
        (60.0, False, "1 min"),
        (287.5, True, "4 min 48 s"),
        (3725.0, False, "1 h 2 min"),
        (-3.0, False, "0 s"),
    ],
)
def test_format_span(seconds: float, up: bool, text: str) -> None:
    assert format_span(seconds, up=up) == text
