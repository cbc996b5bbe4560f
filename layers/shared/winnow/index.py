"""The index lifecycle in one place: embedding profile → collection → the alias searches read → a rebuild
into the configured profile → the switch. It answers the composition root's two questions: which embedder
and store serve reads (``IndexLifecycle.reads``), and which store takes writes (``IndexLifecycle.writes``).

- The pointer (``ActiveIndex``: a Qdrant alias on the store's own engine) is read at most once per ``ttl``
  seconds (``ActiveProfileCache``), so a warm search container follows a switch within a minute without
  paying a Qdrant round trip per query.
- While searches still read the previous profile's collection (a rebuild under way), reads use that
  collection and a query embedder of its profile; ingest writes the configured profile's collection and
  also applies deletions and metadata changes to the previous one (``TransitionStore``), so a document
  deleted during the rebuild does not linger in search results until the switch.
- Reconcile moves the pointer: ``open_pointer`` on its first run, ``switch_when_rebuilt`` once no indexed
  document is left on another profile (docs/reconcile.md).
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from winnow.access import AccessList, ReadScope
from winnow.errors import ConfigurationError
from winnow.models import ChunkPoint, DocumentStatus, EmbeddingProfile, StoredChunk
from winnow.observability import logger
from winnow.ports import ActiveIndex, ChunkPlace, Embedder, Ledger, SearchQuery, VectorStore
from winnow.rules import is_tenant


@runtime_checkable
class ProfileCollections(Protocol):
    """A store that keeps one collection per profile on its engine, and the pointer among them (the
    Qdrant stores, ``adapters.qdrant_collection.CollectionStore``)."""

    def for_profile(self, profile: EmbeddingProfile) -> VectorStore: ...

    def active_index(self) -> ActiveIndex: ...


class Wiring(Protocol):
    """What the lifecycle asks of the composition root: the configured components (read at each use,
    so a replaced store is followed) and a query embedder for another profile."""

    @property
    def store(self) -> VectorStore: ...

    @property
    def embedder(self) -> Embedder: ...

    def query_embedder(self, profile: EmbeddingProfile) -> Embedder: ...


@dataclass(frozen=True)
class _Rebuild:
    """What serves while a rebuild into the configured profile runs, built once per (profile, store)."""

    profile: EmbeddingProfile  # the profile searches still read
    configured: VectorStore  # the configured store these were built beside
    embedder: Embedder
    store: VectorStore
    ingest_store: VectorStore


class IndexLifecycle:
    """Which collection serves reads and which take writes, from the pointer and the configured profile."""

    def __init__(self, wiring: Wiring, lock: AbstractContextManager[Any], ttl_seconds: float = 60.0) -> None:
        self._wiring = wiring
        self._lock = lock  # the composition root's (re-entrant) lock: the wiring takes it too
        self._ttl = ttl_seconds
        self._pointer: tuple[ActiveIndex | None] | None = None
        self._cache: ActiveProfileCache | None = None
        self._rebuild: _Rebuild | None = None

    @property
    def active_index(self) -> ActiveIndex | None:
        """The pointer, on the store's own engine; None for a store that is not Qdrant."""
        with self._lock:
            if self._pointer is None:
                store = self._wiring.store
                self._pointer = (store.active_index() if isinstance(store, ProfileCollections) else None,)
            return self._pointer[0]

    def active_profile(self) -> EmbeddingProfile | None:
        """The profile searches read (looked up at most once per ``ttl``); None when no pointer is set."""
        index = self.active_index
        if index is None:
            return None
        with self._lock:
            if self._cache is None:
                self._cache = ActiveProfileCache(index, self._ttl)
        return self._cache.get()

    def forget_active(self) -> None:
        """Drop the cached pointer, so this process sees a switch at once (the CLI after a run, tests)."""
        if self._cache is not None:
            self._cache.invalidate()

    def rebuilding_from(self) -> EmbeddingProfile | None:
        """The profile searches still read while a rebuild into the configured one runs, else None."""
        active = self.active_profile()
        return None if active is None or active == self._wiring.embedder.profile else active

    def reads(self) -> tuple[Embedder, VectorStore]:
        """The query embedder and the store searches use: the configured ones, or the previous
        profile's while a rebuild runs."""
        rebuilding = self.rebuilding_from()
        if rebuilding is None:
            return self._wiring.embedder, self._wiring.store
        old = self._rebuild_for(rebuilding)
        return old.embedder, old.store

    def writes(self) -> VectorStore:
        """The store ingest writes: the configured profile's, mirroring deletions and metadata to the
        collection searches still read while a rebuild is under way."""
        rebuilding = self.rebuilding_from()
        return self._wiring.store if rebuilding is None else self._rebuild_for(rebuilding).ingest_store

    def _rebuild_for(self, profile: EmbeddingProfile) -> _Rebuild:
        with self._lock:
            built = self._rebuild
            configured = self._wiring.store
            if built is None or built.profile != profile or built.configured is not configured:
                previous = self._store_for(configured, profile)
                built = self._rebuild = _Rebuild(
                    profile=profile,
                    configured=configured,
                    embedder=self._wiring.query_embedder(profile),
                    store=previous,
                    ingest_store=TransitionStore(configured, previous),
                )
            return built

    @staticmethod
    def _store_for(configured: VectorStore, profile: EmbeddingProfile) -> VectorStore:
        if not isinstance(configured, ProfileCollections):
            raise ConfigurationError("profile switching needs the Qdrant vector store")
        return configured.for_profile(profile)


def open_pointer(
    index: ActiveIndex, ledger: Ledger, configured: EmbeddingProfile, *, dry_run: bool
) -> EmbeddingProfile:
    """The first run's pointer: on the profile of documents indexed before any pointer existed while its
    collection is still there (searches stay on it until the configured one is complete), else on the
    configured profile. A dry run only says where it would point."""
    target = _legacy_profile(index, ledger, configured) or configured
    if not dry_run:
        index.activate(target)
        logger.info("active collection pointer created", extra={"profile": target.slug})
    return target


def switch_when_rebuilt(
    index: ActiveIndex, ledger: Ledger, configured: EmbeddingProfile, active: EmbeddingProfile
) -> bool:
    """Move searches to the configured profile once no indexed document is left on another one."""
    for record in ledger.scan():
        live = is_tenant(record.tenant) and record.status == DocumentStatus.INDEXED
        if live and record.profile != configured.slug:
            logger.info(
                "profile rebuild still under way",
                extra={"active": active.slug, "configured": configured.slug},
            )
            return False
    index.activate(configured)
    logger.info("searches switched to the rebuilt collection", extra={"profile": configured.slug})
    return True


def _legacy_profile(
    index: ActiveIndex, ledger: Ledger, configured: EmbeddingProfile
) -> EmbeddingProfile | None:
    for record in ledger.scan():
        if not is_tenant(record.tenant) or record.status != DocumentStatus.INDEXED:
            continue
        if record.profile and record.profile != configured.slug:
            for profile in index.available():
                if profile.slug == record.profile:
                    return profile
            return None
        return None  # records carry the configured profile: nothing to protect
    return None


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

    def reusable_vectors(self, tenant: str, key: str, wanted: Collection[str]) -> dict[str, array[float]]:
        return self.target.reusable_vectors(tenant, key, wanted)

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
