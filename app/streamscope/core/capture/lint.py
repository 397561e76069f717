"""A capture checked against its dialect's rules: what ``streamscope lint`` does with a
``.sscap`` file (and a bundle's or a HAR entry's capture), and the short verdict line a turn's
card shows, made again from the turn's capture (:func:`verdict_line`).

The linter gets the capture's response head, its request body and its reads with their
times (so the transport and timing rules run), then how the capture ended.
"""

from __future__ import annotations

import time
from typing import TypeVar

import orjson

from streamscope.core.capture.format import Capture, CaptureEnd
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict.engine import Linter, Verdict, diagnosis

__all__ = ["FEED_BYTES", "capture_linter", "feed_capture", "lint_capture", "verdict_line"]

FEED_BYTES = 1 << 20
"""A read longer than this is fed to the linter in pieces of this size."""

YIELD_EVERY_READS = 64
"""Checking in a worker thread (``background``): the interpreter lock is let go this often,
so a window's event loop waiting for it is not held up by a long capture."""

L = TypeVar("L", bound=Linter)


def capture_linter(
    kind: type[L], capture: Capture, dialect: str | None = None, *, keep_text: bool = True
) -> L:
    """A linter (``kind``) with the capture's headers, status and request; ``dialect``:
    instead of the capture's own; ``keep_text``: as :class:`Linter` takes it."""
    request: dict[str, object] | None = None
    if capture.request is not None:
        try:
            doc = orjson.loads(capture.request.body) if capture.request.body else {}
        except orjson.JSONDecodeError:
            doc = {}
        request = doc if isinstance(doc, dict) else {}
    response = capture.response
    return kind(
        dialect or capture.dialect,
        headers=list(response.headers) if response is not None else None,
        status=response.status if response is not None else None,
        request=request,
        timed=True,
        start=0.0,
        headers_at=response.t if response is not None else None,
        keep_text=keep_text,
    )


def feed_capture(lint: Linter, capture: Capture, *, background: bool = False) -> Verdict:
    """Feed ``lint`` the capture's reads at their times, then how it ended; its verdict.
    ``background``: this runs in a worker thread (see :data:`YIELD_EVERY_READS`)."""
    response = capture.response
    t_last = response.t if response is not None else 0.0
    for n, (t, data) in enumerate(capture.reads):
        for start in range(0, len(data), FEED_BYTES):
            lint.feed(data[start : start + FEED_BYTES], t)
        t_last = t
        if background and n % YIELD_EVERY_READS == YIELD_EVERY_READS - 1:
            time.sleep(0)  # (lets the UI thread have the interpreter lock)
    end = capture.end or CaptureEnd("broken", detail="capture ended without an end record")
    t_end = end.elapsed if end.elapsed is not None else t_last
    stream_end = StreamEnd(
        end.kind,
        elapsed=end.elapsed,
        status=response.status if response is not None else None,
        headers=dict(response.headers) if response is not None else {},
        content_type=response.header("content-type") if response is not None else None,
        body=end.body or b"",
        detail=end.detail,
        timeout=end.timeout,
    )
    return lint.finish(stream_end, t_end)


def lint_capture(capture: Capture, dialect: str | None = None) -> Verdict:
    """A capture (``.sscap``, a bundle's or a HAR entry's), with its headers and read times."""
    return feed_capture(capture_linter(Linter, capture, dialect), capture)


def verdict_line(capture: Capture, *, background: bool = False) -> str:
    """The short verdict a turn's card shows for this capture ("2 spec errors · buffered by
    a proxy"; ``""``: nothing to say), as the Verdict tab says it at the turn's end. A
    response that is no stream (none at all, or an HTTP error status) gets ``""``: its
    outcome already says what went wrong. ``background``: see :func:`feed_capture`."""
    response = capture.response
    if response is None or response.status >= 400:
        return ""
    lint = capture_linter(Linter, capture, keep_text=False)  # (no rule reads the text)
    return diagnosis(feed_capture(lint, capture, background=background).findings)
