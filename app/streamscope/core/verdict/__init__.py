"""Verdicts: a stream checked against its dialect's rules, and where it got stuck.

:mod:`~streamscope.core.verdict.rules` says what a rule is and lists the rules of every stream;
each dialect's own live beside it in :mod:`~streamscope.core.verdict.dialects`, named by the
dialect's ``lint``; :mod:`~streamscope.core.verdict.catalog` lists them all (one documented
object each);
:class:`~streamscope.core.verdict.engine.Linter` runs them on a stream as it arrives or on a
recording; :mod:`~streamscope.core.verdict.report` writes the CLI's JSON and SARIF;
:func:`~streamscope.core.verdict.catalog.rules_digest` names the rule set a verdict was made by.
Pure and Qt-free: a stage after ``turn`` (it runs the turn pipeline) and before ``net``.
"""

from streamscope.core.verdict.catalog import RULES, RULES_VERSION, rules_digest
from streamscope.core.verdict.engine import Linter, Verdict, diagnosis
from streamscope.core.verdict.rules import Finding, Rule

__all__ = [
    "RULES",
    "RULES_VERSION",
    "Finding",
    "Linter",
    "Rule",
    "Verdict",
    "diagnosis",
    "rules_digest",
]
