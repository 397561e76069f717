"""Search benchmark: the conversation list's full-text search on the year-of-use profile
(``tests/support/big_profile.py``: 1,000 conversations, ~67k messages, ~134 MB of text).

    .venv/bin/python tests/benchmarks/bench_search.py [--quick]

Rows:

- the index: opening (migrating) the profile, the background backfill's time, the index's size;
- the search thread (``SearchWorker``, submit to first batch / to the last) for a common word,
  a rare one, a unique token, two-character queries (CJK, and ASCII found nowhere) and a
  Cyrillic word — on the indexed profile, and on the same profile just migrated (nothing
  indexed: everything is read);
- the panel (``ConversationsPanel``, offscreen): its first page at start, and a search typed
  into it: first rows after the debounce fires, worst stall of the event loop meanwhile
  (targets: 200 ms, 20 ms), while the index is complete and while the backfill runs;
- a streaming answer's partial saves (40 saves growing to 20 KB, in the long conversation):
  per save without the index (schema 4), with it (the backlog), and — for reference — with a
  trigger that re-indexed the text at each save.

``--quick`` runs each search once instead of three times (the median is reported).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_gui import Row, StallProbe, _isolate, check, info, print_table  # noqa: E402

from streamscope.core.store.database import Store  # noqa: E402
from streamscope.core.store.search import SearchWorker  # noqa: E402
from streamscope.core.store.search_index import SearchIndexer, index_progress  # noqa: E402
from streamscope.ui.chat.conversations_panel import ConversationsPanel  # noqa: E402
from support.big_profile import cached_profile  # noqa: E402

QUERIES = {
    "common word": "stream",
    "rare word": "needle",
    "unique token": "uniq123",
    "2 chars, CJK": "流式",
    "2 chars, nowhere": "zq",
    "Cyrillic": "поток",
}
NAME = "Search (134 MB profile)"


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, folder / "streamscope.db")
    return folder / "streamscope.db"


def _size_mb(path: Path) -> float:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return os.path.getsize(path) / 1e6


def backfill(path: Path) -> float:
    """Run the indexer on ``path`` until the backfill is done; seconds."""
    store = Store(path)
    done = threading.Event()
    indexer = SearchIndexer(path, on_progress=lambda p: p.backfilled and done.set())
    start = time.perf_counter()
    indexer.start()
    done.wait(3600)
    elapsed = time.perf_counter() - start
    indexer.stop()
    assert index_progress(store._db).backfilled
    store.close()
    return elapsed


class _Batches:
    """The batches of one search generation, with their arrival times."""

    def __init__(self) -> None:
        self.wanted = -1
        self.got: list[tuple[int, float]] = []
        self.finished = threading.Event()

    def __call__(self, generation: int, batch: object, done: bool) -> None:
        if generation == self.wanted:
            self.got.append((len(batch), time.perf_counter()))  # type: ignore[arg-type]
            if done:
                self.finished.set()


def search_times(path: Path, query: str, runs: int) -> tuple[float, float, int]:
    """Median (ms) from submit to the first batch and to the last, and the rows found."""
    firsts, alls, found = [], [], 0
    for _ in range(runs):
        batches = _Batches()
        worker = SearchWorker(path, batches)
        worker.submit("x")  # (the thread and its connection first)
        time.sleep(0.3)
        worker.cancel()
        start = time.perf_counter()
        batches.wanted = worker.submit(query)
        batches.finished.wait(60)
        worker.close()
        firsts.append((batches.got[0][1] - start) * 1000)
        alls.append((batches.got[-1][1] - start) * 1000)
        found = sum(n for n, _ in batches.got)
    return statistics.median(firsts), statistics.median(alls), found


def _typed(panel: ConversationsPanel, query: str) -> tuple[float, float]:
    """Type ``query`` into the panel; the first rows' delay after the debounce fired (ms;
    -1: none came) and the worst stall of the event loop until the search ended (ms)."""
    from PySide6.QtWidgets import QApplication

    fired: list[float] = []
    first: list[float] = []
    real = panel.model.show_search

    def show_search(q: str) -> None:
        fired.append(time.perf_counter())
        real(q)

    def arrived() -> None:
        first.append(time.perf_counter())

    panel.model.show_search = show_search  # type: ignore[method-assign]
    panel.model.rowsArrived.connect(arrived)
    probe = StallProbe()
    probe.start()
    panel.search.setText(query)
    deadline = time.perf_counter() + 60
    while not (fired and not panel.searching) and time.perf_counter() < deadline:
        QApplication.processEvents()
        time.sleep(0.001)
    stalls = probe.stop()
    panel.model.rowsArrived.disconnect(arrived)
    panel.model.show_search = real  # type: ignore[method-assign]
    after = [t for t in first if fired and t >= fired[0]]
    return ((after[0] - fired[0]) * 1000 if after else -1.0), stalls["stall_max_ms"]


def panel_figures(path: Path, queries: dict[str, str], while_indexing: bool) -> dict[str, float]:
    """The panel on ``path``: built with its first page (ms), then each query typed."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    store = Store(path)
    out: dict[str, float] = {}
    start = time.perf_counter()
    panel = ConversationsPanel(store)
    panel.refresh()
    out["built, first page (ms)"] = (time.perf_counter() - start) * 1000
    panel.resize(300, 700)
    panel.show()
    app.processEvents()
    if while_indexing:
        panel.start_indexer()
        time.sleep(1.0)  # (under way)
    for label, query in queries.items():
        first, stall = _typed(panel, query)
        out[f"{label}: first rows (ms)"] = first
        out[f"{label}: worst stall (ms)"] = stall
        panel.search.setText("")
        panel.refresh()
        app.processEvents()
    if while_indexing:
        out["backfill done at the end (%)"] = index_progress(store._db).percent
    panel.shutdown()
    panel.deleteLater()
    app.processEvents()
    store.close()
    return out


def partial_saves(path: Path, long_id: int, mode: str) -> tuple[float, float]:
    """Mean and worst ms per partial save of an answer growing to 20 KB (40 saves):
    ``mode`` "v4" (no search triggers), "backlog" (as built), "at once" (re-index each)."""
    store = Store(path)
    db = store._db
    if mode == "v4":
        for name in ("messages_search_insert", "messages_search_update"):
            db.execute(f"DROP TRIGGER {name}")
    elif mode == "at once":
        db.execute("DROP TRIGGER messages_search_update")
        db.execute(
            "CREATE TRIGGER reindex AFTER UPDATE OF text ON messages BEGIN"
            " INSERT INTO message_index (message_index, rowid, text)"
            " SELECT 'delete', old.id, old.text WHERE old.text <> '';"
            " INSERT INTO message_index (rowid, text) VALUES (new.id, new.text); END"
        )
    text = "".join(r[0] for r in db.execute("SELECT text FROM messages LIMIT 40"))[:20_000]
    message = store.begin_assistant_message(long_id)
    if mode == "at once":
        db.execute("DELETE FROM search_backlog WHERE message_id = ?", (message,))
        db.execute("INSERT INTO message_index (rowid, text) VALUES (?, '')", (message,))
    times = []
    for n in range(1, 41):
        start = time.perf_counter()
        store.update_assistant_partial(message, text[: n * 500])
        times.append((time.perf_counter() - start) * 1000)
    store.close()
    return statistics.mean(times), max(times)


def measure(quick: bool = False) -> list[Row]:
    runs = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="streamscope-bench-search-"))
    try:
        facts = cached_profile(work / "profile")
        src = Path(facts.path)
        rows: list[Row] = []
        v4_mb = _size_mb(_copy(src, work / "v4"))
        migrated = _copy(src, work / "migrated")
        start = time.perf_counter()
        Store(migrated).close()
        rows.append(
            info(
                NAME, "open + migrate to schema 5", f"{(time.perf_counter() - start) * 1000:.0f} ms"
            )
        )
        indexed = _copy(migrated, work / "indexed")
        seconds = backfill(indexed)
        rows.append(info(NAME, "backfill in the background", f"{seconds:.1f} s"))
        rows.append(
            info(NAME, "database size before / after", f"{v4_mb:.0f} / {_size_mb(indexed):.0f} MB")
        )
        for label, query in QUERIES.items():
            first, last, found = search_times(indexed, query, runs)
            rows.append(
                info(
                    NAME,
                    f"thread, indexed: {label} {query!r}",
                    f"first {first:.0f} ms, all {last:.0f} ms ({found})",
                )
            )
            first, last, found = search_times(migrated, query, runs)  # (reads only)
            rows.append(
                info(
                    NAME,
                    f"thread, not indexed yet: {label}",
                    f"first {first:.0f} ms, all {last:.0f} ms ({found})",
                )
            )
        for while_indexing, path in ((False, indexed), (True, _copy(migrated, work / "live"))):
            state = "while backfilling" if while_indexing else "indexed"
            figures = panel_figures(path, QUERIES, while_indexing)
            for key, value in figures.items():
                metric = f"panel, {state}: {key}"
                if key.endswith("first rows (ms)"):
                    rows.append(check(NAME, metric, value, 200, ".0f", " ms"))
                elif key.endswith("worst stall (ms)"):
                    rows.append(check(NAME, metric, value, 20, ".1f", " ms"))
                else:
                    rows.append(info(NAME, metric, f"{value:.1f}"))
        for mode in ("v4", "backlog", "at once"):
            mean, worst = partial_saves(_copy(indexed, work / f"save-{mode}"), facts.long_id, mode)
            rows.append(
                info(
                    NAME,
                    f"partial save of a 20 KB answer, {mode}",
                    f"{mean:.2f} ms (worst {worst:.1f})",
                )
            )
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    _isolate()
    rows = measure(args.quick)
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
