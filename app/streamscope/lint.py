"""`streamscope lint FILE`: a recorded stream checked against its dialect's rules.

FILE is what ``replay`` takes: a raw response body (``-`` for stdin), a ``.sscap`` capture, a
repro bundle or a HAR file — every LLM exchange in it, or ``--entry N`` (1-based, as in the
file) alone, as ``replay`` does. Prints the findings (or ``--json``: one object — for a HAR
without ``--entry``, one line per exchange with its ``entry``, ``method`` and ``url`` —,
``--sarif``: SARIF 2.1.0, each result at the line of its frame in FILE: see
:mod:`streamscope.core.verdict.locations`).
Exit codes: 0 no errors, 1 errors, 2 usage error.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from streamscope.core.capture.lint import capture_linter, feed_capture, lint_capture
from streamscope.core.turn.outcome import StreamEnd
from streamscope.core.verdict.engine import Linter, Verdict
from streamscope.core.verdict.locations import (
    LocatingLinter,
    capture_read_lines,
    frame_bytes,
    har_entry_positions,
    line_numbers,
    read_index,
)
from streamscope.core.verdict.report import (
    SarifStream,
    artifact_uri,
    rules_text,
    to_sarif,
    to_text,
)
from streamscope.headless import (
    REPLAY_READ,
    UsageError,
    _har_entry,
    _har_input,
    _HarInput,
    _read_replay_input,
)

if TYPE_CHECKING:
    from streamscope.core.capture.format import Capture

__all__ = ["EXIT_ERRORS", "lint_body", "lint_capture", "run"]

EXIT_ERRORS = 1
EXIT_USAGE = 2


def lint_body(body: bytes, dialect: str = "auto") -> Verdict:
    """A raw response body (no headers, no times: no transport or timing rules)."""
    return _feed_body(Linter(dialect, timed=False), body)


def _feed_body(lint: Linter, body: bytes) -> Verdict:
    for start in range(0, len(body), REPLAY_READ):
        lint.feed(body[start : start + REPLAY_READ], 0.0)
    return lint.finish(StreamEnd("eof"), 0.0)


def _located(
    lint: LocatingLinter, verdict: Verdict, body: bytes | bytearray, file: str
) -> SarifStream:
    """A verdict's :class:`SarifStream`: FILE's uri and the bytes of the frames it names
    (the lines are the caller's to find)."""
    uri, base = ("stdin", None) if file == "-" else artifact_uri(file)
    offsets = lint.offsets
    wanted = {f.frame for f in verdict.findings if f.frame is not None}
    frames = {n: frame_bytes(body, offsets, n) for n in wanted}
    return SarifStream(verdict, uri, base, frames=frames)


# -- reading FILE -----------------------------------------------------------------------------


def _read(path: str) -> tuple[bytes | Capture | _HarInput, bytes | None]:
    """What FILE holds, and its bytes when they were read whole (stdin: a HAR, a capture or
    a bundle is told by its content, as ``replay`` does)."""
    if path != "-":
        return _read_replay_input(path), None
    from streamscope.core.capture.bundle import is_bundle, read_repro_bundle
    from streamscope.core.capture.format import is_capture, read_capture
    from streamscope.core.capture.har import is_har

    data = sys.stdin.buffer.read()
    try:
        if is_har(data[:REPLAY_READ]):
            return _har_input(data), data
        if is_bundle(data[:4]):
            return read_repro_bundle(io.BytesIO(data)), data
        if is_capture(data[:REPLAY_READ]):
            return read_capture(io.BytesIO(data)), data
    except ValueError as exc:
        raise UsageError(f"-: {exc}") from None
    return data, data


def _exchanges(har: _HarInput, entry: int | None, file: str) -> list[tuple[int, Capture]]:
    """The HAR's exchanges to lint: ``entry`` alone, or every one (a usage error if none)."""
    if entry is not None:
        return [(entry, _har_entry(har, entry))]
    if not har.exchanges:
        raise UsageError(
            f"{file}: no LLM exchange in the HAR file ({har.total} entries, none a POST to a "
            "dialect's path or a stream)"
        )
    return [(ex.entry, ex.capture) for ex in har.exchanges]


# -- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Entry point for ``streamscope lint``."""
    if args.rules:
        sys.stdout.write(rules_text())
        return 0
    if args.file is None:
        print("streamscope lint: error: FILE is required (or --rules)", file=sys.stderr)
        return EXIT_USAGE
    entry = getattr(args, "entry", None)
    try:
        source, data = _read(args.file)
        if isinstance(source, _HarInput):
            return _lint_har(source, data, entry, args)
        if entry is not None:
            raise UsageError("--entry applies to a HAR file only")
    except UsageError as exc:
        print(f"streamscope lint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.sarif:
        verdict = _sarif_of(source, data, args)
    elif isinstance(source, bytes):
        verdict = lint_body(source, args.dialect or "auto")
    else:
        verdict = lint_capture(source, args.dialect)
    if args.json:
        sys.stdout.write(json.dumps(verdict.to_json(), ensure_ascii=False) + "\n")
    elif not args.sarif:
        sys.stdout.write(to_text(verdict))
    sys.stdout.flush()
    return EXIT_ERRORS if verdict.summary["error"] else 0


def _sarif_of(source: bytes | Capture, data: bytes | None, args: argparse.Namespace) -> Verdict:
    """Lint a body or a capture and write its SARIF: each finding at its frame's line (a
    body's line, a capture's read line, a bundle's line 1)."""
    from streamscope.core.capture.format import is_capture

    file = args.file
    if isinstance(source, bytes):
        lint = LocatingLinter(args.dialect or "auto", timed=False)
        verdict = _feed_body(lint, source)
        stream = _located(lint, verdict, source, file)
        offsets = lint.offsets
        lines = line_numbers(source, [offsets[n] for n in stream.frames if n < len(offsets)])
        located = {n: lines[offsets[n]] for n in stream.frames if n < len(offsets)}
        _write_sarif([replace(stream, lines=located)])
        return verdict
    clint = capture_linter(LocatingLinter, source, args.dialect)
    verdict = feed_capture(clint, source)
    stream = _located(clint, verdict, source.reads.buffer(), file)
    raw = data if data is not None else Path(file).read_bytes()
    if stream.frames and is_capture(raw[:REPLAY_READ]):  # (not a bundle: a zip has no lines)
        read_lines = capture_read_lines(raw)
        ends, total = [], 0
        for _t, chunk in source.reads:
            total += len(chunk)
            ends.append(total)
        offsets = clint.offsets
        if len(read_lines) == len(ends):
            stream = replace(
                stream,
                lines={
                    n: read_lines[read_index(ends, offsets[n])]
                    for n in stream.frames
                    if n < len(offsets)
                },
            )
    _write_sarif([stream])
    return verdict


def _write_sarif(streams: list[SarifStream]) -> None:
    sys.stdout.write(json.dumps(to_sarif(streams), ensure_ascii=False, indent=2) + "\n")


def _lint_har(
    har: _HarInput, data: bytes | None, entry: int | None, args: argparse.Namespace
) -> int:
    """Every LLM exchange of a HAR file (or ``--entry N``): text, JSON Lines or one SARIF log."""
    exchanges = _exchanges(har, entry, args.file)
    sarif = bool(args.sarif)
    positions: list[tuple[int, int]] = []
    if sarif:
        raw = data if data is not None else Path(args.file).read_bytes()
        positions = har_entry_positions(raw)
    streams: list[SarifStream] = []
    worst = 0
    for n, capture in exchanges:
        if sarif:
            lint = capture_linter(LocatingLinter, capture, args.dialect)
            verdict = feed_capture(lint, capture)
            stream = _located(lint, verdict, capture.reads.buffer(), args.file)
            line, column = positions[n - 1] if n - 1 < len(positions) else (1, None)
            streams.append(replace(stream, line=line, column=column, entry=n))
        else:
            verdict = lint_capture(capture, args.dialect)
        worst = max(worst, EXIT_ERRORS if verdict.summary["error"] else 0)
        request = capture.request
        method, url = (request.method, request.url) if request is not None else ("", "")
        if sarif:
            continue  # (one log for all, below)
        if args.json:
            obj = verdict.to_json()
            if entry is None:
                obj = {"entry": n, "method": method, "url": url, **obj}
            sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
        else:
            if entry is None:
                sys.stdout.write(f"entry {n}: {method} {url}\n")
            sys.stdout.write(to_text(verdict))
    if sarif:
        _write_sarif(streams)
    sys.stdout.flush()
    if entry is None:
        skipped = har.total - len(exchanges)
        print(
            f"{len(exchanges)} LLM exchange(s) linted, {skipped} other entries skipped",
            file=sys.stderr,
        )
    return worst
