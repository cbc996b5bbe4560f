"""Documents that arrive together share embedding requests, and keep their own fate: an SQS batch and a
direct notification through the real ingest handler, S3 and the DynamoDB ledger on moto over HTTP,
Qdrant in local mode, the real Voyage adapter against the fake server, which counts the requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import EmbeddedStack
from winnow.adapters.ledger_dynamodb import DynamoDbLedger
from winnow.adapters.objects_s3 import S3ObjectSource
from winnow.adapters.voyage import VoyageEmbedder
from winnow.ingest.events import ObjectEvent, s3_event
from winnow.models import DocumentStatus
from winnow.settings import IngestSettings
from winnow_fakes.fake_voyage import FakeVoyageServer, Fault

SENTENCES = [
    "Lentil soup is served with rye bread on Mondays in the staff canteen.",
    "The cellar thermometer reads eleven degrees all winter long.",
    "Quarterly revenue grew by twelve percent in the northern region.",
    "Laptops must use full-disk encryption and lock after five minutes.",
    "Plum cake comes with vanilla custard on Fridays.",
    "Travel expenses are reimbursed within fourteen days with receipts.",
    "The library wing opens in spring after the committee approved its budget.",
    "Unused holiday days may be carried over into the first quarter.",
]


@pytest.fixture
def aws_stack(
    tmp_path: Path, fake_voyage: FakeVoyageServer, s3_bucket: str, ledger_table: str
) -> Iterator[EmbeddedStack]:
    stack = EmbeddedStack(
        tmp_path / "home",
        fake_voyage,
        objects=S3ObjectSource(s3_bucket),
        ledger=DynamoDbLedger(ledger_table),
        ingest=IngestSettings(batch_concurrency=10),
    )
    stack.container.settings.storage.bucket = s3_bucket
    yield stack
    stack.close()


def texts_per_request(stack: EmbeddedStack, max_texts: int) -> None:
    """Voyage's limit on texts per request, lowered so that a few documents make several requests."""
    settings = stack.container.settings.voyage.model_copy(update={"max_batch_texts": max_texts})
    assert stack.fake is not None
    stack.container.embedder = VoyageEmbedder(settings, stack.fake.api_key)  # type: ignore[misc]


def put_documents(stack: EmbeddedStack, keys: list[str]) -> list[dict[str, object]]:
    """One single-chunk document per key; their S3 notifications, one per message."""
    for key, text in zip(keys, SENTENCES, strict=False):
        stack.put_object(key, text.encode())
    return [s3_event([stack.created_record(key)]) for key in keys]


def assert_indexed_once(stack: EmbeddedStack, keys: list[str]) -> None:
    for key in keys:
        found = stack.container.ledger.get("acme", key)
        assert found is not None and found.status == DocumentStatus.INDEXED, (key, found)
        assert len(stack.container.store.point_ids("acme", key)) == found.chunks >= 1, key


def test_a_batchs_documents_share_requests_within_voyages_limits(aws_stack: EmbeddedStack) -> None:
    # Given eight documents of one chunk each and Voyage taking at most three texts a request
    texts_per_request(aws_stack, 3)
    keys = [f"acme/doc-{n}.txt" for n in range(8)]
    batch = aws_stack.sqs_batch(*put_documents(aws_stack, keys))
    # When one SQS batch carries them
    assert aws_stack.invoke_ingest(batch) == {"batchItemFailures": []}
    # Then their texts went out together: three requests of at most three texts, each text once
    assert aws_stack.fake is not None
    requests = aws_stack.fake.requests_to("embeddings")
    assert [len(r.body["input"]) for r in requests] == [3, 3, 2]
    assert sorted(t for r in requests for t in r.body["input"]) == sorted(
        t for r in requests for t in set(r.body["input"])
    )
    # And every document has its own record, indexed exactly once
    assert_indexed_once(aws_stack, keys)


def test_a_bad_document_in_the_middle_fails_alone(aws_stack: EmbeddedStack) -> None:
    # Given a batch of five documents whose third is a PDF that is not one
    keys = [f"acme/doc-{n}.txt" for n in range(5)]
    bodies = put_documents(aws_stack, keys)
    aws_stack.put_object("acme/broken.pdf", b"%PDF-1.7 this is not a PDF at all")
    bodies.insert(2, s3_event([aws_stack.created_record("acme/broken.pdf")]))
    # When the batch runs
    response = aws_stack.invoke_ingest(aws_stack.sqs_batch(*bodies))
    # Then no message is retried, the bad document is failed with a one-line reason
    assert response == {"batchItemFailures": []}
    broken = aws_stack.container.ledger.get("acme", "acme/broken.pdf")
    assert broken is not None and broken.status == DocumentStatus.FAILED
    assert broken.error and "\n" not in broken.error
    # And its neighbours are indexed, their texts in one shared request
    assert_indexed_once(aws_stack, keys)
    assert aws_stack.fake is not None
    assert len(aws_stack.fake.requests_to("embeddings")) == 1


def test_a_batch_interrupted_midway_loses_nothing_and_embeds_nothing_twice(aws_stack: EmbeddedStack) -> None:
    # Given six documents, two texts a request, and a Voyage that answers the first request and then
    # fails the second on every one of the adapter's attempts
    texts_per_request(aws_stack, 2)
    keys = [f"acme/doc-{n}.txt" for n in range(6)]
    bodies = put_documents(aws_stack, keys)
    batch = aws_stack.sqs_batch(*bodies)
    ids = {
        json.loads(r["body"])["Records"][0]["s3"]["object"]["key"]: r["messageId"] for r in batch["Records"]
    }
    attempts = aws_stack.container.settings.voyage.max_attempts
    assert aws_stack.fake is not None
    aws_stack.fake.inject(Fault.delay(0), *[Fault.server_error(500)] * attempts)
    # When the batch runs
    response = aws_stack.invoke_ingest(batch)
    # Then the documents of the answered request are indexed, and exactly the others are handed back
    indexed = [k for k in keys if (r := aws_stack.container.ledger.get("acme", k)) and r.chunks]
    assert len(indexed) == 2
    assert_indexed_once(aws_stack, indexed)
    retried = sorted(f["itemIdentifier"] for f in response["batchItemFailures"])
    assert retried == sorted(ids[k] for k in keys if k not in indexed)
    for key in keys:
        if key not in indexed:  # nothing written for them: no record, no points
            assert aws_stack.container.ledger.get("acme", key) is None
            assert aws_stack.container.store.point_ids("acme", key) == set()
    answered_before = aws_stack.fake.usage["embeddings"].texts
    # When SQS redelivers the failed messages
    retry = aws_stack.sqs_batch(*(bodies[keys.index(k)] for k in keys if k not in indexed))
    assert aws_stack.invoke_ingest(retry) == {"batchItemFailures": []}
    # Then all six are indexed once, and only the four not stored before were embedded
    assert_indexed_once(aws_stack, keys)
    assert answered_before == 2
    assert aws_stack.fake.usage["embeddings"].texts == len(keys)


def test_re_uploads_in_a_batch_embed_only_their_changed_chunks(aws_stack: EmbeddedStack) -> None:
    # Given two indexed Markdown documents of three sections each
    def document(n: int, edited: bool) -> bytes:
        def prose(p: int) -> str:  # two sentences: a section long enough to keep a chunk of its own
            return f"{SENTENCES[(n * 3 + p) % 8]} {SENTENCES[(n * 3 + p + 4) % 8]}"

        sections = [f"## Part {p}\n\n{prose(p)}\n" for p in range(3)]
        if edited:
            sections[1] = f"## Part 1\n\nThis section of handbook {n} was rewritten last week. {prose(1)}\n"
        return f"# Handbook {n}\n\n".encode() + "\n".join(sections).encode()

    keys = ["acme/a.md", "acme/b.md"]
    for n, key in enumerate(keys):
        aws_stack.put_object(key, document(n, edited=False))
    first = aws_stack.sqs_batch(*(s3_event([aws_stack.created_record(k)]) for k in keys))
    assert aws_stack.invoke_ingest(first) == {"batchItemFailures": []}
    chunks = {k: aws_stack.container.ledger.get("acme", k).chunks for k in keys}  # type: ignore[union-attr]
    assert all(c >= 3 for c in chunks.values())
    assert aws_stack.fake is not None
    before = aws_stack.fake.usage["embeddings"].texts
    requests_before = len(aws_stack.fake.requests_to("embeddings"))
    # When each gets one section rewritten and both come back in one batch
    for n, key in enumerate(keys):
        aws_stack.put_object(key, document(n, edited=True))
    second = aws_stack.sqs_batch(*(s3_event([aws_stack.created_record(k)]) for k in keys))
    assert aws_stack.invoke_ingest(second) == {"batchItemFailures": []}
    # Then only the two rewritten sections were embedded, in one request; the rest reused their vectors
    assert aws_stack.fake.usage["embeddings"].texts - before == 2
    assert len(aws_stack.fake.requests_to("embeddings")) - requests_before == 1
    for key in keys:
        found = aws_stack.container.ledger.get("acme", key)
        assert found is not None and found.embedded == 1 and found.reused == found.chunks - 1
    assert_indexed_once(aws_stack, keys)


def test_a_direct_notification_of_many_objects_shares_requests(aws_stack: EmbeddedStack) -> None:
    # Given one S3 notification announcing six objects (as `winnow ingest` of a folder sends)
    keys = [f"acme/doc-{n}.txt" for n in range(6)]
    for key, text in zip(keys, SENTENCES, strict=False):
        aws_stack.put_object(key, text.encode())
    event = s3_event([aws_stack.created_record(k) for k in keys])
    # When it reaches the handler directly
    response = aws_stack.invoke_ingest(event)
    # Then one result per object, in order, and one request embedded all six
    assert [r["key"] for r in response["results"]] == keys
    assert {r["status"] for r in response["results"]} == {"indexed"}
    assert aws_stack.fake is not None
    assert len(aws_stack.fake.requests_to("embeddings")) == 1
    assert_indexed_once(aws_stack, keys)


def test_reconciles_backfill_in_the_embedded_default_shares_requests(stack: EmbeddedStack) -> None:
    # Given five objects in the local bucket that ingest never saw
    keys = [f"acme/missed-{n}.txt" for n in range(5)]
    infos = [stack.put_object(key, text.encode()) for key, text in zip(keys, SENTENCES, strict=False)]
    events = [
        ObjectEvent(
            action="created",
            bucket=stack.bucket,
            key=info.key,
            sequencer=None,
            etag=info.etag,
            version_id=info.version_id,
            size=info.size,
            event_name="ObjectCreated:Put",
        )
        for info in infos
    ]
    # When reconcile sends them through the in-process queue
    stack.container.event_queue.send(events)
    # Then all five are indexed and their texts went out in one request
    assert_indexed_once(stack, keys)
    assert stack.fake is not None
    assert len(stack.fake.requests_to("embeddings")) == 1
