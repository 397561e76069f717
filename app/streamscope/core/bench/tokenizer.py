"""A user's own tokenizer for counting output tokens (``streamscope bench --tokenizer``).

    count = load_tokenizer("mytok:count")            # a module on the path (or in the cwd)
    count = load_tokenizer("./tools/mytok.py:count")  # a file
    count("Hello, world")                             # -> an int >= 0

The tokenizer is a Python callable ``str -> int`` the user writes: it returns how many tokens
the text is, without special tokens (no BOS/EOS). StreamScope ships none and downloads none:
the function is the user's, and must count offline. A wrapper around a local
``tokenizer.json`` with the ``tokenizers`` package, for example::

    # mytok.py
    from tokenizers import Tokenizer
    _tok = Tokenizer.from_file("/models/llama/tokenizer.json")
    def count(text: str) -> int:
        return len(_tok.encode(text, add_special_tokens=False).ids)

Before importing the module, :func:`load_tokenizer` sets ``HF_HUB_OFFLINE=1`` and
``TRANSFORMERS_OFFLINE=1`` (unless the environment already says otherwise), so Hugging Face
libraries the module uses read their cache and never fetch. The tokenizer runs where the
requests are measured (the replay, in the calling process), never in the load process.

How the count is used: :data:`~streamscope.core.bench.definitions.OUTPUT_TOKENS`.
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["OFFLINE_ENV", "TokenCounter", "TokenizerError", "load_tokenizer"]

TokenCounter = Callable[[str], int]
"""Counts a text's tokens."""

OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
"""Environment variables set to ``1`` (when unset) before a tokenizer module is imported."""

_PROBE = "Hello, world"


class TokenizerError(ValueError):
    """The tokenizer could not be loaded, or it failed or gave something other than a
    count (the message says which)."""


def load_tokenizer(spec: str) -> TokenCounter:
    """The counter ``spec`` names: ``MODULE:FUNC`` (a dotted module name, imported with the
    current directory first on the path) or ``FILE.py:FUNC``; ``FUNC`` may be dotted
    (``mytok:tok.count``). It is tried once on a short text; the counter returned checks
    every result. :class:`TokenizerError` says what is wrong."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise TokenizerError(f"--tokenizer {spec!r}: expected MODULE:FUNC or FILE.py:FUNC")
    for key in OFFLINE_ENV:
        os.environ.setdefault(key, "1")
    module = _import(where)
    target: Any = module
    for part in name.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise TokenizerError(f"--tokenizer {spec!r}: {where} has no {name!r}") from None
    if not callable(target):
        raise TokenizerError(f"--tokenizer {spec!r}: {name} is not callable")
    counter = _checked(target, spec)
    counter(_PROBE)
    return counter


def _import(where: str) -> Any:
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise TokenizerError(f"--tokenizer: no such file: {where}")
            module_spec = importlib.util.spec_from_file_location(
                f"streamscope_user_tokenizer_{path.stem}", path
            )
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return module
        cwd = os.getcwd()
        sys.path.insert(0, cwd)  # (for this import only: nothing else is shadowed)
        try:
            return importlib.import_module(where)
        finally:
            sys.path.remove(cwd)
    except TokenizerError:
        raise
    except Exception as exc:  # (the user's module: anything may go wrong in it)
        raise TokenizerError(f"--tokenizer: cannot import {where}: {exc!r}") from None


def _checked(count: Callable[[str], Any], spec: str) -> TokenCounter:
    def counter(text: str) -> int:
        try:
            n = count(text)
        except Exception as exc:
            raise TokenizerError(f"the tokenizer {spec} failed: {exc!r}") from None
        try:
            value = -1 if isinstance(n, bool) else operator.index(n)  # (numpy's ints too)
        except TypeError:
            value = -1
        if value < 0:
            raise TokenizerError(f"the tokenizer {spec} returned {n!r}, not a count (int >= 0)")
        return value

    return counter
