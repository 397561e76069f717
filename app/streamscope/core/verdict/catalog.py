"""Every rule the verdict engine checks, in one list: the common rules
(:mod:`streamscope.core.verdict.rules`) then each registered dialect's, in the registry's order
(:func:`streamscope.core.verdict.dialects.lint_of`). The engine, the CLI (``streamscope lint
--rules``), SARIF and the README's rule table are made from it.

The list follows the registry as it is when asked: a dialect registered later brings its rules.
:data:`RULES` is a read-only mapping that always answers for the registry of the moment.

:func:`rules_digest` names the rule set (its ids and severities, and :data:`RULES_VERSION`):
a turn's verdict line is kept with the digest of the rules that made it, and a turn kept under
another digest is checked again (:mod:`streamscope.core.store.verdicts`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping

from streamscope.core.verdict.checks import DialectLint
from streamscope.core.verdict.dialects import lint_of
from streamscope.core.verdict.rules import COMMON, COMMON_FAMILIES, Rule
from streamscope.core.wire.dialects import dialects

__all__ = [
    "RULES",
    "RULES_VERSION",
    "all_rules",
    "dialect_lints",
    "families",
    "rule",
    "rules_digest",
    "rules_markdown",
]

RULES_VERSION = 1
"""Raise it when what the rules find changes without a rule's id or severity changing (a check
that fires on other frames, a new timing diagnosis, the short verdict's wording): every turn's
kept verdict line is checked again under the new rules."""

_cache: dict[tuple[int, ...], tuple[dict[str, Rule], dict[str, str], dict[str, DialectLint]]] = {}


def _built() -> tuple[dict[str, Rule], dict[str, str], dict[str, DialectLint]]:
    registered = dialects()
    key = tuple(id(d) for d in registered)
    found = _cache.get(key)
    if found is None:
        rules = {r.id: r for r in COMMON}
        titles = dict(COMMON_FAMILIES)
        lints: dict[str, DialectLint] = {}
        for dialect in registered:
            lint = lint_of(dialect)
            if lint is None:
                continue
            lints[dialect.name] = lint
            titles[lint.family] = lint.title
            for r in lint.rules:
                if r.id in rules:
                    raise ValueError(f"rule {r.id!r} of dialect {dialect.name!r} exists already")
                rules[r.id] = r
        _cache.clear()
        found = _cache[key] = (rules, titles, lints)
    return found


def all_rules() -> dict[str, Rule]:
    """Every rule by id, in the documented order (see the module docstring)."""
    return _built()[0]


def families() -> dict[str, str]:
    """Each family's title in the rule table, in order."""
    return _built()[1]


def dialect_lints() -> dict[str, DialectLint]:
    """The lint rules of each registered dialect that has some, by dialect name."""
    return _built()[2]


_digest: tuple[dict[str, Rule], int, str] | None = None  # (made from these rules, version)


def rules_digest() -> str:
    """The rule set's name: 16 hex digits of a SHA-256 over :data:`RULES_VERSION` and each
    rule's id and severity, in order. It changes when a rule is added, removed or changes
    severity (a dialect registered later brings its rules: another digest), or when
    :data:`RULES_VERSION` is raised."""
    global _digest
    rules = all_rules()  # (cached for the registry of the moment)
    if _digest is None or _digest[0] is not rules or _digest[1] != RULES_VERSION:
        lines = [f"version {RULES_VERSION}", *(f"{r.id} {r.severity}" for r in rules.values())]
        text = "\n".join(lines)
        _digest = (rules, RULES_VERSION, hashlib.sha256(text.encode()).hexdigest()[:16])
    return _digest[2]


def rule(rule_id: str) -> Rule:
    """The rule called ``rule_id`` (``KeyError`` if there is none)."""
    return all_rules()[rule_id]


class _Rules(Mapping[str, Rule]):
    """:func:`all_rules` as a mapping that follows the registry."""

    def __getitem__(self, rule_id: str) -> Rule:
        return all_rules()[rule_id]

    def __iter__(self) -> Iterator[str]:
        return iter(all_rules())

    def __len__(self) -> int:
        return len(all_rules())


RULES: Mapping[str, Rule] = _Rules()
"""Every rule by id, in the documented order, for the registry of the moment."""


def rules_markdown() -> str:
    """The rule table for the README, made from :data:`RULES` (a test keeps them equal)."""
    lines: list[str] = []
    rules = all_rules().values()
    for family, title in families().items():
        lines += ["", f"**{title}**", "", "| Rule | Severity | What | Usual cause and fix |"]
        lines.append("|---|---|---|---|")
        for r in rules:
            if r.family == family:
                cells = (f"`{r.id}`", r.severity, r.message, r.hint)
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines[1:]) + "\n"
