"""Helpers for the reliability suite (``tests/*/test_reliability_*.py``, ``test_isolation.py``,
``test_load_*.py``): compare what the index holds, break providers on purpose, and redeliver messages
the way SQS would.

Not a pytest plugin: tests import what they need. Everything here wraps real parts (the Qdrant client,
an ``ObjectSource``) instead of replacing them, so the code under test still runs its own error handling.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from winnow.errors import ObjectGone
from winnow.factory import set_container
from winnow.models import LedgerRecord, ObjectInfo
from winnow.ports import Ledger, ObjectSource, VectorStore

# A point as the comparison sees it: payload (canonical JSON), dense vector and sparse vector, rounded so
# that a vector read back from Qdrant (normalised float32) equals the one embedded afresh.
PointView = tuple[str, tuple[float, ...], tuple[tuple[int, float], ...]]


def point_snapshot(store: VectorStore, tenant: str | None = None) -> dict[str, PointView]:
    """Every point of the store's collection (optionally one tenant's): id → payload and vectors."""
    out: dict[str, PointView] = {}
    for p in _every_point(store):
        payload = p.payload or {}
        if tenant is not None and payload.get("tenant") != tenant:
            continue
        vectors = p.vector or {}
        dense = tuple(round(float(x), 5) for x in vectors.get("dense", []))
        sparse_vector = vectors.get("bm25")
        sparse = (
            tuple(
                sorted(
                    (int(i), round(float(v), 5))
                    for i, v in zip(sparse_vector.indices, sparse_vector.values, strict=True)
                )
            )
            if sparse_vector is not None
            else ()
        )
        out[str(p.id)] = (json.dumps(payload, sort_keys=True), dense, sparse)
    return out


def _every_point(store: VectorStore) -> Iterator[Any]:
    """Every point with payload and vectors, read through the engine's own API (not the store's)."""
    from winnow_local.adapters.qdrant_edge import EdgeVectorStore

    name = store.collection_name  # type: ignore[attr-defined]
    offset: Any = None
    if isinstance(store, EdgeVectorStore):
        import qdrant_edge as E

        if store.folder.config(name) is None:
            return
        shard = store.folder.shard(name)
        while True:
            request = E.ScrollRequest(offset=offset, limit=256, with_payload=True, with_vector=True)
            points, offset = shard.scroll(request)
            yield from points
            if offset is None:
                return
    client = store.client  # type: ignore[attr-defined]
    if not client.collection_exists(name):
        return
    while True:
        points, offset = client.scroll(name, limit=256, offset=offset, with_payload=True, with_vectors=True)
        yield from points
        if offset is None:
            return


def drop_collection(store: VectorStore) -> None:
    """Delete the store's collection behind its back, through the engine's own API."""
    from winnow_local.adapters.qdrant_edge import EdgeVectorStore

    name = store.collection_name  # type: ignore[attr-defined]
    if isinstance(store, EdgeVectorStore):
        store.folder.delete(name)
    else:
        store.client.delete_collection(name)  # type: ignore[attr-defined]


def keys_in_index(store: VectorStore, tenant: str | None = None) -> set[tuple[str, str]]:
    """(tenant, key) of every document that has at least one point."""
    return set(store.count_by_document(tenant))


def ledger_view(record: LedgerRecord | None) -> dict[str, Any] | None:
    """A record without its timestamps, for "nothing changed" comparisons."""
    if record is None:
        return None
    view = dict(vars(record))
    view.pop("created_at", None)
    view.pop("updated_at", None)
    return view


def ledger_snapshot(ledger: Ledger, tenant: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r.tenant, r.key): ledger_view(r) or {} for r in ledger.scan(tenant)}


def free_port() -> int:
    """A localhost port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def using(stack: Any) -> Iterator[Any]:
    """Make ``stack`` the container the handlers see (tests that run two stacks side by side)."""
    set_container(stack.container)
    try:
        yield stack
    finally:
        set_container(None)


class FlakyQdrantClient:
    """A real ``QdrantClient`` whose chosen operations fail with a connection error while ``failing``.

    ``fail_from_call``: the first call of each chosen operation that fails (1 = every call, 2 = the
    second upsert batch onwards, ...), counted since ``arm()``. Every other attribute, including the
    ``_client`` that tells the store it talks to local mode, is the real client's."""

    def __init__(self, client: Any, operations: tuple[str, ...] = ("upsert",)) -> None:
        self._real = client
        self._operations = operations
        self._lock = threading.Lock()
        self.failing = False
        self._armed = operations
        self.fail_from_call = 1
        self.calls: dict[str, int] = dict.fromkeys(operations, 0)
        self.failures = 0

    def arm(self, fail_from_call: int = 1, operations: tuple[str, ...] | None = None) -> None:
        """Fail the chosen operations (default: all given at construction) from ``fail_from_call`` on."""
        with self._lock:
            self.failing = True
            self.fail_from_call = fail_from_call
            self._armed = operations or self._operations
            self.calls = dict.fromkeys(self._operations, 0)

    def disarm(self) -> None:
        with self._lock:
            self.failing = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._real, name)
        if name not in self._operations:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.calls[name] += 1
                fail = self.failing and name in self._armed and self.calls[name] >= self.fail_from_call
                if fail:
                    self.failures += 1
            if fail:
                raise ConnectionRefusedError(f"injected: Qdrant {name} connection refused")
            return real(*args, **kwargs)

        return call


class MeddlingObjects(ObjectSource):
    """An ``ObjectSource`` that changes the bucket right after HEAD of a chosen key (once per ``arm``),
    the window in which a real S3 object can vanish or be replaced between the event and the GET."""

    def __init__(self, inner: ObjectSource) -> None:
        self.inner = inner
        self._target: str | None = None
        self._action: Callable[[str], None] | None = None
        self.meddled = 0

    def arm(self, key: str, action: Callable[[str], None]) -> None:
        self._target = key
        self._action = action

    def head(self, key: str) -> ObjectInfo:
        info = self.inner.head(key)
        if key == self._target and self._action is not None:
            action, self._action = self._action, None
            action(key)
            self.meddled += 1
        return info

    def get(self, key: str, info: ObjectInfo | None = None) -> bytes:
        return self.inner.get(key, info)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    # the stack's put/delete helpers use these when present
    def put(self, key: str, data: bytes, metadata: dict[str, str] | None = None) -> Any:
        return self.inner.put(key, data, metadata=metadata)  # type: ignore[attr-defined]

    def delete(self, key: str) -> Any:
        return self.inner.delete(key)  # type: ignore[attr-defined]


def object_exists(objects: ObjectSource, key: str) -> bool:
    try:
        objects.head(key)
    except ObjectGone:
        return False
    return True
