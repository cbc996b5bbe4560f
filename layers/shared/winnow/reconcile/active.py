"""The two halves of an embedding-profile switch that live outside the reconcile run itself.

- ``ActiveProfileCache``: what searches read is looked up through the ``ActiveIndex`` at most once per
  ``ttl`` seconds, so a warm search container follows a switch within a minute without paying a Qdrant
  round trip per query.
- ``TransitionStore``: while searches still read the previous profile's collection, ingest writes the
  configured profile's collection and also applies deletions and metadata changes to the previous one,
  so a document deleted during the rebuild does not linger in search results until the switch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from winnow.access import AccessList, ReadScope
from winnow.models import ChunkPoint, EmbeddingProfile, StoredChunk
from winnow.ports import ActiveIndex, ChunkPlace, SearchQuery, VectorStore


class ActiveProfileCache:
    def __init__(
        self, index: ActiveIndex, ttl_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._index = index
        self._ttl = ttl_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._value: EmbeddingProfile | None = None
        self._expires = float("-inf")

    def get(self) -> EmbeddingProfile | None:
        with self._lock:
            now = self._clock()
            if now >= self._expires:
                self._value = self._index.active()
                self._expires = now + self._ttl
            return self._value

    def invalidate(self) -> None:
        with self._lock:
            self._expires = float("-inf")


class TransitionStore(VectorStore):
    """``target``: the configured profile's collection (every read and write). ``previous``: the one
    searches still read, which receives deletions and metadata changes only."""

    def __init__(self, target: VectorStore, previous: VectorStore) -> None:
        self.target = target
        self.previous = previous

    def ensure_collection(self) -> None:
        self.target.ensure_collection()

    def existing_vectors(self, tenant: str, key: str) -> dict[str, list[float]]:
        return self.target.existing_vectors(tenant, key)

    def point_ids(self, tenant: str, key: str) -> set[str]:
        return self.target.point_ids(tenant, key)

    def upsert(self, points: Sequence[ChunkPoint]) -> None:
        self.target.upsert(points)

    def delete_points(self, point_ids: Sequence[str]) -> None:
        # Point ids depend on tenant, key and chunk content only: the same ids name the same chunks there.
        self.target.delete_points(point_ids)
        self.previous.delete_points(point_ids)

    def delete_document(self, tenant: str, key: str) -> int:
        removed = self.target.delete_document(tenant, key)
        self.previous.delete_document(tenant, key)
        return removed

    def set_metadata(self, tenant: str, key: str, metadata: dict[str, Any]) -> int:
        updated = self.target.set_metadata(tenant, key, metadata)
        self.previous.set_metadata(tenant, key, metadata)
        return updated

    def search(self, query: SearchQuery) -> list[StoredChunk]:
        return self.target.search(query)

    def readable_keys(self, tenant: str, reader: ReadScope, keys: Sequence[str]) -> set[str]:
        return self.target.readable_keys(tenant, reader, keys)

    def document_access(self, tenant: str, key: str) -> tuple[bool, AccessList | None]:
        return self.target.document_access(tenant, key)

    def dense_vectors(self, point_ids: Sequence[str]) -> dict[str, list[float]]:
        return self.target.dense_vectors(point_ids)

    def chunks_at(self, tenant: str, reader: ReadScope, places: Sequence[ChunkPlace]) -> list[StoredChunk]:
        return self.target.chunks_at(tenant, reader, places)

    def count_by_document(self, tenant: str | None = None) -> dict[tuple[str, str], int]:
        return self.target.count_by_document(tenant)

    def document_keys(self, tenant: str | None = None) -> Iterator[tuple[str, str]]:
        return self.target.document_keys(tenant)

    def tenants(self) -> set[str]:
        return self.target.tenants()
