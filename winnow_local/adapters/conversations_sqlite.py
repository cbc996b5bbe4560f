"""The ``ConversationStore`` on SQLite, beside the ledger on the embedded default (``conversations.sqlite3``
under ``WINNOW_HOME``). One connection behind a lock, WAL mode: the CLI and ``winnow serve`` may share it.
A write checks the owner's delete markers in its own transaction, so one racing a delete is never stored."""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from winnow.conversations.store import (
    NO_DELETES,
    ConversationStore,
    Memory,
    Owner,
    Turn,
    epoch_of,
    pack_vector,
    unpack_vector,
    write_holds,
)
from winnow.errors import ProviderUnavailable
from winnow_local.adapters._sqlite import open_database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    tenant TEXT NOT NULL, user TEXT NOT NULL, conversation_id TEXT NOT NULL, at_ns INTEGER NOT NULL,
    question TEXT NOT NULL, query_used TEXT NOT NULL, answer TEXT, cited TEXT NOT NULL, keys TEXT NOT NULL,
    at TEXT NOT NULL,
    expires INTEGER NOT NULL,
    PRIMARY KEY (tenant, user, conversation_id, at_ns)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS memories (
    tenant TEXT NOT NULL, user TEXT NOT NULL, at_ns INTEGER NOT NULL, id TEXT NOT NULL,
    conversation_id TEXT NOT NULL, question TEXT NOT NULL, answer TEXT NOT NULL, keys TEXT NOT NULL,
    at TEXT NOT NULL,
    profile TEXT NOT NULL, vector BLOB NOT NULL, expires INTEGER NOT NULL,
    PRIMARY KEY (tenant, user, at_ns, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS markers (
    tenant TEXT NOT NULL, user TEXT NOT NULL, any_delete TEXT NOT NULL, forget TEXT NOT NULL,
    PRIMARY KEY (tenant, user)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deleted (
    tenant TEXT NOT NULL, user TEXT NOT NULL, conversation_id TEXT NOT NULL, expires INTEGER,
    PRIMARY KEY (tenant, user, conversation_id)
) WITHOUT ROWID;
"""
_EPOCH = "SELECT any_delete, forget FROM markers WHERE tenant = ? AND user = ?"


class SqliteConversationStore(ConversationStore):
    def __init__(self, path: Path | str) -> None:
        self._path = str(path)
        self._lock = threading.RLock()
        # Deletes are for good on disk too: freed cells are zeroed, whatever the build's default.
        self._db = open_database(self._path, pragmas=("secure_delete = ON",))
        with self._lock:
            self._db.executescript(_SCHEMA)
        self.calls = 0  # store calls made (tests: a one-shot request makes none)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            self.calls += 1
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:  # locked past the busy timeout, disk full
                raise ProviderUnavailable(f"conversation store: {exc}") from exc

    def _batch(
        self, statements: list[tuple[str, tuple[Any, ...]]], holds: Callable[[], bool] | None = None
    ) -> int:
        """Run ``statements`` in one transaction; none when ``holds`` (asked inside it) says no: -1."""
        with self._lock:
            self.calls += 1
            changed = 0
            try:
                self._db.execute("BEGIN IMMEDIATE")
                if holds is not None and not holds():
                    self._db.execute("ROLLBACK")
                    return -1
                for sql, params in statements:
                    changed += self._db.execute(sql, params).rowcount
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._db.execute("ROLLBACK")
                raise ProviderUnavailable(f"conversation store: {exc}") from exc
            return changed

    def _wipe(self) -> None:
        """After a delete: copy the log into the database and empty it, so the deleted rows (zeroed in
        the pages by ``secure_delete``) leave the write-ahead log too. A reader in another process can
        keep the log for a moment: the next delete, or SQLite's own checkpoint, empties it then."""
        if self._path == ":memory:":
            return
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.OperationalError as exc:
                raise ProviderUnavailable(f"conversation store: {exc}") from exc

    # --- deletes that a racing write cannot outlive ----------------------------------------------------
    def epoch(self, owner: Owner) -> str:
        rows = self._run(_EPOCH, (owner.tenant, owner.user))
        return epoch_of(rows[0][0], rows[0][1]) if rows else NO_DELETES

    def _holds(self, owner: Owner, conversation_id: str, epoch: str | None) -> Callable[[], bool] | None:
        """Asked inside the write's transaction (``write_holds``)."""
        if epoch is None:
            return None

        def deleted() -> bool:
            found = self._db.execute(
                "SELECT 1 FROM deleted WHERE tenant = ? AND user = ? AND conversation_id = ?",
                (owner.tenant, owner.user, conversation_id),
            ).fetchone()
            return found is not None

        def holds() -> bool:
            row = self._db.execute(_EPOCH, (owner.tenant, owner.user)).fetchone()
            return write_holds(epoch, epoch_of(row[0], row[1]) if row else NO_DELETES, deleted)

        return holds

    def _mark(self, owner: Owner, forget: bool) -> tuple[str, tuple[Any, ...]]:
        moved, forgot = uuid.uuid4().hex, uuid.uuid4().hex if forget else ""
        return (
            "INSERT INTO markers VALUES (?, ?, ?, ?) ON CONFLICT (tenant, user) DO UPDATE SET "
            "any_delete = excluded.any_delete, forget = CASE WHEN ? THEN excluded.forget ELSE forget END",
            (owner.tenant, owner.user, moved, forgot, forget),
        )

    def turns(self, owner: Owner, conversation_id: str, limit: int, now: float) -> list[Turn] | None:
        if self._run(
            "SELECT 1 FROM deleted WHERE tenant = ? AND user = ? AND conversation_id = ?",
            (owner.tenant, owner.user, conversation_id),
        ):
            return None
        rows = self._run(
            "SELECT * FROM turns WHERE tenant = ? AND user = ? AND conversation_id = ? AND expires > ? "
            "ORDER BY at_ns DESC LIMIT ?",
            (owner.tenant, owner.user, conversation_id, int(now), limit),
        )
        if not rows:
            return None
        return [
            Turn(
                question=r["question"],
                query_used=r["query_used"],
                answer=r["answer"],
                cited=tuple(json.loads(r["cited"])),
                keys=tuple(json.loads(r["keys"])),
                at=r["at"],
                at_ns=r["at_ns"],
            )
            for r in reversed(rows)
        ]

    def add_turn(
        self,
        owner: Owner,
        conversation_id: str,
        turn: Turn,
        expires: int,
        drop: Sequence[int] = (),
        epoch: str | None = None,
    ) -> bool:
        key = (owner.tenant, owner.user, conversation_id)
        return (
            self._batch(
                [
                    (
                        "INSERT OR REPLACE INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            *key,
                            turn.at_ns,
                            turn.question,
                            turn.query_used,
                            turn.answer,
                            *_rest(turn, expires),
                        ),
                    ),
                    *[
                        (
                            "DELETE FROM turns WHERE tenant = ? AND user = ? AND conversation_id = ? "
                            "AND at_ns = ?",
                            (*key, at_ns),
                        )
                        for at_ns in drop
                    ],
                ],
                self._holds(owner, conversation_id, epoch),
            )
            >= 0
        )

    def delete_conversation(self, owner: Owner, conversation_id: str, expires: int | None = None) -> bool:
        key = (owner.tenant, owner.user, conversation_id)
        where = "tenant = ? AND user = ? AND conversation_id = ?"
        # One transaction with the markers and the tombstone: no write begun before it stores anything.
        changed = self._batch(
            [
                self._mark(owner, forget=False),
                ("INSERT OR REPLACE INTO deleted VALUES (?, ?, ?, ?)", (*key, expires)),
                (f"DELETE FROM turns WHERE {where}", key),
                (f"DELETE FROM memories WHERE {where}", key),
            ]
        )
        self._wipe()
        return changed > 2  # the marker and the tombstone: written whether or not there was anything

    def add_memory(
        self,
        owner: Owner,
        memory: Memory,
        expires: int,
        drop: Sequence[Memory] = (),
        epoch: str | None = None,
    ) -> bool:
        key = (owner.tenant, owner.user)
        return (
            self._batch(
                [
                    (
                        "INSERT OR REPLACE INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            *key,
                            memory.at_ns,
                            memory.id,
                            memory.conversation_id,
                            *_memory_rest(memory, expires),
                        ),
                    ),
                    *[
                        (
                            "DELETE FROM memories WHERE tenant = ? AND user = ? AND at_ns = ? AND id = ?",
                            (*key, old.at_ns, old.id),
                        )
                        for old in drop
                    ],
                ],
                self._holds(owner, memory.conversation_id, epoch),
            )
            >= 0
        )

    def memories(self, owner: Owner, now: float) -> list[Memory]:
        rows = self._run(
            "SELECT * FROM memories WHERE tenant = ? AND user = ? AND expires > ? ORDER BY at_ns DESC",
            (owner.tenant, owner.user, int(now)),
        )
        return [
            Memory(
                id=r["id"],
                conversation_id=r["conversation_id"],
                question=r["question"],
                answer=r["answer"],
                keys=tuple(json.loads(r["keys"])),
                at=r["at"],
                at_ns=r["at_ns"],
                profile=r["profile"],
                vector=unpack_vector(r["vector"]),
            )
            for r in rows
        ]

    def forget(self, owner: Owner, expires: int | None = None) -> int:
        key = (owner.tenant, owner.user)
        deleted = (
            self._batch(
                [
                    self._mark(owner, forget=True),
                    ("DELETE FROM turns WHERE tenant = ? AND user = ?", key),
                    ("DELETE FROM memories WHERE tenant = ? AND user = ?", key),
                ]
            )
            - 1
        )  # the marker
        self._wipe()
        return deleted


def _rest(turn: Turn, expires: int) -> tuple[Any, ...]:
    return (json.dumps(turn.cited), json.dumps(turn.keys), turn.at, expires)


def _memory_rest(memory: Memory, expires: int) -> tuple[Any, ...]:
    vector = pack_vector(memory.vector)
    return (
        memory.question,
        memory.answer,
        json.dumps(memory.keys),
        memory.at,
        memory.profile,
        vector,
        expires,
    )
