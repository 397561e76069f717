"""A verdict written out: the ``--json`` object (see :meth:`Verdict.to_json`), SARIF 2.1.0
for CI systems, and the human-readable lines ``streamscope lint`` prints by default.

SARIF is made for GitHub code scanning: every result has a ``region.startLine`` in the linted
file (how a frame maps to a line for a body, a capture, a HAR file and a bundle:
:mod:`~streamscope.core.verdict.locations`), ``partialFingerprints`` (:func:`fingerprint`),
a relative, percent-encoded ``uri`` under ``SRCROOT`` (:func:`artifact_uri`) and the frame
(and HAR entry) in its message."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from streamscope import __version__
from streamscope.core.verdict.catalog import RULES
from streamscope.core.verdict.engine import Verdict, diagnosis
from streamscope.core.verdict.rules import Finding, Rule
from streamscope.core.wire.sizes import plural

__all__ = [
    "MAX_RESULTS",
    "SARIF_SCHEMA",
    "SRCROOT",
    "SarifStream",
    "artifact_uri",
    "fingerprint",
    "rules_text",
    "to_sarif",
    "to_text",
]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "SRCROOT"
"""The ``uriBaseId`` of every relative ``uri``: the directory ``streamscope lint`` ran in
(the checkout's root in CI)."""
FINGERPRINT_KEY = "streamscopeFinding/v1"
LINE_HASH_KEY = "primaryLocationLineHash"
"""Code scanning matches alerts across runs by this key; given, it is not computed from the
file's line (so a finding keeps its alert when a re-recorded capture moves it)."""
MAX_RESULTS = 25_000
"""Code scanning refuses a run with more results."""
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
_ICONS = {"error": "✖", "warning": "▲", "info": "ℹ"}


def _sarif_rule(r: Rule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": r.id.replace(".", "/"),
        "shortDescription": {"text": r.message},
        "fullDescription": {"text": f"{r.message}. {r.hint}"},
        "help": {"text": r.hint},
        "defaultConfiguration": {"level": SARIF_LEVELS[r.severity]},
        "properties": {"family": r.family},
    }


@dataclass(frozen=True, slots=True)
class SarifStream:
    """One linted stream and where its frames are in the file the user gave (see
    :mod:`~streamscope.core.verdict.locations` for how a frame maps to a line).

    ``uri``: from :func:`artifact_uri`. ``lines``: frame -> 1-based line (a frame not in it,
    and a whole-stream finding, points at ``line``, ``column``). ``frames``: frame -> its
    exact bytes, for the fingerprint. ``entry``: a HAR entry's number (1-based), named in
    each message."""

    verdict: Verdict
    uri: str
    uri_base: str | None = SRCROOT
    lines: Mapping[int, int] = field(default_factory=dict)
    frames: Mapping[int, bytes] = field(default_factory=dict)
    line: int = 1
    column: int | None = None
    entry: int | None = None


def artifact_uri(path: str, cwd: str | None = None) -> tuple[str, str | None]:
    """A file's SARIF ``uri`` and ``uriBaseId``: relative to ``cwd`` (the working
    directory: ``SRCROOT``), ``/``-separated and percent-encoded (spaces, ``%``, ``#``,
    ``?`` and non-ASCII as UTF-8), so code scanning finds it in the checkout. A path on
    another drive (Windows) has no relative form: an absolute ``file:`` URI, no base."""
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full, cwd if cwd is not None else os.getcwd())
    except ValueError:
        return Path(full).as_uri(), None
    return quote(Path(rel).as_posix(), safe="/"), SRCROOT


_NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def fingerprint(rule: str, dialect: str | None, message: str, frame: bytes) -> str:
    """What identifies a finding across runs: the rule, the dialect, the message with its
    numbers blanked (sizes, frame numbers and times change between recordings) and the
    frame's exact bytes — no line, no frame number, no path (code scanning adds the path)."""
    h = hashlib.sha256()
    for part in (rule, dialect or "", _NUMBERS.sub("#", message)):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    h.update(frame)
    return h.hexdigest()[:32]


def _times(f: Finding) -> str:
    """`` (3 times: frames 4, 9, 12)`` for a finding that fired on several frames."""
    if f.count <= 1:
        return ""
    shown = ", ".join(str(n) for n in f.frames[:10]) + (", …" if len(f.frames) > 10 else "")
    label = "frame" if len(f.frames) == 1 else "frames"
    return f" ({f.count} times: {label} {shown})" if shown else f" ({f.count} times)"


def _where(entry: int | None, frame: int | None) -> str:
    parts = ([f"entry {entry}"] if entry is not None else []) + (
        [f"frame {frame}"] if frame is not None else []
    )
    return ", ".join(parts)


def to_sarif(streams: Sequence[SarifStream]) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run (code scanning refuses several runs of one tool in
    a file): every rule in the driver, one result per finding of every stream, each at a
    line of its file (``region.startLine``), with the frame (and HAR entry) in its message,
    ``partialFingerprints`` (:func:`fingerprint`) and the frame as a logical location. Past
    :data:`MAX_RESULTS` (code scanning's limit) the least severe are left out and counted
    in the run's ``properties.omittedResults``."""
    ids = {rule_id: i for i, rule_id in enumerate(RULES)}
    artifacts: dict[tuple[str, str | None], int] = {}
    results: list[dict[str, Any]] = []
    for s in streams:
        key = (s.uri, s.uri_base)
        index = artifacts.setdefault(key, len(artifacts))
        seen: dict[str, int] = {}
        for f in s.verdict.findings:
            artifact: dict[str, Any] = {"uri": s.uri, "index": index}
            if s.uri_base is not None:
                artifact["uriBaseId"] = s.uri_base
            line = s.lines.get(f.frame, s.line) if f.frame is not None else s.line
            region: dict[str, Any] = {"startLine": line}
            if s.column is not None:
                region["startColumn"] = s.column
            location: dict[str, Any] = {
                "physicalLocation": {"artifactLocation": artifact, "region": region}
            }
            if f.frame is not None:
                location["logicalLocations"] = [
                    {
                        "name": f"frame {f.frame}",
                        "fullyQualifiedName": (
                            f"entries/{s.entry}/frames/{f.frame}"
                            if s.entry is not None
                            else f"frames/{f.frame}"
                        ),
                        "kind": "element",
                    }
                ]
            content = s.frames.get(f.frame, b"") if f.frame is not None else b""
            print_ = fingerprint(f.rule, s.verdict.dialect, f.message, content)
            seen[print_] = seen.get(print_, 0) + 1  # (the same finding twice: told apart)
            print_ = f"{print_}:{seen[print_]}"
            where = _where(s.entry, f.frame)
            props: dict[str, Any] = {"frame": f.frame, "hint": f.hint}
            if f.count > 1:
                props["count"], props["frames"] = f.count, list(f.frames)
            if s.entry is not None:
                props["entry"] = s.entry
            results.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": ids[f.rule],
                    "level": SARIF_LEVELS[f.severity],
                    "message": {
                        "text": (f"{where}: {f.message}" if where else f.message) + _times(f)
                    },
                    "locations": [location],
                    "partialFingerprints": {FINGERPRINT_KEY: print_, LINE_HASH_KEY: print_},
                    "properties": props,
                }
            )
    kept = _within_limit(results)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "streamscope",
                "version": __version__,
                "informationUri": "https://github.com/streamscope/streamscope",
                "rules": [_sarif_rule(r) for r in RULES.values()],
            }
        },
        "artifacts": [
            {"location": {"uri": uri, **({"uriBaseId": base} if base is not None else {})}}
            for uri, base in artifacts
        ],
        "results": kept,
    }
    if any(s.column is not None for s in streams):
        run["columnKind"] = "unicodeCodePoints"
    run_props: dict[str, Any] = {}
    if len(streams) == 1:
        run_props = {"dialect": streams[0].verdict.dialect, "outcome": streams[0].verdict.outcome}
    if len(kept) < len(results):
        run_props["omittedResults"] = len(results) - len(kept)
    if run_props:
        run["properties"] = run_props
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _within_limit(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most :data:`MAX_RESULTS`, the most severe first kept, in their order."""
    if len(results) <= MAX_RESULTS:
        return results
    rank = {"error": 0, "warning": 1, "note": 2}
    order = sorted(range(len(results)), key=lambda i: rank[results[i]["level"]])
    keep = sorted(order[:MAX_RESULTS])
    return [results[i] for i in keep]


def to_text(verdict: Verdict) -> str:
    """One line a finding (icon, frame, rule, message, then the hint indented), a summary."""
    lines = []
    for f in verdict.findings:
        where = f"frame {f.frame}" if f.frame is not None else "stream"
        lines.append(
            f"{_ICONS[f.severity]} {f.severity:7} {where:>11}  {f.rule}  {f.message}{_times(f)}"
        )
        lines.append(f"{'':23}{f.hint}")
    s = verdict.summary
    line = (
        f"{verdict.dialect or '?'} · {verdict.outcome or '?'} · {plural(s['error'], 'error')}, "
        f"{plural(s['warning'], 'warning')}, {plural(s['info'], 'note')}"
    )
    words = diagnosis(verdict.findings)
    lines.append(f"{line} · {words}" if words and "spec error" not in words else line)
    return "\n".join(lines) + "\n"


def rules_text() -> str:
    """``streamscope lint --rules``: every rule, its severity and its hint."""
    out = []
    for r in RULES.values():
        out.append(f"{r.id:36} {r.severity:8} {r.message}")
        out.append(f"{'':46}{r.hint}")
    return "\n".join(out) + "\n"
