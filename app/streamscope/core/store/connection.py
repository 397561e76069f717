"""The database connection under :class:`~streamscope.core.store.database.Store`: SQLite in
WAL mode with foreign keys on, migrated when opened (:func:`~streamscope.core.store.schema.
migrate`), one lock for the threads that share it, and short transactions."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from streamscope.core.paths import data_dir
from streamscope.core.store.schema import migrate
from streamscope.core.store.search import prepare

__all__ = ["DB_NAME", "StoreConnection", "default_db_path"]

DB_NAME = "streamscope.db"


def default_db_path() -> Path:
    """``data_dir()/streamscope.db`` (resolved now: honours ``STREAMSCOPE_HOME``)."""
    return data_dir() / DB_NAME


class StoreConnection:
    """Opens (and migrates) the database; ``path=None`` opens :func:`default_db_path`;
    ``":memory:"`` works for tests."""

    def __init__(
        self, path: Path | str | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.path: Path | str = default_db_path() if path is None else path
        target = str(self.path)
        self._clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA busy_timeout = 5000")
            migrate(self._db)
            prepare(self._db)
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            return self._db.execute(sql, params).fetchone()

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()
