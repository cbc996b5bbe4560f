"""Reconcile end to end: S3, DynamoDB and SQS on moto over HTTP, Qdrant in local mode, the real
``VoyageEmbedder`` against the loopback fake Voyage server (whose request log counts embedding calls),
and the real ingest handler consuming what reconcile put on the queue."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.stack import EmbeddedStack, voyage_settings
from winnow.factory import Container, Settings, set_container
from winnow.models import DocumentStatus
from winnow.reconcile import run_reconcile
from winnow.reconcile.stats import ReconcileStats
from winnow.search.query import Query
from winnow.search.service import SearchService
from winnow.settings import ChunkingSettings
from winnow_fakes.fake_voyage import FakeVoyageServer
from winnow_local.context import LocalLambdaContext

HOLIDAYS = b"""# Holiday policy

## Allowance

Every employee receives twenty-eight days of paid holiday per year, including public holidays, and the
allowance grows by one day for every two years of service up to a maximum of thirty-three days.

## Carry over

Unused holiday days may be carried over into the first quarter of the following year, up to a maximum
of five days, with the written approval of the line manager and the people team.

## Booking

Holidays are booked through the staff portal at least two weeks in advance; requests longer than ten
working days need approval from the head of department before travel is booked.
"""

EXPENSES = b"""# Expenses

## Travel

Travel expenses are reimbursed within fourteen days when submitted with receipts through the finance
portal. Economy class is the rule for flights shorter than six hours; rail is preferred under four hours.

## Meals

Meals during business travel are covered up to a daily allowance set by the finance team each January,
and alcohol is never reimbursed, whatever the occasion or the customer present.
"""

SECURITY = b"""# Security

Laptops must use full-disk encryption and a screen lock after five minutes of inactivity. Report lost
devices to the security desk within one hour so that access can be revoked remotely and data wiped.
"""


# Small chunks, so that each section of the documents above is a chunk of its own.
SECTION_CHUNKS = ChunkingSettings(target_chars=400, overlap_chars=0, min_chars=100)


@dataclass
class AwsWorld:
    """An embedded Winnow on S3 + DynamoDB + SQS (moto), with reconcile's queue being the ingest queue."""

    stack: EmbeddedStack
    sqs: Any
    queue_url: str
    bucket: str

    @property
    def container(self) -> Container:
        return self.stack.container

    def reconcile(self, tenant: str | None = None, dry_run: bool = False) -> ReconcileStats:
        result = self.container.reconciler().run(tenant, dry_run=dry_run)
        assert result.continuation is None
        return result.totals

    def receive(self, limit: int = 10) -> list[dict[str, Any]]:
        response = self.sqs.receive_message(
            QueueUrl=self.queue_url, MaxNumberOfMessages=min(limit, 10), WaitTimeSeconds=0
        )
        return list(response.get("Messages") or [])[:limit]

    def drain(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Deliver queued messages to the real ingest handler as SQS batches (as the event source
        mapping does) and delete the ones it acknowledged. Returns the decoded bodies."""
        bodies: list[dict[str, Any]] = []
        while limit is None or len(bodies) < limit:
            messages = self.receive(10 if limit is None else limit - len(bodies))
            if not messages:
                break
            event = {
                "Records": [
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": {"ApproximateReceiveCount": "1"},
                        "messageAttributes": {},
                        "md5OfBody": m["MD5OfBody"],
                        "eventSource": "aws:sqs",
                        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:winnow-ingest",
                        "awsRegion": "us-east-1",
                    }
                    for m in messages
                ]
            }
            response = self.stack.invoke_ingest(event)
            failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
            assert not failed, f"ingest failed messages {failed}"
            for m in messages:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])
                bodies.append(json.loads(m["Body"]))
        return bodies

    def queued(self) -> int:
        attrs = self.sqs.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]) + int(attrs["ApproximateNumberOfMessagesNotVisible"])

    def points(self, tenant: str, key: str) -> set[str]:
        return self.container.store.point_ids(tenant, key)

    def keys_found(self, query: str, tenant: str = "acme") -> set[str]:
        status, body = self.stack.search(query, tenant=tenant, relevance_threshold=0, top_k=10)
        assert status == 200, body
        return {r["key"] for r in body["results"]}


@pytest.fixture
def aws(
    tmp_path: Path,
    fake_voyage: FakeVoyageServer,
    s3_bucket: str,
    ledger_table: str,
    sqs_queue: str,
    aws_client: Callable[[str], Any],
) -> Iterator[AwsWorld]:
    from winnow.adapters.ledger_dynamodb import DynamoDbLedger
    from winnow.adapters.objects_s3 import S3ObjectSource

    stack = EmbeddedStack(
        tmp_path / "home",
        fake_voyage,
        objects=S3ObjectSource(s3_bucket),
        ledger=DynamoDbLedger(ledger_table),
        chunking=SECTION_CHUNKS,
    )
    stack.container.settings.storage.bucket = s3_bucket
    stack.container.settings.storage.queue_url = sqs_queue
    yield AwsWorld(stack, aws_client("sqs"), sqs_queue, s3_bucket)
    stack.close()


def test_backfill_of_a_prefilled_bucket_then_nothing_to_do(aws: AwsWorld) -> None:
    # Given a bucket that already holds documents of two tenants (and a sidecar) but no index at all
    aws.stack.put_object("acme/holidays.md", HOLIDAYS)
    aws.stack.put_object("acme/expenses.md", EXPENSES)
    aws.stack.put_object(
        "acme/expenses.md.metadata.json", b'{"metadataAttributes": {"department": "finance"}}'
    )
    aws.stack.put_object("globex/security.md", SECURITY)
    # When reconcile runs over the whole bucket
    stats = aws.reconcile()
    # Then every document is new and queued as an S3 notification the ingest handler cannot tell apart
    assert (stats.scanned, stats.new, stats.unchanged, stats.metadata_scanned) == (3, 3, 0, 1)
    assert stats.complete and not stats.dry_run and stats.duration_ms > 0
    bodies = aws.drain()
    assert len(bodies) == 3
    for body in bodies:
        (record,) = body["Records"]
        assert record["eventSource"] == "aws:s3" and record["eventName"] == "ObjectCreated:Put"
        assert record["s3"]["bucket"]["name"] == aws.bucket
        assert "sequencer" not in record["s3"]["object"] and record["s3"]["object"]["eTag"]
    # and the ingest handler indexed them: ledger, points and search agree, metadata included
    for tenant, key in (
        ("acme", "acme/holidays.md"),
        ("acme", "acme/expenses.md"),
        ("globex", "globex/security.md"),
    ):
        record = aws.container.ledger.get(tenant, key)
        assert record is not None and record.status == DocumentStatus.INDEXED, key
        assert len(aws.points(tenant, key)) == record.chunks > 0
    assert "acme/holidays.md" in aws.keys_found("paid holiday days per year")
    status, body = aws.stack.search(
        "reimbursed travel", tenant="acme", relevance_threshold=0, filters={"department": "finance"}
    )
    assert status == 200 and {r["key"] for r in body["results"]} == {"acme/expenses.md"}
    # When reconcile runs again right away
    calls_before = aws.stack.embed_calls()
    again = aws.reconcile()
    # Then nothing is queued, everything is unchanged, and no embedding call is spent
    assert (again.scanned, again.unchanged, again.new, again.modified, again.repaired, again.deleted) == (
        3,
        3,
        0,
        0,
        0,
        0,
    )
    assert again.metadata_modified == 0 and again.orphans_removed == 0 and again.failed == 0
    assert aws.queued() == 0 and aws.drain() == []
    assert aws.stack.embed_calls() == calls_before


def test_lost_delete_removes_points_and_record(aws: AwsWorld) -> None:
    # Given two indexed documents, one of which is then deleted from S3 with its event lost
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.upload("acme/expenses.md", EXPENSES)
    assert "acme/expenses.md" in aws.keys_found("reimbursed travel expenses receipts")
    aws.stack.delete_object("acme/expenses.md")
    # When reconcile runs and its events are consumed
    stats = aws.reconcile(tenant="acme")
    assert (stats.scanned, stats.deleted, stats.unchanged) == (1, 1, 1)
    bodies = aws.drain()
    assert [b["Records"][0]["eventName"] for b in bodies] == ["ObjectRemoved:Delete"]
    # Then the document's points are gone, its record says deleted, and searches no longer find it
    assert aws.points("acme", "acme/expenses.md") == set()
    record = aws.container.ledger.get("acme", "acme/expenses.md")
    assert record is not None and record.status == DocumentStatus.DELETED
    assert "acme/expenses.md" not in aws.keys_found("reimbursed travel expenses receipts")
    assert aws.reconcile().counters()["deleted"] == 0


def test_tenant_run_over_an_emptied_prefix_removes_the_tenants_documents(aws: AwsWorld) -> None:
    # Given a tenant whose every object was deleted from S3 with the events lost, and another tenant
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.upload("acme/expenses.md", EXPENSES)
    aws.stack.upload("globex/expenses.md", EXPENSES)
    aws.stack.delete_object("acme/holidays.md")
    aws.stack.delete_object("acme/expenses.md")
    # When reconcile runs for that tenant only and its events are consumed
    stats = aws.reconcile(tenant="acme")
    assert (stats.scanned, stats.deleted) == (0, 2)
    aws.drain()
    # Then the tenant's documents are gone from Qdrant and the ledger, and the other tenant is untouched
    assert aws.points("acme", "acme/holidays.md") == set() == aws.points("acme", "acme/expenses.md")
    for key in ("acme/holidays.md", "acme/expenses.md"):
        record = aws.container.ledger.get("acme", key)
        assert record is not None and record.status == DocumentStatus.DELETED
    assert aws.points("globex", "globex/expenses.md")
    assert aws.keys_found("reimbursed travel expenses receipts") == set()


def test_lost_create_is_indexed(aws: AwsWorld) -> None:
    # Given an indexed document and another one uploaded while its event was lost
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.put_object("acme/security.md", SECURITY)
    assert "acme/security.md" not in aws.keys_found("laptop disk encryption")
    # When reconcile runs and its event is consumed
    stats = aws.reconcile()
    assert (stats.new, stats.unchanged) == (1, 1)
    aws.drain()
    # Then the missing document is searchable
    assert "acme/security.md" in aws.keys_found("laptop disk encryption")


def test_points_removed_by_hand_are_restored_embedding_only_what_was_lost(aws: AwsWorld) -> None:
    # Given an indexed document of several chunks, some of whose points someone deleted by hand
    result = aws.stack.upload("acme/holidays.md", HOLIDAYS)
    assert result["chunks"] >= 3
    points = sorted(aws.points("acme", "acme/holidays.md"))
    lost = points[:2]
    aws.container.store.delete_points(lost)
    texts_before = aws.stack.embedded_texts()
    # When reconcile runs and its event is consumed
    stats = aws.reconcile()
    assert (stats.repaired, stats.unchanged) == (1, 0)
    aws.drain()
    # Then every point is back, and only the lost chunks were embedded again
    assert aws.points("acme", "acme/holidays.md") == set(points)
    assert aws.stack.embedded_texts() - texts_before == len(lost)
    assert aws.reconcile().unchanged == 1


def test_orphan_points_are_removed(aws: AwsWorld) -> None:
    # Given points of a document whose deletion reached the ledger but not Qdrant
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.upload("acme/security.md", SECURITY)
    orphaned = aws.points("acme", "acme/security.md")
    assert orphaned
    aws.stack.delete_object("acme/security.md")
    record = aws.container.ledger.get("acme", "acme/security.md")
    assert record is not None
    record.status = DocumentStatus.DELETED
    record.sequencer = None
    aws.container.ledger.put(record)
    # When reconcile runs
    stats = aws.reconcile()
    # Then the orphan points are deleted directly (nothing to queue), the other document untouched
    assert stats.orphans_removed == len(orphaned) and stats.deleted == 0 and stats.unchanged == 1
    assert aws.queued() == 0
    assert aws.points("acme", "acme/security.md") == set()
    assert aws.points("acme", "acme/holidays.md")


def test_changed_object_is_reindexed_reusing_unchanged_chunks(aws: AwsWorld) -> None:
    # Given an indexed document that was then overwritten (one section edited) with its event lost
    first = aws.stack.upload("acme/holidays.md", HOLIDAYS)
    edited = HOLIDAYS.replace(b"twenty-eight days", b"thirty days")
    aws.stack.put_object("acme/holidays.md", edited)
    texts_before = aws.stack.embedded_texts()
    # When reconcile runs and its event is consumed
    stats = aws.reconcile()
    assert (stats.modified, stats.unchanged) == (1, 0)
    aws.drain()
    # Then the record carries the new ETag and only the edited chunk was embedded
    record = aws.container.ledger.get("acme", "acme/holidays.md")
    assert record is not None and record.etag == aws.container.objects.head("acme/holidays.md").etag
    assert record.chunks == first["chunks"]
    assert aws.stack.embedded_texts() - texts_before == 1
    status, body = aws.stack.search("how many days of paid holiday", tenant="acme", relevance_threshold=0)
    assert status == 200 and "thirty days" in body["results"][0]["text"]


def test_dry_run_reports_and_changes_nothing(aws: AwsWorld) -> None:
    # Given a lost create, a lost delete and points removed by hand
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.upload("acme/expenses.md", EXPENSES)
    aws.stack.put_object("acme/security.md", SECURITY)
    aws.stack.delete_object("acme/expenses.md")
    holiday_points = aws.points("acme", "acme/holidays.md")
    aws.container.store.delete_points(sorted(holiday_points)[:1])
    before = aws.container.store.count_by_document()
    calls = aws.stack.embed_calls()
    # When reconcile runs with dry_run
    stats = aws.reconcile(dry_run=True)
    # Then it says what it would do, and nothing was queued, deleted or embedded
    assert stats.dry_run and (stats.new, stats.deleted, stats.repaired) == (1, 1, 1)
    assert aws.queued() == 0
    assert aws.container.store.count_by_document() == before
    record = aws.container.ledger.get("acme", "acme/expenses.md")
    assert record is not None and record.status == DocumentStatus.INDEXED
    assert aws.stack.embed_calls() == calls
    # and the real run does exactly that
    real = aws.reconcile()
    assert (real.new, real.deleted, real.repaired) == (1, 1, 1)


def _container_with_dimension(old: Container, fake: FakeVoyageServer, dimension: int) -> Container:
    """Another deployment of the same stack whose embedder makes ``dimension``-sized vectors."""
    from winnow.adapters.qdrant_collection import CollectionStore

    settings = Settings(
        storage=old.settings.storage,
        qdrant=old.settings.qdrant,
        voyage=voyage_settings(fake, output_dimension=dimension),
        providers=old.settings.providers,
        chunking=old.settings.chunking,
        ingest=old.settings.ingest,
        search=old.settings.search,
    )
    new = Container(settings)
    new.objects = old.objects
    new.ledger = old.ledger
    assert isinstance(old.store, CollectionStore)
    store = old.store.for_profile(new.embedder.profile)
    store.ensure_collection()
    new.store = store
    return new


def _search_keys(container: Container, query: str) -> tuple[str, set[str]]:
    """A search the way the search function runs it: with the components the pointer selects."""
    active = container.search_service()
    embedder, store = active.embedder, active.store
    service = SearchService(embedder, store, container.sparse, None, container.settings.search)
    response = service.search("acme", Query(query=query, relevance_threshold=0.0, top_k=10))
    return store.collection_name, {r.key for r in response.results}  # type: ignore[attr-defined]


def test_profile_change_rebuilds_and_searches_stay_on_the_old_collection_until_complete(
    aws: AwsWorld, fake_voyage: FakeVoyageServer
) -> None:
    # Given two documents indexed with 256-dimension vectors, and reconcile having set the pointer
    aws.stack.upload("acme/holidays.md", HOLIDAYS)
    aws.stack.upload("acme/expenses.md", EXPENSES)
    first = aws.reconcile()
    old_profile = aws.container.embedder.profile
    assert first.active_profile == old_profile.slug and first.unchanged == 2 and not first.rebuilding
    # When the deployment switches to 512-dimension vectors and reconcile runs
    new = _container_with_dimension(aws.container, fake_voyage, 512)
    set_container(new)
    aws.stack.container = new
    stats = aws.reconcile()
    # Then every document is queued for re-embedding, and searches stay on the old, complete collection
    assert (stats.modified, stats.unchanged, stats.switched) == (2, 0, False)
    assert stats.rebuilding and stats.active_profile == old_profile.slug
    assert stats.configured_profile == new.embedder.profile.slug
    old_collection = f"winnow_{old_profile.slug}"
    assert _search_keys(new, "paid holiday days per year") == (
        old_collection,
        {"acme/holidays.md", "acme/expenses.md"},
    )
    # When only one of the two documents has been re-indexed into the new collection
    assert len(aws.drain(limit=1)) == 1
    assert len(new.store.count_by_document("acme")) == 1
    again = aws.reconcile()
    # Then the pointer has not moved: a search still reads the old collection and finds both documents
    assert not again.switched and again.active_profile == old_profile.slug
    new.forget_active()
    assert _search_keys(new, "reimbursed travel expenses") == (
        old_collection,
        {"acme/holidays.md", "acme/expenses.md"},
    )
    # When the rest of the queue is consumed and reconcile runs again
    aws.drain()
    done = aws.reconcile()
    # Then the rebuild is complete and searches switch over to the new collection
    assert done.switched and not done.rebuilding and done.active_profile == new.embedder.profile.slug
    assert done.unchanged == 2
    new.forget_active()
    collection, keys = _search_keys(new, "paid holiday days per year")
    assert collection == f"winnow_{new.embedder.profile.slug}" and "acme/holidays.md" in keys
    # and a further run changes nothing and embeds nothing
    calls = aws.stack.embed_calls()
    final = aws.reconcile()
    assert final.unchanged == 2 and not final.switched and aws.queued() == 0
    assert aws.stack.embed_calls() == calls


def test_embedded_default_rebuilds_and_switches_in_one_run(
    tmp_path: Path, fake_voyage: FakeVoyageServer
) -> None:
    # Given the embedded default (folder bucket, SQLite ledger, no queue) with two documents indexed
    stack = EmbeddedStack(tmp_path / "home", fake_voyage)
    try:
        stack.upload("acme/holidays.md", HOLIDAYS)
        stack.upload("acme/expenses.md", EXPENSES)
        assert run_reconcile(stack.container).unchanged == 2
        # When the embedder changes and `winnow reconcile` runs (events go straight to ingest)
        new = _container_with_dimension(stack.container, fake_voyage, 512)
        set_container(new)
        stats = run_reconcile(new)
        # Then everything is re-embedded and searches switch in the same run
        assert stats.modified == 2 and stats.switched and stats.active_profile == new.embedder.profile.slug
        collection, keys = _search_keys(new, "paid holiday days per year")
        assert collection == f"winnow_{new.embedder.profile.slug}" and "acme/holidays.md" in keys
        assert run_reconcile(new).unchanged == 2
    finally:
        stack.close()


class ShortLivedContext(LocalLambdaContext):
    """A Lambda context that runs out of time after ``checks`` looks at the clock."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.checks = checks

    def get_remaining_time_in_millis(self) -> int:
        self.checks -= 1
        return 600_000 if self.checks >= 0 else 1_000


def test_lambda_continues_a_large_bucket_in_follow_up_invocations(
    aws: AwsWorld, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from functions.reconcile import app

    # Metrics printed as CloudWatch EMF, as in Lambda
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    app.metrics.clear_metrics()
    capsys.readouterr()

    # Given a bucket of seven unindexed documents and a function that only has time for three per call
    for i in range(7):
        aws.stack.put_object(f"acme/doc-{i}.md", SECURITY.replace(b"one hour", f"{i + 1} hours".encode()))
    chained: list[dict[str, Any]] = []

    class RecordingInvoker:
        def invoke(self, function: str, payload: dict[str, Any]) -> None:
            assert function == LocalLambdaContext().invoked_function_arn
            chained.append(payload)

    monkeypatch.setattr(app.get_container(), "invoker", RecordingInvoker())
    # When the handler is invoked on demand, and again with every payload it chains
    response = app.handler({"tenant": "acme"}, ShortLivedContext(3))
    invocations = 1
    while chained:
        assert response["chained"] and not response["complete"]
        response = app.handler(chained.pop(), ShortLivedContext(3))
        invocations += 1
    # Then it finished in several invocations whose totals cover every document once
    assert invocations == 3 and response["complete"] and response["continuation"] is None
    stats = response["stats"]
    assert (stats["scanned"], stats["new"], stats["invocations"]) == (7, 7, 3)
    # and each invocation emitted its own counts, which add up to the totals
    emitted: dict[str, float] = {}
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            blob = json.loads(line)
            for name in ("ReconcileNew", "ReconcileScanned"):
                value = blob.get(name, 0)
                emitted[name] = emitted.get(name, 0) + (sum(value) if isinstance(value, list) else value)
    assert emitted == {"ReconcileNew": 7, "ReconcileScanned": 7}
    assert len(aws.drain()) == 7


def test_lambda_returns_the_token_without_chaining_and_rejects_bad_input(aws: AwsWorld) -> None:
    from functions.reconcile import app

    aws.stack.put_object("acme/a.md", SECURITY)
    aws.stack.put_object("acme/b.md", HOLIDAYS)
    response = app.handler({"dry_run": True, "chain": False}, ShortLivedContext(1))
    assert response["continuation"] and not response["chained"] and not response["complete"]
    final = app.handler({"continuation": response["continuation"], "chain": False}, ShortLivedContext(100))
    assert final["complete"] and final["stats"]["new"] == 2 and final["stats"]["dry_run"]
    assert aws.queued() == 0
    assert "error" in app.handler({"dry_run": "yes"}, LocalLambdaContext())
    assert "error" in app.handler({"continuation": "garbage"}, LocalLambdaContext())
    assert "error" in app.handler({"reread": "yes"}, LocalLambdaContext())


def test_lambda_rereads_an_older_readers_documents_on_demand_across_invocations(
    aws: AwsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from functions.reconcile import app
    from winnow.ingest.reading import READER_VERSION

    # Given three indexed documents on the DynamoDB ledger, two of them read by an older reader
    for key, text in (("acme/a.md", SECURITY), ("acme/b.md", HOLIDAYS), ("acme/c.md", EXPENSES)):
        assert aws.stack.upload(key, text)["status"] == "indexed"
    ledger = aws.container.ledger
    for key in ("acme/b.md", "acme/c.md"):
        record = ledger.get("acme", key)
        assert record is not None and record.reader == READER_VERSION
        assert ledger.put(replace(record, reader=0, sequencer=None))
    chained: list[dict[str, Any]] = []

    class RecordingInvoker:
        def invoke(self, function: str, payload: dict[str, Any]) -> None:
            chained.append(payload)

    monkeypatch.setattr(app.get_container(), "invoker", RecordingInvoker())
    # When the scheduled run comes (no reread), then they stay unchanged and nothing is queued
    stats = app.handler({}, LocalLambdaContext())["stats"]
    assert (stats["unchanged"], stats["reread"], aws.queued()) == (3, 0, 0)
    # When a dry run asks for reread, then it counts them and queues nothing
    stats = app.handler({"reread": True, "dry_run": True}, LocalLambdaContext())["stats"]
    assert (stats["unchanged"], stats["reread"], aws.queued()) == (1, 2, 0)
    # When reread is asked with time for one document per invocation, each chained invocation getting
    # only the continuation token
    response = app.handler({"reread": True}, ShortLivedContext(1))
    invocations = 1
    while chained:
        response = app.handler(chained.pop(), ShortLivedContext(1))
        invocations += 1
        assert invocations < 10
    # Then the flag held across the chain: both are queued, and ingest reads them again embedding nothing
    assert invocations == 3 and response["complete"]
    assert (response["stats"]["unchanged"], response["stats"]["reread"]) == (1, 2)
    calls = aws.stack.embed_calls()
    assert sorted(body["Records"][0]["s3"]["object"]["key"] for body in aws.drain()) == [
        "acme/b.md",
        "acme/c.md",
    ]
    assert aws.stack.embed_calls() == calls
    for key in ("acme/b.md", "acme/c.md"):
        record = ledger.get("acme", key)
        assert record is not None and (record.reader, record.embedded) == (READER_VERSION, 0)
    # and a second run finds nothing left to read again
    stats = app.handler({"reread": True}, LocalLambdaContext())["stats"]
    assert (stats["unchanged"], stats["reread"], aws.queued()) == (3, 0, 0)
