"""How the local SQLite stores (the ledger, the conversations) open their database, once."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path


def open_database(
    path: str, pragmas: Sequence[str] = (), file_pragmas: Sequence[str] = ()
) -> sqlite3.Connection:
    """A connection to ``path`` (``:memory:`` or a file, its folder made): autocommit, so a store's own
    ``BEGIN`` makes a conditional write one transaction; usable from any thread under the store's lock;
    rows by column name; up to 10 s of waiting on another writer; a file in write-ahead-log mode. Then
    ``pragmas``, and for a file ``file_pragmas``."""
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA busy_timeout = 10000")
    for pragma in pragmas:
        db.execute(f"PRAGMA {pragma}")
    if path != ":memory:":
        db.execute("PRAGMA journal_mode = WAL")
        for pragma in file_pragmas:
            db.execute(f"PRAGMA {pragma}")
    return db
