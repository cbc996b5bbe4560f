"""Concurrency and ordering: whatever order, duplication or overlap the events arrive in, the final index
and ledger match the bucket's final state.

Two kinds of test:
- Through the real ingest handler on the embedded stack, hypothesis generates histories of uploads and
  deletes on a few keys, then delivers their events shuffled and duplicated.
- Several workers race in threads, the way concurrent Lambda containers would: each has its own S3 and
  DynamoDB clients (moto over HTTP, ``ThreadedMotoServer``) and its own Voyage client, and all share one
  Qdrant (a single local-mode client). A worker that finds the document's lease taken raises
  ``DocumentBusy``; the test redelivers such messages until they complete, as SQS would.

"Matches the bucket" means: a key in the bucket has an ``indexed`` record with the object's ETag and
content hash, and exactly the points a clean sequential ingest of the final bytes produces (ids, payloads,
vectors); a key not in the bucket has no points and no record, or a ``deleted`` one; no lease is left."""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.support.reliability import object_exists, point_snapshot, using
from tests.support.stack import EmbeddedStack, voyage_settings
from winnow.adapters.ledger_dynamodb import DynamoDbLedger
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.adapters.qdrant_store import QdrantVectorStore
from winnow.adapters.voyage import VoyageEmbedder
from winnow.errors import DocumentBusy, TransientError
from winnow.ingest.events import ObjectEvent, s3_event
from winnow.ingest.service import IngestService
from winnow.models import DocumentStatus
from winnow.ports import Embedder, InputType
from winnow.settings import ChunkingSettings, IngestSettings, QdrantSettings
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.adapters.ledger_sqlite import SqliteLedger

CONTENTS = [
    b"# Menu\n\n## Soup\n\nThe lentil soup is served with rye bread on Mondays.\n",
    b"# Menu\n\n## Soup\n\nThe lentil soup is served with rye bread on Mondays.\n\n"
    b"## Dessert\n\nPlum cake comes with whipped cream.\n",
    b"# Menu\n\n## Dessert\n\nPlum cake comes with vanilla custard instead of cream.\n",
    b"Plain notes: the cellar thermometer reads eleven degrees all winter.\n",
]


# --- shared checks ----------------------------------------------------------------------------------
def assert_matches_bucket(
    keys: Sequence[str],
    tenant: str,
    exists: Callable[[str], bool],
    etag_of: Callable[[str], str],
    bytes_of: Callable[[str], bytes],
    ledger: Any,
    store: Any,
    reference: dict[str, Any],
) -> None:
    for key in keys:
        record = ledger.get(tenant, key)
        if exists(key):
            assert record is not None and record.status == DocumentStatus.INDEXED, (key, record)
            assert record.etag == etag_of(key), key
            assert record.content_sha256 == hashlib.sha256(bytes_of(key)).hexdigest(), key
        else:
            assert record is None or record.status == DocumentStatus.DELETED, (key, record)
            assert store.point_ids(tenant, key) == set(), key
    assert point_snapshot(store, tenant) == reference


# --- ordering through the handler (hypothesis) ------------------------------------------------------
@dataclass
class Op:
    key: int
    content: int | None  # None: delete


op_strategy = st.builds(Op, key=st.integers(0, 2), content=st.one_of(st.none(), st.integers(0, 3)))


@dataclass
class Reorder:
    """Where each event goes in the delivery order, and how many times it is delivered."""

    priorities: list[float] = field(default_factory=list)
    copies: list[int] = field(default_factory=list)


@pytest.fixture
def ordering_stacks(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> Iterator[tuple[EmbeddedStack, EmbeddedStack]]:
    main = EmbeddedStack(tmp_path / "main", fake_voyage)
    reference = EmbeddedStack(tmp_path / "reference", fake_voyage)
    yield main, reference
    main.close()


# Each example drives real handlers and stores: shrinking a failure could take minutes, past the test
# timeout that would then hide the assertion. The unshrunk falsifying example is reported as is.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@settings(
    max_examples=25,
    deadline=None,
    phases=NO_SHRINK,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    ops=st.lists(op_strategy, min_size=1, max_size=8),
    data=st.data(),
)
def test_any_delivery_order_with_duplicates_converges_to_the_bucket(
    ordering_stacks: tuple[EmbeddedStack, EmbeddedStack], ops: list[Op], data: st.DataObject
) -> None:
    main, reference = ordering_stacks
    tenant = f"t{uuid.uuid4().hex[:10]}"
    keys = [f"{tenant}/doc{i}.md" for i in range(3)]
    # Given a history of uploads and deletes on three keys, each producing the event S3 would send
    events: list[dict[str, Any]] = []
    with using(main):
        for op in ops:
            key = keys[op.key]
            if op.content is None:
                if not object_exists(main.container.objects, key):
                    continue
                main.delete_object(key)
                events.append(s3_event([main.removed_record(key)]))
            else:
                main.put_object(key, CONTENTS[op.content])
                events.append(s3_event([main.created_record(key)]))
        # When the events arrive in any order, some of them more than once
        deliveries = [e for e in events for _ in range(data.draw(st.integers(1, 3), label="copies"))]
        order = data.draw(st.permutations(range(len(deliveries))), label="order")
        for index in order:
            response = main.invoke_ingest(main.sqs_batch(deliveries[index]))
            assert response == {"batchItemFailures": []}

    # Then the index and the ledger say what the bucket says, point for point like a clean ingest
    with using(reference):
        for key in keys:
            if object_exists(main.container.objects, key):
                reference.upload(key, main.container.objects.get(key))
        expected = point_snapshot(reference.container.store, tenant)
    objects = main.container.objects
    assert_matches_bucket(
        keys,
        tenant,
        exists=lambda k: object_exists(objects, k),
        etag_of=lambda k: objects.head(k).etag,
        bytes_of=lambda k: objects.get(k),
        ledger=main.container.ledger,
        store=main.container.store,
        reference=expected,
    )


def test_created_then_deleted_with_events_in_reverse_order(stack: EmbeddedStack) -> None:
    # Given a document uploaded, indexed, updated and then deleted
    key = "acme/short-lived.md"
    stack.upload(key, CONTENTS[0])
    stack.put_object(key, CONTENTS[1])
    update = s3_event([stack.created_record(key)])
    stack.delete_object(key)
    delete = s3_event([stack.removed_record(key)])
    # When the delete arrives first, then the update, then the delete again
    for event in (delete, update, delete):
        assert stack.invoke_ingest(stack.sqs_batch(event)) == {"batchItemFailures": []}
    # Then nothing of either version is left and the ledger keeps the tombstone
    assert stack.container.store.point_ids("acme", key) == set()
    record = stack.container.ledger.get("acme", key)
    assert record is not None and record.status == DocumentStatus.DELETED
    status, body = stack.search("lentil soup plum cake", relevance_threshold=0)
    assert status == 200 and body["results"] == []


def test_a_lease_left_by_a_crashed_worker_delays_but_does_not_lose_the_document(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    # The ledger's clock is the test's: on a loaded machine a one-second lease could expire before the
    # first delivery is handled, and the test would then see no retry at all
    now = [1_800_000_000.0]
    ledger = SqliteLedger(tmp_path / "ledger.sqlite3", clock=lambda: now[0])
    stack = EmbeddedStack(tmp_path / "home", fake_voyage, ledger=ledger)
    try:
        stack.container.settings.ingest.lease_seconds = 1
        key = "acme/menu.md"
        # Given a worker that took the document's lease and died without releasing it
        assert ledger.acquire("acme", key, "crashed-worker", 1)
        stack.put_object(key, CONTENTS[1])
        batch = stack.sqs_batch(s3_event([stack.created_record(key)]))
        # When the event arrives while the lease is still held, the message is handed back for retry
        response = stack.invoke_ingest(batch)
        assert [f["itemIdentifier"] for f in response["batchItemFailures"]] == [
            batch["Records"][0]["messageId"]
        ]
        assert ledger.get("acme", key) is None
        # and once the lease has expired, SQS's redelivery indexes it
        now[0] += 1.1
        assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
        record = ledger.get("acme", key)
        assert record is not None and record.status == DocumentStatus.INDEXED
    finally:
        stack.close()


# --- racing workers: threads, moto over HTTP, one shared Qdrant --------------------------------------
class GateEmbedder(Embedder):
    """The worker's real embedder, able to hold a call inside ``embed`` until the test lets it go, so a
    race can be staged deterministically instead of hoped for."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    @property
    def profile(self) -> Any:
        return self.inner.profile

    def embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        self.entered.set()
        assert self.release.wait(30), "the test never released the gate"
        return self.inner.embed(texts, input_type)


@dataclass
class Cluster:
    """Everything several concurrent ingest workers share, and the bucket's true state."""

    bucket: str
    table: str
    tenant: str
    s3: Any
    qdrant: Any
    workers: list[IngestService]
    gates: list[GateEmbedder]
    sequence: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_sequencer(self) -> str:
        with self.lock:
            self.sequence += 1
            return f"{self.sequence:020X}"

    def put(self, key: str, data: bytes) -> ObjectEvent:
        """Upload and return the event S3 would emit; sequencers follow the order of the writes."""
        with self.lock:
            response = self.s3.put_object(Bucket=self.bucket, Key=key, Body=data)
            self.sequence += 1
            sequencer = f"{self.sequence:020X}"
        etag = str(response["ETag"]).strip('"')
        return ObjectEvent("created", self.bucket, key, sequencer, etag, None, len(data), "ObjectCreated:Put")

    def delete(self, key: str) -> ObjectEvent:
        with self.lock:
            self.s3.delete_object(Bucket=self.bucket, Key=key)
            self.sequence += 1
            sequencer = f"{self.sequence:020X}"
        return ObjectEvent("removed", self.bucket, key, sequencer, None, None, None, "ObjectRemoved:Delete")

    def exists(self, key: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.bucket, Key=key)
        except Exception:
            return False
        return True

    def etag(self, key: str) -> str:
        return str(self.s3.head_object(Bucket=self.bucket, Key=key)["ETag"])

    def body(self, key: str) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())


@pytest.fixture
def cluster(
    s3_bucket: str, ledger_table: str, aws_client: Callable[[str], Any], fake_voyage: FakeVoyageServer
) -> Cluster:
    from qdrant_client import QdrantClient

    from winnow.text.sparse import Bm25Encoder

    shared_qdrant = QdrantClient(location=":memory:")
    qdrant_settings = QdrantSettings(path=":memory:")
    workers: list[IngestService] = []
    gates: list[GateEmbedder] = []
    for _ in range(4):
        gate = GateEmbedder(VoyageEmbedder(voyage_settings(fake_voyage), fake_voyage.api_key))
        objects = S3ObjectSource(s3_bucket)
        ledger = DynamoDbLedger(ledger_table)
        _ = objects.client, ledger.client  # one boto3 client per worker, built before the threads start
        store = QdrantVectorStore(shared_qdrant, gate.profile, qdrant_settings)
        store.ensure_collection()
        workers.append(
            IngestService(
                objects=objects,
                ledger=ledger,
                store=store,
                embedder=gate,
                sparse=Bm25Encoder(),
                chunking=ChunkingSettings(),
                settings=IngestSettings(lease_seconds=60),
            )
        )
        gates.append(gate)
    return Cluster(
        bucket=s3_bucket,
        table=ledger_table,
        tenant=f"t{uuid.uuid4().hex[:8]}",
        s3=aws_client("s3"),
        qdrant=shared_qdrant,
        workers=workers,
        gates=gates,
    )


def clean_reference(cluster: Cluster, keys: Sequence[str], fake: FakeVoyageServer) -> dict[str, Any]:
    """The index one worker builds, alone and in order, from the bucket's final state."""
    from qdrant_client import QdrantClient

    from winnow.text.sparse import Bm25Encoder

    embedder = VoyageEmbedder(voyage_settings(fake), fake.api_key)
    store = QdrantVectorStore(
        QdrantClient(location=":memory:"), embedder.profile, QdrantSettings(path=":memory:")
    )
    store.ensure_collection()
    solo = IngestService(
        objects=S3ObjectSource(cluster.bucket),
        ledger=SqliteLedger(":memory:"),
        store=store,
        embedder=embedder,
        sparse=Bm25Encoder(),
        chunking=ChunkingSettings(),
        settings=IngestSettings(),
    )
    for key in keys:
        if cluster.exists(key):
            info = solo.objects.head(key)
            result = solo.handle(
                ObjectEvent("created", cluster.bucket, key, None, info.etag, None, info.size, "x")
            )
            assert result.status == "indexed", result
    return point_snapshot(store, cluster.tenant)


def assert_cluster_matches_bucket(cluster: Cluster, keys: Sequence[str], fake: FakeVoyageServer) -> None:
    ledger = cluster.workers[0].ledger
    assert_matches_bucket(
        keys,
        cluster.tenant,
        exists=cluster.exists,
        etag_of=cluster.etag,
        bytes_of=cluster.body,
        ledger=ledger,
        store=cluster.workers[0].store,
        reference=clean_reference(cluster, keys, fake),
    )
    # no lease outlives its worker
    dynamodb = ledger.client  # type: ignore[attr-defined]
    for key in keys:
        item = dynamodb.get_item(
            TableName=cluster.table, Key={"pk": {"S": cluster.tenant}, "sk": {"S": key}}, ConsistentRead=True
        ).get("Item", {})
        assert "lease_owner" not in item, key


class Sqs:
    """At-least-once delivery for the racing workers: a message whose handling raised goes back on the
    queue after a short visibility timeout; every loop is bounded in count and time."""

    def __init__(self, seed: int) -> None:
        self._queue: deque[ObjectEvent] = deque()
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.deliveries = 0
        self.errors: Counter[str] = Counter()
        self.results: Counter[str] = Counter()
        self.in_flight = 0

    def send(self, event: ObjectEvent, *, jitter: int = 0) -> None:
        """Enqueue, possibly ahead of up to ``jitter`` earlier messages (standard queues do reorder)."""
        with self._lock:
            position = len(self._queue) - self._rng.randint(0, min(jitter, len(self._queue)))
            self._queue.insert(position, event)

    def receive(self) -> ObjectEvent | None:
        with self._lock:
            if not self._queue:
                return None
            self.in_flight += 1
            self.deliveries += 1
            return self._queue.popleft()

    def done(self, event: ObjectEvent, error: BaseException | None, status: str | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if error is not None:
                self.errors[type(error).__name__] += 1
                self._queue.append(event)  # redelivered after the visibility timeout
            else:
                self.results[str(status)] += 1

    def idle(self) -> bool:
        with self._lock:
            return not self._queue and self.in_flight == 0


def run_workers(
    cluster: Cluster, sqs: Sqs, producer: Callable[[], None], deadline_seconds: float = 60
) -> None:
    producing = threading.Event()
    producing.set()
    deadline = time.monotonic() + deadline_seconds
    crashes: list[BaseException] = []

    def work(service: IngestService) -> None:
        for _ in range(10_000):
            if time.monotonic() > deadline:
                return
            event = sqs.receive()
            if event is None:
                if not producing.is_set() and sqs.idle():
                    return
                time.sleep(0.005)
                continue
            try:
                result = service.handle(event)
            except Exception as exc:  # the batch processor reports any exception; SQS redelivers
                sqs.done(event, exc, None)
                if not isinstance(exc, TransientError):
                    crashes.append(exc)
                time.sleep(0.02)
            else:
                sqs.done(event, None, result.status)

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in cluster.workers]
    for thread in threads:
        thread.start()
    try:
        producer()
    finally:
        producing.clear()
        for thread in threads:
            thread.join(timeout=max(1.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "workers did not finish in time"
    assert sqs.idle(), "messages were left undelivered"
    # Only transient errors may make a message come back: anything else would crash a direct invoke
    assert crashes == [], [f"{type(c).__name__}: {c}" for c in crashes]


def test_two_workers_racing_on_one_key_serialise_on_the_lease(
    cluster: Cluster, fake_voyage: FakeVoyageServer
) -> None:
    key = f"{cluster.tenant}/menu.md"
    first = cluster.put(key, CONTENTS[0])
    second = cluster.put(key, CONTENTS[1])
    # Given worker A inside the embedding step of version one (the S3 object is already version two)
    gate_a = cluster.gates[0]
    gate_a.release.clear()
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.update(a=cluster.workers[0].handle(first)))
    thread.start()
    assert gate_a.entered.wait(10)
    # When worker B gets the newer event for the same key meanwhile
    with pytest.raises(DocumentBusy) as busy:
        cluster.workers[1].handle(second)
    # Then B is refused (transient: SQS will redeliver) and changes nothing
    assert busy.value.retry_after is not None
    assert cluster.workers[1].ledger.get(cluster.tenant, key) is None
    gate_a.release.set()
    thread.join(10)
    assert outcome["a"].status == "indexed"
    # and B's redelivery, after A is done, completes without embedding anything again
    texts_before = fake_voyage.usage["embeddings"].texts
    assert cluster.workers[1].handle(second).status == "unchanged"
    assert fake_voyage.usage["embeddings"].texts == texts_before
    assert_cluster_matches_bucket(cluster, [key], fake_voyage)


def test_a_sidecar_change_racing_with_a_reindex_is_not_lost(
    cluster: Cluster, fake_voyage: FakeVoyageServer
) -> None:
    import json

    key = f"{cluster.tenant}/policy.md"
    sidecar = key + ".metadata.json"

    def attributes(department: str) -> bytes:
        return json.dumps({"metadataAttributes": {"department": department}}).encode()

    cluster.put(sidecar, attributes("finance"))
    assert cluster.workers[2].handle(cluster.put(key, CONTENTS[0])).status == "indexed"
    # Given worker A re-indexing a new version: it has read the sidecar and is now inside embedding
    reindex = cluster.put(key, CONTENTS[1])
    gate_a = cluster.gates[0]
    gate_a.release.clear()
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.update(a=cluster.workers[0].handle(reindex)))
    thread.start()
    assert gate_a.entered.wait(10)
    # When the sidecar changes meanwhile and worker B gets its event, SQS-style (redelivered on error)
    change = cluster.put(sidecar, attributes("legal"))
    attempts: list[str] = []
    try:
        attempts.append(cluster.workers[1].handle(change).status)
    except TransientError as exc:
        attempts.append(type(exc).__name__)
    gate_a.release.set()
    thread.join(10)
    assert outcome["a"].status == "indexed"
    if attempts[-1] == "DocumentBusy":
        attempts.append(cluster.workers[1].handle(change).status)
    # Then every point of the document carries the sidecar's final metadata: the change was not lost
    metas = {
        json.loads(view[0])["meta"].get("department")
        for view in point_snapshot(cluster.workers[0].store, cluster.tenant).values()
    }
    assert metas == {"legal"}, (metas, attempts)


def test_same_key_uploaded_twice_and_delivered_in_both_orders_by_racing_workers(
    cluster: Cluster, fake_voyage: FakeVoyageServer
) -> None:
    keys = [f"{cluster.tenant}/k{i}.md" for i in range(6)]
    sqs = Sqs(seed=1)

    def produce() -> None:
        for index, key in enumerate(keys):
            v1 = cluster.put(key, CONTENTS[index % 4])
            v2 = cluster.put(key, CONTENTS[(index + 1) % 4])
            # even keys: newer event first; odd keys: in order; every event delivered twice
            for event in ([v2, v1] if index % 2 == 0 else [v1, v2]) * 2:
                sqs.send(event)

    run_workers(cluster, sqs, produce)
    assert sqs.results["indexed"] == len(keys)  # each key embedded and written once, whatever the order
    assert_cluster_matches_bucket(cluster, keys, fake_voyage)
    print(
        f"\nracing uploads: {sqs.deliveries} deliveries, "
        f"retried: {dict(sqs.errors)}, results: {dict(sqs.results)}"
    )


@pytest.mark.parametrize("seed", [11, 22, 33])
def test_random_uploads_and_deletes_racing_with_workers_match_the_bucket(
    cluster: Cluster, fake_voyage: FakeVoyageServer, seed: int
) -> None:
    rng = random.Random(seed)
    keys = [f"{cluster.tenant}/doc {i}+%.md" for i in range(3)]
    sqs = Sqs(seed)

    def produce() -> None:
        # S3 operations happen while the workers are already processing earlier events
        for _ in range(14):
            key = rng.choice(keys)
            if cluster.exists(key) and rng.random() < 0.35:
                event = cluster.delete(key)
            else:
                event = cluster.put(key, rng.choice(CONTENTS))
            for _ in range(rng.choice([1, 1, 2, 3])):  # duplicates
                sqs.send(event, jitter=3)  # and reordering
            time.sleep(rng.uniform(0, 0.03))

    run_workers(cluster, sqs, produce)
    assert_cluster_matches_bucket(cluster, keys, fake_voyage)
    print(
        f"\nseed {seed}: {sqs.deliveries} deliveries, "
        f"retried: {dict(sqs.errors)}, results: {dict(sqs.results)}"
    )
