"""Faults at every provider, during ingest and search, and what must survive them.

Voyage faults come from the loopback fake server (the real ``VoyageEmbedder`` / ``VoyageReranker`` talk
to it over HTTP); Qdrant faults from a client aimed at a closed port, or a real local-mode client whose
writes fail from a chosen call on; S3 faults from a bucket that changes between HEAD and GET.

For ingest the rule is: a transient fault fails the SQS record (``batchItemFailures``) and leaves what was
searchable before (the previous version, or nothing); after the fault clears, redelivering the same
message completes, and the index then equals, point for point (ids, payloads, dense and sparse vectors),
what a second stack produced from the same files without any fault. For search: 503 with
``Retry-After`` while a provider is down, and afterwards exactly the answer a healthy run gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.reliability import (
    FlakyQdrantClient,
    MeddlingObjects,
    PointView,
    free_port,
    ledger_view,
    point_snapshot,
    using,
)
from tests.support.stack import EmbeddedStack, voyage_settings
from winnow.adapters.qdrant_store import QdrantVectorStore, make_qdrant_client
from winnow.ingest.events import s3_event
from winnow.models import DocumentStatus
from winnow.settings import QdrantSettings
from winnow_fakes.fake_voyage import Endpoint, FakeVoyageServer, Fault

KEY = "acme/runbook.md"
TIMEOUT_SECONDS = 0.2


def sections(*pairs: tuple[str, str]) -> bytes:
    """A Markdown runbook; each body is said three times so every section is a chunk of its own (the
    chunker merges sections shorter than ``min_chars`` into their neighbours)."""
    return ("# Runbook\n\n" + "".join(f"## {h}\n\n{' '.join([body] * 3)}\n\n" for h, body in pairs)).encode()


V1 = sections(
    ("Backups", "Nightly backups of the billing database are copied to the cold archive at midnight."),
    ("Paging", "The on-call engineer is paged when the checkout error rate exceeds two percent."),
    ("Certificates", "TLS certificates renew automatically thirty days before they expire."),
    ("Retired", "The legacy fax gateway was switched off and its numbers were ported to the telco."),
)
# V2: one section unchanged, one edited, one dropped, one added: reuse, new points and leftovers at once.
V2 = sections(
    ("Backups", "Nightly backups of the billing database are copied to the cold archive at midnight."),
    ("Paging", "The on-call engineer is paged when the checkout error rate exceeds five percent."),
    ("Certificates", "TLS certificates renew automatically thirty days before they expire."),
    ("Capacity", "Add a replica whenever the warehouse queue stays above ten thousand jobs for an hour."),
)
V1_ONLY = "legacy fax gateway telco"
V2_ONLY = "replica warehouse queue jobs"

# name → fault factory (endpoint → Fault): each must be transient for ingest and 503 for search.
FAULTS: dict[str, Callable[[Endpoint | None], Fault]] = {
    "429 with Retry-After": lambda e: Fault.rate_limited(retry_after=7, endpoint=e),
    "429 without Retry-After": lambda e: Fault.rate_limited(endpoint=e),
    "500": lambda e: Fault.server_error(500, endpoint=e),
    "503 with Retry-After": lambda e: Fault.unavailable(retry_after=3, endpoint=e),
    "timeout": lambda e: Fault.delay(TIMEOUT_SECONDS * 3, endpoint=e),
    "connection dropped": lambda e: Fault.disconnect(endpoint=e),
    "malformed JSON": lambda e: Fault.malformed_json(endpoint=e),
    "wrong vector count": lambda e: Fault.wrong_count(endpoint=e),
    "wrong dimension": lambda e: Fault.wrong_dimension(endpoint=e),
    "non-finite number": lambda e: Fault.non_finite(endpoint=e),
}


def make_stack(home: Path, fake: FakeVoyageServer, *, rerank: bool = False) -> EmbeddedStack:
    """A stack with a short Voyage timeout (so a delayed answer is a timeout) and no query cache (so every
    search reaches the provider)."""
    stack = EmbeddedStack(home, fake, rerank=rerank)
    stack.container.settings.voyage = voyage_settings(fake, timeout_seconds=TIMEOUT_SECONDS)
    stack.container.settings.providers.query_cache_size = 0
    return stack


_CLEAN_RUNS: dict[tuple[bytes, ...], dict[str, PointView]] = {}


def clean_run(home: Path, fake: FakeVoyageServer, versions: list[bytes]) -> dict[str, PointView]:
    """The index a fault-free stack builds from the same sequence of uploads (computed once per sequence:
    point ids, payloads and the fake's vectors depend only on the bytes)."""
    cached = _CLEAN_RUNS.get(tuple(versions))
    if cached is not None:
        return cached
    clean = make_stack(home, fake)
    with using(clean):
        for data in versions:
            assert clean.upload(KEY, data)["status"] == "indexed"
        snapshot = point_snapshot(clean.container.store)
    _CLEAN_RUNS[tuple(versions)] = snapshot
    return snapshot


def failed_ids(response: dict[str, Any]) -> list[str]:
    return [f["itemIdentifier"] for f in response["batchItemFailures"]]


def texts_found(stack: EmbeddedStack, query: str) -> list[str]:
    status, body = stack.search(query, relevance_threshold=0, top_k=10)
    assert status == 200, body
    return [r["text"] for r in body["results"]]


def assert_unavailable(stack: EmbeddedStack, query: str = "checkout error rate") -> None:
    status, headers, body = stack.api("POST", "/search", {"query": query, "relevance_threshold": 0})
    assert status == 503, body
    assert int(headers["Retry-After"]) >= 1
    assert body["error"]["code"] == "unavailable" and "results" not in body
    assert "Traceback" not in str(body) and "Voyage" not in body["error"]["message"]


# --- Voyage faults during ingest --------------------------------------------------------------------
@pytest.mark.parametrize("existing", [False, True], ids=["new document", "update"])
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_voyage_outage_fails_the_record_writes_nothing_and_redelivery_converges(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fault_name: str, existing: bool
) -> None:
    expected = clean_run(tmp_path / "clean", fake_voyage, [V1, V2] if existing else [V2])
    stack = make_stack(tmp_path / "faulty", fake_voyage)
    # Given the document's first version indexed (or no document yet)
    if existing:
        assert stack.upload(KEY, V1)["status"] == "indexed"
    before_points = point_snapshot(stack.container.store)
    before_record = ledger_view(stack.container.ledger.get("acme", KEY))
    # and a new version announced while the embedding provider keeps failing
    stack.put_object(KEY, V2)
    batch = stack.sqs_batch(s3_event([stack.created_record(KEY)]))
    fake_voyage.set_outage(FAULTS[fault_name](None))

    # When the batch is processed
    response = stack.invoke_ingest(batch)

    # Then the record is handed back to SQS, and nothing half-written is visible
    assert failed_ids(response) == [batch["Records"][0]["messageId"]]
    assert point_snapshot(stack.container.store) == before_points
    assert ledger_view(stack.container.ledger.get("acme", KEY)) == before_record
    # and search says 503 with Retry-After rather than answering without the provider
    assert_unavailable(stack)

    # When the fault clears, the previous version is what search finds (nothing, for a new document)
    fake_voyage.set_outage(None)
    found = " ".join(texts_found(stack, f"{V1_ONLY} {V2_ONLY}"))
    assert ("fax gateway" in found) is existing and "warehouse queue" not in found

    # and SQS redelivers the message: it completes and the index equals the fault-free run's
    assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
    record = stack.container.ledger.get("acme", KEY)
    assert record is not None and record.status == DocumentStatus.INDEXED
    assert record.etag == stack.container.objects.head(KEY).etag
    assert point_snapshot(stack.container.store) == expected


@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_a_single_voyage_fault_is_retried_within_the_delivery(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fault_name: str
) -> None:
    expected = clean_run(tmp_path / "clean", fake_voyage, [V1, V2])
    stack = make_stack(tmp_path / "faulty", fake_voyage)
    assert stack.upload(KEY, V1)["status"] == "indexed"
    # Given one bad answer from the provider, then good ones
    fake_voyage.inject(FAULTS[fault_name](None))
    stack.put_object(KEY, V2)
    # When the update is delivered once
    response = stack.invoke_ingest(stack.sqs_batch(s3_event([stack.created_record(KEY)])))
    # Then the adapter's own retry absorbed the fault: indexed, identical to a fault-free run
    assert response == {"batchItemFailures": []}
    assert fake_voyage.pending_faults == 0
    assert point_snapshot(stack.container.store) == expected


def test_fault_on_a_later_embedding_batch_writes_nothing(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    expected = clean_run(tmp_path / "clean", fake_voyage, [V1, V2])
    stack = make_stack(tmp_path / "faulty", fake_voyage)
    stack.container.settings.voyage = voyage_settings(fake_voyage, max_batch_texts=1)
    assert stack.upload(KEY, V1)["status"] == "indexed"
    before = point_snapshot(stack.container.store)
    # Given an update that needs two embedding requests (one text each): the first one succeeds (its
    # answer comes in reverse order, which is legal), the second fails on every attempt
    fake_voyage.inject(Fault.shuffled(), *[Fault.server_error(502)] * 3)
    stack.put_object(KEY, V2)
    batch = stack.sqs_batch(s3_event([stack.created_record(KEY)]))
    response = stack.invoke_ingest(batch)
    # Then the vectors already paid for were not written half-way: the index still holds version one
    assert failed_ids(response) == [batch["Records"][0]["messageId"]]
    assert point_snapshot(stack.container.store) == before
    # and redelivery converges
    assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
    assert point_snapshot(stack.container.store) == expected


# --- Qdrant faults during ingest --------------------------------------------------------------------
def unreachable_store(stack: EmbeddedStack, tmp_path: Path) -> QdrantVectorStore:
    """A store whose Qdrant URL is a localhost port nobody listens on."""
    settings = QdrantSettings(url=f"http://127.0.0.1:{free_port()}", timeout_seconds=1, max_attempts=2)
    client = make_qdrant_client(settings, None, tmp_path / "unused")
    return QdrantVectorStore(client, stack.container.embedder.profile, settings, sleep=lambda _: None)


def test_qdrant_unreachable_is_transient_and_redelivery_converges(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    expected = clean_run(tmp_path / "clean", fake_voyage, [V1, V2])
    stack = make_stack(tmp_path / "faulty", fake_voyage)
    assert stack.upload(KEY, V1)["status"] == "indexed"
    healthy = stack.container.store
    before = point_snapshot(healthy)
    # Given Qdrant unreachable (connection refused)
    stack.container.store = unreachable_store(stack, tmp_path)
    stack.put_object(KEY, V2)
    batch = stack.sqs_batch(s3_event([stack.created_record(KEY)]))
    # When the update arrives, the record is failed for retry, the ledger untouched
    assert failed_ids(stack.invoke_ingest(batch)) == [batch["Records"][0]["messageId"]]
    record = stack.container.ledger.get("acme", KEY)
    assert record is not None and record.etag != stack.container.objects.head(KEY).etag
    # and search is 503, not an empty "nothing relevant"
    assert_unavailable(stack)
    # When Qdrant is back: version one was never lost, and redelivery converges to the clean state
    stack.container.store = healthy
    assert point_snapshot(healthy) == before
    assert any("fax gateway" in t for t in texts_found(stack, V1_ONLY))
    assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
    assert point_snapshot(healthy) == expected


@pytest.mark.parametrize(
    ("operation", "fail_from_call"),
    [("upsert", 2), ("delete", 1)],
    ids=["second upsert batch", "deleting leftovers"],
)
def test_qdrant_failing_mid_document_never_loses_the_old_version(
    tmp_path: Path, fake_voyage: FakeVoyageServer, operation: str, fail_from_call: int
) -> None:
    from qdrant_client import QdrantClient

    many_v1 = sections(
        *[
            (
                f"Part {i}",
                f"Original paragraph number {i} explains how the harbour cranes unload containers at dawn.",
            )
            for i in range(9)
        ]
    )
    many_v2 = sections(
        *[
            (
                f"Part {i}",
                f"Revised paragraph number {i} explains how the river barges carry grain past the old locks.",
            )
            for i in range(7)
        ]
    )
    clean = make_stack(tmp_path / "clean", fake_voyage)
    with using(clean):
        clean.upload(KEY, many_v1)
        clean.upload(KEY, many_v2)
        expected = point_snapshot(clean.container.store)

    # Given a store that writes in batches of two points through a client we can break
    stack = make_stack(tmp_path / "faulty", fake_voyage)
    settings = QdrantSettings(path=":memory:", upsert_batch_size=2, max_attempts=2)
    flaky = FlakyQdrantClient(QdrantClient(location=":memory:"), operations=("upsert", "delete"))
    store = QdrantVectorStore(flaky, stack.container.embedder.profile, settings, sleep=lambda _: None)  # type: ignore[arg-type]
    store.ensure_collection()
    stack.container.store = store
    assert stack.upload(KEY, many_v1)["chunks"] == 9
    old = point_snapshot(store)
    record_before = ledger_view(stack.container.ledger.get("acme", KEY))

    # When the rewrite of every chunk fails part-way (a later upsert batch, or the clean-up of leftovers)
    flaky.arm(fail_from_call, operations=(operation,))
    stack.put_object(KEY, many_v2)
    batch = stack.sqs_batch(s3_event([stack.created_record(KEY)]))
    response = stack.invoke_ingest(batch)

    # Then the record is retried, the ledger still describes version one, and every old point is intact
    assert failed_ids(response) == [batch["Records"][0]["messageId"]]
    assert flaky.failures >= 2  # the store's own bounded retry ran before giving up
    assert ledger_view(stack.container.ledger.get("acme", KEY)) == record_before
    during = point_snapshot(store)
    assert {pid: during[pid] for pid in old} == old
    print(f"\n{operation} fault: {len(during) - len(old)} new-version points visible until redelivery")

    # When Qdrant recovers and SQS redelivers, the index converges to the fault-free one
    flaky.disarm()
    assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
    assert point_snapshot(store) == expected


# --- S3: the object changes between the event and the GET ------------------------------------------
@pytest.mark.parametrize("delivery", ["direct", "sqs"])
@pytest.mark.parametrize("existing", [False, True], ids=["new document", "update"])
def test_object_deleted_between_head_and_get_indexes_nothing(
    tmp_path: Path, fake_voyage: FakeVoyageServer, delivery: str, existing: bool
) -> None:
    stack = make_stack(tmp_path / "s", fake_voyage)
    meddler = MeddlingObjects(stack.container.objects)
    stack.container.objects = meddler
    if existing:
        assert stack.upload(KEY, V1)["status"] == "indexed"
    # Given a new version whose object is deleted right after the worker's HEAD
    stack.put_object(KEY, V2)
    create = s3_event([stack.created_record(KEY)])
    meddler.arm(KEY, meddler.inner.delete)  # type: ignore[attr-defined]
    # When its event is processed
    if delivery == "direct":
        out = stack.invoke_ingest(create)
        assert out["results"][0]["status"] in ("deleted", "skipped"), out
    else:
        assert stack.invoke_ingest(stack.sqs_batch(create)) == {"batchItemFailures": []}
    # Then nothing was indexed, nothing crashed, and nothing of the vanished object stays searchable
    assert meddler.meddled == 1
    assert stack.container.store.point_ids("acme", KEY) == set()
    record = stack.container.ledger.get("acme", KEY)
    assert record is None or record.status == DocumentStatus.DELETED
    # and the delete's own (later) event settles the same state
    stack.invoke_ingest(s3_event([stack.removed_record(KEY)]))
    record = stack.container.ledger.get("acme", KEY)
    assert record is not None and record.status == DocumentStatus.DELETED
    assert texts_found(stack, f"{V1_ONLY} {V2_ONLY}") == []


def test_object_replaced_between_head_and_get_indexes_only_the_newest(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    expected = clean_run(tmp_path / "clean", fake_voyage, [V2])
    stack = make_stack(tmp_path / "s", fake_voyage)
    meddler = MeddlingObjects(stack.container.objects)
    stack.container.objects = meddler
    # Given version one announced, but replaced by version two right after the worker's HEAD
    stack.put_object(KEY, V1)
    first = s3_event([stack.created_record(KEY)])
    meddler.arm(KEY, lambda key: stack.put_object(key, V2))
    out = stack.invoke_ingest(first)
    # Then the bytes of neither version were indexed under the other's identity
    assert out["results"][0]["status"] in ("skipped", "deleted"), out
    assert stack.container.store.point_ids("acme", KEY) == set()
    # and version two's own event indexes it, exactly like a clean run
    second = stack.invoke_ingest(s3_event([stack.created_record(KEY)]))
    assert second["results"][0]["status"] == "indexed"
    assert point_snapshot(stack.container.store) == expected


# --- search during outages --------------------------------------------------------------------------
QUERIES = ["checkout error rate paging", "billing database backups", "certificates expire renew"]


def answers(stack: EmbeddedStack) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        status, body = stack.search(query, relevance_threshold=0, top_k=5)
        assert status == 200, body
        out.append([(r["chunk_id"], r["score"]) for r in body["results"]])
    return out


@pytest.mark.parametrize("endpoint", ["embeddings", "rerank"])
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_search_during_a_provider_outage_is_503_then_exactly_the_healthy_answer(
    tmp_path: Path, fake_voyage: FakeVoyageServer, fault_name: str, endpoint: Endpoint
) -> None:
    stack = make_stack(tmp_path / "s", fake_voyage, rerank=True)
    assert stack.upload(KEY, V1)["status"] == "indexed"
    healthy = answers(stack)
    assert all(healthy)
    # Given the provider failing every request to one endpoint
    fake_voyage.set_outage(FAULTS[fault_name](endpoint))
    # Then every search is a 503 with Retry-After: never a partial, unranked or empty answer
    for query in QUERIES:
        assert_unavailable(stack, query)
    # When one bad answer comes between good ones, the adapter retries and the answer is the healthy one
    fake_voyage.set_outage(None)
    for query, expected in zip(QUERIES, healthy, strict=True):
        fake_voyage.inject(FAULTS[fault_name](endpoint))
        status, body = stack.search(query, relevance_threshold=0, top_k=5)
        assert status == 200, body
        assert [(r["chunk_id"], r["score"]) for r in body["results"]] == expected
        assert fake_voyage.pending_faults == 0


def test_search_while_qdrant_is_unreachable_is_503(tmp_path: Path, fake_voyage: FakeVoyageServer) -> None:
    stack = make_stack(tmp_path / "s", fake_voyage)
    assert stack.upload(KEY, V1)["status"] == "indexed"
    healthy = answers(stack)
    store = stack.container.store
    stack.container.store = unreachable_store(stack, tmp_path)
    for query in QUERIES:
        assert_unavailable(stack, query)
    stack.container.store = store
    assert answers(stack) == healthy
