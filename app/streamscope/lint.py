"""`streamscope lint FILE`: a recorded stream checked against its dialect's rules.

FILE is what ``replay`` takes: a raw response body (``-`` for stdin), a ``.sscap`` capture or
a repro bundle. Prints the findings (or ``--json``: one object, ``--sarif``: SARIF 2.1.0).
Exit codes: 0 no errors, 1 errors, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

import orjson

from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict.engine import Linter, Verdict
from streamscope.core.verdict.report import rules_text, to_sarif, to_text
from streamscope.headless import REPLAY_READ, UsageError, _read_replay_input

__all__ = ["EXIT_ERRORS", "lint_body", "lint_capture", "run"]

EXIT_ERRORS = 1
EXIT_USAGE = 2
FEED_BYTES = 1 << 20


def lint_body(body: bytes, dialect: str = "auto") -> Verdict:
    """A raw response body (no headers, no times: no transport or timing rules)."""
    lint = Linter(dialect, timed=False)
    for start in range(0, len(body), REPLAY_READ):
        lint.feed(body[start : start + REPLAY_READ], 0.0)
    return lint.finish(StreamEnd("eof"), 0.0)


def lint_capture(capture: object, dialect: str | None = None) -> Verdict:
    """A capture (``.sscap`` or a bundle's), with its headers and read times."""
    from streamscope.core.capture.format import Capture, CaptureEnd

    assert isinstance(capture, Capture)
    request: dict[str, object] | None = None
    if capture.request is not None:
        try:
            doc = orjson.loads(capture.request.body) if capture.request.body else {}
        except orjson.JSONDecodeError:
            doc = {}
        request = doc if isinstance(doc, dict) else {}
    response = capture.response
    lint = Linter(
        dialect or capture.dialect,
        headers=list(response.headers) if response is not None else None,
        status=response.status if response is not None else None,
        request=request,
        timed=True,
        start=0.0,
        headers_at=response.t if response is not None else None,
    )
    t_last = response.t if response is not None else 0.0
    for t, data in capture.reads:
        for start in range(0, len(data), FEED_BYTES):
            lint.feed(data[start : start + FEED_BYTES], t)
        t_last = t
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


def run(args: argparse.Namespace) -> int:
    """Entry point for ``streamscope lint``."""
    if args.rules:
        sys.stdout.write(rules_text())
        return 0
    if args.file is None:
        print("streamscope lint: error: FILE is required (or --rules)", file=sys.stderr)
        return EXIT_USAGE
    try:
        source = _read_replay_input(args.file)
    except UsageError as exc:
        print(f"streamscope lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(source, bytes):
        verdict = lint_body(source, args.dialect or "auto")
    else:
        verdict = lint_capture(source, args.dialect)
    if args.json:
        sys.stdout.write(json.dumps(verdict.to_json(), ensure_ascii=False) + "\n")
    elif args.sarif:
        uri = "stdin" if args.file == "-" else args.file
        sys.stdout.write(json.dumps(to_sarif(verdict, uri), ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(to_text(verdict))
    sys.stdout.flush()
    return EXIT_ERRORS if verdict.summary["error"] else 0
