"""A verdict written out: the ``--json`` object (see :meth:`Verdict.to_json`), SARIF 2.1.0
for CI systems, and the human-readable lines ``streamscope lint`` prints by default."""

from __future__ import annotations

from typing import Any

from streamscope import __version__
from streamscope.core.verdict.catalog import RULES
from streamscope.core.verdict.engine import Verdict, diagnosis
from streamscope.core.verdict.rules import Rule

__all__ = ["SARIF_SCHEMA", "rules_text", "to_sarif", "to_text"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
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


def to_sarif(verdict: Verdict, uri: str) -> dict[str, Any]:
    """One SARIF 2.1.0 log with one run: every rule in the driver, one result per finding,
    located at the linted file (``uri``) and, logically, at its frame."""
    ids = list(RULES)
    results: list[dict[str, Any]] = []
    for f in verdict.findings:
        location: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": uri}}}
        if f.frame is not None:
            location["logicalLocations"] = [
                {
                    "name": f"frame {f.frame}",
                    "fullyQualifiedName": f"frames/{f.frame}",
                    "kind": "element",
                }
            ]
        results.append(
            {
                "ruleId": f.rule,
                "ruleIndex": ids.index(f.rule),
                "level": SARIF_LEVELS[f.severity],
                "message": {"text": f.message},
                "locations": [location],
                "properties": {"frame": f.frame, "hint": f.hint},
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "streamscope",
                        "version": __version__,
                        "informationUri": "https://github.com/streamscope/streamscope",
                        "rules": [_sarif_rule(r) for r in RULES.values()],
                    }
                },
                "artifacts": [{"location": {"uri": uri}}],
                "results": results,
                "properties": {"dialect": verdict.dialect, "outcome": verdict.outcome},
            }
        ],
    }


def to_text(verdict: Verdict) -> str:
    """One line a finding (icon, frame, rule, message, then the hint indented), a summary."""
    lines = []
    for f in verdict.findings:
        where = f"frame {f.frame}" if f.frame is not None else "stream"
        lines.append(f"{_ICONS[f.severity]} {f.severity:7} {where:>11}  {f.rule}  {f.message}")
        lines.append(f"{'':23}{f.hint}")
    s = verdict.summary
    line = (
        f"{verdict.dialect or '?'} · {verdict.outcome or '?'} · {s['error']} errors, "
        f"{s['warning']} warnings, {s['info']} notes"
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
