"""The ``Ledger`` on SQLite, for the embedded default and tests. Same rules as the DynamoDB ledger (shared
in ``_ledger_common``): conditional writes on the S3 sequencer, an opaque cursor, per-document leases.

One connection guarded by a lock serves every thread of the process (``:memory:`` needs exactly one
connection); WAL mode and ``BEGIN IMMEDIATE`` make the conditional writes and leases safe across processes
too (the CLI and ``winnow serve`` may share a file)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from winnow.adapters._ledger_common import (
    INT_FIELDS,
    RECORD_FIELDS,
    accepts,
    check_identity,
    check_page_size,
    decode_cursor,
    encode_cursor,
)
from winnow.errors import ProviderUnavailable
from winnow.models import DocumentStatus, LedgerRecord
from winnow.ports import Ledger
from winnow.rules import now_iso, sequencer_sort_key
from winnow_local.adapters._sqlite import open_database

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    status TEXT NOT NULL,
    content_sha256 TEXT,
    etag TEXT,
    version_id TEXT,
    sequencer TEXT,
    seq_sort TEXT,
    chunks INTEGER NOT NULL DEFAULT 0,
    embedded INTEGER NOT NULL DEFAULT 0,
    reused INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    title TEXT,
    source_type TEXT,
    metadata_sha256 TEXT,
    profile TEXT,
    ocr_pages INTEGER NOT NULL DEFAULT 0,
    created_at TEXT,
    updated_at TEXT,
    access TEXT,
    vision_calls INTEGER NOT NULL DEFAULT 0,
    vision_tokens INTEGER NOT NULL DEFAULT 0,
    figures INTEGER NOT NULL DEFAULT 0,
    reader INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    tenant TEXT NOT NULL,
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    until REAL NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;
"""
_COLUMNS = ", ".join(RECORD_FIELDS)
_SCAN_PAGE = 500


class SqliteLedger(Ledger):
    def __init__(self, path: Path | str, *, clock: Callable[[], float] = time.time) -> None:
        self._path = str(path)
        self._clock = clock
        self._lock = threading.RLock()
        self._db = open_database(self._path, file_pragmas=("synchronous = NORMAL",))
        with self._lock:
            self._db.executescript(_SCHEMA)
            _add_missing_columns(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- records -----------------------------------------------------------------------------------
    def get(self, tenant: str, key: str) -> LedgerRecord | None:
        row = self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM documents WHERE tenant = ? AND key = ?", (tenant, key)
            ).fetchone()
        )
        return _record(row) if row is not None else None

    def put(self, record: LedgerRecord, *, same_event_ok: bool = False) -> bool:
        check_identity(record)
        new_sort = sequencer_sort_key(record.sequencer) if record.sequencer is not None else None

        def write(db: sqlite3.Connection) -> bool:
            stored = db.execute(
                "SELECT sequencer, seq_sort, created_at FROM documents WHERE tenant = ? AND key = ?",
                (record.tenant, record.key),
            ).fetchone()
            if stored is not None and not accepts(record.sequencer, stored["seq_sort"], same_event_ok):
                return False
            values = {name: getattr(record, name) for name in RECORD_FIELDS}
            values["status"] = DocumentStatus(record.status).value
            if record.sequencer is None and stored is not None:  # keep the newest sequencer ever seen
                values["sequencer"] = stored["sequencer"]
                seq_sort = stored["seq_sort"]
            else:
                seq_sort = new_sort
            now = now_iso()
            values["created_at"] = record.created_at or (stored["created_at"] if stored else None) or now
            values["updated_at"] = record.updated_at or now
            names = [*RECORD_FIELDS, "seq_sort"]
            params = [*(values[n] for n in RECORD_FIELDS), seq_sort]
            placeholders = ", ".join("?" * len(names))
            columns = ", ".join(names)
            db.execute(f"INSERT OR REPLACE INTO documents ({columns}) VALUES ({placeholders})", params)
            return True

        return self._transaction(write)

    def list(
        self, tenant: str, limit: int = 50, cursor: str | None = None
    ) -> tuple[list[LedgerRecord], str | None]:
        size = check_page_size(limit)
        after = decode_cursor(tenant, cursor) if cursor else None
        rows = self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM documents WHERE tenant = ? AND (? IS NULL OR key > ?) "
                "ORDER BY key LIMIT ?",
                (tenant, after, after, size + 1),
            ).fetchall()
        )
        records = [_record(r) for r in rows[:size]]
        next_cursor = encode_cursor(tenant, records[-1].key) if len(rows) > size else None
        return records, next_cursor

    def cursor_after(self, tenant: str, key: str) -> str:
        return encode_cursor(tenant, key)

    def scan(self, tenant: str | None = None) -> Iterator[LedgerRecord]:
        """Keyset pages, each read whole: the caller may write to the ledger between records."""
        last: tuple[str, str] = ("", "")
        first = True
        while True:
            if tenant is not None:
                sql = (
                    f"SELECT {_COLUMNS} FROM documents WHERE tenant = ? AND (? OR key > ?) "
                    "ORDER BY key LIMIT ?"
                )
                params: tuple[Any, ...] = (tenant, first, last[1], _SCAN_PAGE)
            else:
                sql = (
                    f"SELECT {_COLUMNS} FROM documents WHERE ? OR (tenant, key) > (?, ?) "
                    "ORDER BY tenant, key LIMIT ?"
                )
                params = (first, last[0], last[1], _SCAN_PAGE)
            rows = self._run(lambda db, s=sql, p=params: db.execute(s, p).fetchall())  # type: ignore[misc]
            for row in rows:
                yield _record(row)
            if len(rows) < _SCAN_PAGE:
                return
            last = (rows[-1]["tenant"], rows[-1]["key"])
            first = False

    # --- leases ------------------------------------------------------------------------------------
    def acquire(self, tenant: str, key: str, owner: str, ttl_seconds: int) -> bool:
        now = self._clock()

        def take(db: sqlite3.Connection) -> bool:
            held = db.execute(
                "SELECT owner, until FROM leases WHERE tenant = ? AND key = ?", (tenant, key)
            ).fetchone()
            if held is not None and held["owner"] != owner and held["until"] > now:
                return False
            db.execute(
                "INSERT OR REPLACE INTO leases (tenant, key, owner, until) VALUES (?, ?, ?, ?)",
                (tenant, key, owner, now + ttl_seconds),
            )
            return True

        return self._transaction(take)

    def release(self, tenant: str, key: str, owner: str) -> None:
        self._transaction(
            lambda db: db.execute(
                "DELETE FROM leases WHERE tenant = ? AND key = ? AND owner = ?", (tenant, key, owner)
            )
        )

    # --- plumbing ----------------------------------------------------------------------------------
    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return fn(self._db)
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc

    def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc
            try:
                result = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            try:
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._db.execute("ROLLBACK")
                raise _translate(exc) from exc
            return result


def _translate(exc: sqlite3.OperationalError) -> Exception:
    message = str(exc).lower()
    if "locked" in message or "busy" in message:
        return ProviderUnavailable("the SQLite ledger is busy (another process holds a write lock)")
    return exc


def _record(row: sqlite3.Row) -> LedgerRecord:
    values = {name: row[name] for name in RECORD_FIELDS}
    values["status"] = DocumentStatus(values["status"])
    for name in INT_FIELDS:
        values[name] = int(values[name] or 0)
    return LedgerRecord(**values)


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """A ledger written before a column existed gains it with its default: a count (``INT_FIELDS``:
    ``ocr_pages``, ``figures``, ``reader``...) 0, ``access`` none."""
    present = {row[1] for row in db.execute("PRAGMA table_info(documents)")}
    if "access" not in present:
        db.execute("ALTER TABLE documents ADD COLUMN access TEXT")
    for name in INT_FIELDS:
        if name not in present:
            db.execute(f"ALTER TABLE documents ADD COLUMN {name} INTEGER NOT NULL DEFAULT 0")
