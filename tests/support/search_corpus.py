"""Conversations to search, an older (version 4) database holding them, and two oracles: what
a search must return (by brute force, in Python) and whether the full-text index holds
exactly what it should (term by term, against an index built afresh)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from streamscope.core.store.schema import migrate

__all__ = [
    "CORPUS",
    "build_v4",
    "drain",
    "index_is_exact",
    "oracle",
]

CORPUS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Streams", ("Streaming tokens arrive quickly", "and the window keeps up")),
    ("Поток", ("Поток токенов приходит быстро", "окно не замерзает")),
    ("令牌", ("令牌流式到达很快", "窗口保持")),
    ("Emoji", ("launch 🚀 now ✅ done", "⚠️ careful")),
    ("Grüße", ("Grüße aus Zürich", "ΑΛΦΑ and beta")),
    ("Syntax", ('he said "quote" AND NOT OR NEAR(a b) col:val ^start', "x - y * z")),
    ("Escapes", ("100% pure_tea with back\\slash", "a*star and -minus and (paren)")),
    ("Plain", ("nothing special here", "the needle is here")),
)
"""(title, message texts): conversation ``n + 1`` is ``CORPUS[n]`` (the last is newest)."""


def build_v4(path: Path, corpus: Sequence[tuple[str, Sequence[str]]] = CORPUS) -> None:
    """A database as version 4 left it (no index), holding ``corpus`` — every second
    message an assistant answer with its turn, updated one second apart."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        migrate(db, upto=4)
        db.execute("BEGIN")
        t = 1_700_000_000.0
        for number, (title, texts) in enumerate(corpus, start=1):
            db.execute(
                "INSERT INTO conversations (id, title, created, updated) VALUES (?, ?, ?, ?)",
                (number, title, t, t + number),
            )
            parent = None
            for seq, text in enumerate(texts):
                role = "user" if seq % 2 == 0 else "assistant"
                cur = db.execute(
                    "INSERT INTO messages (conversation_id, seq, role, text, created, parent_id)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (number, seq, role, text, t, parent),
                )
                parent = cur.lastrowid
                if role == "assistant":
                    db.execute(
                        "INSERT INTO turns (message_id, status, outcome, alt_group)"
                        " VALUES (?, 'done', 'completed', ?)",
                        (parent, parent),
                    )
        db.execute("COMMIT")
    finally:
        db.close()


def oracle(db: sqlite3.Connection, query: str) -> list[int]:
    """The conversations a search for ``query`` must list, newest first: not deleted, and
    ``query`` in the title or a message's text, ignoring case."""
    needle = query.lower()
    hits = set()
    for conv_id, title in db.execute("SELECT id, title FROM conversations"):
        if needle in title.lower():
            hits.add(conv_id)
    for conv_id, text in db.execute("SELECT conversation_id, text FROM messages"):
        if needle in text.lower():
            hits.add(conv_id)
    rows = db.execute(
        "SELECT id FROM conversations WHERE deleted_at IS NULL ORDER BY updated DESC, id DESC"
    )
    return [r[0] for r in rows if r[0] in hits]


def _instances(db: sqlite3.Connection, schema: str, table: str) -> list[tuple[object, ...]]:
    name = f"vocab_{table}"
    vocab = f"fts5vocab({schema}, {table}, instance)"
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING {vocab}")
    return sorted(db.execute(f"SELECT term, doc, col, offset FROM temp.{name}"))


def index_is_exact(db: sqlite3.Connection) -> bool:
    """Whether both indexes hold exactly the rows they should (by the rule in
    :mod:`streamscope.core.store.search_index`), each with its current text."""
    (below,) = db.execute("SELECT below FROM search_backfill WHERE source = 'messages'").fetchone()
    (titles_below,) = db.execute(
        "SELECT below FROM search_backfill WHERE source = 'conversations'"
    ).fetchone()
    db.executescript(
        "DROP TABLE IF EXISTS temp.ref_messages; DROP TABLE IF EXISTS temp.ref_titles;"
        "CREATE VIRTUAL TABLE temp.ref_messages USING fts5(text, tokenize='trigram');"
        "CREATE VIRTUAL TABLE temp.ref_titles USING fts5(title, tokenize='trigram');"
    )
    db.execute(
        "INSERT INTO temp.ref_messages (rowid, text) SELECT id, text FROM messages"
        " WHERE id > ? AND id NOT IN (SELECT message_id FROM search_backlog)",
        (below,),
    )
    db.execute(
        "INSERT INTO temp.ref_titles (rowid, title) SELECT id, title FROM conversations"
        " WHERE id > ?",
        (titles_below,),
    )
    return _instances(db, "main", "message_index") == _instances(
        db, "temp", "ref_messages"
    ) and _instances(db, "main", "title_index") == _instances(db, "temp", "ref_titles")


def drain(db: sqlite3.Connection, rows: int = 100) -> int:
    """Run :func:`~streamscope.core.store.search_index.index_step` until it has nothing to
    do; returns how many steps it took."""
    from streamscope.core.store.search_index import index_step

    steps = 0
    while index_step(db, rows):
        steps += 1
    return steps
