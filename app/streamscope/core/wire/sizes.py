"""Counts in words, one way everywhere: bytes (``512 B``, ``18.2 KB``, ``19.1 MB``) and
things (``1 frame``, ``2 frames``)."""

from __future__ import annotations

__all__ = ["format_bytes", "plural"]


def plural(n: int, word: str, words: str | None = None) -> str:
    """``n`` and ``word`` in the number it takes: ``1 malformed frame``, ``0 frames``,
    ``2 frames`` (``words``: the plural when it is not ``word`` + ``s``, e.g. ``matches``)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def format_bytes(n: int) -> str:
    """``512 B``, ``18.2 KB``, ``19.1 MB`` (binary multiples)."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
