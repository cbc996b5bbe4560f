"""The index lifecycle (winnow.index.IndexLifecycle) on real Qdrant Edge collections: while the pointer
still names the previous profile's collection, reads go there with that profile's query embedder and
writes go to the configured collection, deletions mirrored to the previous one; once the pointer moves,
both questions answer with the configured components."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from tests.integration.test_qdrant_store import PROFILE, dense, keys, point, qsettings, query
from winnow.index import IndexLifecycle, TransitionStore
from winnow.models import EmbeddingProfile
from winnow.ports import Embedder, InputType, VectorStore
from winnow_local.adapters.qdrant_edge import EdgeFolder, EdgeVectorStore

OLD = EmbeddingProfile(provider="test", model="toy-axes-old", dimension=PROFILE.dimension)


class AxesEmbedder(Embedder):
    """The store tests' toy vectors (one axis per vocabulary word) under a given profile."""

    def __init__(self, profile: EmbeddingProfile) -> None:
        self._profile = profile

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        return [dense(text) for text in texts]


@dataclass
class Wiring:
    store: VectorStore
    embedder: Embedder
    asked: list[EmbeddingProfile] = field(default_factory=list)

    def query_embedder(self, profile: EmbeddingProfile) -> Embedder:
        self.asked.append(profile)
        return AxesEmbedder(profile)


@pytest.fixture
def folder() -> Iterator[EdgeFolder]:
    edge = EdgeFolder(":memory:")
    yield edge
    edge.close()


def test_during_a_rebuild_reads_stay_on_the_old_collection_and_deletions_reach_both(
    folder: EdgeFolder,
) -> None:
    # Given the old profile's collection holding two documents, searched through the pointer
    old = EdgeVectorStore(folder, OLD, qsettings())
    old.ensure_collection()
    old.upsert([point("acme", "a.txt", "alpha beta"), point("acme", "b.txt", "alpha gamma")])
    old.active_index().activate(OLD)
    # And the configured (new) profile's collection, where a rebuild has re-indexed one of them
    new = EdgeVectorStore(folder, PROFILE, qsettings())
    new.ensure_collection()
    new.upsert([point("acme", "a.txt", "alpha beta")])
    wiring = Wiring(store=new, embedder=AxesEmbedder(PROFILE))
    lifecycle = IndexLifecycle(wiring, threading.RLock())
    # When searches ask what serves reads
    embedder, store = lifecycle.reads()
    # Then the old collection with a query embedder of its profile: both documents are found
    assert embedder.profile == OLD and wiring.asked == [OLD]
    assert store.collection_name == old.collection_name  # type: ignore[attr-defined]
    assert sorted(keys(store.search(query("acme", "alpha")))) == ["a.txt", "b.txt"]
    # When ingest deletes a document through the store that takes writes
    writes = lifecycle.writes()
    assert isinstance(writes, TransitionStore) and writes.target is new
    writes.delete_document("acme", "b.txt")
    # Then it is gone from the collection searches read, not only from the one being built
    assert keys(store.search(query("acme", "alpha"))) == ["a.txt"]
    # And the components are built once per rebuild
    assert lifecycle.reads()[1] is store and wiring.asked == [OLD]

    # When the pointer moves to the configured profile (reconcile's switch) and the cache is dropped
    new.active_index().activate(PROFILE)
    lifecycle.forget_active()
    # Then reads and writes are the configured components themselves
    assert lifecycle.reads() == (wiring.embedder, new)
    assert lifecycle.writes() is new


def test_without_a_pointer_the_configured_components_serve(folder: EdgeFolder) -> None:
    configured = EdgeVectorStore(folder, PROFILE, qsettings())
    configured.ensure_collection()
    wiring = Wiring(store=configured, embedder=AxesEmbedder(PROFILE))
    lifecycle = IndexLifecycle(wiring, threading.RLock())
    assert lifecycle.active_profile() is None
    assert lifecycle.reads() == (wiring.embedder, configured) and lifecycle.writes() is configured
    assert wiring.asked == []
