"""``QdrantVectorStore`` against the strict stand-in of Qdrant Cloud: collections it creates are strict and
replicated as configured, a collection made before a field was indexed gets its index on the next start
(without re-embedding), declared metadata is stored and filtered as its type, and Qdrant's 429 is retried
as its Retry-After asks within the call's budget, then becomes our transient error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.qdrant import PROFILE, keys, point, qsettings, query, stand_in_client
from winnow.access import ReadScope
from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.errors import ProviderRateLimited
from winnow.ports import ChunkPlace, RangeFilter
from winnow_fakes.fake_qdrant import FakeQdrantServer


@pytest.fixture
def server() -> Iterator[FakeQdrantServer]:
    with FakeQdrantServer() as s:
        yield s


def store_on(
    server: FakeQdrantServer, sleeps: list[float] | None = None, **overrides: Any
) -> QdrantVectorStore:
    settings = qsettings(url=server.origin, **overrides)
    return QdrantVectorStore(
        stand_in_client(server),
        PROFILE,
        settings,
        sleep=(sleeps.append if sleeps is not None else lambda _: None),
    )


def test_a_new_collection_is_strict_and_replicated_as_configured(server: FakeQdrantServer) -> None:
    # Given the defaults (Qdrant's production checklist: replication factor 2, write consistency 1)
    store = store_on(server)
    store.ensure_collection()
    # Then the collection was created in strict mode, as Qdrant Cloud creates it
    strict = server.strict_mode(store.collection_name)
    assert strict["enabled"] is True
    assert strict["unindexed_filtering_retrieve"] is False and strict["unindexed_filtering_update"] is False
    assert strict["max_payload_index_count"] == 100
    assert server.params(store.collection_name) == {"replication_factor": 2, "write_consistency_factor": 1}
    # And with other settings, other factors
    other = store_on(server, collection_prefix="u", replication_factor=3, write_consistency_factor=2)
    other.ensure_collection()
    assert server.params(other.collection_name) == {"replication_factor": 3, "write_consistency_factor": 2}


def test_every_read_of_the_routes_works_on_a_strict_collection(server: FakeQdrantServer) -> None:
    # Given documents in a strict collection
    store = store_on(server)
    store.upsert(
        [point("acme", "a.txt", f"alpha beta {i}", index=i, metadata={"year": 2024}) for i in range(4)]
    )
    reader = ReadScope(open_documents=True, users=("ann",), groups=("hr",))
    # Then neighbours/section context (chunk positions), the documents listing of a non-admin, filters on
    # reserved and declared fields, document reads and filtered writes are all served by an index
    place = ChunkPlace(key="a.txt", doc_version='"etag-1"', indexes=(1, 2))
    assert sorted(c.chunk_index for c in store.chunks_at("acme", reader, [place])) == [1, 2]
    assert store.readable_keys("acme", reader, ["a.txt", "b.txt"]) == {"a.txt"}
    for filters in ({"year": RangeFilter(gte=2024)}, {"kind": "text", "ocr": False, "title": "Doc"}):
        assert keys(store.search(query("acme", "alpha", filters=filters, reader=reader)))[0] == "a.txt"
    assert store.document_access("acme", "a.txt") == (True, None)
    assert store.set_metadata("acme", "a.txt", {"year": "2025"}) == 4
    assert store.delete_document("acme", "a.txt") == 4
    assert server.refusals == []


def test_a_collection_made_before_the_indexes_gets_them_on_the_next_start(server: FakeQdrantServer) -> None:
    # Given a collection as an older Winnow left it: no chunk_index index, and year indexed as keyword
    store = store_on(server)
    store.upsert([point("acme", "a.txt", f"alpha {i}", index=i, metadata={"year": 2024}) for i in range(3)])
    name = store.collection_name
    kept = server.collections[name]
    for field in ("chunk_index", "doc_version", "title", "source_type", "ocr"):
        kept.indexes.pop(field)
    kept.indexes["meta.year"] = "keyword"
    requests_before = len(server.requests)
    # And a warm container's reads are refused by strict mode (what made /answer a 502)
    place = ChunkPlace(key="a.txt", doc_version=None, indexes=(1,))
    with pytest.raises(Exception, match="chunk_index"):
        store.chunks_at("acme", ReadScope(everything=True), [place])
    # When a new container starts (its first call reads the collection)
    fresh = store_on(server)
    chunks = fresh.chunks_at("acme", ReadScope(everything=True), [place])
    # Then the missing indexes were created and year re-typed, and nothing was written but indexes
    assert [c.chunk_index for c in chunks] == [1]
    indexes = server.indexes(name)
    assert indexes["chunk_index"] == "integer" and indexes["meta.year"] == "integer"
    assert {"doc_version", "title", "source_type", "ocr"} <= set(indexes)
    writes = [
        p for m, p in server.requests[requests_before:] if m == "PUT" and p.split("?")[0].endswith("/points")
    ]
    assert writes == []  # no re-embedding, no upsert
    assert (
        keys(fresh.search(query("acme", "alpha", filters={"year": RangeFilter(gte=2024)}))) == ["a.txt"] * 3
    )


def test_metadata_from_s3_arrives_as_strings_and_is_stored_as_its_declared_type(
    server: FakeQdrantServer,
) -> None:
    # Given S3 user metadata (always strings) for declared integer, bool and keyword fields
    store = store_on(server)
    store.upsert(
        [point("acme", "a.txt", "alpha", metadata={"year": "2024", "public": "true", "department": 7})]
    )
    store.upsert([point("acme", "b.txt", "alpha", metadata={"year": "2019", "public": "false"})])
    # Then the README's range works, and so do bool and keyword matches
    assert keys(store.search(query("acme", "alpha", filters={"year": RangeFilter(gte=2024)}))) == ["a.txt"]
    assert keys(store.search(query("acme", "alpha", filters={"public": False}))) == ["b.txt"]
    assert keys(store.search(query("acme", "alpha", filters={"department": "7"}))) == ["a.txt"]


def test_a_datetime_field_takes_ranges_of_date_times(server: FakeQdrantServer) -> None:
    store = store_on(server, metadata_fields={"published": "datetime"})
    store.upsert([point("acme", "new.txt", "alpha", metadata={"published": "2025-03-01T00:00:00Z"})])
    store.upsert([point("acme", "old.txt", "alpha", metadata={"published": "2020-03-01T00:00:00Z"})])
    recent = {"published": RangeFilter(gte="2024-01-01T00:00:00Z")}
    assert keys(store.search(query("acme", "alpha", filters=recent))) == ["new.txt"]
    exact = {"published": "2020-03-01T00:00:00Z"}
    assert keys(store.search(query("acme", "alpha", filters=exact))) == ["old.txt"]


def test_a_throttled_call_is_retried_after_what_retry_after_asks(server: FakeQdrantServer) -> None:
    # Given a ready store and Qdrant rate limiting the next call once, asking for 2 s
    sleeps: list[float] = []
    store = store_on(server, sleeps)
    store.upsert([point("acme", "a.txt", "alpha")])
    server.throttle(times=1, retry_after=2)
    # When a search runs, Then it waits the 2 s Qdrant asked for and answers
    assert keys(store.search(query("acme", "alpha"))) == ["a.txt"]
    assert sleeps == [2.0]


def test_a_throttle_longer_than_the_budget_is_our_rate_limited_error_at_once(
    server: FakeQdrantServer,
) -> None:
    # Given a budget of 3 s for a call's retries and Qdrant asking for 30 s
    sleeps: list[float] = []
    store = store_on(server, sleeps, retry_budget_seconds=3)
    store.upsert([point("acme", "a.txt", "alpha")])
    server.throttle(times=5, retry_after=30)
    # Then no wait is started that would outlast the budget, and the caller learns when to come back
    with pytest.raises(ProviderRateLimited) as caught:
        store.search(query("acme", "alpha"))
    assert sleeps == []
    assert caught.value.retry_after == 30.0


def test_a_429_without_retry_after_is_retried_with_backoff_then_rate_limited(
    server: FakeQdrantServer,
) -> None:
    sleeps: list[float] = []
    store = store_on(server, sleeps, max_attempts=3)
    store.upsert([point("acme", "a.txt", "alpha")])
    server.throttle(times=5, retry_after=None)
    with pytest.raises(ProviderRateLimited):
        store.search(query("acme", "alpha"))
    assert len(sleeps) == 2 and all(0 <= s <= 2.0 for s in sleeps)


def test_the_template_passes_declared_fields_and_replication_to_every_function() -> None:
    # Given the stack's parameters, Then metadata fields, replication and write consistency are
    # parameters with the production checklist's defaults, set for every function
    from tests.support.template import load_template

    t = load_template()
    params = t["Parameters"]
    assert params["MetadataFields"]["Default"] == "{}"
    assert params["QdrantReplicationFactor"]["Default"] == 2
    assert params["QdrantWriteConsistencyFactor"]["Default"] == 1
    env = t["Globals"]["Function"]["Environment"]["Variables"]
    assert env["WINNOW_METADATA_FIELDS"] == {"Ref": "MetadataFields"}
    assert env["QDRANT_REPLICATION_FACTOR"] == {"Ref": "QdrantReplicationFactor"}
    assert env["QDRANT_WRITE_CONSISTENCY_FACTOR"] == {"Ref": "QdrantWriteConsistencyFactor"}
    # And the README's declaration is one the settings accept
    settings = qsettings(metadata_fields={"year": "integer", "department": "keyword"})
    assert settings.declared_metadata == {"year": "integer", "department": "keyword"}
