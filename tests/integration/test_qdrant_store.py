"""The store contract: collection layout and recorded profile, batched upserts, the three search modes,
tenant isolation under any filter, metadata filters, metadata replacement, deletes, vector reuse; and the
Qdrant adapter's error translation over real HTTP.

Every contract test runs on both adapters: ``QdrantVectorStore`` (Qdrant Cloud or a server), here over
qdrant-client's in-memory local mode as the server's stand-in (the same client code path; not an engine
of ours), and ``EdgeVectorStore`` on Qdrant Edge, the embedded engine; they must behave the same.
``Engine`` builds stores on each and looks inside the engine the way its own API allows."""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from qdrant_client import QdrantClient
from qdrant_client.http import models as qm

from tests.support.qdrant import (
    CORPUS,
    EVERYTHING,
    PROFILE,
    VOCAB,
    dense,
    keys,
    point,
    qsettings,
    query,
    server_stand_in,
)
from winnow.access import ReadScope
from winnow.adapters.qdrant_collection import CollectionStore
from winnow.adapters.qdrant_errors import CollectionNotFound
from winnow.adapters.qdrant_store import (
    QdrantVectorStore,
    make_qdrant_client,
    profile_from_metadata,
    store_on,
)
from winnow.errors import BadRequest, ConfigurationError, ProfileMismatch, ProviderUnavailable
from winnow.models import AccessList, ChunkPoint, EmbeddingProfile, SparseVector
from winnow.ports import FilterValue, RangeFilter, SearchQuery
from winnow.settings import QdrantSettings
from winnow_local.adapters.qdrant_edge import EdgeFolder, EdgeVectorStore

pytestmark = pytest.mark.slow


class RecordingClient:
    """A real local-mode client that records the calls the store makes (to count batches and indexes)."""

    def __init__(self, inner: QdrantClient) -> None:
        self._inner = inner
        self._client = inner._client  # the store detects local mode through this
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        def record(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, {"args": args, **kwargs}))
            return target(*args, **kwargs)

        return record

    def named(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for call, kwargs in self.calls if call == name]


class Engine:
    """One embedded engine in memory: builds stores of either adapter on it, and reads what the engine
    holds through its own API (never through the store under test)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.raw: Any = EdgeFolder(":memory:") if name == "edge" else server_stand_in()

    def store(
        self, profile: EmbeddingProfile = PROFILE, settings_: QdrantSettings | None = None, **kw: Any
    ) -> Any:
        adapter: Any = EdgeVectorStore if self.name == "edge" else QdrantVectorStore
        return adapter(self.raw, profile, settings_ or qsettings(), **kw)

    def layout(self, name: str) -> tuple[dict[str, Any] | None, int, str, str | None]:
        """The collection's metadata, dense size and distance, and sparse modifier."""
        if self.name == "edge":
            config = self.raw.config(name)
            return (
                config["metadata"],
                config["vectors"]["dense"]["size"],
                config["vectors"]["dense"]["distance"],
                config["sparse_vectors"]["bm25"]["modifier"],
            )
        info = self.raw.get_collection(name)
        dense_params = info.config.params.vectors["dense"]
        modifier = info.config.params.sparse_vectors["bm25"].modifier
        return (
            info.config.metadata,
            dense_params.size,
            dense_params.distance.value,
            modifier and modifier.value,
        )

    def count(self, name: str) -> int:
        if self.name == "edge":
            import qdrant_edge as E

            return int(self.raw.shard(name).count(E.CountRequest(exact=True)))
        return int(self.raw.count(name).count)

    def payload(self, name: str, point_id: str) -> dict[str, Any]:
        if self.name == "edge":
            (record,) = self.raw.shard(name).retrieve([point_id], True, False)
        else:
            (record,) = self.raw.retrieve(name, [point_id], with_payload=True)
        return dict(record.payload)

    def collections(self) -> list[str]:
        if self.name == "edge":
            return list(self.raw.names())
        return [c.name for c in self.raw.get_collections().collections]

    def create_foreign(self, name: str) -> None:
        """A collection with a dense vector only and no recorded profile, as another tool would make."""
        if self.name == "edge":
            self.raw.create(name, {"dense": PROFILE.dimension}, [], None)
        else:
            self.raw.create_collection(
                name, vectors_config={"dense": qm.VectorParams(size=8, distance=qm.Distance.COSINE)}
            )

    def drop(self, name: str) -> None:
        if self.name == "edge":
            self.raw.delete(name)
        else:
            self.raw.delete_collection(name)

    def close(self) -> None:
        self.raw.close()


@pytest.fixture(params=["server", "edge"])
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def engine(engine_name: str) -> Iterator[Engine]:
    e = Engine(engine_name)
    yield e
    e.close()


@pytest.fixture
def store(engine: Engine) -> CollectionStore:
    s = engine.store()
    s.ensure_collection()
    return s


def spy(store: CollectionStore, method: str) -> list[tuple[Any, ...]]:
    """Record the arguments of each call of one of the store's engine calls (it still runs)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(store, method)

    def record(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    setattr(store, method, record)
    return calls


@pytest.fixture
def filled(store: CollectionStore) -> CollectionStore:
    store.upsert([point(t, k, text, metadata=m) for t, k, text, m in CORPUS])
    return store


# --- collection --------------------------------------------------------------------------------------
def test_ensure_collection_creates_the_layout_indexes_and_records_the_profile(engine: Engine) -> None:
    # Given a fresh Qdrant
    store = engine.store()
    indexes = spy(store, "_create_index")
    # When the store ensures its collection
    store.ensure_collection()
    # Then one collection per profile exists: dense cosine of the profile's size, sparse bm25 with IDF
    assert store.collection_name == f"t_{PROFILE.slug}"
    metadata, size, distance, modifier = engine.layout(store.collection_name)
    assert (size, distance, modifier) == (PROFILE.dimension, "Cosine", "idf")
    assert profile_from_metadata(metadata) == PROFILE
    # And a payload index of the fitting type was requested for every field a query filters on: the
    # tenant (is_tenant), the reserved filter fields, chunk position and version, access, and each
    # declared metadata field with its declared type
    assert dict(indexes) == {
        "tenant": "tenant",
        "key": "keyword",
        "source_type": "keyword",
        "title": "keyword",
        "kind": "keyword",
        "ocr": "bool",
        "chunk_index": "integer",
        "doc_version": "keyword",
        "access_users": "keyword",
        "access_groups": "keyword",
        "access_open": "bool",
        "meta.department": "keyword",
        "meta.year": "integer",
        "meta.public": "bool",
        "meta.tags": "keyword",
        "meta.tenant": "keyword",
        "meta.access_users": "keyword",
    }
    # When a second store (another container) ensures it again, Then nothing is created again
    again = engine.store()
    created = spy(again, "_create")
    again.ensure_collection()
    assert created == []


def test_the_qdrant_client_gets_a_tenant_index_and_waits_for_every_write() -> None:
    # Given the qdrant-client adapter (on the server's stand-in: the same calls as Qdrant Cloud)
    client = server_stand_in()
    recording = RecordingClient(client)
    store = QdrantVectorStore(recording, PROFILE, qsettings())  # type: ignore[arg-type]
    # When it creates its collection and writes 300 chunks
    store.upsert([point("acme", "big.txt", f"alpha beta {i}", index=i) for i in range(300)])
    # Then the tenant index is a keyword index with is_tenant, and each batch waited to be applied
    indexes = {c["field_name"]: c["field_schema"] for c in recording.named("create_payload_index")}
    assert indexes["tenant"].is_tenant is True
    assert all(c["wait"] is True for c in recording.named("create_payload_index"))
    assert [len(b["points"]) for b in recording.named("upsert")] == [256, 44]
    assert all(b["wait"] is True for b in recording.named("upsert"))
    client.close()


def test_a_collection_of_another_profile_is_refused(engine: Engine) -> None:
    # Given a collection made for the toy profile
    engine.store().ensure_collection()
    other = EmbeddingProfile(provider="test", model="other-model", dimension=PROFILE.dimension)
    # When a store of another profile is pointed at it (e.g. a slug collision or a renamed collection)
    intruder = engine.store(other, collection_name=f"t_{PROFILE.slug}")
    # Then it refuses to write or search there
    with pytest.raises(ProfileMismatch):
        intruder.ensure_collection()
    bad = point("acme", "a.txt", "alpha")
    with pytest.raises(ProfileMismatch):
        intruder.upsert([bad])
    with pytest.raises(ProfileMismatch):
        intruder.search(query("acme", "alpha"))
    assert engine.count(f"t_{PROFILE.slug}") == 0


def test_a_query_embedder_without_a_collection_is_told_which_profile_was_indexed(
    filled: CollectionStore, engine: Engine
) -> None:
    # Given documents indexed with the toy profile, When searching with a store of another profile
    other = EmbeddingProfile(provider="voyage", model="voyage-3.5", dimension=PROFILE.dimension)
    store = engine.store(other)
    # Then it is a configuration error naming the indexed collection, not an empty answer
    with pytest.raises(ProfileMismatch, match=PROFILE.slug):
        store.search(query("acme", "alpha"))


def test_a_collection_not_made_by_winnow_is_refused(engine: Engine) -> None:
    engine.create_foreign(f"t_{PROFILE.slug}")
    with pytest.raises(ProfileMismatch):
        engine.store().ensure_collection()


def test_an_empty_qdrant_answers_reads_with_nothing(engine: Engine) -> None:
    store = engine.store()
    assert store.search(query("acme", "alpha")) == []
    assert store.existing_vectors("acme", "a.txt") == {}
    assert store.point_ids("acme", "a.txt") == set()
    assert store.count_by_document() == {}
    assert store.delete_document("acme", "a.txt") == 0
    assert store.set_metadata("acme", "a.txt", {"x": "y"}) == 0
    assert engine.collections() == []  # reads never create the collection


def test_a_collection_dropped_behind_the_stores_back_is_a_configuration_error(
    filled: CollectionStore, engine: Engine
) -> None:
    # Given the collection deleted behind the store's back (by hand, or another process)
    engine.drop(filled.collection_name)
    # When the store searches, Then it is a configuration error naming the collection, not a bad request
    with pytest.raises(CollectionNotFound, match=filled.collection_name):
        filled.search(query("acme", "alpha"))
    # And the store noticed: the next write creates the collection again and is found
    filled.upsert([point("acme", "again.txt", "alpha beta")])
    assert keys(filled.search(query("acme", "alpha"))) == ["again.txt"]


# --- writes ------------------------------------------------------------------------------------------
def test_upserts_go_in_batches_of_at_most_256(engine: Engine) -> None:
    store = engine.store()
    batches = spy(store, "_write")
    # When 600 chunks of one document are upserted
    store.upsert([point("acme", "big.txt", f"alpha beta {i}", index=i) for i in range(600)])
    # Then three batches (256, 256, 88) were written, and every point is there once they return
    assert [len(b) for (b,) in batches] == [256, 256, 88]
    assert engine.count(store.collection_name) == 600


def test_a_smaller_configured_batch_size_is_honoured(engine: Engine) -> None:
    store = engine.store(settings_=qsettings(upsert_batch_size=100))
    batches = spy(store, "_write")
    store.upsert([point("acme", "big.txt", "alpha", index=i) for i in range(250)])
    assert [len(b) for (b,) in batches] == [100, 100, 50]


def test_vectors_of_the_wrong_dimension_are_refused_before_anything_is_written(
    store: CollectionStore,
) -> None:
    good = point("acme", "a.txt", "alpha", index=0)
    wrong = ChunkPoint(**{**good.__dict__, "point_id": str(uuid.uuid4()), "dense": [0.1] * 1024})
    with pytest.raises(ProfileMismatch):
        store.upsert([good, wrong])
    assert store.point_ids("acme", "a.txt") == set()


def test_point_ids_must_be_canonical_uuids(store: CollectionStore) -> None:
    p = point("acme", "a.txt", "alpha")
    with pytest.raises(ValueError, match="UUID"):
        store.upsert([ChunkPoint(**{**p.__dict__, "point_id": "acme/a.txt#0"})])


def test_the_payload_carries_citation_fields_and_user_metadata(
    filled: CollectionStore, engine: Engine
) -> None:
    pid = str(uuid.uuid5(uuid.NAMESPACE_URL, "acme/alpha.txt#0"))
    expected = point("acme", "alpha.txt", "alpha alpha beta")
    assert engine.payload(filled.collection_name, pid) == {
        "tenant": "acme",
        "key": "alpha.txt",
        "title": "Doc",
        "section": "Intro > Part",
        "section_path": ["Intro", "Part"],
        "page": 1,
        "chunk_index": 0,
        "text": "alpha alpha beta",
        "content_hash": expected.chunk.content_hash,
        "source_type": "text",
        "kind": "text",
        "ocr": False,
        "doc_version": '"etag-1"',
        "meta": {"department": "hr", "year": 2021, "public": True},
        # no access list: open, both lists empty (winnow.access)
        "access_users": [],
        "access_groups": [],
        "access_open": True,
    }


def test_the_read_condition_sits_in_the_query_on_every_engine(engine: Engine) -> None:
    # Given an open document, one for ann and the hr group, one for the admins only, and one written
    # before access lists existed (no access fields at all)
    store = engine.store()
    hr = {"_access": {"users": ["ann"], "groups": ["hr"]}}
    admins = {"_access": {"users": [], "groups": []}}
    docs = {"open.txt": {}, "hr.txt": hr, "admins.txt": admins, "legacy.txt": {}}
    store.upsert([point("acme", key, "alpha beta", metadata=m) for key, m in docs.items()])
    legacy = str(uuid.uuid5(uuid.NAMESPACE_URL, "acme/legacy.txt#0"))
    if engine.name == "edge":
        import qdrant_edge as E

        update = E.UpdateOperation.delete_payload([legacy], ["access_users", "access_groups", "access_open"])
        engine.raw.shard(store.collection_name).update(update)
    else:
        engine.raw.delete_payload(
            store.collection_name, keys=["access_users", "access_groups", "access_open"], points=[legacy]
        )
    assert "access_open" not in engine.payload(store.collection_name, legacy)

    def read(reader: ReadScope) -> set[str]:
        found = keys(store.search(query("acme", "alpha", limit=10, reader=reader)))
        listed = store.readable_keys("acme", reader, list(docs))
        assert set(found) == listed  # the listing's probe and the search agree
        return listed

    # Then each caller's search holds exactly what they may read, whatever the limit asks for
    assert read(ReadScope(open_documents=True)) == {"open.txt", "legacy.txt"}
    assert read(ReadScope()) == set()  # anonymous with DefaultAccess=deny: nothing, not everything
    assert read(ReadScope(users=("ann",))) == {"hr.txt"}
    assert read(ReadScope(open_documents=True, groups=("hr", "x"))) == {"open.txt", "legacy.txt", "hr.txt"}
    assert read(ReadScope(users=("bob",), groups=("legal",))) == set()
    assert read(EVERYTHING) == set(docs)
    # and a user filter on the access fields addresses user metadata: it narrows, never widens
    narrowed = store.search(query("acme", "alpha", filters={"access_users": ["ann"]}, reader=ReadScope()))
    assert narrowed == []
    # Each document's own list, read back for the write rules
    assert store.document_access("acme", "hr.txt") == (True, AccessList(users=("ann",), groups=("hr",)))
    assert store.document_access("acme", "admins.txt") == (True, AccessList())
    assert store.document_access("acme", "legacy.txt") == (True, None)
    assert store.document_access("acme", "none.txt") == (False, None)
    # When the hr document's list changes in place, Then the next search follows, vectors untouched
    before = store.existing_vectors("acme", "hr.txt")
    assert store.set_metadata("acme", "hr.txt", {"_access": {"users": [], "groups": ["legal"]}}) == 1
    assert read(ReadScope(users=("ann",))) == set()
    assert read(ReadScope(groups=("legal",))) == {"hr.txt"}
    assert store.existing_vectors("acme", "hr.txt") == before


def test_set_metadata_replaces_the_whole_metadata_of_one_document(filled: CollectionStore) -> None:
    before = filled.existing_vectors("acme", "alpha.txt")
    # When acme's alpha.txt gets new metadata without "year" and "public"
    assert filled.set_metadata("acme", "alpha.txt", {"department": "legal"}) == 1
    # Then its points carry exactly the new metadata, vectors untouched, other documents unchanged
    hits = filled.search(query("acme", "alpha", filters={"department": "legal"}))
    assert keys(hits) == ["alpha.txt"] and hits[0].metadata == {"department": "legal"}
    assert filled.search(query("acme", "alpha", filters={"year": 2021})) == []
    assert filled.existing_vectors("acme", "alpha.txt") == before
    globex = filled.search(query("globex", "alpha", filters={"year": 2021}))
    assert keys(globex) == ["alpha.txt"] and globex[0].metadata["public"] is True


def test_delete_document_removes_only_that_tenants_document(filled: CollectionStore) -> None:
    filled.upsert([point("acme", "alpha.txt", "alpha gamma", index=1)])
    assert filled.delete_document("acme", "alpha.txt") == 2
    assert filled.point_ids("acme", "alpha.txt") == set()
    assert len(filled.point_ids("globex", "alpha.txt")) == 1  # same key, other tenant
    assert filled.delete_document("acme", "alpha.txt") == 0


def test_delete_points_removes_exactly_those(filled: CollectionStore) -> None:
    ids = filled.point_ids("acme", "beta.txt") | filled.point_ids("acme", "gamma.txt")
    filled.delete_points(sorted(filled.point_ids("acme", "beta.txt")))
    assert filled.point_ids("acme", "beta.txt") == set()
    assert filled.point_ids("acme", "gamma.txt") == ids - {
        str(uuid.uuid5(uuid.NAMESPACE_URL, "acme/beta.txt#0"))
    }
    filled.delete_points([])  # no-op


def test_existing_vectors_and_dense_vectors_return_what_was_stored(filled: CollectionStore) -> None:
    filled.upsert([point("acme", "multi.txt", t, index=i) for i, t in enumerate(["alpha", "beta gamma"])])
    existing = filled.existing_vectors("acme", "multi.txt")
    expected = {
        point("acme", "multi.txt", t, index=i).chunk.content_hash: dense(t)
        for i, t in enumerate(["alpha", "beta gamma"])
    }
    assert existing.keys() == expected.keys()
    for h, vector in existing.items():
        assert vector == pytest.approx(expected[h], abs=1e-6)
    ids = sorted(filled.point_ids("acme", "multi.txt"))
    vectors = filled.dense_vectors([*ids, str(uuid.uuid4())])
    assert set(vectors) == set(ids)
    assert filled.existing_vectors("globex", "multi.txt") == {}


def test_count_by_document_for_all_or_one_tenant(filled: CollectionStore) -> None:
    filled.upsert([point("acme", "alpha.txt", "alpha gamma", index=n) for n in range(1, 4)])
    counts = filled.count_by_document()
    assert counts[("acme", "alpha.txt")] == 4
    assert counts[("globex", "alpha.txt")] == 1
    assert sum(counts.values()) == len(CORPUS) + 3
    assert filled.count_by_document("globex") == {("globex", "alpha.txt"): 1, ("globex", "secret.txt"): 1}


def test_count_by_document_pages_through_large_collections(store: CollectionStore) -> None:
    store.upsert([point("acme", f"d{n % 7}.txt", "alpha", index=n) for n in range(2300)])
    counts = store.count_by_document("acme")
    assert sum(counts.values()) == 2300 and len(counts) == 7


# --- search ------------------------------------------------------------------------------------------
def test_dense_search_ranks_by_cosine_and_honours_the_score_threshold(filled: CollectionStore) -> None:
    hits = filled.search(query("acme", "beta", mode="dense"))
    assert keys(hits)[:2] == ["beta.txt", "alpha.txt"]
    assert hits[0].score == pytest.approx(2 / math.sqrt(5), abs=1e-5)  # cos(beta, 2 beta + gamma)
    # The threshold drops weak matches inside Qdrant
    assert keys(filled.search(query("acme", "beta", mode="dense", score_threshold=0.8))) == ["beta.txt"]
    # The result carries what a citation needs
    top = hits[0]
    assert (top.title, top.section, top.page, top.chunk_index, top.text) == (
        "Doc",
        "Intro > Part",
        1,
        0,
        "beta beta gamma",
    )
    assert top.metadata["department"] == "eng"


def test_sparse_search_only_finds_documents_sharing_terms(filled: CollectionStore) -> None:
    hits = filled.search(query("acme", "epsilon", mode="sparse"))
    assert keys(hits) == ["epsilon.txt"]
    # A query with no known terms (stop words only) has nothing to match
    assert filled.search(query("acme", "unknown words", mode="sparse")) == []


def sparse_scores(store: CollectionStore, tenant: str, text: str) -> dict[str, float | None]:
    """Each hit's BM25 score in sparse mode and in hybrid mode (its ``sparse_score``)."""
    found = {f"sparse {h.key}": h.score for h in store.search(query(tenant, text, mode="sparse", limit=200))}
    found.update({f"hybrid {h.key}": h.sparse_score for h in store.search(query(tenant, text, limit=200))})
    return found


def test_a_tenants_bm25_scores_ignore_other_tenants_documents(store: CollectionStore) -> None:
    # Given each tenant holds a document with the term "zeta" and the scores each gets for it
    store.upsert([point("bravo", "own.txt", "zeta eta"), point("bravo", "misc.txt", "alpha beta")])
    store.upsert([point("acme", "mine.txt", "zeta theta")])
    bravo_before = sparse_scores(store, "bravo", "zeta eta")
    # When acme indexes 50 documents sharing the term (collection-wide IDF made "zeta" common)
    store.upsert([point("acme", f"zeta{i}.txt", "zeta theta", index=i) for i in range(50)])
    # Then bravo's BM25 scores for its own document are exactly what they were, in both modes
    assert sparse_scores(store, "bravo", "zeta eta") == bravo_before
    assert bravo_before["sparse own.txt"] is not None and bravo_before["hybrid own.txt"] is not None
    # And the other way round: bravo's 50 documents with "eta" and "zeta" leave acme's scores alone
    acme_before = sparse_scores(store, "acme", "zeta theta")
    store.upsert([point("bravo", f"eta{i}.txt", "eta zeta theta", index=i) for i in range(50)])
    assert sparse_scores(store, "acme", "zeta theta") == acme_before
    assert len(acme_before) == 2 * 51
    # While IDF still works within a tenant: bravo's own 50 new "zeta" documents make the term common
    assert sparse_scores(store, "bravo", "zeta eta")["sparse own.txt"] < bravo_before["sparse own.txt"]  # type: ignore[operator]


def test_hybrid_fuses_dense_and_sparse_with_configurable_rrf_k(engine: Engine) -> None:
    for k in (10, 60):
        name = f"rrf{k}"
        store = engine.store(rrf_k=k, collection_name=name)
        store.upsert([point("acme", k2, text) for _, k2, text, _ in CORPUS[:4]])
        hits = store.search(query("acme", "gamma delta"))
        # gamma.txt ranks first in both prefetches: its fused score is 1/k + 1/k
        assert hits[0].key == "gamma.txt"
        assert hits[0].score == pytest.approx(2 / k)


def test_hybrid_without_sparse_terms_still_answers_from_dense(filled: CollectionStore) -> None:
    q = query("acme", "alpha")
    no_terms = SearchQuery(q.tenant, q.dense, SparseVector([], []), "hybrid", 5, {}, EVERYTHING)
    assert keys(filled.search(no_terms))[0] == "alpha.txt"


def test_hybrid_filters_apply_inside_the_prefetches(filled: CollectionStore) -> None:
    # Given globex's "alpha alpha alpha beta" is the best match for "alpha" in both dense and sparse,
    # When acme searches hybrid with a limit far above what acme holds
    hits = filled.search(query("acme", "alpha", limit=50))
    # Then no globex chunk comes back, though the outer fusion query carries no filter of its own
    assert "secret.txt" not in keys(hits)
    assert all(h.point_id != str(uuid.uuid5(uuid.NAMESPACE_URL, "globex/alpha.txt#0")) for h in hits)
    # And a metadata filter narrows both prefetches too
    assert keys(
        filled.search(query("acme", "alpha beta gamma", limit=50, filters={"department": "eng"}))
    ) == [
        "beta.txt",
        "gamma.txt",
    ]


def test_the_tenant_cannot_be_overridden_by_a_filter(filled: CollectionStore) -> None:
    # A filter named "tenant" addresses the user metadata field meta.tenant, never the real tenant
    for mode in ("hybrid", "dense", "sparse"):
        hits = filled.search(query("acme", "epsilon gamma delta", mode=mode, filters={"tenant": "globex"}))
        assert keys(hits) == ["epsilon.txt"], mode  # acme's document whose metadata says "globex"
        assert filled.search(query("globex", "epsilon", mode=mode, filters={"tenant": "globex"})) == []


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"department": "eng"}, {"beta.txt", "gamma.txt"}),
        ({"department": ["hr", "ops"]}, {"alpha.txt", "epsilon.txt"}),
        ({"year": 2023}, {"beta.txt"}),
        ({"year": 2023.0}, {"beta.txt"}),
        ({"year": [2019, 2024]}, {"epsilon.txt", "gamma.txt"}),
        ({"year": RangeFilter(gte=2021, lte=2023)}, {"alpha.txt", "beta.txt"}),
        ({"year": RangeFilter(gte=2023.5)}, {"gamma.txt"}),
        ({"year": RangeFilter(lte=2019)}, {"epsilon.txt"}),
        ({"public": True}, {"alpha.txt"}),
        ({"public": False}, {"beta.txt"}),
        ({"public": [True, False]}, {"alpha.txt", "beta.txt"}),
        ({"tags": "y"}, {"gamma.txt"}),
        ({"tags": ["z", "x"]}, {"gamma.txt"}),
        ({"department": ["eng", 2019]}, {"beta.txt", "gamma.txt"}),
        ({"department": "eng", "year": RangeFilter(gte=2024)}, {"gamma.txt"}),
        ({"key": "beta.txt"}, {"beta.txt"}),
        ({"key": ["beta.txt", "alpha.txt"]}, {"alpha.txt", "beta.txt"}),
        ({"source_type": "text"}, {"alpha.txt", "beta.txt", "gamma.txt", "epsilon.txt"}),
        ({"source_type": "pdf"}, set()),
        ({"title": "Doc"}, {"alpha.txt", "beta.txt", "gamma.txt", "epsilon.txt"}),
    ],
)
def test_metadata_filters(
    filled: CollectionStore, filters: dict[str, FilterValue], expected: set[str]
) -> None:
    for mode in ("dense", "hybrid"):
        hits = filled.search(query("acme", "alpha beta gamma delta epsilon zeta", mode=mode, filters=filters))
        assert set(keys(hits)) == expected, mode


def test_a_filter_on_an_undeclared_field_says_how_to_declare_it_on_a_server(
    filled: CollectionStore, engine: Engine
) -> None:
    # Given a field nobody declared (strict mode would refuse the filter: no index)
    q = query("acme", "alpha", filters={"missing": "x"})
    if engine.name == "edge":
        # Then the embedded engine writes the condition for the value's type: nothing matches
        assert filled.search(q) == []
        return
    # Then a Qdrant server's store refuses it before asking Qdrant, naming the field and the setting
    with pytest.raises(BadRequest, match=r"'missing' is not declared: declare it .* WINNOW_METADATA_FIELDS"):
        filled.search(q)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"year": "recent"}, "'year' is a integer field"),
        ({"year": RangeFilter(gte="2024-01-01T00:00:00Z")}, "'year' is a integer field"),
        ({"department": RangeFilter(gte=1)}, "'department' is a keyword field"),
        ({"public": "maybe"}, "'public' is a bool field"),
    ],
)
def test_a_value_its_declared_type_cannot_hold_is_a_bad_request(
    filled: CollectionStore, filters: dict[str, FilterValue], message: str
) -> None:
    with pytest.raises(BadRequest, match=message):
        filled.search(query("acme", "alpha", filters=filters))


@pytest.mark.parametrize(
    "filters",
    [{"a.b": "x"}, {"": "x"}, {"x" * 65: "y"}, {"dept": []}, {"year": RangeFilter()}, {"meta": {"a": 1}}],
)
def test_malformed_filters_are_bad_requests(filled: CollectionStore, filters: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        filled.search(query("acme", "alpha", filters=filters))


def test_malformed_queries_are_refused(filled: CollectionStore) -> None:
    q = query("acme", "alpha")
    with pytest.raises(BadRequest):
        filled.search(SearchQuery("acme", None, q.sparse, "dense", 5, {}, EVERYTHING))
    with pytest.raises(BadRequest):
        filled.search(SearchQuery("", q.dense, q.sparse, "dense", 5, {}, EVERYTHING))
    with pytest.raises(ProfileMismatch):
        filled.search(SearchQuery("acme", [1.0, 0.0], q.sparse, "dense", 5, {}, EVERYTHING))


_TENANTS = ["acme", "globex", "initech"]
_filter_values = st.one_of(
    st.sampled_from(["hr", "eng", "globex", "acme"]),
    st.lists(st.sampled_from(["hr", "eng", "globex"]), min_size=1, max_size=3),
    st.integers(2018, 2025),
    st.builds(RangeFilter, gte=st.integers(2018, 2025), lte=st.none() | st.integers(2018, 2025)),
    st.booleans(),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=st.lists(
        st.tuples(
            st.sampled_from(_TENANTS),
            st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6),
            st.fixed_dictionaries(
                {"department": st.sampled_from(["hr", "eng"]), "tenant": st.sampled_from(_TENANTS)},
                optional={"year": st.integers(2018, 2025), "public": st.booleans()},
            ),
        ),
        min_size=1,
        max_size=25,
    ),
    searcher=st.sampled_from(_TENANTS),
    words=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4),
    filters=st.dictionaries(
        st.sampled_from(["department", "tenant", "year", "public", "key"]), _filter_values, max_size=3
    ),
    mode=st.sampled_from(["hybrid", "dense", "sparse"]),
)
def test_search_never_returns_another_tenants_chunk(
    engine: Engine,
    docs: list[tuple[str, list[str], dict[str, Any]]],
    searcher: str,
    words: list[str],
    filters: dict[str, FilterValue],
    mode: str,
) -> None:
    # Given random documents across tenants (whose metadata may even claim another tenant)
    store = engine.store(collection_name=f"iso-{uuid.uuid4().hex}")
    owner: dict[str, str] = {}
    points = []
    for n, (tenant, text_words, metadata) in enumerate(docs):
        p = point(tenant, f"doc-{n}.txt", " ".join(text_words), metadata=metadata)
        owner[p.point_id] = tenant
        points.append(p)
    store.upsert(points)
    # When one tenant searches with any filter in any mode (a value its field's declared type cannot
    # hold is refused: nothing is returned at all)
    try:
        hits = store.search(query(searcher, " ".join(words), mode=mode, limit=50, filters=filters))
    except BadRequest:
        return
    # Then every hit is its own
    assert all(owner[h.point_id] == searcher for h in hits)
    engine.drop(store.collection_name)


# --- local mode, clients and errors --------------------------------------------------------------------
def test_a_local_folder_persists_and_shares_one_engine_per_folder(tmp_path: Path) -> None:
    settings_ = qsettings(path=str(tmp_path / "qdrant"))
    client = make_qdrant_client(settings_, None, tmp_path / "unused")
    assert make_qdrant_client(settings_, None, tmp_path / "unused") is client
    store = store_on(client, PROFILE, settings_)
    store.upsert([point("acme", "a.txt", "alpha beta")])
    client.close()
    # When the folder is opened again (a new process), Then the points and the recorded profile remain
    reopened = make_qdrant_client(settings_, None, tmp_path / "unused")
    assert reopened is not client
    again = store_on(reopened, PROFILE, settings_)
    assert keys(again.search(query("acme", "alpha"))) == ["a.txt"]
    assert again.recorded_profile() == PROFILE
    reopened.close()


def test_memory_and_default_local_paths(tmp_path: Path) -> None:
    memory = make_qdrant_client(qsettings(path=":memory:"), None, tmp_path / "unused")
    store_on(memory, PROFILE, qsettings()).upsert([point("acme", "a.txt", "alpha")])
    assert not (tmp_path / "unused").exists()
    default = make_qdrant_client(qsettings(), None, tmp_path / "home" / "qdrant")
    store_on(default, PROFILE, qsettings()).upsert([point("acme", "a.txt", "alpha")])
    assert (tmp_path / "home" / "qdrant").is_dir()
    default.close()


def test_concurrent_writers_on_one_local_client(store: CollectionStore) -> None:
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for round_ in range(5):
                store.upsert([point("acme", f"w{n}.txt", "alpha beta", index=i) for i in range(20)])
                store.search(query("acme", "alpha"))
                if round_ < 4:
                    store.delete_document("acme", f"w{n}.txt")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.count_by_document("acme") == {("acme", f"w{n}.txt"): 20 for n in range(6)}


class FakeQdrant:
    """A loopback HTTP server standing in for Qdrant Cloud that answers every request the same way, but
    for the paths in ``routes``, answered 200 with their own body."""

    def __init__(
        self,
        status: int,
        body: bytes = b'{"status":{"error":"boom"}}',
        routes: dict[str, bytes] | None = None,
    ) -> None:
        self.status, self.body, self.requests = status, body, 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests += 1
                routed = (routes or {}).get(self.path.split("?")[0])
                body = owner.body if routed is None else routed
                self.send_response(owner.status if routed is None else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_qdrant() -> Iterator[Any]:
    servers: list[FakeQdrant] = []

    def start(
        status: int, body: bytes = b'{"status":{"error":"boom"}}', routes: dict[str, bytes] | None = None
    ) -> FakeQdrant:
        servers.append(FakeQdrant(status, body, routes))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def remote_store(url: str, sleeps: list[float], **overrides: Any) -> QdrantVectorStore:
    settings_ = qsettings(url=url, max_attempts=3, timeout_seconds=2, **overrides)
    client: Any = make_qdrant_client(settings_, None, Path("/nonexistent"))
    return QdrantVectorStore(client, PROFILE, settings_, sleep=sleeps.append)


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_server_errors_are_retried_then_reported_unavailable(fake_qdrant: Any, status: int) -> None:
    server = fake_qdrant(status)
    sleeps: list[float] = []
    store = remote_store(server.url, sleeps)
    with pytest.raises(ProviderUnavailable):
        store.search(query("acme", "alpha"))
    assert server.requests == 3 and len(sleeps) == 2  # max_attempts, with a pause between


def test_unreachable_qdrant_is_unavailable(tmp_path: Path) -> None:
    sleeps: list[float] = []
    store = remote_store("http://127.0.0.1:9", sleeps)
    with pytest.raises(ProviderUnavailable):
        store.upsert([point("acme", "a.txt", "alpha")])
    assert len(sleeps) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_are_a_configuration_error_without_retries(fake_qdrant: Any, status: int) -> None:
    server = fake_qdrant(status)
    sleeps: list[float] = []
    with pytest.raises(ConfigurationError):
        remote_store(server.url, sleeps).ensure_collection()
    assert server.requests == 1 and sleeps == []


def test_a_rejected_search_is_a_bad_request(fake_qdrant: Any) -> None:
    # Given a server that rejects the query itself (HTTP 400)
    server = fake_qdrant(400, b'{"status":{"error":"Bad request: wrong filter"}}')
    sleeps: list[float] = []
    store = remote_store(server.url, sleeps)
    store._ready = True  # as if the collection was verified earlier in this warm container
    with pytest.raises(BadRequest, match="wrong filter"):
        store.search(query("acme", "alpha"))
    assert sleeps == []


def test_a_qdrant_server_that_cannot_count_idf_per_tenant_is_refused(fake_qdrant: Any) -> None:
    # Given a Qdrant 1.18 server (no SearchParams.idf: its BM25 statistics would span every tenant)
    exists = b'{"result":{"exists":true},"status":"ok","time":0}'
    version = b'{"title":"qdrant - vector search engine","version":"1.18.2","commit":"abc"}'
    routes = {"/": version}
    server = fake_qdrant(500, routes=routes)
    store = remote_store(server.url, [])
    routes[f"/collections/{store.collection_name}/exists"] = exists
    # When the store first searches, Then it refuses the server, saying which version is needed
    with pytest.raises(ConfigurationError, match=r"^Qdrant 1\.18\.2 cannot keep BM25 statistics per tenant"):
        store.search(query("acme", "alpha"))
