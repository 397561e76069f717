"""Byte counts in words, one way everywhere: ``512 B``, ``18.2 KB``, ``19.1 MB``."""

from __future__ import annotations

__all__ = ["format_bytes"]


def format_bytes(n: int) -> str:
    """``512 B``, ``18.2 KB``, ``19.1 MB`` (binary multiples)."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"
