"""The stored captures: one ``.sscap`` file per turn in the profile, under a total size cap."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from streamscope.core.capture.format import CAPTURE_SUFFIX, Capture, read_capture, write_capture
from streamscope.core.paths import capture_dir

__all__ = ["DEFAULT_CAP_BYTES", "CaptureIndex", "CaptureStore"]

DEFAULT_CAP_BYTES = 1 << 30


class CaptureIndex(Protocol):
    """Where stored captures are listed besides the folder (the database's ``captures`` rows)."""

    def add_capture(self, capture_id: str, file_name: str, size: int) -> None: ...

    def remove_capture(self, capture_id: str) -> None: ...


class CaptureStore:
    """Stored captures in ``capture_dir()`` with a total size cap (oldest removed first).

    With an ``index`` (the :class:`~streamscope.core.store.database.Store`), each capture
    also gets a ``captures`` row, removed when the file is pruned (turns keep their text and
    outcome).
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        cap_bytes: int = DEFAULT_CAP_BYTES,
        index: CaptureIndex | None = None,
        tag: str = "",
    ) -> None:
        """``tag``: a word in each new capture's id (``…-tap-…``: the tap's), which tells
        whose captures they are in the one folder (ids still sort by creation time)."""
        self.directory = directory if directory is not None else capture_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cap_bytes = cap_bytes
        self.index = index
        self.tag = tag

    def path(self, capture_id: str) -> Path:
        return self.directory / f"{capture_id}{CAPTURE_SUFFIX}"

    def save(self, capture: Capture) -> str:
        """Write ``capture``; returns its id (ids sort by creation time). Prunes after."""
        capture_id = self.begin()
        write_capture(self.path(capture_id), capture)
        self.complete(capture_id)
        return capture_id

    def begin(self) -> str:
        """A new capture's id (ids sort by creation time), listed in the index at once (so a
        turn can point at it before its file is written: a crash keeps it reachable)."""
        tag = f"{self.tag}-" if self.tag else ""
        capture_id = f"{time.time_ns():020d}-{tag}{os.urandom(3).hex()}"
        if self.index is not None:
            self.index.add_capture(capture_id, self.path(capture_id).name, 0)
        return capture_id

    def complete(self, capture_id: str) -> None:
        """The capture's file is written: record its size, prune the oldest."""
        path = self.path(capture_id)
        if self.index is not None and path.exists():
            self.index.add_capture(capture_id, path.name, path.stat().st_size)
        self.prune(keep=capture_id)

    def load(self, capture_id: str) -> Capture:
        return read_capture(self.path(capture_id))

    def exists(self, capture_id: str) -> bool:
        return self.path(capture_id).exists()

    def remove(self, capture_ids: Sequence[str]) -> None:
        for capture_id in capture_ids:
            self.path(capture_id).unlink(missing_ok=True)
            if self.index is not None:
                self.index.remove_capture(capture_id)

    def total_size(self) -> int:
        return sum(size for _, size in self._files())

    def prune(self, *, keep: str | None = None) -> list[str]:
        """Remove the oldest captures until the total is within the cap (never ``keep``)."""
        files = self._files()
        total = sum(size for _, size in files)
        removed: list[str] = []
        for capture_id, size in files:
            if total <= self.cap_bytes:
                break
            if capture_id == keep:
                continue
            removed.append(capture_id)
            total -= size
        self.remove(removed)
        return removed

    def _files(self) -> list[tuple[str, int]]:
        found = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if entry.name.endswith(CAPTURE_SUFFIX) and not entry.name.startswith("."):
                    found.append((entry.name[: -len(CAPTURE_SUFFIX)], entry.stat().st_size))
        return sorted(found)
