"""Each dialect's lint rules, beside it: one module per built-in dialect (mirroring
:mod:`streamscope.core.wire.dialects`), each defining ``LINT``, a
:class:`~streamscope.core.verdict.checks.DialectLint` (its rules and the checks applying them).

A dialect names its module in its ``lint`` (the registry of dialects is the only list: a new
dialect registers once, with its rules, and nothing here changes); :func:`lint_of` loads it.
Imports the verdict stage's rules and checks, and ``wire``/``turn`` below them.
"""

from __future__ import annotations

import importlib

from streamscope.core.verdict.checks import DialectLint
from streamscope.core.wire.dialects import Dialect

__all__ = ["lint_of"]


def lint_of(dialect: Dialect) -> DialectLint | None:
    """The lint rules of ``dialect``: the ``LINT`` of the module its ``lint`` names (``None``
    when it names none). ``TypeError`` when that module's ``LINT`` is no
    :class:`~streamscope.core.verdict.checks.DialectLint`."""
    module = getattr(dialect, "lint", None)  # (a dialect written before ``lint`` existed)
    if not module:
        return None
    lint = getattr(importlib.import_module(module), "LINT", None)
    if not isinstance(lint, DialectLint):
        raise TypeError(f"{module}.LINT is not a DialectLint (dialect {dialect.name!r})")
    return lint
