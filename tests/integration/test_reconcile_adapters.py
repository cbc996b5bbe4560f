"""Reconcile's adapters on real wires: the SQS queue on moto over HTTP (and on a loopback server that
answers with canned AWS errors), Lambda self-invocation on that server, the Qdrant alias in local mode."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.aws import FaultyAws
from winnow.adapters.lambda_invoke import LambdaAsyncInvoker
from winnow.adapters.queue_sqs import SqsEventQueue
from winnow.errors import ConfigurationError, DocumentBusy, EnqueueFailed, ProviderUnavailable
from winnow.ingest.events import ObjectEvent, parse_sqs_body
from winnow.models import EmbeddingProfile
from winnow.settings import QdrantSettings
from winnow_local.adapters.queue_inprocess import InProcessEventQueue


def _created(key: str, size: int = 10, etag: str = "abc123") -> ObjectEvent:
    return ObjectEvent("created", "bucket-1", key, None, etag, None, size, "ObjectCreated:Put")


def _removed(key: str) -> ObjectEvent:
    return ObjectEvent("removed", "bucket-1", key, None, None, None, None, "ObjectRemoved:Delete")


def test_sqs_queue_delivers_s3_notifications_in_batches_of_ten(
    sqs_queue: str, aws_client: Callable[[str], Any]
) -> None:
    # Given 23 events, keys with spaces, plus signs and non-ASCII letters among them
    events = [_created(f"acme/dir/file {i}+é.pdf", size=i + 1) for i in range(22)] + [
        _removed("acme/gone.md")
    ]
    # When they are sent through the SQS adapter
    SqsEventQueue(sqs_queue).send(events)
    # Then the queue holds one S3 notification per event, decoding to the same events
    sqs = aws_client("sqs")
    received: list[ObjectEvent] = []
    raw: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=sqs_queue, MaxNumberOfMessages=10).get("Messages") or []
        if not messages:
            break
        for m in messages:
            raw.append(json.loads(m["Body"]))
            received += parse_sqs_body(m["Body"])
            sqs.delete_message(QueueUrl=sqs_queue, ReceiptHandle=m["ReceiptHandle"])
    assert sorted(received, key=lambda e: e.key) == sorted(events, key=lambda e: e.key)
    record = raw[0]["Records"][0]
    assert {
        "eventVersion",
        "eventSource",
        "awsRegion",
        "eventTime",
        "eventName",
        "userIdentity",
        "s3",
    } <= set(record)
    assert record["s3"]["bucket"]["arn"] == "arn:aws:s3:::bucket-1"
    assert all("sequencer" not in r["Records"][0]["s3"]["object"] for r in raw)


def test_sqs_outage_surfaces_as_provider_unavailable(faulty_aws: FaultyAws) -> None:
    faulty_aws.respond(
        503,
        json.dumps({"__type": "com.amazonaws.sqs#ServiceUnavailable", "message": "down"}),
        {"Content-Type": "application/x-amz-json-1.0", "x-amzn-query-error": "ServiceUnavailable;Receiver"},
    )
    queue = SqsEventQueue("http://queue.invalid/000000000000/q", client=faulty_aws.client("sqs"))
    with pytest.raises(ProviderUnavailable):
        queue.send([_created("acme/a.md")])


def test_sqs_partial_failures_are_retried_then_named(faulty_aws: FaultyAws) -> None:
    # Given a queue that accepts the first entry and fails the second for a server-side reason, always
    body = {
        "Successful": [{"Id": "0", "MessageId": "m0", "MD5OfMessageBody": "x"}],
        "Failed": [{"Id": "1", "SenderFault": False, "Code": "InternalError", "Message": "try again"}],
    }
    faulty_aws.respond(200, json.dumps(body), {"Content-Type": "application/x-amz-json-1.0"})
    sleeps: list[float] = []
    queue = SqsEventQueue(
        "http://queue.invalid/000000000000/q",
        client=faulty_aws.client("sqs"),
        attempts=3,
        sleep=sleeps.append,
    )
    # When two events are sent
    with pytest.raises(EnqueueFailed) as failure:
        queue.send([_created("acme/a.md"), _created("acme/b.md")])
    # Then the failed entry was retried with a pause, and is named in the error
    assert failure.value.keys == ["acme/b.md"]
    assert faulty_aws.requests == 3 and len(sleeps) == 2


def test_in_process_queue_hands_events_to_ingest_and_names_transient_failures() -> None:
    handled: list[ObjectEvent] = []

    def handle(event: ObjectEvent) -> None:
        if event.key == "acme/busy.md":
            raise DocumentBusy("someone else holds the lease")
        handled.append(event)

    queue = InProcessEventQueue(handle)
    with pytest.raises(EnqueueFailed) as failure:
        queue.send([_created("acme/a b.md"), _created("acme/busy.md"), _removed("acme/c.md")])
    assert failure.value.keys == ["acme/busy.md"]
    assert [(e.action, e.key, e.sequencer) for e in handled] == [
        ("created", "acme/a b.md", None),
        ("removed", "acme/c.md", None),
    ]


def test_lambda_async_invoke_on_the_wire(faulty_aws: FaultyAws) -> None:
    invoker = LambdaAsyncInvoker(client=faulty_aws.client("lambda"))
    faulty_aws.respond(202, b"")
    invoker.invoke("arn:aws:lambda:us-east-1:000000000000:function:reconcile", {"continuation": "t"})
    faulty_aws.respond(
        500, json.dumps({"Type": "Service", "message": "boom"}), {"x-amzn-ErrorType": "ServiceException"}
    )
    with pytest.raises(ProviderUnavailable):
        invoker.invoke("reconcile", {"continuation": "t"})


@pytest.mark.parametrize("engine", ["server", "edge"])
def test_qdrant_alias_points_searches_at_one_profile_at_a_time(engine: str) -> None:
    from pathlib import Path

    from tests.support.qdrant import server_stand_in
    from winnow.adapters.qdrant_store import make_qdrant_client, store_on

    # (the pointer each engine keeps: a Qdrant alias on a server, Edge's own aliases file)
    settings = QdrantSettings(path=":memory:")
    client = (
        server_stand_in() if engine == "server" else make_qdrant_client(settings, None, Path("/nonexistent"))
    )
    old, new = EmbeddingProfile("voyage", "voyage-3.5", 256), EmbeddingProfile("voyage", "voyage-3.5", 512)
    index = store_on(client, old, settings).active_index()
    # Given no pointer yet, and a collection for the old profile only
    assert index.active() is None
    store_on(client, old, settings).ensure_collection()
    index.activate(old)
    assert index.active() == old and index.active_collection() == "winnow_voyage-voyage-3-5-256"  # type: ignore[attr-defined]
    # Then pointing at a profile without a collection is refused, and the pointer stays
    with pytest.raises(ConfigurationError):
        index.activate(new)
    assert index.active() == old
    # When the new profile's collection exists, the pointer moves in one step
    store_on(client, new, settings).ensure_collection()
    index.activate(new)
    assert index.active() == new
    assert sorted(p.dimension for p in index.available()) == [256, 512]
    client.close()
