"""An SQS batch through the real ingest handler with its documents indexed at once
(``WINNOW_INGEST_BATCH_CONCURRENCY``): S3 and the DynamoDB ledger on moto over HTTP, Qdrant in local
mode, the real Voyage adapter against the fake server with simulated latency or rate limits.

Observed from outside the handler: the service's ``handle`` is wrapped (not replaced) to note when each
event starts and ends, and the fake Voyage server counts requests and 429s."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from functions.ingest import app as ingest_app
from tests.support.stack import EmbeddedStack
from winnow.adapters.ledger_dynamodb import DynamoDbLedger
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.adapters.voyage import VoyageEmbedder
from winnow.ingest.events import ObjectEvent, s3_event
from winnow.ingest.results import IngestResult
from winnow.models import DocumentStatus
from winnow.settings import IngestSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, RateLimit, VoyageSimulation

TEXTS = [
    "Lentil soup is served with rye bread on Mondays in the staff canteen.",
    "The cellar thermometer reads eleven degrees all winter long.",
    "Quarterly revenue grew by twelve percent in the northern region.",
    "Laptops must use full-disk encryption and lock after five minutes.",
    "Plum cake comes with vanilla custard on Fridays.",
    "Travel expenses are reimbursed within fourteen days with receipts.",
    "The library wing opens in spring after the committee approved its budget.",
    "Unused holiday days may be carried over into the first quarter.",
]


class Timeline:
    """Start and end of every event the service handles, in the order they happened."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: list[tuple[str, str, str | None]] = []  # (start|end, key, sequencer)
        self.running = 0
        self.max_running = 0

    def wrap(self, handle: Callable[[ObjectEvent], IngestResult]) -> Callable[[ObjectEvent], IngestResult]:
        def observed(event: ObjectEvent) -> IngestResult:
            with self._lock:
                self.entries.append(("start", event.key, event.sequencer))
                self.running += 1
                self.max_running = max(self.max_running, self.running)
            try:
                return handle(event)
            finally:
                with self._lock:
                    self.entries.append(("end", event.key, event.sequencer))
                    self.running -= 1

        return observed

    def of(self, key: str) -> list[tuple[str, str | None]]:
        return [(what, seq) for what, k, seq in self.entries if k == key]

    def __call__(
        self, handle: Callable[[ObjectEvent], IngestResult]
    ) -> Callable[[ObjectEvent], IngestResult]:
        return self.wrap(handle)


def make_stack(
    home: Path, fake: FakeVoyageServer, bucket: str, table: str, concurrency: int
) -> EmbeddedStack:
    stack = EmbeddedStack(
        home,
        fake,
        objects=S3ObjectSource(bucket),
        ledger=DynamoDbLedger(table),
        ingest=IngestSettings(batch_concurrency=concurrency),
    )
    stack.container.settings.storage.bucket = bucket
    return stack


@pytest.fixture
def aws_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, s3_bucket: str, ledger_table: str
) -> Iterator[EmbeddedStack]:
    stack = make_stack(tmp_path / "home", fake_voyage, s3_bucket, ledger_table, concurrency=4)
    yield stack
    stack.close()


def observe(monkeypatch: pytest.MonkeyPatch) -> Timeline:
    timeline = Timeline()
    service = ingest_app.get_container().ingest_service()
    monkeypatch.setattr(service, "handle", timeline(service.handle))
    return timeline


def assert_indexed_once(stack: EmbeddedStack, keys: list[str]) -> None:
    """Each key: an ``indexed`` record whose chunk count equals its points (nothing lost or doubled)."""
    for key in keys:
        record = stack.container.ledger.get("acme", key)
        assert record is not None and record.status == DocumentStatus.INDEXED, (key, record)
        assert len(stack.container.store.point_ids("acme", key)) == record.chunks >= 1, key


def test_a_batch_runs_its_documents_at_once_and_one_documents_events_in_sequencer_order(
    aws_stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a Voyage that takes 50 ms a request, six documents, and a seventh whose create and delete
    # arrive in the batch newest first (the delete, then the create it follows)
    aws_stack.fake.set_simulation(VoyageSimulation(base_latency_seconds=0.05, rate_limits=False))
    keys = [f"acme/doc-{n}.txt" for n in range(6)]
    for key, text in zip(keys, TEXTS, strict=False):
        aws_stack.put_object(key, text.encode())
    aws_stack.put_object("acme/gone.txt", TEXTS[6].encode())
    create_gone = s3_event([aws_stack.created_record("acme/gone.txt", "00A0")])
    aws_stack.delete_object("acme/gone.txt")
    delete_gone = s3_event([aws_stack.removed_record("acme/gone.txt", "00B0")])
    batch = aws_stack.sqs_batch(
        delete_gone,
        *(s3_event([aws_stack.created_record(k)]) for k in keys[:3]),
        create_gone,
        *(s3_event([aws_stack.created_record(k)]) for k in keys[3:]),
    )
    timeline = observe(monkeypatch)
    # When the batch reaches the handler with four documents at a time
    response = aws_stack.invoke_ingest(batch)
    # Then every message succeeded and several documents were in flight together
    assert response == {"batchItemFailures": []}
    assert 1 < timeline.max_running <= 4
    # And the two events of one document ran one after the other, the older sequencer first
    assert timeline.of("acme/gone.txt") == [
        ("start", "00A0"),
        ("end", "00A0"),
        ("start", "00B0"),
        ("end", "00B0"),
    ]
    # And each document is indexed exactly once, the deleted one is recorded deleted with no points
    assert_indexed_once(aws_stack, keys)
    # And their texts shared requests: each embedded once, in fewer requests than documents
    assert aws_stack.fake.usage["embeddings"].texts == len(keys)
    assert len(aws_stack.fake.requests_to("embeddings")) < len(keys)
    gone = aws_stack.container.ledger.get("acme", "acme/gone.txt")
    assert gone is not None and gone.status == DocumentStatus.DELETED
    assert aws_stack.container.store.point_ids("acme", "acme/gone.txt") == set()


def test_concurrency_one_keeps_todays_schedule(
    tmp_path: Path,
    fake_voyage: FakeVoyageServer,
    s3_bucket: str,
    ledger_table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the setting at 1 (today's behaviour) and a batch of four documents
    stack = make_stack(tmp_path / "home", fake_voyage, s3_bucket, ledger_table, concurrency=1)
    try:
        keys = [f"acme/seq-{n}.txt" for n in range(4)]
        for key, text in zip(keys, TEXTS, strict=False):
            stack.put_object(key, text.encode())
        batch = stack.sqs_batch(*(s3_event([stack.created_record(k)]) for k in keys))
        timeline = observe(monkeypatch)
        # When it is processed
        assert stack.invoke_ingest(batch) == {"batchItemFailures": []}
        # Then one document at a time, in batch order
        assert timeline.max_running == 1
        assert [k for what, k, _ in timeline.entries if what == "start"] == keys
        assert_indexed_once(stack, keys)
    finally:
        stack.close()


def test_exactly_the_failed_messages_are_reported_and_redelivery_completes_them(
    aws_stack: EmbeddedStack,
) -> None:
    # Given eight documents, two of which another worker is indexing right now (their leases are held),
    # and a message whose body is not an S3 notification
    keys = [f"acme/doc-{n}.txt" for n in range(8)]
    for key, text in zip(keys, TEXTS, strict=True):
        aws_stack.put_object(key, text.encode())
    busy = {keys[2], keys[5]}
    ledger = aws_stack.container.ledger
    for key in busy:
        assert ledger.acquire("acme", key, "another-worker", 600)
    messages = [s3_event([aws_stack.created_record(k)]) for k in keys]
    batch = aws_stack.sqs_batch(*messages, "this is not JSON")
    ids = {
        json.loads(r["body"])["Records"][0]["s3"]["object"]["key"]: r["messageId"]
        for r in batch["Records"][:8]
    }
    # When the batch runs four documents at a time
    response = aws_stack.invoke_ingest(batch)
    # Then exactly the busy documents' messages and the unreadable one are reported, nothing else
    failed = sorted(f["itemIdentifier"] for f in response["batchItemFailures"])
    assert failed == sorted([ids[k] for k in busy] + [batch["Records"][8]["messageId"]])
    assert_indexed_once(aws_stack, [k for k in keys if k not in busy])
    for key in busy:
        assert ledger.get("acme", key) is None  # nothing written under another worker's lease
    # When the other worker finishes and SQS redelivers the two messages
    for key in busy:
        ledger.release("acme", key, "another-worker")
    retry = aws_stack.sqs_batch(*(messages[keys.index(k)] for k in sorted(busy)))
    assert aws_stack.invoke_ingest(retry) == {"batchItemFailures": []}
    # Then all eight are indexed once: nothing lost, nothing doubled, each text embedded once
    assert_indexed_once(aws_stack, keys)
    assert aws_stack.fake.usage["embeddings"].texts == len(keys)


class SteppedClock:
    """The simulator's clock, moved only by the adapter's back-off sleeps: a 60 s Retry-After passes at
    once, and the rate-limit window behaves as it would over real minutes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(seconds)
            self.now += seconds


def test_simulated_429s_are_absorbed_without_failing_records(aws_stack: EmbeddedStack) -> None:
    # Given a Voyage limited to two requests a minute, whose 429s carry Retry-After, and an adapter that
    # honours Retry-After up to 60 s and tries up to ten times
    clock = SteppedClock()
    model = aws_stack.container.settings.voyage.embed_model
    aws_stack.fake.set_simulation(
        VoyageSimulation(
            base_latency_seconds=0.01, limits={model: RateLimit(2, None)}, clock=clock, sleep=lambda s: None
        )
    )
    settings = aws_stack.container.settings.voyage.model_copy(  # one text a request: six requests
        update={"max_attempts": 10, "backoff_max_seconds": 60.0, "max_batch_texts": 1}
    )
    aws_stack.container.embedder = VoyageEmbedder(  # type: ignore[misc]
        settings, aws_stack.fake.api_key, sleep=clock.sleep
    )
    keys = [f"acme/doc-{n}.txt" for n in range(6)]
    for key, text in zip(keys, TEXTS, strict=False):
        aws_stack.put_object(key, text.encode())
    # When a batch of six documents runs four at a time
    response = aws_stack.invoke_ingest(
        aws_stack.sqs_batch(*(s3_event([aws_stack.created_record(k)]) for k in keys))
    )
    # Then Voyage answered 429 several times, the adapter waited as told, and no record failed
    assert aws_stack.fake.usage["embeddings"].throttled >= 2
    assert clock.sleeps and all(s >= 1 for s in clock.sleeps)
    assert response == {"batchItemFailures": []}
    # And every document is indexed once, embedded by exactly one answered request
    assert_indexed_once(aws_stack, keys)
    answered = [r for r in aws_stack.fake.requests_to("embeddings") if r.status == 200]
    assert len(answered) == len(keys)
