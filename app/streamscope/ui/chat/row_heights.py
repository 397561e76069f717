"""The heights of a long column of rows, and where each row starts: a Fenwick tree.

The chat view keeps one height per row of the conversation (measured for the rows whose card
is built, estimated for the others) and asks where a row starts, which row is at a given
height, and the total. Changing one height is O(log n), so a card that grows while its
Markdown renders moves only the cards built below it, never every row's offset.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["RowHeights"]


class RowHeights:
    """Heights of rows ``0 .. n-1`` (non-negative integers) with prefix sums."""

    def __init__(self, heights: Iterable[int] = ()) -> None:
        self._h: list[int] = []
        self._tree: list[int] = [0]  # 1-based Fenwick tree over ``_h``
        self.reset(heights)

    def reset(self, heights: Iterable[int]) -> None:
        """Replace every row (O(n))."""
        self._h = [max(0, int(h)) for h in heights]
        self._rebuild(len(self._h))

    def _rebuild(self, capacity: int) -> None:
        size = max(capacity, 1)
        tree = [0] * (size + 1)
        tree[1 : len(self._h) + 1] = self._h
        for i in range(1, size + 1):
            parent = i + (i & -i)
            if parent <= size:
                tree[parent] += tree[i]
        self._tree = tree

    def __len__(self) -> int:
        return len(self._h)

    def __getitem__(self, index: int) -> int:
        return self._h[index]

    def append(self, height: int) -> None:
        """Add a row at the end (amortized O(log n): the tree doubles when full)."""
        height = max(0, int(height))
        self._h.append(height)
        n = len(self._h)
        if n >= len(self._tree):
            self._rebuild(2 * n)
            return
        self._add(n - 1, height)

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` rows."""
        if count < len(self._h):
            self._h = self._h[:count]
            self._rebuild(len(self._tree) - 1)

    def set(self, index: int, height: int) -> int:
        """Set row ``index``'s height; returns the change."""
        height = max(0, int(height))
        change = height - self._h[index]
        if change:
            self._h[index] = height
            self._add(index, change)
        return change

    def _add(self, index: int, change: int) -> None:
        i = index + 1
        tree = self._tree
        size = len(tree) - 1
        while i <= size:
            tree[i] += change
            i += i & -i

    def offset(self, index: int) -> int:
        """Where row ``index`` starts: the sum of the heights before it (``index`` may be
        ``len(self)``: the total)."""
        total = 0
        i = index
        tree = self._tree
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def total(self) -> int:
        return self.offset(len(self._h))

    def index_at(self, y: int) -> int:
        """The row that covers height ``y`` (the first row for ``y < 0``, the last for
        ``y`` at or past the total; -1 when there are no rows)."""
        n = len(self._h)
        if n == 0:
            return -1
        if y < 0:
            return 0
        tree = self._tree
        size = len(tree) - 1
        pos = 0
        step = 1 << size.bit_length()
        remaining = y
        while step:
            nxt = pos + step
            if nxt <= size and tree[nxt] <= remaining:
                pos = nxt
                remaining -= tree[nxt]
            step >>= 1
        # ``pos`` rows end at or before ``y``: the row at ``y`` is the next one (a row of
        # height 0 is skipped, as nothing of it covers ``y``)
        return min(pos, n - 1)
